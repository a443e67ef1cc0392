// NodeStatusManager and NodeLeaseController against @kubelet-ts/test-apiserver (the real REST wire
// format) through the real @kubernetes/client-node, with a FakeClock for the loops.
import t from 'tap';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { startTestApiServer, type TestApiServer } from '@kubelet-ts/test-apiserver';
import { NodeLeaseController, NodeStatusManager, type HealthStatus, type NodeStatusManagerOptions } from '../src/index.js';
import { fakeMachineInfo } from '../src/testing.js';
import { advanceFor, advanceUntil, startRecordingProxy, tempDir, type TeardownHost } from './helpers.js';

type Obj = Record<string, any>;

async function setup(t: TeardownHost, opts: { proxy?: boolean } = {}) {
  const server = await startTestApiServer({ bookmarkIntervalMs: 0 });
  t.teardown(() => server.close());
  const dir = await tempDir(t);
  const kc = new KubeConfig();
  kc.loadFromFile(await server.writeKubeconfig(join(dir, 'kubeconfig')));
  let proxy: Awaited<ReturnType<typeof startRecordingProxy>> | undefined;
  if (opts.proxy) {
    proxy = await startRecordingProxy(server.url);
    t.teardown(() => proxy!.close());
    kc.loadFromOptions({
      clusters: [{ name: 'proxy', server: proxy.url, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'c', cluster: 'proxy', user: 'u' }],
      currentContext: 'c',
    });
  }
  return { server, kc, proxy };
}

function makeManager(t: TeardownHost, kc: KubeConfig, clock: FakeClock, health: { current: HealthStatus }, extra: Partial<NodeStatusManagerOptions> = {}) {
  const runtime = new FakeRuntimeService();
  runtime.versionResponse = { version: '0.1.0', runtimeName: 'containerd', runtimeVersion: '1.6.20', runtimeApiVersion: 'v1' };
  const images = new FakeImageService();
  images.setImages({ id: 'sha256:pause', tags: ['registry.k8s.io/pause:3.9'], size: 700_000 }, { id: 'sha256:busybox', tags: ['busybox:1.36'], size: 4_000_000 });
  const logger = new RecordingLogger();
  const manager = new NodeStatusManager({
    nodeName: 'node-1',
    hostname: 'node-1',
    kubeClient: kc,
    clock,
    logger,
    runtimeService: runtime,
    imageService: images,
    machineInfo: fakeMachineInfo(),
    nodeIP: '10.0.0.5',
    interfaceAddresses: () => ['10.0.0.5'],
    healthChecks: () => health.current,
    kubeletVersion: 'v1.31.0',
    ...extra,
  });
  t.teardown(() => manager.stop());
  return { manager, logger, runtime, images };
}

const nodeOf = (server: TestApiServer): Obj | undefined => server.store.get('nodes', undefined, 'node-1') as Obj | undefined;
const conditionOf = (node: Obj | undefined, type: string): Obj | undefined => (node?.status?.conditions as Obj[] | undefined)?.find((c) => c.type === type);
const leaseOf = (server: TestApiServer): Obj | undefined => server.store.get('leases', 'kube-node-lease', 'node-1') as Obj | undefined;

t.test('registers the node, turns it Ready with a fast update, patches status with strategic merge', async (t) => {
  const { server, kc } = await setup(t);
  const clock = new FakeClock();
  const health = { current: { runtimeErrors: [new Error('container runtime status check may not have completed yet')] } as HealthStatus };
  const { manager, logger } = makeManager(t, kc, clock, health, { nodeLabels: { 'example.com/role': 'worker' }, kubeReserved: 'cpu=100m,memory=100Mi' });
  manager.start();
  await advanceUntil(clock, () => conditionOf(nodeOf(server), 'Ready') !== undefined, 'registration');
  let node = nodeOf(server)!;
  t.match(conditionOf(node, 'Ready'), { status: 'False', reason: 'KubeletNotReady', message: 'container runtime status check may not have completed yet' });
  t.match(node.metadata.labels, {
    'kubernetes.io/hostname': 'node-1',
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': String,
    'beta.kubernetes.io/os': 'linux',
    'example.com/role': 'worker',
  });
  t.equal(node.metadata.annotations['volumes.kubernetes.io/controller-managed-attach-detach'], 'true');
  t.same(node.status.capacity, { cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi', pods: '110' });
  // 8Gi - 100Mi kube-reserved - 100Mi memory.available; 100Gi - 10% nodefs.available (float32 0.1, as Go).
  // The API server answers with the canonical form of the quantity the kubelet sent (96636764000 is 96636764k).
  t.same(node.status.allocatable, { cpu: '3900m', memory: '7992Mi', 'ephemeral-storage': '96636764k', pods: '110' });
  t.same(node.status.addresses, [
    { type: 'InternalIP', address: '10.0.0.5' },
    { type: 'Hostname', address: 'node-1' },
  ]);
  t.match(node.status.nodeInfo, {
    machineID: 'fake-machine-id',
    systemUUID: 'fake-system-uuid',
    bootID: 'fake-boot-id',
    kernelVersion: '6.1.0-fake',
    osImage: 'Debian GNU/Linux 12 (bookworm)',
    containerRuntimeVersion: 'containerd://1.6.20',
    kubeletVersion: 'v1.31.0',
    operatingSystem: 'linux',
  });
  t.same(node.status.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
  t.same(node.status.images, [
    { names: ['busybox:1.36'], sizeBytes: 4_000_000 },
    { names: ['registry.k8s.io/pause:3.9'], sizeBytes: 700_000 },
  ]);
  t.same(
    (node.status.conditions as Obj[]).map((c) => `${c.type}=${c.status}:${c.reason}`),
    ['MemoryPressure=False:KubeletHasSufficientMemory', 'DiskPressure=False:KubeletHasNoDiskPressure', 'PIDPressure=False:KubeletHasSufficientPID', 'Ready=False:KubeletNotReady'],
  );

  // The runtime comes up: the fast update (every 100 ms) posts Ready well before the next 10 s sync.
  server.clearRequests();
  const before = clock.now();
  health.current = {};
  await advanceUntil(clock, () => conditionOf(nodeOf(server), 'Ready')?.status === 'True', 'Ready', { stepMs: 50, realMs: 10, maxFakeMs: 9000 });
  t.ok(clock.now() - before < 9000, 'Ready posted before the next periodic sync');
  t.ok(logger.find('Fast updating node status as it just became ready'), 'by the fast path');
  node = nodeOf(server)!;
  t.match(conditionOf(node, 'Ready'), { reason: 'KubeletReady', message: 'kubelet is posting ready status' });
  const patches = server.requests.filter((r) => r.verb === 'patch');
  t.ok(patches.length >= 1);
  for (const p of patches) {
    t.equal(p.subresource, 'status');
    t.equal(p.contentType.split(';')[0], 'application/strategic-merge-patch+json');
    t.equal(p.status, 200);
  }
  t.equal(server.requests.filter((r) => r.verb === 'get').length, 0, 'the fast path works from the cached node, no GET');
});

t.test('status loop: a GET every 10 s, a PATCH only on change or after nodeStatusReportFrequency', async (t) => {
  const { server, kc } = await setup(t);
  const clock = new FakeClock();
  const health = { current: {} as HealthStatus };
  const memoryPressure = { on: false };
  const { manager } = makeManager(t, kc, clock, health, { nodeStatusReportFrequencyMs: 60_000, pressure: { memory: () => memoryPressure.on } });
  manager.start();
  await advanceUntil(clock, () => conditionOf(nodeOf(server), 'Ready')?.status === 'True', 'Ready');
  await advanceFor(clock, 1000);
  server.clearRequests();
  await advanceFor(clock, 50_000, 200);
  const gets = server.requests.filter((r) => r.verb === 'get' && r.resource === 'nodes');
  t.ok(gets.length >= 3 && gets.length <= 5, `about one GET per 10 s (${gets.length})`);
  t.equal(gets[0].query.resourceVersion, '0', 'the first try reads from the API server cache');
  t.equal(server.requests.filter((r) => r.verb === 'patch').length, 0, 'nothing changed: no PATCH');

  const heartbeat = conditionOf(nodeOf(server), 'Ready')!.lastHeartbeatTime;
  memoryPressure.on = true;
  await advanceUntil(clock, () => conditionOf(nodeOf(server), 'MemoryPressure')?.status === 'True', 'MemoryPressure', { stepMs: 200 });
  const mp = conditionOf(nodeOf(server), 'MemoryPressure')!;
  t.match(mp, { reason: 'KubeletHasInsufficientMemory', message: 'kubelet has insufficient memory available' });
  t.equal(mp.lastTransitionTime, mp.lastHeartbeatTime);
  t.not(conditionOf(nodeOf(server), 'Ready')!.lastHeartbeatTime, heartbeat, 'the patch carries fresh heartbeats');

  server.clearRequests();
  await advanceFor(clock, 75_000, 500);
  t.equal(server.requests.filter((r) => r.verb === 'patch').length, 1, 'one PATCH after nodeStatusReportFrequency with nothing changed');
});

t.test('an existing node is reconciled, not recreated', async (t) => {
  const { server, kc } = await setup(t);
  server.store.create('nodes', {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-1', labels: { 'kubernetes.io/hostname': 'old-name', 'kubernetes.io/os': 'linux', 'admin.example.com/keep': 'me' } },
    spec: { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] },
    status: { capacity: { cpu: '2', 'example.com/dongle': '4' }, allocatable: { cpu: '2', 'example.com/dongle': '4' } },
  });
  const uid = nodeOf(server)!.metadata.uid;
  const clock = new FakeClock();
  const { manager, logger } = makeManager(t, kc, clock, { current: {} }, { shouldResetExtendedResourceCapacity: () => true });
  manager.start();
  await advanceUntil(clock, () => conditionOf(nodeOf(server), 'Ready')?.status === 'True', 'Ready');
  const node = nodeOf(server)!;
  t.equal(node.metadata.uid, uid, 'same object');
  t.equal(node.metadata.labels['kubernetes.io/hostname'], 'node-1', 'default label reconciled');
  t.equal(node.metadata.labels['admin.example.com/keep'], 'me', "someone else's label kept");
  t.equal(node.metadata.labels['kubernetes.io/arch'], manager.lastNode()!.metadata!.labels!['kubernetes.io/arch']);
  t.same(node.spec.podCIDRs, ['10.244.1.0/24'], 'spec untouched');
  t.equal(node.status.capacity['example.com/dongle'], '0', 'stale extended resource zeroed');
  t.equal(node.status.capacity.cpu, '4');
  t.ok(logger.find('Node was previously registered'));
  const creates = server.requests.filter((r) => r.verb === 'create' && r.resource === 'nodes');
  t.same(creates.map((r) => r.status), [409]);
  const metaPatch = server.requests.find((r) => r.verb === 'patch' && !r.subresource);
  t.ok(metaPatch, 'labels went through a metadata patch of the node');
  t.equal(metaPatch!.contentType.split(';')[0], 'application/strategic-merge-patch+json');
});

t.test('API server down at start: registration retries with backoff and succeeds when it is back', async (t) => {
  const { server, kc } = await setup(t);
  await server.stop();
  const clock = new FakeClock();
  const { manager, logger } = makeManager(t, kc, clock, { current: {} });
  manager.start();
  await advanceFor(clock, 30_000, 500);
  t.notOk(manager.isRegistered());
  const attempts = logger.entries.filter((e) => e.msg === 'Attempting to register node').length;
  // 100 ms doubling to 7 s: 0.1+0.2+0.4+0.8+1.6+3.2+6.4 = 12.7 s, then every 7 s: 8-10 tries in 30 s.
  t.ok(attempts >= 7 && attempts <= 11, `backoff between attempts (${attempts} in 30 s)`);
  await server.restart();
  await advanceUntil(clock, () => manager.isRegistered() && conditionOf(nodeOf(server), 'Ready')?.status === 'True', 'registered after restart');
  t.pass('registered');
});

t.test('outage of 60 s: nothing lost, status and lease converge when the API server is back', async (t) => {
  const { server, kc } = await setup(t);
  const clock = new FakeClock();
  const health = { current: {} as HealthStatus };
  const disk = { on: false };
  const { manager, logger } = makeManager(t, kc, clock, health, { pressure: { disk: () => disk.on } });
  const lease = new NodeLeaseController({ nodeName: 'node-1', kubeClient: kc, clock, logger: logger.with({ c: 'lease' }) });
  t.teardown(() => lease.stop());
  manager.start();
  lease.start();
  await advanceUntil(clock, () => conditionOf(nodeOf(server), 'Ready')?.status === 'True' && leaseOf(server)?.metadata?.ownerReferences !== undefined, 'Ready and owned lease', {
    stepMs: 200,
  });
  const renewBefore = leaseOf(server)!.spec.renewTime;

  await server.stop();
  disk.on = true;
  health.current = { networkErrors: [new Error('container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized')] };
  await advanceFor(clock, 60_000, 250);
  t.ok(logger.entries.some((e) => e.msg === 'Error updating node status, will retry'), 'errors logged during the outage');
  t.ok(logger.entries.some((e) => e.msg === 'Unable to update node status'), 'gave up after 5 tries per sync');
  t.equal(leaseOf(server)!.spec.renewTime, renewBefore);

  await server.restart();
  await advanceUntil(
    clock,
    () => conditionOf(nodeOf(server), 'DiskPressure')?.status === 'True' && conditionOf(nodeOf(server), 'Ready')?.status === 'False' && leaseOf(server)!.spec.renewTime !== renewBefore,
    'convergence',
    { stepMs: 200, maxFakeMs: 30_000 },
  );
  const node = nodeOf(server)!;
  t.match(conditionOf(node, 'Ready'), { reason: 'KubeletNotReady', message: /^container runtime network not ready/ });
  t.match(conditionOf(node, 'DiskPressure'), { reason: 'KubeletHasDiskPressure', message: 'kubelet has disk pressure' });
  t.equal(node.metadata.uid, leaseOf(server)!.metadata.ownerReferences[0].uid);

  health.current = {};
  disk.on = false;
  await advanceUntil(clock, () => conditionOf(nodeOf(server), 'Ready')?.status === 'True' && conditionOf(nodeOf(server), 'DiskPressure')?.status === 'False', 'recovery', {
    stepMs: 200,
    maxFakeMs: 30_000,
  });
  t.pass('recovered');
});

t.test('a 409 on the status patch is retried within the same sync', async (t) => {
  const { server, kc } = await setup(t);
  const clock = new FakeClock();
  const pid = { on: false };
  const { manager, logger } = makeManager(t, kc, clock, { current: {} }, { pressure: { pid: () => pid.on } });
  let done = false;
  void manager.syncNodeStatus().then(() => (done = true));
  await advanceUntil(clock, () => done, 'first sync (registration)');
  t.equal(conditionOf(nodeOf(server), 'Ready')?.status, 'True');
  server.clearRequests();
  server.failNext(1, { code: 409, match: (r) => r.verb === 'patch' });
  pid.on = true;
  await manager.syncNodeStatus();
  t.match(conditionOf(nodeOf(server), 'PIDPressure'), { status: 'True', reason: 'KubeletHasInsufficientPID', message: 'kubelet has insufficient PID available' });
  const nodeRequests = server.requests.filter((r) => r.resource === 'nodes');
  const seq = nodeRequests.map((r) => `${r.verb}${r.subresource ? '/' + r.subresource : ''}:${r.status}`);
  t.same(seq, ['get:200', 'patch/status:409', 'get:200', 'patch/status:200'], 'GET, 409, GET again, PATCH');
  t.equal(nodeRequests[0].query.resourceVersion, '0', 'the first try reads from the API server cache');
  t.equal(nodeRequests[2].query.resourceVersion, undefined, 'the retry reads from etcd, not the cache');
  t.ok(logger.find('Error updating node status, will retry'));
});

t.test('lease: created owned by the Node, renewed every 10 s, MicroTime with six digits on the wire, 409 re-read', async (t) => {
  const { server, kc, proxy } = await setup(t, { proxy: true });
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00.123Z'));
  server.store.create('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' } });
  const nodeUid = nodeOf(server)!.metadata.uid;
  const lease = new NodeLeaseController({ nodeName: 'node-1', kubeClient: kc, clock });
  t.teardown(() => lease.stop());
  lease.start();
  await advanceUntil(clock, () => leaseOf(server) !== undefined, 'lease created', { stepMs: 50 });
  let l = leaseOf(server)!;
  t.match(l, {
    metadata: { name: 'node-1', namespace: 'kube-node-lease', ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-1', uid: nodeUid }] },
    spec: { holderIdentity: 'node-1', leaseDurationSeconds: 40, renewTime: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/ },
  });
  t.equal(l.spec.renewTime, '2026-01-01T00:00:00.123000Z');
  const post = proxy!.requests.find((r) => r.method === 'POST' && r.path.includes('/leases'))!;
  t.match(post.body, /"renewTime":"2026-01-01T00:00:00\.123000Z"/, 'six fractional digits in the POST body');

  const rv = l.metadata.resourceVersion;
  await advanceUntil(clock, () => leaseOf(server)!.metadata.resourceVersion !== rv, 'renewal', { stepMs: 500, maxFakeMs: 11_000 });
  l = leaseOf(server)!;
  const renewedAt = Date.parse(l.spec.renewTime);
  t.ok(renewedAt - Date.parse('2026-01-01T00:00:00.123Z') >= 10_000, 'renewed after the 10 s interval');
  const puts = proxy!.requests.filter((r) => r.method === 'PUT' && r.path.includes('/leases/node-1'));
  t.equal(puts.length, 1);
  t.match(puts[0].body, /"renewTime":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"/, 'six fractional digits in the PUT body');
  t.notMatch(puts[0].body, /\.\d{3}Z"/);
  t.equal(proxy!.requests.filter((r) => r.method === 'GET' && r.path.includes('/leases/')).length, 1, 'steady state renews without a GET');

  // Someone else writes the lease: our PUT from the stale copy gets 409, we re-read and retry.
  const other = leaseOf(server)!;
  other.spec.holderIdentity = 'node-1';
  other.metadata.annotations = { touched: 'yes' };
  server.store.update('leases', other);
  server.clearRequests();
  const rv2 = leaseOf(server)!.metadata.resourceVersion;
  await advanceUntil(clock, () => leaseOf(server)!.metadata.resourceVersion !== rv2, 'renewal after conflict', { stepMs: 500, maxFakeMs: 11_000 });
  const seq = server.requests.filter((r) => r.resource === 'leases').map((r) => `${r.verb}:${r.status}`);
  t.same(seq, ['update:409', 'get:200', 'update:200']);
  t.equal(leaseOf(server)!.metadata.annotations.touched, 'yes', "the other writer's change is kept");

  // An injected 409 is handled the same way.
  server.clearRequests();
  server.failNext(1, { code: 409, match: (r) => r.resource === 'leases' && r.verb === 'update' });
  const rv3 = leaseOf(server)!.metadata.resourceVersion;
  await advanceUntil(clock, () => leaseOf(server)!.metadata.resourceVersion !== rv3, 'renewal after injected conflict', { stepMs: 500, maxFakeMs: 11_000 });
  t.same(
    server.requests.filter((r) => r.resource === 'leases').map((r) => `${r.verb}:${r.status}`),
    ['update:409', 'get:200', 'update:200'],
  );
});
