// Against @kubelet-ts/test-apiserver (the real REST wire format) with the real @kubernetes/client-node.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { startTestApiServer, type TestApiServer } from '@kubelet-ts/test-apiserver';
import { BasicMirrorClient, KubeletEventRecorder, KubeletStatusManager, generateAPIPodStatus, syncMirrorPod, type NodeRef } from '../src/index.js';
import { FakePodManager } from '../src/testing.js';
import { T0, container, makePod, runtimeStatus, waitFor } from './helpers.js';

type Host = { teardown(fn: () => unknown): void };

async function setup(t: Host) {
  const server = await startTestApiServer({ bookmarkIntervalMs: 0 });
  t.teardown(() => server.close());
  const dir = await mkdtemp(join(tmpdir(), 'status-manager-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const kc = new KubeConfig();
  kc.loadFromFile(await server.writeKubeconfig(join(dir, 'kubeconfig')));
  const core = kc.makeApiClient(CoreV1Api);
  const clock = new FakeClock(Date.now());
  const logger = new RecordingLogger();
  const podManager = new FakePodManager();
  const sm = new KubeletStatusManager({ kubeClient: core, podManager, clock, logger });
  sm.start();
  t.teardown(() => sm.stop());
  const createPod = async (pod: V1Pod): Promise<V1Pod> => {
    const { uid: _uid, ...metadata } = pod.metadata!;
    const created = await core.createNamespacedPod({ namespace: 'default', body: { ...pod, metadata } });
    podManager.addPod(created);
    return created;
  };
  return { server, core, clock, logger, podManager, sm, createPod };
}

const storedStatus = (server: TestApiServer, name: string, ns = 'default'): any => (server.store.get('pods', ns, name)?.status ?? {}) as any;

function statusFor(pod: V1Pod, now: number, message?: string) {
  const rs = runtimeStatus(pod, [
    container('app', 'exited', { exitCode: 1, createdAt: T0, reason: 'Error' }),
    container('app', 'running', { restartCount: 1, createdAt: T0 + 10 }),
    container('side', 'running', { createdAt: T0 + 5 }),
  ], { ips: ['10.88.0.9'] });
  const s = generateAPIPodStatus({ pod, status: rs, now });
  if (message) s.message = message;
  return s;
}

t.test('a pod created in the API server gets its status: phase, conditions, container states, IPs, restart counts', async (t) => {
  const { server, clock, sm, createPod } = await setup(t);
  const pod = await createPod(makePod('web', { containers: ['app', 'side'] }));
  server.clearRequests();
  sm.setPodStatus(pod, statusFor(pod, clock.now()));
  await waitFor(() => storedStatus(server, 'web').phase === 'Running', { clock, what: 'status' });
  const st = storedStatus(server, 'web');
  t.same(st.conditions.map((c: any) => `${c.type}=${c.status}`).sort(), ['ContainersReady=True', 'Initialized=True', 'PodReadyToStartContainers=True', 'PodScheduled=True', 'Ready=True']);
  t.match(st.conditions[0].lastTransitionTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, 'RFC 3339 times');
  const app = st.containerStatuses.find((c: any) => c.name === 'app');
  t.equal(app.restartCount, 1);
  t.ok(app.state.running.startedAt);
  t.equal(app.lastState.terminated.exitCode, 1);
  t.equal(app.lastState.terminated.reason, 'Error');
  t.match(app.containerID, /^containerd:\/\//);
  t.same(st.podIPs, [{ ip: '10.88.0.9' }]);
  t.equal(st.podIP, '10.88.0.9');
  t.equal(st.qosClass, 'BestEffort', 'the server\'s QoS class is kept');
  t.ok(st.startTime);
  const reqs = server.requests.filter((r) => r.resource === 'pods');
  t.same(reqs.map((r) => `${r.verb}/${r.subresource ?? ''}/${r.status}`), ['patch/status/200'], 'one request: no GET before the patch');
  t.equal(reqs[0].contentType, 'application/strategic-merge-patch+json');

  // Readiness flips: only the changed conditions and the container statuses travel.
  const id = sm.getPodStatus(pod.metadata!.uid!)!.containerStatuses!.find((c) => c.name === 'side')!.containerID!;
  server.clearRequests();
  const before = server.store.get('pods', 'default', 'web')!;
  sm.setContainerReadiness(pod.metadata!.uid!, id, false);
  await waitFor(() => storedStatus(server, 'web').conditions.find((c: any) => c.type === 'Ready').status === 'False', { clock, what: 'not ready' });
  const ready = storedStatus(server, 'web').conditions.find((c: any) => c.type === 'Ready');
  t.equal(ready.message, 'containers with unready status: [side]');
  t.equal(storedStatus(server, 'web').conditions.find((c: any) => c.type === 'Initialized').lastTransitionTime, (before.status as any).conditions.find((c: any) => c.type === 'Initialized').lastTransitionTime);
  t.same(server.requests.map((r) => `${r.verb}/${r.subresource}`), ['patch/status']);
  t.ok(server.requests[0].requestBytes < 2000, `a small patch (${server.requests[0].requestBytes} bytes)`);
});

t.test('a stale update gets a 409 and is retried', async (t) => {
  const { server, clock, sm, createPod, core } = await setup(t);
  const pod = await createPod(makePod('web', { containers: ['app', 'side'] }));
  // Someone else writes the pod after the pod manager saw it: our copy is stale.
  await core.patchNamespacedPod({ name: 'web', namespace: 'default', body: [{ op: 'add', path: '/metadata/labels', value: { touched: 'yes' } }] });
  server.clearRequests();
  sm.setPodStatus(pod, statusFor(pod, clock.now()));
  await waitFor(() => storedStatus(server, 'web').phase === 'Running', { clock, what: 'status' });
  t.same(server.requests.map((r) => `${r.verb}/${r.status}`), ['patch/409', 'get/200', 'patch/200']);
  t.equal(sm.stats().conflicts, 1);
  t.equal((server.store.get('pods', 'default', 'web')!.metadata as any).labels.touched, 'yes', 'the other writer\'s change survives');

  // An injected 409 (as from any conflicting writer) is retried too.
  server.failNext(1, { code: 409, match: (r) => r.verb === 'patch' });
  sm.setPodStatus(pod, statusFor(pod, clock.now(), 'again'));
  await waitFor(() => storedStatus(server, 'web').message === 'again', { clock, what: 'retry' });
});

t.test('API server down for 60 s, then back: nothing lost, statuses converge', async (t) => {
  const { server, clock, sm, createPod, logger } = await setup(t);
  const pods: V1Pod[] = [];
  for (let i = 0; i < 20; i++) pods.push(await createPod(makePod(`p${i}`, { containers: ['app', 'side'] })));
  await server.stop();
  for (const [i, pod] of pods.entries()) sm.setPodStatus(pod, statusFor(pod, clock.now(), `first-${i}`));
  for (let s = 0; s < 30; s++) {
    await clock.advance(1000);
    await new Promise((r) => setTimeout(r, 5));
  }
  for (const [i, pod] of pods.entries()) sm.setPodStatus(pod, statusFor(pod, clock.now(), `final-${i}`));
  for (let s = 0; s < 30; s++) {
    await clock.advance(1000);
    await new Promise((r) => setTimeout(r, 5));
  }
  t.ok(sm.stats().failures > 20, `syncs failed while down (${sm.stats().failures})`);
  t.ok(logger.find('Failed to update status for pod'));
  await server.restart();
  await waitFor(() => pods.every((p, i) => storedStatus(server, p.metadata!.name!).message === `final-${i}`), { clock, stepMs: 1000, timeoutMs: 20_000, what: 'convergence' });
  for (const p of pods) t.equal(storedStatus(server, p.metadata!.name!).phase, 'Running');
  await waitFor(() => sm.pending() === 0, { clock, stepMs: 1000, what: 'no retry left' });
  t.equal(sm.pending(), 0);
});

t.test('static pods get a mirror pod, recreated when deleted or stale, and their status goes to it', async (t) => {
  const { server, clock, sm, core, podManager } = await setup(t);
  const node = await core.createNode({ body: { metadata: { name: 'node-1' } } });
  const nodeRef: NodeRef = { name: 'node-1', uid: node.metadata!.uid! };
  const mc = new BasicMirrorClient({ kubeClient: core, getNode: () => nodeRef });
  const staticPod = makePod('etcd', { uid: 'static-uid', namespace: 'kube-system', annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': 'h1' } });
  podManager.addPod(staticPod);
  t.equal(await syncMirrorPod(mc, staticPod, undefined, { getNode: () => nodeRef }), 'created');
  const mirror = await core.readNamespacedPod({ name: 'etcd', namespace: 'kube-system' });
  t.equal(mirror.metadata?.annotations?.['kubernetes.io/config.mirror'], 'h1');
  t.same(mirror.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid, o.controller]), [['Node', 'node-1', nodeRef.uid, true]]);
  t.equal(mirror.spec?.containers[0].name, 'app');
  podManager.addPod(mirror);

  sm.setPodStatus(staticPod, statusFor(staticPod, clock.now()));
  await waitFor(() => storedStatus(server, 'etcd', 'kube-system').phase === 'Running', { clock, what: 'mirror status' });

  // Deleted in the API server: recreated.
  await core.deleteNamespacedPod({ name: 'etcd', namespace: 'kube-system', gracePeriodSeconds: 0 });
  t.equal(await syncMirrorPod(mc, staticPod, undefined, { getNode: () => nodeRef }), 'created');
  const again = await core.readNamespacedPod({ name: 'etcd', namespace: 'kube-system' });
  t.not(again.metadata?.uid, mirror.metadata?.uid);
  // The static pod changed: the stale mirror pod is replaced.
  const updated = { ...staticPod, metadata: { ...staticPod.metadata, annotations: { ...staticPod.metadata!.annotations, 'kubernetes.io/config.hash': 'h2' } } };
  t.equal(await syncMirrorPod(mc, updated, again, { getNode: () => nodeRef }), 'recreated');
  const third = await core.readNamespacedPod({ name: 'etcd', namespace: 'kube-system' });
  t.equal(third.metadata?.annotations?.['kubernetes.io/config.mirror'], 'h2');
  // The static pod is gone: so is its mirror pod.
  t.equal(await mc.deleteMirrorPod('etcd_kube-system', third.metadata!.uid), true);
  t.equal(server.store.get('pods', 'kube-system', 'etcd'), undefined);
});

t.test('a deleted pod whose containers are gone is removed with grace 0 and its UID as precondition', async (t) => {
  const { server, clock, sm, createPod, core, podManager } = await setup(t);
  const pod = await createPod(makePod('job', { containers: ['app', 'side'] }));
  sm.setPodStatus(pod, statusFor(pod, clock.now()));
  await waitFor(() => storedStatus(server, 'job').phase === 'Running', { clock, what: 'running' });
  await core.deleteNamespacedPod({ name: 'job', namespace: 'default', gracePeriodSeconds: 30 });
  const deleting = await core.readNamespacedPod({ name: 'job', namespace: 'default' });
  podManager.addPod(deleting);
  sm.terminatePod(deleting);
  await waitFor(() => server.store.get('pods', 'default', 'job') === undefined, { clock, what: 'deleted' });
  const del = server.requests.filter((r) => r.verb === 'delete');
  t.equal(del.length, 2);
  t.equal(del[1].status, 200);
  t.equal(sm.getPodStatus(pod.metadata!.uid!), undefined);
});

t.test('events are created, then aggregated with a PATCH; beyond the queue they are dropped with a log', async (t) => {
  const { server, core, clock } = await setup(t);
  const logger = new RecordingLogger();
  const rec = new KubeletEventRecorder({ kubeClient: core, host: 'node-1', clock, logger, burst: 2, qps: 1, maxQueuedEvents: 3 });
  t.teardown(() => rec.stop());
  const pod = makePod('web');
  rec.event(pod, 'Normal', 'Pulling', 'Pulling image "busybox:1.36"', { containerName: 'app' });
  await rec.whenIdle();
  let events = server.store.list('events', 'default') as any[];
  t.equal(events.length, 1);
  t.equal(events[0].involvedObject.fieldPath, 'spec.containers{app}');
  t.equal(events[0].source.component, 'kubelet');
  t.equal(events[0].count, 1);
  await clock.advance(2000);
  rec.event(pod, 'Normal', 'Pulling', 'Pulling image "busybox:1.36"', { containerName: 'app' });
  await waitFor(async () => {
    await rec.whenIdle();
    return (server.store.list('events', 'default') as any[])[0].count === 2;
  }, { clock, what: 'count 2' });
  events = server.store.list('events', 'default') as any[];
  t.equal(events.length, 1, 'no new event: the old one counts');
  t.ok(server.requests.some((r) => r.resource === 'events' && r.verb === 'patch' && r.contentType === 'application/strategic-merge-patch+json'));
  t.not(events[0].firstTimestamp, events[0].lastTimestamp);
  for (let i = 0; i < 10; i++) rec.event(makePod(`p${i}`), 'Normal', 'Started', 'Started container app');
  t.equal(rec.stats().dropped, 6);
  t.ok(logger.find(/Event dropped/));
  await waitFor(async () => (server.store.list('events', 'default') as any[]).length === 5, { clock, stepMs: 500, what: 'rate-limited sends' });
});
