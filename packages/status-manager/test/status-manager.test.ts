// The status manager against an in-memory client and a fake clock: every rule of the sync.
import t from 'tap';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { KubeletStatusManager, generateAPIPodStatus, type StatusManagerOptions } from '../src/index.js';
import { FakeKubeClient, FakePodManager } from '../src/testing.js';
import { T0, container, makePod, runtimeStatus, waitFor } from './helpers.js';

type Host = { teardown(fn: () => unknown): void };

function setup(t: Host, opts: Partial<StatusManagerOptions> & { start?: boolean } = {}) {
  const clock = new FakeClock(T0);
  const logger = new RecordingLogger();
  const client = new FakeKubeClient();
  const podManager = new FakePodManager();
  const running = new Set<string>();
  const sm = new KubeletStatusManager({
    kubeClient: client,
    podManager,
    clock,
    logger,
    podDeletionSafety: { podCouldHaveRunningContainers: (uid) => running.has(uid) },
    ...opts,
  });
  if (opts.start !== false) sm.start();
  t.teardown(async () => {
    await sm.stop();
  });
  /** Seeds the pod in the fake API server and the pod manager; returns the API copy. */
  const addPod = (pod: V1Pod): V1Pod => {
    const stored = client.putPod(pod);
    podManager.addPod(stored);
    return stored;
  };
  const settle = async () => {
    await clock.advance(0);
    await sm.whenIdle();
  };
  return { clock, logger, client, podManager, sm, addPod, settle, running };
}

function runningStatus(pod: V1Pod, now = T0): V1PodStatus {
  return generateAPIPodStatus({ pod, status: runtimeStatus(pod, [container(pod.spec!.containers[0].name, 'running')]), now });
}

t.test('a changed status is written as one strategic merge patch with uid and resourceVersion, without a GET', async (t) => {
  const { client, sm, addPod, settle } = setup(t);
  const pod = addPod(makePod('web'));
  sm.setPodStatus(pod, runningStatus(pod));
  await settle();
  const patches = client.callsOf('patchNamespacedPodStatus');
  t.equal(patches.length, 1);
  t.equal(client.callsOf('readNamespacedPod').length, 0, 'the pod manager\'s copy was the base');
  const body = patches[0].body as any;
  t.same(body.metadata, { uid: pod.metadata!.uid, resourceVersion: pod.metadata!.resourceVersion });
  t.equal(body.status.phase, 'Running');
  t.equal(body.status.containerStatuses.length, 1, 'container statuses sent whole');
  const stored = client.getPod('default', 'web')!;
  t.equal(stored.status?.phase, 'Running');
  t.equal(stored.status?.podIP, '10.88.0.5');
  t.same(sm.statusVersion(pod.metadata!.uid!), { version: 1, written: 1 });
  t.equal(sm.getPodStatus(pod.metadata!.uid!)?.phase, 'Running');
  t.equal(sm.stats().patches, 1);
});

t.test('changes before a sync are batched into one patch; an identical status is ignored', async (t) => {
  const { client, sm, addPod, settle } = setup(t);
  const pod = addPod(makePod('web'));
  const base = runningStatus(pod);
  for (let i = 0; i < 5; i++) sm.setPodStatus(pod, { ...base, message: `m${i}` });
  t.equal(sm.statusVersion(pod.metadata!.uid!).version, 5);
  await settle();
  t.equal(client.callsOf('patchNamespacedPodStatus').length, 1, 'one patch for five versions');
  t.equal(client.getPod('default', 'web')!.status?.message, 'm4', 'the latest wins');
  sm.setPodStatus(pod, { ...base, message: 'm4' });
  t.equal(sm.statusVersion(pod.metadata!.uid!).version, 5, 'same status: no new version');
  await settle();
  t.equal(client.callsOf('patchNamespacedPodStatus').length, 1);
});

t.test('a second change sends only what changed, against the previous answer', async (t) => {
  const { client, sm, addPod, settle, clock } = setup(t);
  const pod = addPod(makePod('web'));
  const first = runningStatus(pod);
  sm.setPodStatus(pod, first);
  await settle();
  await clock.advance(5000);
  const second = structuredClone(first);
  second.containerStatuses![0].ready = false;
  second.conditions = second.conditions!.map((c) => (c.type === 'Ready' || c.type === 'ContainersReady' ? { type: c.type, status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [app]' } : c));
  sm.setPodStatus(pod, second);
  await settle();
  const body = client.callsOf('patchNamespacedPodStatus')[1].body as any;
  t.same(Object.keys(body.status).sort(), ['$setElementOrder/conditions', 'conditions', 'containerStatuses']);
  t.same(body.status.conditions.map((c: any) => c.type).sort(), ['ContainersReady', 'Ready']);
  t.equal(body.status.conditions[0].lastTransitionTime, '2026-01-01T00:00:05Z', 'a transition gets a new time');
  t.equal(client.callsOf('readNamespacedPod').length, 0);
  const ready = client.getPod('default', 'web')!.status!.conditions!.find((c) => c.type === 'Initialized')!;
  t.equal((ready.lastTransitionTime as Date).getTime(), T0, 'unchanged conditions keep their time');
});

t.test('standalone: no client, statuses only cached', async (t) => {
  const logger = new RecordingLogger();
  const podManager = new FakePodManager();
  const sm = new KubeletStatusManager({ podManager, logger, clock: new FakeClock(T0) });
  sm.start();
  const pod = makePod('solo');
  podManager.addPod(pod);
  sm.setPodStatus(pod, runningStatus(pod));
  t.equal(sm.getPodStatus('uid-solo')?.phase, 'Running');
  t.ok(logger.find('Kubernetes client is nil, not starting status manager'));
  await sm.stop();
});

t.test('terminal phases are final; refused transitions keep the old status', async (t) => {
  const { sm, addPod, logger } = setup(t, { start: false });
  const pod = addPod(makePod('job', { restartPolicy: 'Never' }));
  const done = generateAPIPodStatus({ pod, status: runtimeStatus(pod, [container('app', 'exited', { exitCode: 0, id: { type: 'containerd', id: 'c1' } })]), now: T0 });
  sm.setPodStatus(pod, done);
  t.equal(sm.getPodStatus('uid-job')!.phase, 'Succeeded');
  sm.setPodStatus(pod, { ...done, phase: 'Running' });
  t.equal(sm.getPodStatus('uid-job')!.phase, 'Succeeded', 'not moved back');
  t.ok(logger.find('Pod attempted illegal phase transition'));
  const back = generateAPIPodStatus({ pod: { ...pod, status: {} }, status: runtimeStatus(pod, [container('app', 'running', { id: { type: 'containerd', id: 'c1' } })]), now: T0 });
  sm.setPodStatus(pod, back);
  t.ok(logger.find('Status update on pod aborted'), 'terminated -> running of the same container refused');
  t.equal(sm.getPodStatus('uid-job')!.containerStatuses![0].state?.terminated?.exitCode, 0);
});

t.test('an evicted pod whose container exits 0 stays Failed with reason Evicted', async (t) => {
  const { sm, addPod } = setup(t, { start: false });
  const pod = addPod(makePod('evicted'));
  const running = generateAPIPodStatus({ pod, status: runtimeStatus(pod, [container('app', 'running', { id: { type: 'containerd', id: 'c1' } })]), now: T0 });
  sm.setPodStatus(pod, { ...running, phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory. ' });
  const exited = generateAPIPodStatus({ pod, status: runtimeStatus(pod, [container('app', 'exited', { exitCode: 0, id: { type: 'containerd', id: 'c1' } })]), podIsTerminal: true, now: T0 });
  t.equal(exited.phase, 'Succeeded', 'on its own the exit would make the pod Succeeded');
  sm.setPodStatus(pod, exited);
  const status = sm.getPodStatus('uid-evicted')!;
  t.same([status.phase, status.reason, status.message], ['Failed', 'Evicted', 'The node was low on resource: memory. ']);
  t.equal(status.containerStatuses![0].state?.terminated?.exitCode, 0, 'the container status is the new one');
});

t.test('setContainerReadiness and setContainerStartup update the cached status and conditions', async (t) => {
  const { sm, addPod, settle, client, logger } = setup(t);
  const pod = addPod(makePod('web'));
  sm.setContainerReadiness('uid-web', 'containerd://x', true);
  t.ok(logger.find('Container readiness changed before pod has synced'));
  const s = runningStatus(pod);
  const id = s.containerStatuses![0].containerID!;
  sm.setPodStatus(pod, s);
  sm.setContainerReadiness('uid-web', id, false);
  let cached = sm.getPodStatus('uid-web')!;
  t.equal(cached.containerStatuses![0].ready, false);
  t.equal(cached.conditions!.find((c) => c.type === 'Ready')!.status, 'False');
  t.equal(cached.conditions!.find((c) => c.type === 'ContainersReady')!.message, 'containers with unready status: [app]');
  sm.setContainerReadiness('uid-web', 'containerd://nope', true);
  t.ok(logger.find('Container readiness changed for unknown container'));
  sm.setContainerStartup('uid-web', id, false);
  cached = sm.getPodStatus('uid-web')!;
  t.equal(cached.containerStatuses![0].started, false);
  t.equal(sm.statusVersion('uid-web').version, 3);
  sm.setContainerReadiness('uid-gone', id, true);
  await settle();
  t.equal(client.getPod('default', 'web')!.status!.containerStatuses![0].ready, false);
});

t.test('terminatePod: missing container states become terminated-unknown and the pod Failed', async (t) => {
  const { sm, addPod } = setup(t, { start: false });
  const pod = addPod(makePod('web', { containers: ['a', 'b'] }));
  const s = generateAPIPodStatus({ pod, status: runtimeStatus(pod, [container('a', 'running'), container('b', 'exited', { exitCode: 0 })]), now: T0 });
  sm.setPodStatus(pod, s);
  sm.terminatePod(pod);
  const after = sm.getPodStatus('uid-web')!;
  t.equal(after.phase, 'Failed');
  const a = after.containerStatuses!.find((c) => c.name === 'a')!;
  t.same(a.state, { terminated: { reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated', exitCode: 137 } });
  t.equal(after.containerStatuses!.find((c) => c.name === 'b')!.state!.terminated!.exitCode, 0, 'terminated ones are kept');
  const staticPod = addPod(makePod('static', { annotations: { 'kubernetes.io/config.source': 'file' } }));
  sm.setPodStatus(staticPod, runningStatus(staticPod));
  sm.terminatePod(staticPod);
  t.equal(sm.getPodStatus('uid-static')!.phase, 'Running', 'static pods are not made terminal (Go #116484)');
});

t.test('a 409 refetches the pod and retries; a transport error retries with backoff', async (t) => {
  const { sm, addPod, settle, client, clock } = setup(t);
  const pod = addPod(makePod('web'));
  client.failNext('patchNamespacedPodStatus', 409);
  sm.setPodStatus(pod, runningStatus(pod));
  await settle();
  t.equal(client.callsOf('patchNamespacedPodStatus').length, 2);
  t.equal(client.callsOf('readNamespacedPod').length, 1, 'refetched');
  t.equal(sm.stats().conflicts, 1);
  t.equal(client.getPod('default', 'web')!.status?.phase, 'Running');

  // Someone else changes the pod: our copy is stale, the patch gets 409, the retry wins.
  client.putPod({ ...client.getPod('default', 'web')!, metadata: { ...client.getPod('default', 'web')!.metadata, labels: { x: '1' } } });
  sm.setPodStatus(pod, { ...runningStatus(pod), message: 'second' });
  await settle();
  t.equal(client.getPod('default', 'web')!.status?.message, 'second');
  t.equal(sm.stats().conflicts, 2);

  client.failNext('patchNamespacedPodStatus', new Error('connect ECONNREFUSED'), 3);
  sm.setPodStatus(pod, { ...runningStatus(pod), message: 'third' });
  await clock.advance(0);
  t.equal(sm.stats().failures, 1);
  t.equal(client.getPod('default', 'web')!.status?.message, 'second');
  await waitFor(() => client.getPod('default', 'web')!.status?.message === 'third', { clock, stepMs: 100, what: 'retry' });
  t.equal(sm.stats().failures, 3);
  t.ok(clock.now() - T0 >= 200 + 400 + 800, 'exponential backoff between tries');
});

t.test('a pod recreated under the same name: the old status is dropped, the new pod untouched', async (t) => {
  const { sm, addPod, settle, client } = setup(t);
  const pod = addPod(makePod('web'));
  client.pods.delete('default/web');
  client.putPod(makePod('web', { uid: 'uid-new' }));
  sm.setPodStatus(pod, runningStatus(pod));
  await settle();
  t.equal(client.callsOf('patchNamespacedPodStatus').length, 1, 'one try, refused (422: uid is immutable)');
  t.equal(client.callsOf('readNamespacedPod').length, 1);
  t.equal(sm.getPodStatus('uid-web'), undefined, 'status forgotten');
  t.notOk(client.getPod('default', 'web')!.status?.phase === 'Running');
});

t.test('a deleted pod whose containers are gone is removed with grace period 0 and a uid precondition', async (t) => {
  const { sm, addPod, settle, client, clock, running, podManager } = setup(t);
  let pod = addPod(makePod('web'));
  sm.setPodStatus(pod, runningStatus(pod));
  await settle();
  // The API server marks it deleted; the kubelet stops it.
  await client.deleteNamespacedPod({ name: 'web', namespace: 'default', body: { gracePeriodSeconds: 30 } });
  pod = client.getPod('default', 'web')!;
  podManager.addPod(pod);
  running.add('uid-web');
  sm.terminatePod(pod);
  await settle();
  t.equal(client.getPod('default', 'web')!.status?.phase, 'Running', 'containers could still run: terminal phase held back');
  t.equal(client.callsOf('deleteNamespacedPod').length, 1, 'only the graceful delete so far');
  running.delete('uid-web');
  await clock.advance(10_000);
  await settle();
  const del = client.callsOf('deleteNamespacedPod');
  t.equal(del.length, 2, 'reconcile sent the phase and deleted');
  t.same(del[1].body, { gracePeriodSeconds: 0, preconditions: { uid: 'uid-web' } });
  t.equal(client.getPod('default', 'web'), undefined);
  t.equal(sm.getPodStatus('uid-web'), undefined);
});

t.test('static pods: written to the mirror pod, skipped until one exists', async (t) => {
  const { sm, podManager, settle, client, clock } = setup(t);
  const staticPod = makePod('etcd', { uid: 'static-uid', annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': 'h1' } });
  podManager.addPod(staticPod);
  sm.setPodStatus(staticPod, runningStatus(staticPod));
  await settle();
  t.equal(client.calls.length, 0, 'no mirror pod yet');
  const mirror = client.putPod(makePod('etcd', { uid: 'mirror-uid', annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.mirror': 'h1' } }));
  podManager.addPod(mirror);
  await clock.advance(10_000);
  await settle();
  t.equal(client.getPod('default', 'etcd')!.status?.phase, 'Running');
  t.equal((client.callsOf('patchNamespacedPodStatus')[0].body as any).metadata.uid, 'mirror-uid');
  t.same(sm.statusVersion('static-uid'), { version: 1, written: 1 });
});

t.test('reconcile every sync period restores a status changed behind our back', async (t) => {
  const { sm, addPod, settle, client, clock, podManager } = setup(t);
  const pod = addPod(makePod('web'));
  sm.setPodStatus(pod, runningStatus(pod));
  await settle();
  // Someone rewrites the phase; the pod manager (watch) sees it.
  await client.patchNamespacedPodStatus({ name: 'web', namespace: 'default', body: { status: { phase: 'Unknown' } } });
  podManager.addPod(client.getPod('default', 'web')!);
  await clock.advance(10_000);
  await settle();
  t.equal(client.getPod('default', 'web')!.status?.phase, 'Running');
});

t.test('an API server that drops status.hostIPs (v1.20) is not patched again every sync period for it', async (t) => {
  const { sm, addPod, settle, client, clock, podManager } = setup(t);
  const pod = addPod(makePod('web'));
  const status = { ...runningStatus(pod), hostIP: '10.0.0.7', hostIPs: [{ ip: '10.0.0.7' }] };
  sm.setPodStatus(pod, status);
  await settle();
  t.equal(client.callsOf('patchNamespacedPodStatus').length, 1);
  // The old server kept everything but hostIPs.
  const stored = client.getPod('default', 'web')!;
  delete stored.status!.hostIPs;
  client.putPod(stored);
  podManager.addPod(client.getPod('default', 'web')!);
  await clock.advance(10_000);
  await settle();
  await clock.advance(10_000);
  await settle();
  t.equal(client.callsOf('patchNamespacedPodStatus').length, 1, 'no reconcile patch for the field the server drops');
  // A different hostIP there is a real difference, reconciled.
  await client.patchNamespacedPodStatus({ name: 'web', namespace: 'default', body: { status: { hostIP: '10.0.0.8' } } });
  podManager.addPod(client.getPod('default', 'web')!);
  const before = client.callsOf('patchNamespacedPodStatus').length;
  await clock.advance(10_000);
  await settle();
  t.equal(client.callsOf('patchNamespacedPodStatus').length, before + 1, 'a changed hostIP is reconciled');
  t.equal(client.getPod('default', 'web')!.status?.hostIP, '10.0.0.7');
});

t.test('rate limited: qps 1 / burst 2', async (t) => {
  const { sm, addPod, settle, client, clock } = setup(t, { qps: 1, burst: 2 });
  const pods = [1, 2, 3, 4].map((i) => addPod(makePod(`p${i}`)));
  for (const p of pods) sm.setPodStatus(p, runningStatus(p));
  await clock.advance(0);
  t.equal(client.callsOf('patchNamespacedPodStatus').length, 2, 'the burst');
  await clock.advance(1000);
  t.equal(client.callsOf('patchNamespacedPodStatus').length, 3);
  await clock.advance(1000);
  await settle();
  t.equal(client.callsOf('patchNamespacedPodStatus').length, 4);
});

t.test('removeOrphanedStatuses, and stop() leaves no timers', async (t) => {
  const { sm, addPod, clock } = setup(t);
  const a = addPod(makePod('a'));
  const b = addPod(makePod('b'));
  sm.setPodStatus(a, runningStatus(a));
  sm.setPodStatus(b, runningStatus(b));
  sm.removeOrphanedStatuses(['uid-a']);
  t.ok(sm.getPodStatus('uid-a'));
  t.equal(sm.getPodStatus('uid-b'), undefined);
  await sm.stop();
  t.equal(clock.pendingTimers(), 0);
  sm.start();
  await sm.stop();
  t.equal(clock.pendingTimers(), 0, 'restartable');
});
