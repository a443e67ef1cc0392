import t from 'tap';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { isAbortError, podSyncError } from '@kubelet-ts/core';
import { FakeClock } from '@kubelet-ts/core/testing';
import { TerminationOrdering } from '../src/index.js';
import { makePod, setup } from './helpers.js';

type Setup = ReturnType<typeof setup>;

const sidecar = (name: string, extra: Partial<V1Container> = {}): Partial<V1Container> => ({ name, restartPolicy: 'Always', ...extra });

/** A pod with a finished init container, two sidecars and two regular containers. */
function sidecarPod(grace = 30, extra: { sidecarPreStop?: number } = {}): V1Pod {
  return makePod({
    terminationGracePeriodSeconds: grace,
    initContainers: [
      { name: 'init' },
      sidecar('s1', extra.sidecarPreStop ? { lifecycle: { preStop: { sleep: { seconds: extra.sidecarPreStop } } } } : {}),
      sidecar('s2'),
    ],
    containers: [{ name: 'a' }, { name: 'b' }],
  });
}

/** Syncs until every sidecar and regular container runs (the plain init container exits 0 when started). */
async function runAll(s: Setup, pod: V1Pod) {
  for (let i = 0; i < 6; i++) {
    const status = await s.manager.getPodStatus('uid-1', 'web', 'default');
    const result = await s.manager.syncPod(pod, status, [], s.backoff);
    if (podSyncError(result)) throw podSyncError(result);
    for (const [id, c] of s.runtime.containers) {
      if (c.status.metadata?.name === 'init' && c.status.state === 'CONTAINER_RUNNING') s.runtime.setContainerState(id, 'CONTAINER_EXITED', 0);
    }
    const running = new Set([...s.runtime.containers.values()].filter((c) => c.status.state === 'CONTAINER_RUNNING').map((c) => c.status.metadata?.name));
    if (['s1', 's2', 'a', 'b'].every((n) => running.has(n))) return (await s.manager.getPods(false)).find((p) => p.id === 'uid-1')!;
  }
  throw new Error('pod did not come up');
}

function recordStops(s: Setup, since: number) {
  const stops: Array<{ name: string; timeout: number; at: number }> = [];
  const stop = s.runtime.stopContainer.bind(s.runtime);
  s.runtime.stopContainer = (id, timeout, options) => {
    stops.push({ name: id.split('_')[0], timeout, at: s.clock.now() - since });
    return stop(id, timeout, options);
  };
  return stops;
}

t.test('regular containers stop first in parallel, then sidecars in reverse spec order, each within what is left of the grace', async (t) => {
  const s = setup();
  const pod = sidecarPod(30);
  const running = await runAll(s, pod);
  t.same(running.containers.map((c) => c.name).sort(), ['a', 'b', 's1', 's2'], 'the plain init container is not running');
  // a exits 4 s after SIGTERM, b 6 s after; s2 takes 3 s; s1 exits at once.
  s.runtime.stopBehaviors.set('a', { exitAfterMs: 4_000 });
  s.runtime.stopBehaviors.set('b', { exitAfterMs: 6_000 });
  s.runtime.stopBehaviors.set('s2', { exitAfterMs: 3_000 });
  const start = s.clock.now();
  const stops = recordStops(s, start);
  let done = false;
  const killing = s.manager.killPod(pod, running).then(() => (done = true));
  await s.clock.advance(5_999);
  t.same(stops, [
    { name: 'a', timeout: 30, at: 0 },
    { name: 'b', timeout: 30, at: 0 },
  ], 'only the regular containers are stopping while b runs');
  await s.clock.advance(1);
  t.same(stops[2], { name: 's2', timeout: 24, at: 6_000 }, 's2 once a and b have exited, with 30 - 6 s');
  await s.clock.advance(2_999);
  t.equal(stops.length, 3, 's1 waits for s2');
  await s.clock.advance(1);
  t.same(stops[3], { name: 's1', timeout: 21, at: 9_000 }, 's1 after s2, with 30 - 9 s');
  await killing;
  t.ok(done);
  t.same(s.runtime.called.filter((m) => m === 'stopPodSandbox').length, 1, 'the sandbox after every container');
  t.equal(s.clock.pendingTimers(), 0);
});

t.test('when the regular containers outlive the grace period, the sidecars are stopped with the 2 s minimum', async (t) => {
  const s = setup();
  const pod = sidecarPod(10);
  const running = await runAll(s, pod);
  s.runtime.ignoreSigterm('a');
  s.runtime.ignoreSigterm('b');
  const start = s.clock.now();
  const stops = recordStops(s, start);
  const killing = s.manager.killPod(pod, running);
  await s.clock.advance(10_000);
  await killing;
  t.same(stops.slice(0, 2), [
    { name: 'a', timeout: 10, at: 0 },
    { name: 'b', timeout: 10, at: 0 },
  ]);
  t.same(
    stops.slice(2).sort((x, y) => x.name.localeCompare(y.name)),
    [
      { name: 's1', timeout: 2, at: 10_000 },
      { name: 's2', timeout: 2, at: 10_000 },
    ],
    'each sidecar waited its whole grace period at most, then got the minimum',
  );
  t.equal(s.clock.pendingTimers(), 0);
});

t.test("a sidecar's preStop hook runs at once and its time comes off the grace before it waits for its turn", async (t) => {
  const s = setup();
  const pod = sidecarPod(30, { sidecarPreStop: 5 });
  const running = await runAll(s, pod);
  s.runtime.stopBehaviors.set('a', { exitAfterMs: 8_000 });
  const start = s.clock.now();
  const stops = recordStops(s, start);
  const killing = s.manager.killPod(pod, running);
  await s.clock.advance(30_000);
  await killing;
  // s1: preStop 0..5 s (grace 25 left), waits from 5 s until s2 ends at 8 s: 3 s, so 22 s.
  t.same(
    stops.map((x) => `${x.name}@${x.at / 1000}s:${x.timeout}`),
    ['a@0s:30', 'b@0s:30', 's2@8s:22', 's1@8s:22'],
  );
});

t.test('a sidecar-only kill (regular containers already gone) and pods without sidecars do not wait', async (t) => {
  const s = setup();
  const pod = sidecarPod(30);
  const running = await runAll(s, pod);
  const stops = recordStops(s, s.clock.now());
  await s.manager.killPod(pod, { ...running, containers: running.containers.filter((c) => c.name.startsWith('s')) });
  t.same(stops.map((x) => `${x.name}@${x.at}:${x.timeout}`).sort(), ['s1@0:30', 's2@0:30']);
});

t.test('aborting a kill while a sidecar waits for its turn rejects with the reason', async (t) => {
  const s = setup();
  const pod = sidecarPod(30);
  const running = await runAll(s, pod);
  s.runtime.ignoreSigterm('a');
  const controller = new AbortController();
  let outcome: unknown = 'pending';
  const killing = s.manager.killPod(pod, running, undefined, { signal: controller.signal }).then(
    () => (outcome = 'resolved'),
    (err: unknown) => (outcome = err),
  );
  await s.clock.advance(3_000);
  controller.abort();
  await killing;
  t.ok(isAbortError(outcome));
  t.equal(s.clock.pendingTimers(), 0, 'the turn timers are gone');
});

t.test('TerminationOrdering: prerequisites, pre-terminated containers, no wait without grace', async (t) => {
  const clock = new FakeClock();
  const pod = sidecarPod(30);
  const ordering = new TerminationOrdering(pod, ['a', 's1', 's2'], clock);
  t.equal(await ordering.waitForTurn('a', 30), 0, 'regular containers never wait');
  t.equal(await ordering.waitForTurn('s2', 0), 0, 'no grace, no wait');

  let s2Waited: number | undefined;
  let s1Waited: number | undefined;
  void ordering.waitForTurn('s2', 30).then((w) => (s2Waited = w));
  void ordering.waitForTurn('s1', 30).then((w) => (s1Waited = w));
  await clock.advance(2_500);
  t.equal(s2Waited, undefined, 's2 waits for a (b was never running)');
  ordering.containerTerminated('a');
  await clock.advance(0);
  t.equal(s2Waited, 2.5, 'fractional seconds, as Go');
  t.equal(s1Waited, undefined, 's1 waits for s2 too');
  await clock.advance(1_000);
  ordering.containerTerminated('s2');
  await clock.advance(0);
  t.equal(s1Waited, 3.5);
  ordering.containerTerminated('s2');
  t.equal(clock.pendingTimers(), 0);

  const expiring = new TerminationOrdering(pod, ['a', 's2'], clock);
  const waited = expiring.waitForTurn('s2', 4);
  await clock.advance(4_000);
  t.equal(await waited, 4, 'the grace period bounds the wait');
  t.equal(clock.pendingTimers(), 0);
});
