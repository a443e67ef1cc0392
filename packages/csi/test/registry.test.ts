import t from 'tap';
import { FakeClock, RecordingLogger, captureStderr } from '@kubelet-ts/core/testing';
import { ANNOTATION_KEY_NODE_ID, CsiDriverRegistry, CsiRegistrationHandler, GrpcCode, NodeInfoManager, highestSupportedVersion } from '../src/index.js';
import { FakeCsiDriverLookup, FakeCsiNodeClient, FakeNodeInfoApi } from '../src/testing.js';
import { rejection } from './csi-helpers.js';

function setup() {
  const clients = new Map<string, FakeCsiNodeClient>();
  const made: string[] = [];
  const registry = new CsiDriverRegistry({
    clientFactory: (endpoint, name) => {
      made.push(`${name}@${endpoint}`);
      const client = clients.get(name) ?? new FakeCsiNodeClient();
      clients.set(name, client);
      return client;
    },
  });
  const api = new FakeNodeInfoApi();
  const logger = new RecordingLogger();
  const nodeInfo = new NodeInfoManager({ nodeName: 'node-1', api, logger });
  const handler = new CsiRegistrationHandler({ registry, nodeInfo, logger });
  return { clients, made, registry, api, nodeInfo, logger, handler };
}

t.test('CsiDriverRegistry: lookup, one client per driver made lazily and reused, closed on removal', async (t) => {
  const { registry, made, clients } = setup();
  t.notOk(registry.has('a'));
  t.throws(() => registry.client('a'), { message: 'driver name a not found in the list of registered CSI drivers' });
  registry.set({ name: 'a', endpoint: '/plugins/a/csi.sock', highestSupportedVersion: '1.0.0' });
  t.ok(registry.has('a'));
  t.same(made, [], 'no client before it is asked for');
  const c = registry.client('a');
  t.equal(registry.client('a'), c);
  t.same(made, ['a@/plugins/a/csi.sock']);
  t.same(registry.list(), [{ name: 'a', endpoint: '/plugins/a/csi.sock', highestSupportedVersion: '1.0.0' }]);
  t.ok(registry.delete('a'));
  t.ok(clients.get('a')?.closed);
  t.notOk(registry.delete('a'));
});

t.test('highestSupportedVersion: the highest 1.x; 0.x refused; 2.x ignored', async (t) => {
  t.equal(highestSupportedVersion(['0.3.0', '1.0.0', '1.2.0']), '1.2.0');
  t.equal(highestSupportedVersion(['v1.0.0', '2.0.0']), '1.0.0');
  t.throws(() => highestSupportedVersion(['0.3.0']), { message: 'highest supported version reported by driver is 0.3.0, must be v1.x' });
  t.throws(() => highestSupportedVersion(['2.0.0']), { message: 'could not find a highest supported version from versions ([2.0.0]) reported by this driver: <nil>' });
  t.throws(() => highestSupportedVersion(['x']), { message: 'could not find a highest supported version from versions ([x]) reported by this driver: could not parse "x" as version' });
});

t.test('validatePlugin: Go messages for empty, unsupported and lower-than-registered versions', async (t) => {
  const { handler, registry } = setup();
  handler.validatePlugin('a.csi', '/a.sock', ['1.0.0']);
  t.throws(() => handler.validatePlugin('a.csi', '/a.sock', []), {
    message: 'validation failed for CSI Driver a.csi at endpoint /a.sock: kubernetes.io/csi: ValidatePlugin for CSI driver "a.csi" failed. Plugin returned an empty list for supported versions',
  });
  t.throws(() => handler.validatePlugin('a.csi', '/a.sock', ['0.3.0']), {
    message:
      'validation failed for CSI Driver a.csi at endpoint /a.sock: kubernetes.io/csi: ValidatePlugin for CSI driver "a.csi" failed. None of the versions specified ["0.3.0"] are supported. err=highest supported version reported by driver is 0.3.0, must be v1.x',
  });
  registry.set({ name: 'a.csi', endpoint: '/a.sock', highestSupportedVersion: '1.0.0' });
  t.throws(() => handler.validatePlugin('a.csi', '/a.sock', ['1.0.0']), {
    message:
      'validation failed for CSI Driver a.csi at endpoint /a.sock: kubernetes.io/csi: ValidatePlugin for CSI driver "a.csi" failed. Another driver with the same name is already registered with a higher supported version: "1.0.0"',
  });
  handler.validatePlugin('a.csi', '/a.sock', ['1.1.0']);
});

t.test('registerPlugin: stored, NodeGetInfo asked, installed on the CSINode and Node; deRegisterPlugin undoes it', async (t) => {
  const { handler, registry, clients, api } = setup();
  const client = new FakeCsiNodeClient();
  client.nodeInfo = { nodeId: 'nid-1', maxVolumesPerNode: 7, accessibleTopology: { segments: { 'topology.a/zone': 'z' } } };
  clients.set('a.csi', client);
  await handler.registerPlugin('a.csi', '/var/lib/kubelet/plugins/a/csi.sock', ['1.0.0', '1.5.0']);
  t.same(registry.get('a.csi'), { name: 'a.csi', endpoint: '/var/lib/kubelet/plugins/a/csi.sock', highestSupportedVersion: '1.5.0' });
  t.same(client.methods(), ['nodeGetInfo']);
  t.same(api.csiNodes.get('node-1')?.spec?.drivers, [{ name: 'a.csi', nodeID: 'nid-1', topologyKeys: ['topology.a/zone'], allocatable: { count: 7 } }]);
  t.equal(api.node.metadata?.labels?.['topology.a/zone'], 'z');

  await handler.deRegisterPlugin('a.csi');
  t.notOk(registry.has('a.csi'));
  t.ok(client.closed);
  t.same(api.csiNodes.get('node-1')?.spec?.drivers, []);
  t.notOk(api.node.metadata?.annotations?.[ANNOTATION_KEY_NODE_ID]);
});

t.test('registerPlugin: a failing NodeGetInfo unregisters the driver and rejects with the driver error', async (t) => {
  const { handler, registry, clients, api } = setup();
  const client = new FakeCsiNodeClient().failOn('nodeGetInfo', GrpcCode.Unavailable, 'not ready');
  clients.set('a.csi', client);
  const err = await rejection(t, handler.registerPlugin('a.csi', '/a.sock', ['1.0.0']));
  t.equal(err.message, 'rpc error: code = Unavailable desc = not ready');
  t.notOk(registry.has('a.csi'));
  t.same(api.csiNodes.get('node-1')?.spec?.drivers ?? [], []);
});

t.test('registerPlugin: a failing CSINode install unregisters the driver', async (t) => {
  const api = new FakeNodeInfoApi();
  api.node.metadata!.labels = { zone: 'other' };
  const client = new FakeCsiNodeClient();
  client.nodeInfo = { nodeId: 'n', maxVolumesPerNode: 0, accessibleTopology: { segments: { zone: 'z' } } };
  const registry = new CsiDriverRegistry({ clientFactory: () => client });
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const handler = new CsiRegistrationHandler({ registry, logger, nodeInfo: new NodeInfoManager({ nodeName: 'node-1', api, clock, logger }) });
  const p = handler.registerPlugin('a.csi', '/a.sock', ['1.0.0']);
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!settled) await clock.advance(1000);
  const err = await rejection(t, p);
  t.match(err.message, /^error updating Node object with CSI driver node info: error updating node: timed out waiting for the condition; caused by: detected topology value collision/);
  t.notOk(registry.has('a.csi'));
  t.ok(client.closed);
});

t.test('without a NodeInfoManager (standalone) a driver registers with NodeGetInfo only', async (t) => {
  const client = new FakeCsiNodeClient();
  const registry = new CsiDriverRegistry({ clientFactory: () => client });
  const handler = new CsiRegistrationHandler({ registry, logger: new RecordingLogger() });
  await handler.registerPlugin('a.csi', '/a.sock', ['1.0.0']);
  t.ok(registry.has('a.csi'));
  t.same(client.methods(), ['nodeGetInfo']);
});

t.test('without a logger, errors go to stderr (the core default logger); so do the node info manager\'s', async (t) => {
  const client = new FakeCsiNodeClient();
  client.failOn('nodeGetInfo', GrpcCode.Unavailable, 'driver down');
  const registry = new CsiDriverRegistry({ clientFactory: () => client });
  const api = new FakeNodeInfoApi();
  const handler = new CsiRegistrationHandler({ registry, nodeInfo: new NodeInfoManager({ nodeName: 'node-1', api }) });
  const stderr = captureStderr(t);
  registry.delete = () => {
    throw new Error('close failed');
  };
  await rejection(t, handler.registerPlugin('a.csi', '/a.sock', ['1.0.0']));
  await new NodeInfoManager({ nodeName: 'node-1', api }).installCsiDriver('b.csi', 'nb', 0, undefined);
  stderr.restore();
  const text = stderr.lines().join('\n');
  t.match(text, /kubernetes\.io\/csi: registrationHandler\.RegisterPlugin failed to unregister plugin due to previous error: close failed/);
  t.match(text, /Invalid attach limit value 0 cannot be added to CSINode object for \\?"b\.csi\\?"/);
  t.notMatch(text, /Trying to validate/, 'info stays below the default threshold');
});

t.test('FakeCsiDriverLookup: clients by name, Go error for others', async (t) => {
  const lookup = new FakeCsiDriverLookup();
  const c = lookup.add('a');
  t.equal(lookup.client('a'), c);
  t.ok(lookup.has('a'));
  t.throws(() => lookup.client('b'), { message: 'driver name b not found in the list of registered CSI drivers' });
  lookup.remove('a');
  t.notOk(lookup.has('a'));
});
