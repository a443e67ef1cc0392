import t from 'tap';
import { containerRestartBackoff } from '@kubelet-ts/core';
import { FakeContainerRuntime } from '../src/testing.js';
import { makePod } from './helpers.js';

t.test('reports what was set and records calls', async (t) => {
  const runtime = new FakeContainerRuntime({ now: () => 42 });
  t.equal(runtime.type(), 'fake');
  runtime.setPods([
    {
      id: 'u1',
      name: 'web',
      namespace: 'default',
      createdAt: 1,
      containers: [
        { id: { type: 'fake', id: 'c1' }, name: 'a', image: 'i', imageId: 'i', hash: 'h', state: 'running', createdAt: 1 },
        { id: { type: 'fake', id: 'c2' }, name: 'b', image: 'i', imageId: 'i', hash: 'h', state: 'exited', createdAt: 1 },
      ],
      sandboxes: [{ id: { type: 'fake', id: 's1' }, state: 'running', createdAt: 1 }],
    },
    { id: 'u2', name: 'gone', namespace: 'default', createdAt: 1, containers: [], sandboxes: [{ id: { type: 'fake', id: 's2' }, state: 'exited', createdAt: 1 }] },
  ]);
  t.same((await runtime.getPods(true)).map((p) => p.id), ['u1', 'u2']);
  const running = await runtime.getPods(false);
  t.same(running.map((p) => p.id), ['u1']);
  t.same(running[0].containers.map((c) => c.name), ['a']);

  t.same(await runtime.getPodStatus('u9', 'x', 'ns'), { id: 'u9', name: 'x', namespace: 'ns', ips: [], containerStatuses: [], sandboxStatuses: [], timestamp: 42 });
  runtime.setPodStatus({ id: 'u1', name: 'web', namespace: 'default', ips: ['1.2.3.4'], containerStatuses: [], sandboxStatuses: [], timestamp: 7 });
  t.same((await runtime.getPodStatus('u1', 'web', 'default')).ips, ['1.2.3.4']);

  const pod = makePod();
  const backoff = containerRestartBackoff();
  runtime.syncPodResult = { syncResults: [{ action: 'StartContainer', target: 'app', error: 'CrashLoopBackOff', message: 'back-off' }] };
  const result = await runtime.syncPod(pod, await runtime.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.equal(result.syncResults[0].error, 'CrashLoopBackOff');
  t.equal(runtime.syncPodCalls[0].pod, pod);
  t.same(runtime.syncedPodUids(), ['uid-1']);
  await runtime.killPod(pod, running[0], 3);
  t.equal(runtime.killPodCalls[0].gracePeriodOverrideSeconds, 3);
  t.same(runtime.called, ['getPods', 'getPods', 'getPodStatus', 'getPodStatus', 'getPodStatus', 'syncPod', 'killPod']);
});

t.test('injected errors: once, or until cleared', async (t) => {
  const runtime = new FakeContainerRuntime();
  runtime.injectError('getPods', new Error('once'));
  await t.rejects(runtime.getPods(true), /once/);
  t.same(await runtime.getPods(true), []);
  runtime.injectError('syncPod', new Error('always'), { persistent: true });
  await t.rejects(runtime.syncPod(makePod(), await runtime.getPodStatus('uid-1', 'web', 'default'), [], containerRestartBackoff()), /always/);
  await t.rejects(runtime.syncPod(makePod(), await runtime.getPodStatus('uid-1', 'web', 'default'), [], containerRestartBackoff()), /always/);
  runtime.clearErrors();
  t.same((await runtime.syncPod(makePod(), await runtime.getPodStatus('uid-1', 'web', 'default'), [], containerRestartBackoff())).syncResults, []);
});

t.test('simulate: syncPod makes the pod run, killPod stops it', async (t) => {
  const runtime = new FakeContainerRuntime({ simulate: true, now: () => 1000 });
  const pod = makePod({ containers: [{ name: 'a' }, { name: 'b' }] });
  await runtime.syncPod(pod, await runtime.getPodStatus('uid-1', 'web', 'default'), [], containerRestartBackoff());
  let status = await runtime.getPodStatus('uid-1', 'web', 'default');
  t.same(status.containerStatuses.map((c) => `${c.name}:${c.state}`), ['a:running', 'b:running']);
  t.same(status.sandboxStatuses.map((s) => s.state), ['SANDBOX_READY']);
  const firstIds = status.containerStatuses.map((c) => c.id.id);
  await runtime.syncPod(pod, status, [], containerRestartBackoff());
  status = await runtime.getPodStatus('uid-1', 'web', 'default');
  t.same(status.containerStatuses.map((c) => c.id.id), firstIds, 'a second sync keeps the same containers');
  const [running] = await runtime.getPods(false);
  await runtime.killPod(pod, running);
  status = await runtime.getPodStatus('uid-1', 'web', 'default');
  t.same(status.containerStatuses.map((c) => `${c.name}:${c.state}:${c.exitCode}`), ['a:exited:137', 'b:exited:137']);
  t.same(await runtime.getPods(false), []);
  t.equal((await runtime.getPods(true)).length, 1);
});

t.test('simulate: a host-network pod reports no pod IP of its own, as real runtimes', async (t) => {
  const runtime = new FakeContainerRuntime({ simulate: true, now: () => 1000 });
  await runtime.syncPod(makePod({ hostNetwork: true }), await runtime.getPodStatus('uid-1', 'web', 'default'), [], containerRestartBackoff());
  const status = await runtime.getPodStatus('uid-1', 'web', 'default');
  t.same(status.ips, []);
  t.equal(status.sandboxStatuses[0].ip, '');
  await runtime.syncPod(makePod({ uid: 'uid-2' }), await runtime.getPodStatus('uid-2', 'web', 'default'), [], containerRestartBackoff());
  t.same((await runtime.getPodStatus('uid-2', 'web', 'default')).ips, ['10.0.0.1']);
});

t.test('the signal of syncPod and killPod is recorded; an aborted one rejects with its reason', async (t) => {
  const runtime = new FakeContainerRuntime();
  const controller = new AbortController();
  const pod = makePod();
  await runtime.syncPod(pod, await runtime.getPodStatus('uid-1', 'web', 'default'), [], containerRestartBackoff(), { signal: controller.signal });
  t.equal(runtime.syncPodCalls[0].signal, controller.signal);
  const reason = new DOMException('shortened', 'AbortError');
  controller.abort(reason);
  const runningPod = { id: 'uid-1', name: 'web', namespace: 'default', createdAt: 0, containers: [], sandboxes: [] };
  await t.rejects(runtime.killPod(pod, runningPod, 1, { signal: controller.signal }), reason);
  t.equal(runtime.killPodCalls[0].signal, controller.signal);
  t.equal(runtime.killPodCalls[0].gracePeriodOverrideSeconds, 1);
});
