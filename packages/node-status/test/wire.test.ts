import t from 'tap';
import type { V1Node } from '@kubernetes/client-node';
import {
  leaseToWire,
  nodeFromWire,
  nodePatchSchema,
  nodeStatusHasChanged,
  nodeToWire,
  prepareNodePatches,
  semanticEqual,
} from '../src/index.js';
import { applyStrategicMergePatch, formatMicroTime, formatTime, type JsonObject } from '@kubelet-ts/core';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);

function baseNode(): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n1', uid: 'u1', resourceVersion: '5', labels: { a: '1' } },
    spec: { podCIDR: '10.0.0.0/24' },
    status: {
      capacity: { cpu: '4', memory: '8Gi' },
      conditions: [
        { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', lastHeartbeatTime: at(0), lastTransitionTime: at(0) },
        { type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: at(0), lastTransitionTime: at(0) },
      ],
      addresses: [
        { type: 'InternalIP', address: '10.0.0.5' },
        { type: 'Hostname', address: 'n1' },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    },
  };
}

t.test('times: metav1.Time whole seconds, MicroTime six digits', async (t) => {
  t.equal(formatTime(T0 + 1999), '2026-01-01T00:00:01Z');
  t.equal(formatMicroTime(T0 + 123), '2026-01-01T00:00:00.123000Z');
  t.equal(formatMicroTime(new Date(T0)), '2026-01-01T00:00:00.000000Z');
  t.equal(formatMicroTime(T0 + 0.5), '2026-01-01T00:00:00.000500Z', 'sub-millisecond clocks keep microseconds');
  const wire = leaseToWire({ metadata: { name: 'n1', creationTimestamp: new Date(T0) }, spec: { renewTime: new Date(T0 + 42) as never, acquireTime: new Date(T0) as never } });
  t.same(wire, { metadata: { name: 'n1', creationTimestamp: '2026-01-01T00:00:00Z' }, spec: { renewTime: '2026-01-01T00:00:00.042000Z', acquireTime: '2026-01-01T00:00:00.000000Z' } });
});

t.test('nodeToWire/nodeFromWire round-trip with Go field names and time text', async (t) => {
  const wire = nodeToWire(baseNode());
  t.equal((wire.status as any).conditions[0].lastHeartbeatTime, '2026-01-01T00:00:00Z');
  t.same((wire.status as any).daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
  const back = nodeFromWire(wire);
  t.ok(back.status!.conditions![0].lastHeartbeatTime instanceof Date);
  t.same(nodeToWire(back), wire);
  t.same(nodeToWire({ metadata: { name: 'x', labels: {} }, status: { images: [] } }), { metadata: { name: 'x' } }, 'empty maps and lists left out');
});

t.test('a heartbeat-only change patches just the heartbeats, with $setElementOrder as Go does', async (t) => {
  const old = baseNode();
  const next = structuredClone(old);
  for (const c of next.status!.conditions!) c.lastHeartbeatTime = at(10);
  const { statusPatch, metadataPatch } = prepareNodePatches(old, next);
  t.equal(metadataPatch, undefined);
  t.equal(
    JSON.stringify(statusPatch),
    '{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"Ready"}],"conditions":[{"lastHeartbeatTime":"2026-01-01T00:00:10Z","type":"MemoryPressure"},{"lastHeartbeatTime":"2026-01-01T00:00:10Z","type":"Ready"}]}}',
  );
  t.notOk(nodeStatusHasChanged(old, next), 'heartbeats alone are no change');
});

t.test('condition, capacity and spec changes; labels go to a metadata patch', async (t) => {
  const old = baseNode();
  const next = structuredClone(old);
  next.status!.conditions![1] = { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: 'x', lastHeartbeatTime: at(10), lastTransitionTime: at(10) };
  next.status!.conditions!.push({ type: 'DiskPressure', status: 'False', lastHeartbeatTime: at(10), lastTransitionTime: at(10) });
  next.status!.capacity = { cpu: '8', memory: '8Gi', pods: '110' };
  next.spec!.podCIDR = 'changed';
  next.metadata!.labels = { a: '2', b: '3' };
  t.ok(nodeStatusHasChanged(old, next));
  const { statusPatch, metadataPatch } = prepareNodePatches(old, next);
  t.same(metadataPatch, { metadata: { labels: { a: '2', b: '3' } } });
  t.same(statusPatch, {
    status: {
      '$setElementOrder/conditions': [{ type: 'MemoryPressure' }, { type: 'Ready' }, { type: 'DiskPressure' }],
      capacity: { cpu: '8', pods: '110' },
      conditions: [
        { lastHeartbeatTime: '2026-01-01T00:00:10Z', lastTransitionTime: '2026-01-01T00:00:10Z', message: 'x', reason: 'KubeletNotReady', status: 'False', type: 'Ready' },
        { lastHeartbeatTime: '2026-01-01T00:00:10Z', lastTransitionTime: '2026-01-01T00:00:10Z', status: 'False', type: 'DiskPressure' },
      ],
    },
  });
  // Applying it gives the new status.
  const applied = applyStrategicMergePatch(nodeToWire(old), statusPatch!, nodePatchSchema);
  t.same(applied.status, nodeToWire(next).status);
});

t.test('changed addresses are replaced whole ($patch: replace), as Go works around the wrong merge key', async (t) => {
  const old = baseNode();
  const next = structuredClone(old);
  next.status!.addresses = [
    { type: 'InternalIP', address: '10.0.0.6' },
    { type: 'InternalIP', address: 'fd00::6' },
    { type: 'Hostname', address: 'n1' },
  ];
  const { statusPatch } = prepareNodePatches(old, next);
  t.same(statusPatch, {
    status: {
      addresses: [
        { address: '10.0.0.6', type: 'InternalIP' },
        { address: 'fd00::6', type: 'InternalIP' },
        { address: 'n1', type: 'Hostname' },
        { $patch: 'replace' },
      ],
    },
  });
  const applied = applyStrategicMergePatch(nodeToWire(old), statusPatch!, nodePatchSchema);
  t.same((applied.status as JsonObject).addresses, nodeToWire(next).status && (nodeToWire(next).status as JsonObject).addresses);
});

t.test('semanticEqual compares quantities by value', async (t) => {
  t.ok(semanticEqual({ capacity: { memory: '1Gi' } }, { capacity: { memory: '1024Mi' } }));
  t.notOk(semanticEqual({ capacity: { memory: '1Gi' } }, { capacity: { memory: '1G' } }));
  t.notOk(semanticEqual({ other: '1Gi' }, { other: '1024Mi' }), 'only under capacity/allocatable');
  const a = baseNode();
  const b = structuredClone(a);
  b.status!.capacity = { cpu: '4000m', memory: '8192Mi' };
  t.notOk(nodeStatusHasChanged(a, b), 'same quantities in other spellings are no change');
  b.status!.conditions!.reverse();
  t.notOk(nodeStatusHasChanged(a, b), 'condition order does not matter');
  b.status!.conditions!.pop();
  t.ok(nodeStatusHasChanged(a, b), 'a condition fewer is a change');
});
