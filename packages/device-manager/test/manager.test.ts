import t from 'tap';
import type { Test } from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { FakeClock } from '@kubelet-ts/core/testing';
import { CHECKPOINT_FILE_NAME, DeviceManager, DevicePluginServer, ENDPOINT_STOP_GRACE_PERIOD_MS, UNHEALTHY, unmarshalCheckpoint } from '../src/index.js';
import { eventually, pod, rejectsWithDetails, tempDir } from './helpers.js';

const RESOURCE = 'example.com/foo';

async function setup(t: Test, opts: { devices?: string[]; pluginOptions?: { preStartRequired?: boolean; getPreferredAllocationAvailable?: boolean }; dir?: string; clock?: FakeClock } = {}) {
  const dir = opts.dir ?? tempDir(t);
  const clock = opts.clock ?? new FakeClock();
  const active: V1Pod[] = [];
  const manager = new DeviceManager({ socketDir: dir, clock });
  await manager.start(() => active);
  t.teardown(() => manager.stop());
  const plugin = new DevicePluginServer({
    resourceName: RESOURCE,
    socketDir: dir,
    deviceIds: opts.devices ?? ['dev-0', 'dev-1', 'dev-2'],
    options: opts.pluginOptions,
    allocate: (ids) => ({
      envs: { FOO_DEVICES: ids.join(',') },
      mounts: [{ containerPath: '/var/foo', hostPath: '/tmp', readOnly: true }],
      devices: [{ containerPath: '/dev/foo0', hostPath: '/dev/null', permissions: 'rw' }],
      annotations: { 'example.com/foo': ids.join(',') },
      cdiDevices: [],
    }),
  });
  t.teardown(() => plugin.stop());
  return { dir, clock, active, manager, plugin };
}

t.test('Register: Go validation of the version and the resource name', async (t) => {
  const { manager, plugin } = await setup(t);
  await rejectsWithDetails(t, plugin.register(undefined, { version: 'v1alpha' }), 'requested API version "v1alpha" is not supported by kubelet. Supported versions are ["v1beta1"]');
  await rejectsWithDetails(t, plugin.register(undefined, { resourceName: 'foo' }), 'the ResourceName "foo" is invalid');
  await rejectsWithDetails(t, plugin.register(undefined, { resourceName: 'kubernetes.io/foo' }), 'the ResourceName "kubernetes.io/foo" is invalid');
  t.same(manager.getCapacity(), { capacity: {}, allocatable: {}, removed: [] }, 'nothing registered');
});

t.test('ListAndWatch: capacity and allocatable follow device health; a stopped plugin is removed after the grace period', async (t) => {
  const { manager, plugin, clock } = await setup(t);
  await plugin.serve();
  await plugin.register();
  await eventually(() => manager.getCapacity().capacity[RESOURCE] === 3);
  t.same(manager.getCapacity(), { capacity: { [RESOURCE]: 3 }, allocatable: { [RESOURCE]: 3 }, removed: [] });
  plugin.setDevice('dev-1', UNHEALTHY);
  await eventually(() => manager.getCapacity().allocatable[RESOURCE] === 2);
  t.same(manager.getCapacity(), { capacity: { [RESOURCE]: 3 }, allocatable: { [RESOURCE]: 2 }, removed: [] }, 'an unhealthy device counts in capacity only');
  t.same(
    manager.getAllocatableDevices().map((d) => d.deviceIds[0]),
    ['dev-0', 'dev-2'],
  );
  await plugin.stop();
  await eventually(() => manager.getCapacity().allocatable[RESOURCE] === 0);
  t.same(manager.getCapacity(), { capacity: { [RESOURCE]: 3 }, allocatable: { [RESOURCE]: 0 }, removed: [] }, 'the plugin is gone: every device unhealthy');
  await clock.advance(ENDPOINT_STOP_GRACE_PERIOD_MS);
  t.same(manager.getCapacity().capacity, { [RESOURCE]: 3 }, 'still there at exactly the grace period');
  await clock.advance(1);
  t.same(manager.getCapacity(), { capacity: {}, allocatable: {}, removed: [RESOURCE] }, 'removed after it');
  t.same(manager.getCapacity().removed, [], 'reported once');
});

t.test('re-registration replaces the endpoint', async (t) => {
  const { manager, plugin, dir } = await setup(t, { devices: ['a'] });
  await plugin.serve();
  await plugin.register();
  await eventually(() => manager.getCapacity().capacity[RESOURCE] === 1);
  const second = new DevicePluginServer({ resourceName: RESOURCE, socketDir: dir, endpoint: 'second.sock', deviceIds: ['b', 'c'] });
  t.teardown(() => second.stop());
  await second.serve();
  await second.register();
  await eventually(() => manager.getCapacity().capacity[RESOURCE] === 2);
  await plugin.stop();
  // The old endpoint's end does not mark the new one's devices unhealthy.
  await new Promise((r) => setTimeout(r, 5));
  t.same(manager.getCapacity(), { capacity: { [RESOURCE]: 2 }, allocatable: { [RESOURCE]: 2 }, removed: [] });
});

t.test('allocation: preferred allocation, Allocate, PreStartContainer, run options, exhaustion and freeing', async (t) => {
  const { manager, plugin, active } = await setup(t, { pluginOptions: { preStartRequired: true, getPreferredAllocationAvailable: true } });
  await plugin.serve();
  await plugin.register();
  await eventually(() => manager.getCapacity().allocatable[RESOURCE] === 3);

  const p1 = pod('uid-1', [{ name: 'app', limits: { [RESOURCE]: '2' } }]);
  active.push(p1);
  t.same(await manager.admit({ pod: p1 }), { admit: true });
  t.equal(plugin.calls.preferred.length, 1, 'GetPreferredAllocation was asked');
  t.same(plugin.calls.preferred[0].containerRequests[0], { availableDeviceIDs: ['dev-0', 'dev-1', 'dev-2'], mustIncludeDeviceIDs: [], allocationSize: 2 });
  t.same(plugin.calls.allocate, [['dev-0', 'dev-1']], 'Allocate got the preferred devices');
  t.same(manager.getDevices('uid-1', 'app'), [{ resourceName: RESOURCE, deviceIds: ['dev-0', 'dev-1'] }]);

  const opts = await manager.getDeviceRunContainerOptions(p1, p1.spec!.containers[0]);
  t.same(plugin.calls.preStart, [['dev-0', 'dev-1']], 'PreStartContainer before the container starts');
  t.same(opts, {
    envs: [{ name: 'FOO_DEVICES', value: 'dev-0,dev-1' }],
    mounts: [{ containerPath: '/var/foo', hostPath: '/tmp', readOnly: true }],
    devices: [{ pathOnHost: '/dev/null', pathInContainer: '/dev/foo0', permissions: 'rw' }],
    annotations: [{ name: 'example.com/foo', value: 'dev-0,dev-1' }],
  });
  t.same(await manager.admit({ pod: p1 }), { admit: true }, 'admitting again keeps the allocation');
  t.same(plugin.calls.allocate.length, 1, 'no second Allocate');

  const p2 = pod('uid-2', [{ name: 'app', limits: { [RESOURCE]: '2' } }]);
  t.same(await manager.admit({ pod: p2 }), {
    admit: false,
    reason: 'UnexpectedAdmissionError',
    message: `Allocate failed due to requested number of devices unavailable for ${RESOURCE}. Requested: 2, Available: 1, which is unexpected`,
  });

  active.splice(0, active.length);
  const p3 = pod('uid-3', [{ name: 'app', limits: { [RESOURCE]: '3' } }]);
  active.push(p3);
  t.same(await manager.admit({ pod: p3 }), { admit: true }, 'the devices of a pod that is gone are free again');
  t.same(manager.getDevices('uid-3', 'app')[0].deviceIds, ['dev-0', 'dev-1', 'dev-2']);
  t.same(manager.getDevices('uid-1', 'app'), []);
});

t.test('allocation: init container devices are reused by the app containers; other resources are not touched', async (t) => {
  const { manager, plugin, active } = await setup(t, { devices: ['d0', 'd1'] });
  await plugin.serve();
  await plugin.register();
  await eventually(() => manager.getCapacity().allocatable[RESOURCE] === 2);
  const p = pod('uid-i', [{ name: 'app', limits: { [RESOURCE]: '1', cpu: '1' } }, { name: 'other', limits: { [RESOURCE]: '1' } }], [{ name: 'init', limits: { [RESOURCE]: '1' } }]);
  active.push(p);
  t.same(await manager.admit({ pod: p }), { admit: true });
  t.same(manager.getDevices('uid-i', 'init')[0].deviceIds, ['d0']);
  t.same(manager.getDevices('uid-i', 'app')[0].deviceIds, ['d0'], "the init container's device");
  t.same(manager.getDevices('uid-i', 'other')[0].deviceIds, ['d1']);
  t.same(plugin.calls.preferred, [], 'no GetPreferredAllocation: the plugin does not offer it');
  t.equal(await manager.getDeviceRunContainerOptions(p, { name: 'nodevices', resources: { limits: { cpu: '1' } } }), undefined);
  t.same(plugin.calls.preStart, [], 'no PreStartContainer: the plugin does not ask for it');
});

t.test("an unregistered resource is not the device manager's; a plugin that fails Allocate fails admission and frees the devices", async (t) => {
  const dir = tempDir(t);
  const active: V1Pod[] = [];
  const manager = new DeviceManager({ socketDir: dir });
  await manager.start(() => active);
  t.teardown(() => manager.stop());
  let fail = true;
  const plugin = new DevicePluginServer({
    resourceName: RESOURCE,
    socketDir: dir,
    deviceIds: ['x'],
    allocate: (ids) => {
      if (fail) throw new Error('device x is busy');
      return { envs: { X: ids.join(',') }, mounts: [], devices: [], annotations: {}, cdiDevices: [] };
    },
  });
  t.teardown(() => plugin.stop());
  t.same(await manager.admit({ pod: pod('u0', [{ name: 'app', limits: { 'example.com/other': '1' } }]) }), { admit: true });
  await plugin.start();
  await eventually(() => manager.getCapacity().allocatable[RESOURCE] === 1);
  const p = pod('u1', [{ name: 'app', limits: { [RESOURCE]: '1' } }]);
  active.push(p);
  const r = await manager.admit({ pod: p });
  t.equal(r.admit, false);
  t.equal(r.reason, 'UnexpectedAdmissionError');
  t.match(r.message, /^Allocate failed due to .*device x is busy, which is unexpected$/);
  fail = false;
  t.same(await manager.admit({ pod: p }), { admit: true }, 'the device was given back after the failure');
  t.same(manager.getDevices('u1', 'app'), [{ resourceName: RESOURCE, deviceIds: ['x'] }]);
});

t.test('checkpoint: written on allocation, read at restart; the allocation survives and the device is not reused', async (t) => {
  const dir = tempDir(t);
  const first = await setup(t, { dir, devices: ['d0', 'd1'] });
  await first.plugin.serve();
  await first.plugin.register();
  await eventually(() => first.manager.getCapacity().allocatable[RESOURCE] === 2);
  const p1 = pod('uid-a', [{ name: 'app', limits: { [RESOURCE]: '1' } }]);
  first.active.push(p1);
  t.same(await first.manager.admit({ pod: p1 }), { admit: true });
  const data = unmarshalCheckpoint(readFileSync(join(dir, CHECKPOINT_FILE_NAME), 'utf8'));
  t.equal(data.PodDeviceEntries.length, 1);
  t.match(data.PodDeviceEntries[0], { PodUID: 'uid-a', ContainerName: 'app', ResourceName: RESOURCE, DeviceIDs: ['d0'] });
  t.same(data.RegisteredDevices, { [RESOURCE]: ['d0', 'd1'] });
  const raw = JSON.parse(readFileSync(join(dir, CHECKPOINT_FILE_NAME), 'utf8'));
  t.same(Object.keys(raw), ['Data', 'Checksum'], "Go's top-level fields");
  await first.manager.stop();
  await first.plugin.stop();

  // The restarted kubelet: the socket dir is cleaned but for the checkpoint; the resource waits for its plugin.
  const second = await setup(t, { dir, devices: ['d0', 'd1'] });
  t.ok(existsSync(join(dir, CHECKPOINT_FILE_NAME)));
  t.notOk(second.manager.shouldResetExtendedResourceCapacity(), 'a checkpoint exists: keep extended resources');
  t.same(second.manager.getCapacity(), { capacity: { [RESOURCE]: 0 }, allocatable: { [RESOURCE]: 0 }, removed: [] });
  second.active.push(p1);
  t.same(second.manager.getDevices('uid-a', 'app'), [{ resourceName: RESOURCE, deviceIds: ['d0'] }], 'the allocation came back');
  t.same(await second.manager.admit({ pod: p1 }), { admit: true }, 're-admission keeps it');
  t.same(second.plugin.calls.allocate, [], 'without a new Allocate');
  await second.plugin.serve();
  await second.plugin.register();
  await eventually(() => second.manager.getCapacity().allocatable[RESOURCE] === 2);
  const p2 = pod('uid-b', [{ name: 'app', limits: { [RESOURCE]: '1' } }]);
  second.active.push(p2);
  t.same(await second.manager.admit({ pod: p2 }), { admit: true });
  t.same(second.manager.getDevices('uid-b', 'app')[0].deviceIds, ['d1'], 'the other device: d0 is still the first pod\'s');
  const opts = await second.manager.getDeviceRunContainerOptions(p1, p1.spec!.containers[0]);
  t.same(opts?.envs, [{ name: 'FOO_DEVICES', value: 'd0' }], "the checkpointed AllocateResponse gives the first pod's options");
});

t.test('checkpoint: a corrupt one is reported, not fatal', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, CHECKPOINT_FILE_NAME), '{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"example.com/foo":["a"]}},"Checksum":1}');
  const errors: string[] = [];
  const logger = {
    info: () => {},
    warn: (msg: string) => errors.push(msg),
    error: (msg: string, err?: unknown) => errors.push(`${msg}: ${(err as Error)?.message}`),
    v: () => ({ enabled: false, info: () => {} }),
    with: () => logger,
  };
  const manager = new DeviceManager({ socketDir: dir, logger });
  await manager.start(() => []);
  t.teardown(() => manager.stop());
  t.match(errors, [/Failed to retrieve checkpoint: checkpoint is corrupted: checksum mismatch/, /Continue after failing to read checkpoint file/]);
  t.same(manager.getCapacity(), { capacity: {}, allocatable: {}, removed: [] }, 'nothing from it');
  t.ok(existsSync(join(dir, 'kubelet.sock')), 'the registration server runs');
});

t.test('no checkpoint: extended resources are reset at registration', async (t) => {
  const dir = tempDir(t);
  const manager = new DeviceManager({ socketDir: dir });
  t.ok(manager.shouldResetExtendedResourceCapacity());
});
