import t from 'tap';
import type { Test } from 'tap';
import { createServer, type Socket } from 'node:net';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { CsiDriverRegistry, CsiRegistrationHandler, NodeInfoManager, PluginWatcher, pluginsRegistryDir, type PluginHandler } from '../src/index.js';
import { FakeCsiDriverServer, FakeNodeInfoApi } from '../src/testing.js';
import { eventually, tempDir } from './csi-helpers.js';

class RecordingHandler implements PluginHandler {
  readonly events: string[] = [];
  validateError?: string;
  registerError?: string;
  validatePlugin(name: string, endpoint: string, versions: string[]): void {
    this.events.push(`validate ${name} ${endpoint} ${versions.join(',')}`);
    if (this.validateError) throw new Error(this.validateError);
  }
  registerPlugin(name: string, endpoint: string, versions: string[]): void {
    this.events.push(`register ${name} ${endpoint} ${versions.join(',')}`);
    if (this.registerError) throw new Error(this.registerError);
  }
  deRegisterPlugin(name: string): void {
    this.events.push(`deregister ${name}`);
  }
}

async function setup(t: Test, opts: { handler?: PluginHandler; watch?: boolean; dialTimeoutMs?: number } = {}) {
  const root = tempDir(t);
  const dir = pluginsRegistryDir(root);
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const handler = opts.handler ?? new RecordingHandler();
  const watcher = new PluginWatcher({ rootDir: root, clock, logger, handlers: { CSIPlugin: handler }, watch: opts.watch ?? false, dialTimeoutMs: opts.dialTimeoutMs });
  t.teardown(() => watcher.stop());
  const drivers: FakeCsiDriverServer[] = [];
  const driver = (name: string, extra: Partial<ConstructorParameters<typeof FakeCsiDriverServer>[0]> = {}): FakeCsiDriverServer => {
    const d = new FakeCsiDriverServer({ driverName: name, csiSocket: join(root, `${name}.csi.sock`), registrationSocket: join(dir, `${name}-reg.sock`), ...extra });
    drivers.push(d);
    t.teardown(() => d.stop());
    return d;
  };
  return { root, dir, clock, logger, handler: handler as RecordingHandler, watcher, driver };
}

/** One reconcile period on the fake clock, then the pass it started. */
async function tick(clock: FakeClock, watcher: PluginWatcher): Promise<void> {
  await clock.advance(1000);
  await watcher.sync();
}

t.test('start creates plugins_registry (0750) and registers the sockets already there; stop leaves no timers', async (t) => {
  const { dir, clock, handler, watcher, driver } = await setup(t);
  mkdirSync(dir, { recursive: true, mode: 0o750 });
  const d = driver('a.csi.k8s.io');
  await d.start();
  const status = d.waitForRegistrationStatus();
  await watcher.start();
  t.equal(statSync(dir).mode & 0o777, 0o750);
  t.same(await status, { pluginRegistered: true, error: '' });
  t.same(handler.events, [`validate a.csi.k8s.io ${d.csiSocket} 1.0.0`, `register a.csi.k8s.io ${d.csiSocket} 1.0.0`]);
  t.match(watcher.registeredPlugins(), [{ socketPath: d.registrationSocket, name: 'a.csi.k8s.io', type: 'CSIPlugin', endpoint: d.csiSocket }]);
  t.ok(clock.pendingTimers() > 0);
  await watcher.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('a missing directory is created with 0750', async (t) => {
  const { dir, watcher } = await setup(t);
  await watcher.start();
  t.equal(statSync(dir).mode & 0o777, 0o750);
});

t.test('a socket that appears later registers at the next rescan; one that goes away deregisters', async (t) => {
  const { clock, handler, watcher, driver } = await setup(t);
  await watcher.start();
  const d = driver('b.csi');
  await d.start();
  t.same(handler.events, []);
  await tick(clock, watcher);
  t.same(handler.events, [`validate b.csi ${d.csiSocket} 1.0.0`, `register b.csi ${d.csiSocket} 1.0.0`]);
  t.same(d.registrationStatuses, [{ pluginRegistered: true, error: '' }]);
  // Nothing more while it stays.
  await tick(clock, watcher);
  t.equal(handler.events.length, 2);
  await d.stopRegistration();
  await tick(clock, watcher);
  t.same(handler.events.slice(2), ['deregister b.csi']);
  t.same(watcher.registeredPlugins(), []);
});

t.test('a replaced socket (a restarted registrar) is deregistered, then registered again', async (t) => {
  const { clock, handler, watcher, driver } = await setup(t);
  const d = driver('c.csi');
  await d.start();
  await watcher.start();
  const first = watcher.registeredPlugins()[0];
  await d.stopRegistration();
  await d.startRegistration();
  await tick(clock, watcher);
  t.same(handler.events.slice(2), ['deregister c.csi', `validate c.csi ${d.csiSocket} 1.0.0`, `register c.csi ${d.csiSocket} 1.0.0`]);
  const second = watcher.registeredPlugins()[0];
  t.ok(second && first && second.generation > first.generation);
  t.same(d.registrationStatuses, [
    { pluginRegistered: true, error: '' },
    { pluginRegistered: true, error: '' },
  ]);
});

t.test("no handler for the plugin's type: Go's message to the plugin, retried with backoff", async (t) => {
  const { clock, watcher, driver, logger } = await setup(t);
  const d = driver('dev', { pluginType: 'DevicePlugin' });
  await d.start();
  await watcher.start();
  const msg = `RegisterPlugin error -- no handler registered for plugin type: DevicePlugin at socket ${d.registrationSocket}`;
  t.same(d.registrationStatuses, [{ pluginRegistered: false, error: msg }]);
  t.ok(logger.entries.some((e) => e.level === 'error' && (e.err as Error)?.message === msg));
  t.same(watcher.registeredPlugins(), []);
  // 500 ms backoff: not before, but after it.
  await clock.advance(400);
  await watcher.sync();
  t.equal(d.registrationStatuses.length, 1);
  await tick(clock, watcher);
  t.equal(d.registrationStatuses.length, 2);
  // A handler added later takes it.
  const handler = new RecordingHandler();
  watcher.addHandler('DevicePlugin', handler);
  await clock.advance(1000);
  await watcher.sync();
  await clock.advance(1000);
  await watcher.sync();
  t.same(handler.events, [`validate dev ${d.csiSocket} 1.0.0`, `register dev ${d.csiSocket} 1.0.0`]);
  t.same(d.registrationStatuses.at(-1), { pluginRegistered: true, error: '' });
});

t.test('validation and registration failures go back to the plugin with Go texts', async (t) => {
  const handler = new RecordingHandler();
  handler.validateError = 'bad version';
  const { clock, watcher, driver } = await setup(t, { handler });
  const d = driver('e.csi');
  await d.start();
  await watcher.start();
  t.same(d.registrationStatuses, [{ pluginRegistered: false, error: 'RegisterPlugin error -- plugin validation failed with err: bad version' }]);
  t.same(watcher.registeredPlugins(), []);

  handler.validateError = undefined;
  handler.registerError = 'no node info';
  await clock.advance(60_000);
  await watcher.sync();
  t.same(d.registrationStatuses.at(-1), { pluginRegistered: false, error: 'RegisterPlugin error -- plugin registration failed with err: no node info' });
  // As Go: a plugin whose handler failed to register stays in the actual state (not retried until its socket changes),
  // and is deregistered when its socket goes.
  const calls = d.registrationStatuses.length;
  await clock.advance(60_000);
  await watcher.sync();
  t.equal(d.registrationStatuses.length, calls);
  await d.stopRegistration();
  await tick(clock, watcher);
  t.equal(handler.events.at(-1), 'deregister e.csi');
});

t.test('a socket nobody answers on: the dial failure is logged and retried; dot files and plain files are skipped', async (t) => {
  const { dir, clock, watcher, logger, handler } = await setup(t, { dialTimeoutMs: 100 });
  mkdirSync(dir, { recursive: true });
  const connections = new Set<Socket>();
  const silent = createServer((socket) => {
    connections.add(socket);
    socket.on('error', () => undefined);
  });
  const socketPath = join(dir, 'silent.sock');
  await new Promise<void>((resolve) => silent.listen(socketPath, resolve));
  t.teardown(async () => {
    await watcher.stop();
    for (const socket of connections) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });
  writeFileSync(join(dir, 'not-a-socket'), 'x');
  const hidden = createServer();
  await new Promise<void>((resolve) => hidden.listen(join(dir, '.hidden.sock'), resolve));
  t.teardown(() => new Promise<void>((resolve) => hidden.close(() => resolve())));

  await watcher.start();
  const failures = () => logger.entries.filter((e) => e.level === 'error' && /^RegisterPlugin error -- dial failed at socket /.test((e.err as Error)?.message ?? ''));
  t.equal(failures().length, 1);
  t.match((failures()[0]?.err as Error).message, `RegisterPlugin error -- dial failed at socket ${socketPath}, err: failed to dial socket ${socketPath}, err: context deadline exceeded`);
  t.equal(failures()[0]?.kv.path, socketPath);
  await tick(clock, watcher);
  t.equal(failures().length, 2, 'retried after its backoff');
  t.same(handler.events, []);
  t.notOk(logger.entries.some((e) => String(e.kv.path ?? '').includes('.hidden') && e.level === 'error'));
});

t.test('fs.watch notices a new socket without waiting for the rescan period', async (t) => {
  const { handler, watcher, driver } = await setup(t, { watch: true });
  await watcher.start();
  const d = driver('f.csi');
  await d.start();
  await eventually(() => handler.events.length === 2);
  t.same(handler.events, [`validate f.csi ${d.csiSocket} 1.0.0`, `register f.csi ${d.csiSocket} 1.0.0`]);
});

t.test('end to end: the CSI registration handler registers a real driver and installs it on the CSINode; a kubelet restart registers it again', async (t) => {
  const root = tempDir(t);
  const api = new FakeNodeInfoApi();
  const d = new FakeCsiDriverServer({
    driverName: 'hostpath.csi.k8s.io',
    csiSocket: join(root, 'csi.sock'),
    registrationSocket: join(pluginsRegistryDir(root), 'hostpath.csi.k8s.io-reg.sock'),
    nodeInfo: { nodeId: 'node-1', maxVolumesPerNode: 3, accessibleTopology: { segments: { 'topology.hostpath.csi/node': 'node-1' } } },
  });
  t.teardown(() => d.stop());
  await d.start();
  const kubelet = async () => {
    const registry = new CsiDriverRegistry();
    const clock = new FakeClock();
    const logger = new RecordingLogger();
    const nodeInfo = new NodeInfoManager({ nodeName: 'node-1', api, clock, logger });
    const watcher = new PluginWatcher({ rootDir: root, clock, logger, watch: false, handlers: { CSIPlugin: new CsiRegistrationHandler({ registry, nodeInfo, logger }) } });
    await watcher.start();
    return { registry, watcher, clock };
  };
  const first = await kubelet();
  t.same(first.registry.list(), [{ name: 'hostpath.csi.k8s.io', endpoint: d.csiSocket, highestSupportedVersion: '1.0.0' }]);
  t.equal((await first.registry.client('hostpath.csi.k8s.io').nodeGetCapabilities())[0], 'STAGE_UNSTAGE_VOLUME');
  t.same(api.csiNodes.get('node-1')?.spec?.drivers, [{ name: 'hostpath.csi.k8s.io', nodeID: 'node-1', topologyKeys: ['topology.hostpath.csi/node'], allocatable: { count: 3 } }]);
  // The kubelet goes away (its registry with it) and comes back: the socket is still there and registers again.
  await first.watcher.stop();
  first.registry.closeAll();
  const second = await kubelet();
  t.teardown(() => second.watcher.stop());
  t.teardown(() => second.registry.closeAll());
  t.ok(second.registry.has('hostpath.csi.k8s.io'));
  t.equal(d.registrationStatuses.length, 2);
  t.same(d.registrationStatuses[1], { pluginRegistered: true, error: '' });
  // The driver's registrar goes away: uninstalled from the CSINode.
  await d.stopRegistration();
  await second.clock.advance(1000);
  await second.watcher.sync();
  t.notOk(second.registry.has('hostpath.csi.k8s.io'));
  t.same(api.csiNodes.get('node-1')?.spec?.drivers, []);
});
