// The device manager's plugin watcher handler (Go: GetWatcherHandler, ValidatePlugin, RegisterPlugin,
// DeRegisterPlugin): device plugins that register through <root-dir>/plugins_registry, over real unix sockets.
import t from 'tap';
import type { Test } from 'tap';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { FakeClock } from '@kubelet-ts/core/testing';
import { DEPRECATION_FILE_NAME, DeviceManager, DevicePluginServer, ENDPOINT_STOP_GRACE_PERIOD_MS, grpcJs, loadDevicePluginPackage } from '../src/index.js';
import { eventually, pod, tempDir } from './helpers.js';

const RESOURCE = 'example.com/foo';

function newManager(t: Test, dir: string, clock = new FakeClock()) {
  const active: V1Pod[] = [];
  const manager = new DeviceManager({ socketDir: join(dir, 'device-plugins'), clock });
  t.teardown(() => manager.stop());
  return { manager, active, clock };
}

/** A plugin serving DevicePlugin on an absolute path outside the device plugin directory. */
async function servePlugin(t: Test, dir: string, deviceIds = ['dev-0', 'dev-1']): Promise<DevicePluginServer> {
  const socketDir = join(dir, 'elsewhere');
  mkdirSync(socketDir, { recursive: true });
  const plugin = new DevicePluginServer({ resourceName: RESOURCE, socketDir, endpoint: 'foo.sock', deviceIds });
  t.teardown(() => plugin.stop());
  await plugin.serve();
  return plugin;
}

t.test('validatePlugin: Go texts for an unsupported version and an invalid resource name', async (t) => {
  const { manager } = newManager(t, tempDir(t));
  const handler = manager.watcherHandler();
  t.throws(() => handler.validatePlugin(RESOURCE, '/x.sock', ['v1alpha', 'v2']), {
    message: 'manager version, v1beta1, is not among plugin supported versions [v1alpha v2]',
  });
  t.throws(() => handler.validatePlugin(RESOURCE, '/x.sock', []), { message: 'manager version, v1beta1, is not among plugin supported versions []' });
  t.throws(() => handler.validatePlugin('foo', '/x.sock', ['v1beta1']), {
    message: 'invalid name of device plugin socket: the ResourceName "foo" is invalid',
  });
  t.throws(() => handler.validatePlugin('kubernetes.io/foo', '/x.sock', ['v1beta1']), {
    message: 'invalid name of device plugin socket: the ResourceName "kubernetes.io/foo" is invalid',
  });
  t.doesNotThrow(() => handler.validatePlugin(RESOURCE, '/x.sock', ['v1alpha', 'v1beta1']), 'one supported version is enough');
});

t.test('watcherHandler creates the DEPRECATION file, which start() keeps', async (t) => {
  const dir = tempDir(t);
  const { manager, active } = newManager(t, dir);
  manager.watcherHandler();
  const file = join(manager.socketDir, DEPRECATION_FILE_NAME);
  t.ok(existsSync(file), 'created');
  await manager.start(() => active);
  t.ok(existsSync(file), 'kept by the cleanup of the directory');
});

t.test('registerPlugin dials the absolute endpoint as is; devices are allocatable; deRegisterPlugin makes them unhealthy', async (t) => {
  const dir = tempDir(t);
  const { manager, active, clock } = newManager(t, dir);
  await manager.start(() => active);
  const plugin = await servePlugin(t, dir);
  const handler = manager.watcherHandler();
  handler.validatePlugin(RESOURCE, plugin.socketPath, ['v1beta1']);
  await handler.registerPlugin(RESOURCE, plugin.socketPath, ['v1beta1']);
  await eventually(() => manager.getCapacity().allocatable[RESOURCE] === 2);
  t.same(manager.getCapacity(), { capacity: { [RESOURCE]: 2 }, allocatable: { [RESOURCE]: 2 }, removed: [] });

  const p = pod('uid-1', [{ name: 'app', limits: { [RESOURCE]: '1' } }]);
  active.push(p);
  t.same(await manager.admit({ pod: p }), { admit: true });
  const opts = await manager.getDeviceRunContainerOptions(p, p.spec!.containers[0]);
  t.same(opts?.envs, [{ name: 'EXAMPLE_COM_FOO_DEVICES', value: plugin.calls.allocate[0].join(',') }], "the plugin's Allocate env");

  handler.deRegisterPlugin(RESOURCE);
  await eventually(() => manager.getCapacity().allocatable[RESOURCE] === 0);
  t.same(manager.getCapacity(), { capacity: { [RESOURCE]: 2 }, allocatable: { [RESOURCE]: 0 }, removed: [] }, 'every device unhealthy');
  await clock.advance(ENDPOINT_STOP_GRACE_PERIOD_MS + 1);
  t.same(manager.getCapacity(), { capacity: {}, allocatable: {}, removed: [RESOURCE] }, 'removed after the grace period');
});

t.test('a second registration replaces the endpoint; the old one ending does not touch the new devices', async (t) => {
  const dir = tempDir(t);
  const { manager, active } = newManager(t, dir);
  await manager.start(() => active);
  const first = await servePlugin(t, dir, ['a']);
  const handler = manager.watcherHandler();
  await handler.registerPlugin(RESOURCE, first.socketPath, ['v1beta1']);
  await eventually(() => manager.getCapacity().capacity[RESOURCE] === 1);
  const second = new DevicePluginServer({ resourceName: RESOURCE, socketDir: join(dir, 'elsewhere'), endpoint: 'second.sock', deviceIds: ['b', 'c'] });
  t.teardown(() => second.stop());
  await second.serve();
  await handler.registerPlugin(RESOURCE, second.socketPath, ['v1beta1']);
  await eventually(() => manager.getCapacity().capacity[RESOURCE] === 2);
  await first.stop();
  await new Promise((r) => setTimeout(r, 5));
  t.same(manager.getCapacity(), { capacity: { [RESOURCE]: 2 }, allocatable: { [RESOURCE]: 2 }, removed: [] });
});

t.test('registerPlugin before start() waits for it; stop() fails a waiting one and later ones', async (t) => {
  const dir = tempDir(t);
  const { manager, active } = newManager(t, dir);
  const plugin = await servePlugin(t, dir);
  const handler = manager.watcherHandler();
  let done = false;
  const registered = handler.registerPlugin(RESOURCE, plugin.socketPath, ['v1beta1']).then(() => (done = true));
  await new Promise((r) => setTimeout(r, 5));
  t.notOk(done, 'waiting for start');
  await manager.start(() => active);
  await registered;
  await eventually(() => manager.getCapacity().allocatable[RESOURCE] === 2);
  t.pass('registered once started');

  const otherManager = newManager(t, tempDir(t)).manager;
  const waiting = otherManager.watcherHandler().registerPlugin(RESOURCE, plugin.socketPath, ['v1beta1']);
  await otherManager.stop();
  await t.rejects(waiting, { message: 'the device manager stopped' });
  await t.rejects(otherManager.registerPlugin(RESOURCE, plugin.socketPath), { message: 'the device manager stopped' });
});

t.test('registerPlugin: GetDevicePluginOptions failing is reported with Go text', async (t) => {
  const dir = tempDir(t);
  const { manager, active } = newManager(t, dir);
  await manager.start(() => active);
  // A socket that serves gRPC but not the DevicePlugin service.
  const socketPath = join(dir, 'not-a-plugin.sock');
  const server = new (grpcJs().Server)();
  server.addService(loadDevicePluginPackage().Registration.service, { Register: (_c: unknown, cb: (err: null, res: object) => void) => cb(null, {}) });
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix://${socketPath}`, grpcJs().ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  t.teardown(() => server.forceShutdown());
  await t.rejects(manager.watcherHandler().registerPlugin(RESOURCE, socketPath, ['v1beta1']), { message: /^failed to get device plugin options: .*UNIMPLEMENTED/ });
  t.same(manager.getCapacity(), { capacity: {}, allocatable: {}, removed: [] }, 'nothing registered');
});
