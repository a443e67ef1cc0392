import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { isAbortError, podSyncError } from '@kubelet-ts/core';
import { makePod, setup } from './helpers.js';

type Setup = ReturnType<typeof setup>;

async function runningPod(s: Setup, pod: V1Pod) {
  const result = await s.manager.syncPod(pod, await s.manager.getPodStatus('uid-1', 'web', 'default'), [], s.backoff);
  if (podSyncError(result)) throw podSyncError(result);
  return (await s.manager.getPods(false)).find((p) => p.id === pod.metadata!.uid)!;
}

/** StopContainer calls with the fake time they were made at, in ms since `since`. */
function recordStops(s: Setup, since = s.clock.now()) {
  const stops: Array<{ id: string; timeout: number; at: number }> = [];
  const stop = s.runtime.stopContainer.bind(s.runtime);
  s.runtime.stopContainer = (id, timeout, options) => {
    stops.push({ id, timeout, at: s.clock.now() - since });
    return stop(id, timeout, options);
  };
  return stops;
}

/** Tracks a promise's outcome without awaiting it. */
function watch(p: Promise<unknown>) {
  const state: { settled: boolean; value?: unknown; error?: unknown; at?: number } = { settled: false };
  p.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return state;
}

t.test('a kill with 30 s of grace (StopContainer in flight) is aborted; a second kill with 1 s finishes in the 2 s minimum', async (t) => {
  const s = setup();
  const pod = makePod({ terminationGracePeriodSeconds: 30 });
  const running = await runningPod(s, pod);
  s.runtime.ignoreSigterm('app');
  const start = s.clock.now();
  const stops = recordStops(s, start);

  const controller = new AbortController();
  const first = watch(s.manager.killPod(pod, running, undefined, { signal: controller.signal }));
  await s.clock.advance(5_000);
  t.same(stops, [{ id: 'app_web_default_uid-1_0_0', timeout: 30, at: 0 }], 'StopContainer(30) in flight');
  t.notOk(first.settled);

  const reason = new DOMException('grace period shortened', 'AbortError');
  controller.abort(reason);
  await s.clock.advance(0);
  t.ok(first.settled, 'the aborted kill returns without waiting');
  t.equal(first.error, reason, 'it rejects with the signal reason');
  t.notOk(s.runtime.called.includes('stopPodSandbox'), 'an aborted kill goes no further');
  t.equal((await s.runtime.containerStatus('app_web_default_uid-1_0_0')).status?.state, 'CONTAINER_RUNNING');

  const second = watch(s.manager.killPod(pod, running, 1));
  await s.clock.advance(2_000);
  t.ok(second.settled, 'the second kill is done 2 s later');
  t.equal(second.error, undefined);
  t.same(stops[1], { id: 'app_web_default_uid-1_0_0', timeout: 2, at: 5_000 }, 'StopContainer with the 2 s minimum');
  const status = (await s.runtime.containerStatus('app_web_default_uid-1_0_0')).status!;
  t.same([status.state, status.exitCode], ['CONTAINER_EXITED', 137]);
  t.equal(status.finishedAt / 1e6 - start, 7_000, 'killed at 7 s, not at 30 s');
  t.equal(s.clock.pendingTimers(), 0, 'nothing of the first kill is left');
  t.notOk(s.recorder.find('FailedKillPod'));
});

t.test('an aborted kill is not recorded as a failed step even when other containers failed', async (t) => {
  const s = setup();
  const pod = makePod({ containers: [{ name: 'a' }, { name: 'b' }] });
  const running = await runningPod(s, pod);
  s.runtime.ignoreSigterm('b');
  s.runtime.injectError('stopContainer', 'Unavailable');
  const controller = new AbortController();
  const killing = s.manager.killPodWithSyncResult(pod, running, undefined, { signal: controller.signal });
  await s.clock.advance(1_000);
  controller.abort();
  await t.rejects(killing, { name: 'AbortError' }, 'rejects rather than reporting the KillContainerError of a');
  t.notOk(s.runtime.called.includes('stopPodSandbox'));
});

t.test('a signal already aborted: syncPod and killPod reject at once without touching the runtime', async (t) => {
  const s = setup();
  const pod = makePod();
  const running = await runningPod(s, pod);
  s.runtime.resetCalls();
  const controller = new AbortController();
  controller.abort();
  await t.rejects(s.manager.syncPod(pod, await s.manager.getPodStatus('uid-1', 'web', 'default'), [], s.backoff, { signal: controller.signal }), { name: 'AbortError' });
  await t.rejects(s.manager.killPod(pod, running, undefined, { signal: controller.signal }), { name: 'AbortError' });
  t.same(s.runtime.called.filter((m) => m !== 'listPodSandbox' && m !== 'listContainers' && m !== 'podSandboxStatus' && m !== 'containerStatus'), []);
});

t.test('a syncPod blocked in PullImage rejects promptly on abort: no ErrImagePull, no event, no backoff', async (t) => {
  const s = setup();
  s.images.pullDelays.set('registry.example/big:1', 10 * 60_000);
  const pod = makePod({ containers: [{ name: 'app', image: 'registry.example/big:1' }, { name: 'next' }] });
  const controller = new AbortController();
  const reason = new DOMException('pod is terminating', 'AbortError');
  const syncing = watch(s.manager.syncPod(pod, await s.manager.getPodStatus('uid-1', 'web', 'default'), [], s.backoff, { signal: controller.signal }));
  await s.clock.advance(30_000);
  t.ok(s.images.called.includes('pullImage'), 'the pull is in flight');
  t.notOk(syncing.settled);
  controller.abort(reason);
  await s.clock.advance(0);
  t.ok(syncing.settled, 'rejected without the pull finishing');
  t.equal(syncing.error, reason);
  t.notOk(s.recorder.events.some((e) => e.reason === 'Failed'), 'no Failed event');
  t.notOk(s.manager.imageManager.backoff.isInBackOffSinceUpdate('uid-1_registry.example/big:1', s.clock.now()), 'no pull backoff');
  t.notOk(s.runtime.called.includes('createContainer'), 'nothing started after the abort');
  t.equal((await s.images.imageStatus({ image: 'registry.example/big:1' })).image, null);
  t.equal(s.clock.pendingTimers(), 0);
});

t.test('serialized pulls: a pull queued behind a slow one leaves the queue on abort; the next one still runs', async (t) => {
  const s = setup();
  s.images.pullDelays.set('slow:1', 60_000);
  const ensure = (uid: string, image: string, signal?: AbortSignal) =>
    s.manager.imageManager.ensureImageExists(makePod({ uid, containers: [{ name: 'c', image, imagePullPolicy: 'Always' }] }), { name: 'c', image, imagePullPolicy: 'Always' }, [], undefined, '', { signal });
  const slow = watch(ensure('uid-a', 'slow:1'));
  const controller = new AbortController();
  const queued = watch(ensure('uid-b', 'queued:1', controller.signal));
  const after = watch(ensure('uid-c', 'after:1'));
  await s.clock.advance(1_000);
  t.same(s.images.calls.filter((c) => c.method === 'pullImage').length, 1, 'one pull at a time');
  controller.abort();
  await s.clock.advance(0);
  t.ok(queued.settled && isAbortError(queued.error), 'the queued pull gives up at once');
  t.notOk(slow.settled || after.settled);
  await s.clock.advance(59_000);
  t.ok(slow.settled && after.settled, 'the queue went on');
  t.same(
    s.images.calls.filter((c) => c.method === 'pullImage').map((c) => (c.args[0] as { image: string }).image),
    ['slow:1', 'after:1'],
    'the aborted pull never reached the runtime',
  );
});

t.test('a kill aborted during an exec preStop hook: the exec call is cancelled, no FailedPreStopHook', async (t) => {
  const s = setup();
  const pod = makePod({ containers: [{ name: 'app', lifecycle: { preStop: { exec: { command: ['/drain'] } } } }] });
  const running = await runningPod(s, pod);
  let execSignal: AbortSignal | undefined;
  s.runtime.execResults.set('app_web_default_uid-1_0_0', (_cmd, signal) => {
    execSignal = signal;
    return new Promise(() => undefined); // never finishes by itself
  });
  const controller = new AbortController();
  const killing = watch(s.manager.killPod(pod, running, undefined, { signal: controller.signal }));
  await s.clock.advance(3_000);
  controller.abort();
  await s.clock.advance(0);
  t.ok(killing.settled && isAbortError(killing.error));
  t.equal(execSignal?.aborted, true, 'the ExecSync call saw the abort');
  t.notOk(s.recorder.find('FailedPreStopHook'));
  t.equal(s.clock.pendingTimers(), 0);
});

t.test('syncPod aborted while killing an unwanted container rejects and starts nothing', async (t) => {
  const s = setup();
  const pod = makePod({ containers: [{ name: 'app' }] });
  await runningPod(s, pod);
  s.runtime.ignoreSigterm('app');
  const changed = makePod({ containers: [{ name: 'app', image: 'busybox:1.36', args: ['changed'] }] });
  const controller = new AbortController();
  const syncing = watch(s.manager.syncPod(changed, await s.manager.getPodStatus('uid-1', 'web', 'default'), [], s.backoff, { signal: controller.signal }));
  await s.clock.advance(1_000);
  t.ok(s.runtime.called.includes('stopContainer'), 'killing the changed container');
  s.runtime.resetCalls();
  controller.abort();
  await s.clock.advance(0);
  t.ok(syncing.settled && isAbortError(syncing.error));
  t.same(s.runtime.called, [], 'nothing else was done');
  t.equal(s.clock.pendingTimers(), 0);
});
