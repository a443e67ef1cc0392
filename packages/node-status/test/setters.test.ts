import t from 'tap';
import type { V1Node } from '@kubernetes/client-node';
import { parseThresholdConfig } from '@kubelet-ts/core';
import {
  DISK_PRESSURE,
  MEMORY_PRESSURE,
  PID_PRESSURE,
  aggregateMessage,
  nodeAllocatableReservation,
  parseResourceList,
  setAddresses,
  setDaemonEndpoints,
  setImages,
  setMachineInfo,
  setPressureCondition,
  setReadyCondition,
  setVersionInfo,
  sortImagesBySize,
  type NodeImage,
} from '../src/index.js';
import { fakeMachineInfo } from '../src/testing.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const events = () => {
  const list: string[] = [];
  return { list, record: (type: string, reason: string, message?: string) => list.push(`${type}:${reason}${message ? `:${message}` : ''}`) };
};

t.test('aggregateMessage is utilerrors.NewAggregate(...).Error()', async (t) => {
  t.equal(aggregateMessage([]), undefined);
  t.equal(aggregateMessage([undefined, null]), undefined);
  t.equal(aggregateMessage([new Error('a')]), 'a');
  t.equal(aggregateMessage([new Error('a'), new Error('b'), new Error('a')]), '[a, b]');
  t.equal(aggregateMessage([new AggregateError([new Error('x'), new Error('y')]), new Error('z')]), '[x, y, z]', 'nested aggregates flatten');
});

t.test('Ready: KubeletReady, KubeletNotReady with the errors joined, transition time only on a status change', async (t) => {
  const node: V1Node = { status: { capacity: { cpu: '4', memory: '8Gi', pods: '110', 'ephemeral-storage': '100Gi' } } };
  const ev = events();
  setReadyCondition(node, { now: T0 + 500, errors: [], recordEvent: ev.record });
  t.same(node.status!.conditions, [
    { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status', lastHeartbeatTime: new Date(T0), lastTransitionTime: new Date(T0) },
  ]);
  t.same(ev.list, [], 'no event for the first condition');

  setReadyCondition(node, { now: T0 + 10_000, errors: [], recordEvent: ev.record });
  let ready = node.status!.conditions![0];
  t.same(ready.lastHeartbeatTime, new Date(T0 + 10_000), 'heartbeat moves');
  t.same(ready.lastTransitionTime, new Date(T0), 'transition time kept');

  setReadyCondition(node, {
    now: T0 + 20_000,
    errors: [new Error('container runtime is down'), new Error('PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s'), undefined],
    recordEvent: ev.record,
  });
  ready = node.status!.conditions![0];
  t.match(ready, {
    status: 'False',
    reason: 'KubeletNotReady',
    message: '[container runtime is down, PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s]',
  });
  t.same(ready.lastTransitionTime, new Date(T0 + 20_000));
  t.same(ev.list, ['Normal:NodeNotReady']);

  setReadyCondition(node, { now: T0 + 30_000, errors: [], recordEvent: ev.record, softRequirements: 'swap is on' });
  t.equal(node.status!.conditions![0].message, 'kubelet is posting ready status. WARNING: swap is on');
  t.same(ev.list, ['Normal:NodeNotReady', 'Normal:NodeReady']);
});

t.test('Ready: missing capacity makes the node not ready', async (t) => {
  const node: V1Node = { status: { capacity: { cpu: '4' } } };
  setReadyCondition(node, { now: T0, errors: [] });
  t.match(node.status!.conditions![0], { status: 'False', message: 'missing node capacity for resources: memory, pods, ephemeral-storage' });
  const node2: V1Node = { status: { capacity: { cpu: '4', memory: '1Gi', pods: '110' } } };
  setReadyCondition(node2, { now: T0, errors: [], localStorageCapacityIsolation: false });
  t.equal(node2.status!.conditions![0].status, 'True');
});

t.test('pressure conditions: new ones appended, heartbeat always, transition only on change', async (t) => {
  for (const [text, reasons] of [
    [MEMORY_PRESSURE, ['KubeletHasSufficientMemory', 'kubelet has sufficient memory available', 'KubeletHasInsufficientMemory', 'kubelet has insufficient memory available']],
    [DISK_PRESSURE, ['KubeletHasNoDiskPressure', 'kubelet has no disk pressure', 'KubeletHasDiskPressure', 'kubelet has disk pressure']],
    [PID_PRESSURE, ['KubeletHasSufficientPID', 'kubelet has sufficient PID available', 'KubeletHasInsufficientPID', 'kubelet has insufficient PID available']],
  ] as const) {
    const node: V1Node = { status: { conditions: [{ type: 'Ready', status: 'True' }] } };
    const ev = events();
    setPressureCondition(node, text, false, T0, ev.record);
    t.same(node.status!.conditions!.map((c) => c.type), ['Ready', text.type]);
    const c = node.status!.conditions![1];
    t.match(c, { status: 'False', reason: reasons[0], message: reasons[1] });
    t.same(c.lastTransitionTime, new Date(T0));
    setPressureCondition(node, text, false, T0 + 10_000, ev.record);
    t.same(node.status!.conditions![1].lastHeartbeatTime, new Date(T0 + 10_000));
    t.same(node.status!.conditions![1].lastTransitionTime, new Date(T0));
    setPressureCondition(node, text, true, T0 + 20_000, ev.record);
    t.match(node.status!.conditions![1], { status: 'True', reason: reasons[2], message: reasons[3], lastTransitionTime: new Date(T0 + 20_000) });
    t.same(ev.list, [`Normal:${text.falseEvent}`, `Normal:${text.trueEvent}`]);
  }
});

const reservation = (capacity: Parameters<typeof nodeAllocatableReservation>[0]) =>
  nodeAllocatableReservation(capacity, { kubeReserved: parseResourceList('cpu=100m'), systemReserved: parseResourceList('memory=1Gi'), evictionHard: parseThresholdConfig([]) });

t.test('MachineInfo: capacity, allocatable, ids, pods per core, reboot event, extended resources kept', async (t) => {
  const node: V1Node = { status: { capacity: { 'example.com/dongle': '2' }, allocatable: { 'example.com/dongle': '1', 'example.com/gone': '3' } } };
  const ev = events();
  setMachineInfo(node, { nodeName: 'n1', info: fakeMachineInfo(), maxPods: 110, podsPerCore: 0, reservation, recordEvent: ev.record });
  t.same(node.status!.capacity, { 'example.com/dongle': '2', cpu: '4', memory: '8Gi', 'ephemeral-storage': '100Gi', pods: '110' });
  t.same(node.status!.allocatable, { 'example.com/dongle': '2', cpu: '3900m', memory: '7068Mi', 'ephemeral-storage': '96636764000', pods: '110' });
  t.match(node.status!.nodeInfo, { machineID: 'fake-machine-id', systemUUID: 'fake-system-uuid', bootID: 'fake-boot-id' });
  t.same(ev.list, []);

  setMachineInfo(node, { nodeName: 'n1', info: fakeMachineInfo({ bootID: 'new-boot' }), maxPods: 110, podsPerCore: 10, reservation, recordEvent: ev.record });
  t.same(ev.list, ['Warning:Rebooted:Node n1 has been rebooted, boot id: new-boot']);
  t.equal(node.status!.capacity!.pods, '40', 'min(cores*podsPerCore, maxPods)');

  const broken: V1Node = {};
  setMachineInfo(broken, { nodeName: 'n1', info: undefined, maxPods: 110, podsPerCore: 0, reservation });
  t.same(broken.status!.capacity, { cpu: '0', memory: '0', pods: '110' });
});

t.test('MachineInfo: device plugin resources in capacity and allocatable; a removed one stays at 0', async (t) => {
  const node: V1Node = { status: { capacity: { 'example.com/old': '2' }, allocatable: { 'example.com/old': '2' } } };
  setMachineInfo(node, {
    nodeName: 'n1',
    info: fakeMachineInfo(),
    maxPods: 110,
    podsPerCore: 0,
    reservation,
    devicePluginResourceCapacity: () => ({ capacity: { 'example.com/foo': 3 }, allocatable: { 'example.com/foo': 2 }, removed: ['example.com/old'] }),
  });
  t.equal(node.status!.capacity!['example.com/foo'], '3', 'every device');
  t.equal(node.status!.allocatable!['example.com/foo'], '2', 'the healthy ones');
  t.equal(node.status!.capacity!['example.com/old'], '0');
  t.equal(node.status!.allocatable!['example.com/old'], '0');
});

t.test('VersionInfo, DaemonEndpoints, addresses', async (t) => {
  const node: V1Node = {};
  setVersionInfo(node, { kernelVersion: '6.1', osImage: 'Debian', runtimeName: 'containerd', runtimeVersion: '1.6.20', kubeletVersion: 'v1.31.0', os: 'linux', arch: 'amd64' });
  t.match(node.status!.nodeInfo, { kernelVersion: '6.1', osImage: 'Debian', containerRuntimeVersion: 'containerd://1.6.20', kubeletVersion: 'v1.31.0', operatingSystem: 'linux', architecture: 'amd64' });
  setVersionInfo(node, { kernelVersion: '6.1', osImage: 'Debian', runtimeName: 'containerd', kubeletVersion: 'v1.31.0', os: 'linux', arch: 'amd64' });
  t.equal(node.status!.nodeInfo!.containerRuntimeVersion, 'containerd://Unknown', 'runtime did not answer');
  setDaemonEndpoints(node, 10250);
  t.same(node.status!.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
  setAddresses(node, ['10.0.0.5', 'fd00::5'], 'host-a');
  t.same(node.status!.addresses, [
    { type: 'InternalIP', address: '10.0.0.5' },
    { type: 'InternalIP', address: 'fd00::5' },
    { type: 'Hostname', address: 'host-a' },
  ]);
});

t.test('Images: sorted by size, capped at nodeStatusMaxImages, 5 names each, digests first', async (t) => {
  const images: NodeImage[] = Array.from({ length: 60 }, (_, i) => ({ id: `sha256:${String(i).padStart(2, '0')}`, repoTags: [`img${i}:latest`], repoDigests: [], size: 1000 + i }));
  const node: V1Node = {};
  setImages(node, images, 50);
  t.equal(node.status!.images!.length, 50);
  t.same(node.status!.images![0], { names: ['img59:latest'], sizeBytes: 1059 });
  t.same(node.status!.images![49], { names: ['img10:latest'], sizeBytes: 1010 });
  setImages(node, images, -1);
  t.equal(node.status!.images!.length, 60, '-1: no cap');
  setImages(node, [{ id: 'x', repoTags: ['a:1', 'a:2', 'a:3', 'a:4'], repoDigests: ['a@sha256:1', 'a@sha256:2'], size: 5 }], 50);
  t.same(node.status!.images![0].names, ['a@sha256:1', 'a@sha256:2', 'a:1', 'a:2', 'a:3']);
  t.same(
    sortImagesBySize([
      { id: 'a', repoTags: [], repoDigests: [], size: 1 },
      { id: 'b', repoTags: [], repoDigests: [], size: 1 },
      { id: 'c', repoTags: [], repoDigests: [], size: 2 },
    ]).map((i) => i.id),
    ['c', 'b', 'a'],
    'ties by id descending',
  );
  setImages(node, [], 50);
  t.equal(node.status!.images, undefined, 'no images: omitted');
  setImages(node, undefined, 50);
  t.equal(node.status!.images, undefined, 'list failed: cleared, as Go');
});
