import t from 'tap';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { DeviceManager, DevicePluginServer, PodResourcesClient, PodResourcesServer, podResourcesSocketPath } from '../src/index.js';
import { FakeDeviceManager } from '../src/testing.js';
import { eventually, pod, rejectsWithDetails, tempDir } from './helpers.js';

t.test('pod resources v1 over its socket: List, Get, GetAllocatableResources with the real device manager', async (t) => {
  const root = tempDir(t);
  const pods: V1Pod[] = [];
  const manager = new DeviceManager({ socketDir: join(root, 'device-plugins') });
  await manager.start(() => pods);
  t.teardown(() => manager.stop());
  const plugin = new DevicePluginServer({ resourceName: 'example.com/gpu', socketDir: manager.socketDir, deviceIds: ['g0', 'g1', 'g2'] });
  t.teardown(() => plugin.stop());
  await plugin.start();
  await eventually(() => manager.getCapacity().allocatable['example.com/gpu'] === 3);
  const p = pod('u1', [{ name: 'gpu', limits: { 'example.com/gpu': '2' } }, { name: 'sidecar' }]);
  pods.push(p, pod('u2', [{ name: 'plain' }]));
  t.same(await manager.admit({ pod: p }), { admit: true });

  const server = new PodResourcesServer({ socketPath: podResourcesSocketPath(root), pods: () => pods, devices: manager });
  await server.start();
  t.teardown(() => server.stop());
  const client = new PodResourcesClient(podResourcesSocketPath(root));
  t.teardown(() => client.close());

  const list = await client.list();
  t.same(list, {
    podResources: [
      {
        name: 'pod-u1',
        namespace: 'default',
        containers: [
          { name: 'gpu', devices: [{ resourceName: 'example.com/gpu', deviceIds: ['g0', 'g1'], topology: null }], cpuIds: [], memory: [] },
          { name: 'sidecar', devices: [], cpuIds: [], memory: [] },
        ],
      },
      { name: 'pod-u2', namespace: 'default', containers: [{ name: 'plain', devices: [], cpuIds: [], memory: [] }] },
    ],
  });
  const got = await client.get('default', 'pod-u1');
  t.same(got.podResources?.containers[0].devices[0].deviceIds, ['g0', 'g1']);
  await rejectsWithDetails(t, client.get('default', 'nope'), 'pod nope in namespace default not found');
  const allocatable = await client.getAllocatableResources();
  t.same(
    allocatable.devices.map((d) => [d.resourceName, d.deviceIds]),
    [
      ['example.com/gpu', ['g0']],
      ['example.com/gpu', ['g1']],
      ['example.com/gpu', ['g2']],
    ],
  );
  t.same(allocatable.cpuIds, []);

  // A pod that is gone: List frees its devices first (UpdateAllocatedDevices).
  pods.splice(0, 1);
  const after = await client.list();
  t.same(after.podResources.map((r) => r.name), ['pod-u2']);
  t.same(manager.getDevices('u1', 'gpu'), []);
});

t.test('pod resources: Get and GetAllocatableResources can be turned off as by their feature gates', async (t) => {
  const root = tempDir(t);
  const fake = new FakeDeviceManager({ 'example.com/x': 1 });
  const server = new PodResourcesServer({ socketPath: podResourcesSocketPath(root), pods: () => [], devices: fake, getEnabled: false, getAllocatableEnabled: false });
  await server.start();
  t.teardown(() => server.stop());
  const client = new PodResourcesClient(podResourcesSocketPath(root));
  t.teardown(() => client.close());
  await rejectsWithDetails(t, client.get('default', 'a'), 'PodResources API Get method disabled');
  await rejectsWithDetails(t, client.getAllocatableResources(), 'PodResources API GetAllocatableResources disabled');
  t.same(await client.list(), { podResources: [] });
});

t.test('FakeDeviceManager hands out devices and refuses as Go', async (t) => {
  const fake = new FakeDeviceManager({ 'example.com/x': 1 });
  const active: V1Pod[] = [];
  await fake.start(() => active);
  const a = pod('a', [{ name: 'c', limits: { 'example.com/x': '1' } }]);
  active.push(a);
  t.same(await fake.admit({ pod: a }), { admit: true });
  t.same(await fake.admit({ pod: pod('b', [{ name: 'c', limits: { 'example.com/x': '1' } }]) }), {
    admit: false,
    reason: 'UnexpectedAdmissionError',
    message: 'Allocate failed due to requested number of devices unavailable for example.com/x. Requested: 1, Available: 0, which is unexpected',
  });
  t.same(fake.getDevices('a', 'c'), [{ resourceName: 'example.com/x', deviceIds: ['example.com/x-0'] }]);
});
