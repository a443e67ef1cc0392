import t from 'tap';
import { makeTestPod } from '@kubelet-ts/pod-config/testing';
import { setupKubelet as setup } from './kubelet-env.js';
import { Tokens } from '../src/index.js';

t.test('pods added by a source are synced, resynced and killed when removed', async (t) => {
  const env = setup();
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  await env.source.add(pod);
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.runtime.syncPodCalls.length >= 1);
  t.equal(env.runtime.syncPodCalls.length, 1, 'the new pod is synced once');
  t.equal(env.runtime.syncPodCalls[0].pod.metadata?.name, 'web');
  await env.relist();
  await env.advance(300);
  t.equal(env.kubelet.getPodStatus(pod.metadata!.uid!)?.phase, 'Pending', 'status computed before the first sync');

  // A PLEG event for the pod triggers a sync with fresh status.
  env.pleg.push({ id: pod.metadata!.uid!, type: 'ContainerStarted', data: 'x' });
  // The worker waits for a cached status newer than its last sync, which may still be running on a busy machine:
  // relist (as the PLEG would, periodically) until the pod shows Running.
  const running = () => env.kubelet.getPodStatus(pod.metadata!.uid!)?.phase === 'Running';
  for (let i = 0; i < 30 && !running(); i++) {
    await env.relist();
    await env.advance(500);
    await env.settle(running, 200);
  }
  t.equal(env.runtime.syncPodCalls.length, 2, 'PLEG events sync the pod');
  t.equal(env.kubelet.getPodStatus(pod.metadata!.uid!)?.phase, 'Running');

  await env.source.remove(pod);
  await env.relist();
  await env.advance(500);
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.runtime.killPodCalls.length >= 1);
  t.equal(env.runtime.killPodCalls.length, 1, 'a removed pod is killed');
  t.equal(env.runtime.killPodCalls[0].pod?.metadata?.name, 'web');
});

t.test('the syncLoop skips pod syncs with growing backoff while the runtime reports errors', async (t) => {
  const env = setup();
  t.teardown(env.stop);
  env.runtime.runtimeStatus = { conditions: [{ type: 'RuntimeReady', status: false, reason: 'NotReady', message: 'runtime is starting' }] };
  await env.source.add(makeTestPod({ name: 'web' }));
  await env.relist();
  await env.advance(3000);
  t.equal(env.runtime.syncPodCalls.length, 0, 'no sync while the runtime is not ready');
  const skips = env.logger.entries.filter((e) => e.msg === 'Skipping pod synchronization');
  t.ok(skips.length >= 3 && skips.length <= 8, `backoff doubles from 100 ms: ${skips.length} skips in 3 s`);
  t.match(String(skips[0].err), /container runtime/);
  env.runtime.runtimeStatus = {
    conditions: [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ],
  };
  await env.advance(6000);
  await env.relist();
  await env.advance(1000);
  t.ok(env.runtime.syncPodCalls.length >= 1, 'syncing resumes once the runtime is ready');
});

t.test('housekeeping terminates runtime pods that no source wants', async (t) => {
  const env = setup();
  t.teardown(env.stop);
  env.runtime.setPods([
    {
      id: 'orphan-uid',
      name: 'orphan',
      namespace: 'default',
      createdAt: env.clock.now(),
      containers: [{ id: { type: 'fake', id: 'c1' }, name: 'app', image: 'busybox', imageId: 'i', hash: 'h', state: 'running', createdAt: env.clock.now() }],
      sandboxes: [{ id: { type: 'fake', id: 's1' }, state: 'running', createdAt: env.clock.now() }],
    },
  ]);
  await env.source.set();
  await env.advance(3000);
  await env.relist();
  await env.advance(3000);
  const kill = env.runtime.killPodCalls.find((k) => k.runningPod.id === 'orphan-uid');
  t.ok(kill, 'the orphan is killed');
  t.equal(kill?.pod, undefined, 'with no spec');
  t.equal(kill?.gracePeriodOverrideSeconds, 1, 'and the orphan grace period');
});

t.test("sources are ready for the kubelet only once the sync loop has handled their first state (Go: sourcesReady's seen sources)", async (t) => {
  const env = setup();
  t.teardown(env.stop);
  const podConfig = env.container.resolve<{ podConfig: { sourcesReady(): boolean } }>(Tokens.PodSourceConfig).podConfig;
  t.notOk(env.kubelet.sourcesReady(), 'not ready before the source said anything');
  const pod = makeTestPod({ name: 'kept', containers: ['app'] });
  await env.source.set(pod);
  t.ok(podConfig.sourcesReady(), 'pod-config has seen the source');
  // What waits for the sources (volume teardown, container GC, housekeeping) must find the source's pods in the pod
  // manager: a volume of a running pod found on disk after a restart would otherwise be torn down as orphaned.
  t.equal(env.kubelet.sourcesReady(), env.kubelet.podManager.getPods().length === 1, 'ready only with the pod in the pod manager');
  await env.settle(() => env.kubelet.sourcesReady());
  t.ok(env.kubelet.sourcesReady(), 'ready once the sync loop has handled the SET');
  t.equal(env.kubelet.podManager.getPods()[0]?.metadata?.name, 'kept');
});

t.test('the sync loop keeps no reference to the updates and events it has handled', async (t) => {
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const env = setup();
  t.teardown(env.stop);
  const refs: WeakRef<object>[] = [];
  // Each event carries a payload only it references: once the loop has handled the event, nothing should hold it
  // (the loop's reads of its sources were once raced against one abort promise, which kept every item read).
  const push = (i: number) => {
    const data = { payload: new Array(1000).fill(i) };
    refs.push(new WeakRef(data));
    // The event's data is a container id (a string, which a WeakRef cannot hold): an object stands in, unread.
    env.pleg.push({ id: `unknown-${i}`, type: 'ContainerDied', data: data as unknown as string });
  };
  for (let i = 0; i < 100; i++) {
    push(i);
    if (i % 10 === 9) await env.advance(100);
  }
  await env.advance(1000);
  env.logger.entries.length = 0; // the test's recording logger keeps what was logged, events included
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  // The last event read may stay in the reading loop's frame while it waits for the next; none before it.
  t.ok(refs.slice(0, -1).every((r) => r.deref() === undefined), 'every handled event before the last was collected');
});

t.test("a pod's data directories are made again when it comes back with its UID after housekeeping removed them", async (t) => {
  const { existsSync } = await import('node:fs');
  const { join } = await import('node:path');
  const env = setup();
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  const uid = pod.metadata!.uid!;
  const rootDir = env.container.resolve<{ rootDir: string }>(Tokens.Config).rootDir;
  const volumesDir = join(rootDir, 'pods', uid, 'volumes');
  await env.source.add(pod);
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.runtime.syncPodCalls.length >= 1 && existsSync(volumesDir));
  t.ok(existsSync(volumesDir), 'the first sync makes the data directories');
  // Deleted gracefully, as through the API: the pod terminates while its source still has it, so its directory stays.
  await env.source.update({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(env.clock.now()), deletionGracePeriodSeconds: 0 } });
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.runtime.killPodCalls.length >= 1);
  await env.relist();
  await env.advance(500);
  await env.source.remove(pod);
  for (let i = 0; i < 20 && existsSync(join(rootDir, 'pods', uid)); i++) {
    await env.relist();
    await env.advance(500);
    await env.kubelet.handlePodCleanups();
  }
  t.notOk(existsSync(join(rootDir, 'pods', uid)), 'housekeeping removed the directory of the pod no source and no worker knows');
  // The same UID again (a static pod moved out and back): its directories must be made again.
  await env.source.add(pod);
  for (let i = 0; i < 20 && !existsSync(volumesDir); i++) {
    await env.relist();
    await env.advance(500);
    await env.kubelet.handlePodCleanups();
    await env.settle(() => existsSync(volumesDir), 200);
  }
  t.ok(existsSync(volumesDir), 'the data directories are there again');
});
