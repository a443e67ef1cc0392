// NodeStatusManager rules against FakeKubeClient and FakeClock.
import t from 'tap';
import type { V1Node } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { NodeStatusManager, type HealthStatus, type NodeEvent, type NodeStatusManagerOptions } from '../src/index.js';
import { FakeKubeClient, fakeMachineInfo } from '../src/testing.js';
import type { TeardownHost } from './helpers.js';

function setup(t: TeardownHost, extra: Partial<NodeStatusManagerOptions> = {}) {
  const clock = new FakeClock();
  const client = new FakeKubeClient(() => clock.now());
  const logger = new RecordingLogger();
  const health = { current: {} as HealthStatus };
  const events: NodeEvent[] = [];
  const runtime = new FakeRuntimeService();
  const images = new FakeImageService();
  const manager = new NodeStatusManager({
    nodeName: 'node-1',
    hostname: 'host-1',
    kubeClient: client,
    clock,
    logger,
    runtimeService: runtime,
    imageService: images,
    machineInfo: fakeMachineInfo(),
    nodeIP: '10.0.0.5',
    interfaceAddresses: () => ['10.0.0.5'],
    healthChecks: () => health.current,
    recordEvent: (e) => events.push(e),
    os: 'linux',
    arch: 'amd64',
    ...extra,
  });
  t.teardown(() => manager.stop());
  const node = () => client.node('node-1');
  const cond = (type: string) => node()?.status?.conditions?.find((c) => c.type === type);
  return { clock, client, logger, health, events, runtime, images, manager, node, cond };
}

t.test('registers the initial node: labels, taints, schedulability, annotation, full status', async (t) => {
  const { clock, client, manager, logger, node } = setup(t, {
    nodeLabels: { 'kubernetes.io/hostname': 'override', 'example.com/pool': 'a' },
    registerWithTaints: 'dedicated=infra:NoSchedule,gpu:NoExecute',
    registerSchedulable: false,
  });
  const done = manager.registerNode();
  await clock.advance(100);
  await done;
  t.ok(manager.isRegistered());
  const n = node()!;
  t.same(n.metadata!.labels, {
    'kubernetes.io/hostname': 'override',
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'beta.kubernetes.io/arch': 'amd64',
    'example.com/pool': 'a',
  });
  t.ok(logger.find('The node label will overwrite default setting'));
  t.same(n.metadata!.annotations, { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' });
  t.equal(n.spec!.unschedulable, true);
  t.same(n.spec!.taints, [
    { key: 'dedicated', value: 'infra', effect: 'NoSchedule' },
    { key: 'gpu', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' },
  ]);
  t.same(
    n.status!.conditions!.map((c) => c.type),
    ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'],
  );
  t.equal(n.status!.nodeInfo!.containerRuntimeVersion, 'fakeRuntime://0.1.0');
  t.equal(client.callsOf('createNode').length, 1);
  const body = JSON.parse(client.callsOf('createNode')[0].body!);
  t.equal(body.status.conditions[0].lastHeartbeatTime, '2026-01-01T00:00:00Z', 'times in whole seconds on the wire');
  await manager.registerNode();
  t.equal(client.callsOf('createNode').length, 1, 'registered once');
});

t.test('registration retries with backoff while the API server is unreachable', async (t) => {
  const { clock, client, manager, logger } = setup(t);
  client.down = true;
  const done = manager.registerNode();
  const times: number[] = [];
  const start = clock.now();
  for (let i = 0; i < 400 && times.length < 10; i++) {
    const before = client.callsOf('createNode').length;
    await clock.advance(100);
    if (client.callsOf('createNode').length > before) times.push(clock.now() - start);
  }
  // Sleeps of 100, 200, 400, ..., 6400 then 7000 ms before each try.
  t.same(times.slice(0, 9), [100, 300, 700, 1500, 3100, 6300, 12700, 19700, 26700]);
  t.ok(logger.find('Unable to register node with API server'));
  client.down = false;
  await clock.advance(7000);
  await done;
  t.ok(manager.isRegistered());
});

t.test('an existing node: default labels and the attach/detach annotation reconciled in one metadata patch', async (t) => {
  const { clock, client, manager, node } = setup(t, { enableControllerAttachDetach: false });
  client.putNode({
    metadata: {
      name: 'node-1',
      labels: { 'kubernetes.io/hostname': 'stale', 'kubernetes.io/os': 'linux', other: 'kept' },
      annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true', note: 'x' },
    },
    status: { capacity: { cpu: '1' }, allocatable: { cpu: '1' } },
  });
  const done = manager.registerNode();
  await clock.advance(100);
  await done;
  t.same(
    client.calls.map((c) => c.method),
    ['createNode', 'getNode', 'patchNode'],
  );
  t.same(JSON.parse(client.callsOf('patchNode')[0].body!), {
    metadata: {
      annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': null },
      labels: { 'beta.kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'kubernetes.io/hostname': 'host-1' },
    },
  });
  t.same(node()!.metadata!.labels!.other, 'kept');
  t.same(node()!.metadata!.annotations, { note: 'x' });
  t.equal(node()!.status!.capacity!.cpu, '1', 'status is left to the status sync');
});

t.test('an existing node that already matches needs no patch', async (t) => {
  const { clock, client, manager } = setup(t);
  client.putNode({
    metadata: {
      name: 'node-1',
      labels: { 'kubernetes.io/hostname': 'host-1', 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/os': 'linux', 'beta.kubernetes.io/arch': 'amd64' },
      annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
    },
    status: { capacity: { cpu: '1' }, allocatable: { cpu: '1' } },
  });
  const done = manager.registerNode();
  await clock.advance(100);
  await done;
  t.same(
    client.calls.map((c) => c.method),
    ['createNode', 'getNode'],
  );
});

t.test('status every 10 s (with jitter), patched only on change or after the report frequency', async (t) => {
  const { clock, client, manager, cond } = setup(t, { nodeStatusReportFrequencyMs: 60_000 });
  manager.start();
  await clock.advance(200);
  t.ok(manager.isRegistered());
  t.equal(cond('Ready')?.status, 'True');
  const patchesAfterStart = client.callsOf('patchNodeStatus').length;
  t.equal(patchesAfterStart, 1, 'the first sync right after registration');
  client.calls.length = 0;
  await clock.advance(50_000);
  const gets = client.callsOf('getNode');
  t.ok(gets.length >= 4 && gets.length <= 5, `one GET per 10-10.4 s (${gets.length})`);
  t.ok(gets.every((g) => g.fromCache), 'first tries read from the cache');
  t.equal(client.callsOf('patchNodeStatus').length, 0, 'nothing changed, report frequency not reached');
  await clock.advance(21_000);
  t.equal(client.callsOf('patchNodeStatus').length, 1, 'patched once the report frequency passed');
  const body = JSON.parse(client.callsOf('patchNodeStatus')[0].body!);
  t.same(Object.keys(body.status).sort(), ['$setElementOrder/conditions', 'conditions'], 'only heartbeats');
});

t.test('a sync retries 5 times, then gives up until the next period', async (t) => {
  const failures: number[] = [];
  const { clock, client, manager, logger } = setup(t, { onRepeatedHeartbeatFailure: () => failures.push(clock.now()) });
  const first = manager.syncNodeStatus();
  await clock.advance(100);
  await first;
  client.calls.length = 0;
  logger.clear();
  client.failNext(5, 500, ['getNode']);
  await manager.syncNodeStatus();
  t.equal(client.callsOf('getNode').length, 5);
  t.same(
    client.callsOf('getNode').map((c) => c.fromCache ?? false),
    [true, false, false, false, false],
    'only the first try reads the cache',
  );
  t.equal(logger.entries.filter((e) => e.msg === 'Error updating node status, will retry').length, 5);
  const last = logger.find('Unable to update node status')!;
  t.equal((last.err as Error).message, 'update node status exceeds retry count');
  t.equal(failures.length, 4, 'onRepeatedHeartbeatFailure from the second failure on');

  // Four failures and the fifth try gets through.
  client.calls.length = 0;
  logger.clear();
  client.failNext(4, 503, ['getNode']);
  await manager.syncNodeStatus();
  t.equal(client.callsOf('getNode').length, 5);
  t.notOk(logger.find('Unable to update node status'));
});

t.test('a 409 on the patch is retried with a fresh GET', async (t) => {
  const pid = { on: false };
  const { clock, client, manager, cond } = setup(t, { pressure: { pid: () => pid.on } });
  const first = manager.syncNodeStatus();
  await clock.advance(100);
  await first;
  client.calls.length = 0;
  pid.on = true;
  client.failNext(1, 409, ['patchNodeStatus']);
  await manager.syncNodeStatus();
  t.same(
    client.calls.map((c) => `${c.method}${c.fromCache ? '(cache)' : ''}`),
    ['getNode(cache)', 'patchNodeStatus', 'getNode', 'patchNodeStatus'],
  );
  t.equal(cond('PIDPressure')?.status, 'True');
});

t.test('fast status update: Ready is posted within 100 ms of the runtime coming up, then the fast loop ends', async (t) => {
  const { clock, client, manager, health, cond, events } = setup(t);
  health.current = { runtimeErrors: [new Error('container runtime status check may not have completed yet')] };
  manager.start();
  await clock.advance(200);
  t.match(cond('Ready'), { status: 'False', message: 'container runtime status check may not have completed yet' });
  await clock.advance(3000);
  const patches = client.callsOf('patchNodeStatus').length;
  const gets = client.callsOf('getNode').length;
  health.current = {};
  await clock.advance(100);
  t.equal(cond('Ready')?.status, 'True', 'posted by the fast path');
  t.equal(client.callsOf('patchNodeStatus').length, patches + 1);
  t.equal(client.callsOf('getNode').length, gets, 'from the cached node, without a GET');
  t.same(
    events.filter((e) => e.reason === 'NodeReady'),
    [{ type: 'Normal', reason: 'NodeReady', message: 'Node node-1 status is now: NodeReady' }],
  );
  const timersBefore = clock.pendingTimers();
  await clock.advance(1000);
  t.ok(clock.pendingTimers() <= timersBefore, 'no more 100 ms timers');
});

t.test('fast status update gives up after nodeReadyGracePeriod', async (t) => {
  const { clock, manager, health, logger } = setup(t);
  health.current = { runtimeErrors: [new Error('container runtime is down')] };
  manager.start();
  await clock.advance(121_000, 100);
  t.ok(logger.find('Node not becoming ready in time after startup'));
  t.equal(clock.pendingTimers(), 1, 'only the status loop timer is left');
});

t.test('stop() leaves no timers and aborts a registration in progress', async (t) => {
  const { clock, client, manager } = setup(t);
  client.down = true;
  manager.start();
  await clock.advance(5000);
  t.ok(clock.pendingTimers() > 0);
  await manager.stop();
  t.equal(clock.pendingTimers(), 0);
  const calls = client.calls.length;
  await clock.advance(60_000);
  t.equal(client.calls.length, calls, 'nothing runs after stop');
  await manager.syncNodeStatus();
  t.equal(client.calls.length, calls, 'a sync after stop does nothing');
  client.down = false;
  manager.start();
  await clock.advance(200);
  t.ok(manager.isRegistered(), 'can start again');
});

t.test('events: conditions, schedulability, reboot', async (t) => {
  const { clock, client, manager, events } = setup(t);
  const done = manager.syncNodeStatus();
  await clock.advance(100);
  await done;
  t.same(
    events.map((e) => e.reason),
    ['NodeHasSufficientMemory', 'NodeHasNoDiskPressure', 'NodeHasSufficientPID'],
    'the initial node: pressure events, none for Ready (new condition)',
  );
  events.length = 0;
  const n = client.node('node-1')!;
  n.spec = { ...n.spec, unschedulable: true };
  n.status!.nodeInfo!.bootID = 'previous-boot';
  client.putNode(n);
  await manager.syncNodeStatus();
  t.same(
    events.map((e) => `${e.type}:${e.reason}:${e.message}`),
    ['Warning:Rebooted:Node node-1 has been rebooted, boot id: fake-boot-id', 'Normal:NodeNotSchedulable:Node node-1 status is now: NodeNotSchedulable'],
  );
});

t.test('missing os/arch labels are put back with a metadata patch', async (t) => {
  const { clock, client, manager, node } = setup(t);
  const done = manager.syncNodeStatus();
  await clock.advance(100);
  await done;
  const n = client.node('node-1')!;
  delete n.metadata!.labels!['kubernetes.io/arch'];
  client.putNode(n);
  client.calls.length = 0;
  await manager.syncNodeStatus();
  t.same(
    client.calls.map((c) => c.method),
    ['getNode', 'patchNode'],
    'the labels changed, the status did not (heartbeat only, same second): one metadata patch',
  );
  t.equal(node()!.metadata!.labels!['kubernetes.io/arch'], 'amd64');
});

t.test('node IP: validated; a bad one leaves addresses alone and says why', async (t) => {
  const { clock, manager, logger, node } = setup(t, { nodeIP: '10.9.9.9' });
  const done = manager.syncNodeStatus();
  await clock.advance(100);
  await done;
  t.equal(node()!.status!.addresses, undefined);
  const entry = logger.entries.find((e) => e.msg === 'Failed to set some node status fields' && e.kv.setter === 'NodeAddress');
  t.equal((entry!.err as Error).message, 'failed to validate nodeIP: node IP: "10.9.9.9" not found in the host\'s network interfaces');
});

t.test('node IP detected: hostname IP, then DNS of the node name, then an interface address', async (t) => {
  {
    const { clock, manager, node } = setup(t, { nodeIP: undefined, lookupHost: async () => ['127.0.1.1', '192.168.1.20'] });
    const done = manager.syncNodeStatus();
    await clock.advance(100);
    await done;
    t.same(node()!.status!.addresses, [
      { type: 'InternalIP', address: '192.168.1.20' },
      { type: 'Hostname', address: 'host-1' },
    ]);
    await manager.stop();
  }
  {
    const { clock, manager, node } = setup(t, {
      nodeIP: undefined,
      lookupHost: async () => {
        throw new Error('lookup node-1: no such host');
      },
      interfaceAddresses: () => ['127.0.0.1', 'fe80::1', '172.17.0.3'],
    });
    const done = manager.syncNodeStatus();
    await clock.advance(100);
    await done;
    t.equal(node()!.status!.addresses![0].address, '172.17.0.3');
  }
});

t.test('internalIPs are reported as given, loopback included, without validation or lookups (a simulated node)', async (t) => {
  const { clock, manager, node, logger } = setup(t, {
    nodeIP: undefined,
    internalIPs: ['127.0.0.1'],
    lookupHost: async () => {
      throw new Error('must not be asked');
    },
  });
  const done = manager.syncNodeStatus();
  await clock.advance(100);
  await done;
  t.same(node()!.status!.addresses, [
    { type: 'InternalIP', address: '127.0.0.1' },
    { type: 'Hostname', address: 'host-1' },
  ]);
  t.notOk(logger.entries.some((e) => e.kv.setter === 'NodeAddress'), 'no address error');
});

t.test('images come from the image service, capped at nodeStatusMaxImages', async (t) => {
  const { clock, manager, images, node } = setup(t, { nodeStatusMaxImages: 2 });
  images.setImages({ id: 'a', tags: ['a:1'], size: 10 }, { id: 'b', tags: ['b:1'], size: 30 }, { id: 'c', tags: ['c:1'], size: 20 });
  const done = manager.syncNodeStatus();
  await clock.advance(100);
  await done;
  t.same(node()!.status!.images, [
    { names: ['b:1'], sizeBytes: 30 },
    { names: ['c:1'], sizeBytes: 20 },
  ]);
  t.same(manager.lastNode()!.status!.images!.length, 2);
});

t.test('lastNode() is a copy of what the API server returned', async (t) => {
  const { clock, manager } = setup(t);
  t.equal(manager.lastNode(), undefined);
  const done = manager.syncNodeStatus();
  await clock.advance(100);
  await done;
  const a = manager.lastNode() as V1Node;
  a.metadata!.name = 'changed';
  t.equal(manager.lastNode()!.metadata!.name, 'node-1');
  t.ok(manager.lastNode()!.metadata!.resourceVersion);
});

t.test('the Node\'s pod CIDRs reach the runtime on each status sync (Go: updatePodCIDR)', async (t) => {
  const handed: string[] = [];
  const { clock, client, manager, logger } = setup(t, {
    updatePodCIDR: async (cidr) => {
      handed.push(cidr);
      if (cidr.startsWith('bad')) throw new Error('runtime said no');
      return true;
    },
  });
  const sync = async () => {
    const done = manager.syncNodeStatus();
    await clock.advance(100);
    await done;
  };
  await sync();
  t.same(handed, [], 'no CIDR on the node yet: nothing to hand over');
  const node = client.node('node-1')!;
  client.putNode({ ...node, spec: { ...node.spec, podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', 'fd00:1::/64'] } });
  await sync();
  t.same(handed, ['10.244.1.0/24,fd00:1::/64'], 'dual-stack CIDRs joined with a comma, as Go does');
  client.putNode({ ...client.node('node-1')!, spec: { podCIDR: 'bad/1', podCIDRs: ['bad/1'] } });
  await sync();
  t.ok(logger.find('Error updating pod CIDR'), 'a runtime error is logged');
  t.ok(client.node('node-1')!.status?.conditions?.length, 'and the status sync still goes on');
});

t.test('volumesInUse comes from the volume manager once its reconciler has synced, as the Go setter', async (t) => {
  const volumes = { synced: false, list: ['kubernetes.io/local-volume/pv-1'] };
  const { clock, manager, node } = setup(t, { volumesInUse: { synced: () => volumes.synced, list: () => volumes.list } });
  const registered = manager.registerNode();
  await clock.advance(100);
  await registered;
  await manager.updateNodeStatus();
  t.equal(node()!.status!.volumesInUse, undefined, 'not reported before the reconciler synced');
  volumes.synced = true;
  await manager.updateNodeStatus();
  t.same(node()!.status!.volumesInUse, ['kubernetes.io/local-volume/pv-1']);
  volumes.list = [];
  await manager.updateNodeStatus();
  t.notOk(node()!.status!.volumesInUse?.length, 'an empty list clears the field');
});

t.test('the node shutdown manager status makes Ready False after the runtime errors (Go: nodeShutdownManagerErrorsFunc)', async (t) => {
  const { clock, manager, health, cond } = setup(t);
  health.current = { shutdownErrors: [new Error('node is shutting down')] };
  manager.start();
  await clock.advance(200);
  t.match(cond('Ready'), { status: 'False', reason: 'KubeletNotReady', message: 'node is shutting down' });
  health.current = { runtimeErrors: [new Error('container runtime is down')], shutdownErrors: [new Error('node is shutting down')] };
  await manager.syncNodeStatus();
  t.match(cond('Ready'), { status: 'False', message: '[container runtime is down, node is shutting down]' });
});
