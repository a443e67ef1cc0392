import t from 'tap';
import { FakeClock, FakeApiError, RecordingLogger } from '@kubelet-ts/core/testing';
import { ANNOTATION_KEY_NODE_ID, MIGRATED_PLUGINS_ANNOTATION_KEY, NodeInfoManager, aggregateErrorText, csiAttachLimitKey } from '../src/index.js';
import { FakeNodeInfoApi } from '../src/testing.js';
import { rejection } from './csi-helpers.js';

function setup(opts: { migratedPlugins?: string[] } = {}) {
  const api = new FakeNodeInfoApi({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1', uid: 'uid-node-1', labels: { 'kubernetes.io/hostname': 'node-1' } } });
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const nim = new NodeInfoManager({ nodeName: 'node-1', api, clock, logger, random: () => 0, ...opts });
  return { api, clock, logger, nim };
}

/** Runs p while moving the fake clock, so the backoff sleeps between retries pass. */
async function withClock<T>(clock: FakeClock, p: Promise<T>): Promise<T> {
  let done = false;
  const settled = p.then(
    () => (done = true),
    () => (done = true),
  );
  while (!done) await clock.advance(1000);
  await settled;
  return p;
}

t.test('installCsiDriver: CSINode created owned by the Node with the driver; topology labels and the nodeid annotation on the Node', async (t) => {
  const { api, nim } = setup();
  await nim.installCsiDriver('hostpath.csi.k8s.io', 'node-1-id', 10, { 'topology.hostpath/zone': 'z1', 'topology.hostpath/node': 'node-1' });
  const csiNode = api.csiNodes.get('node-1');
  t.same(csiNode?.metadata?.ownerReferences, [{ apiVersion: 'v1', kind: 'Node', name: 'node-1', uid: 'uid-node-1' }]);
  t.equal(csiNode?.apiVersion, 'storage.k8s.io/v1');
  t.equal(csiNode?.kind, 'CSINode');
  t.same(csiNode?.spec?.drivers, [
    { name: 'hostpath.csi.k8s.io', nodeID: 'node-1-id', topologyKeys: ['topology.hostpath/node', 'topology.hostpath/zone'], allocatable: { count: 10 } },
  ]);
  t.notOk(csiNode?.metadata?.annotations?.[MIGRATED_PLUGINS_ANNOTATION_KEY], 'no migrated plugins: no annotation');
  t.same(api.node.metadata?.labels, { 'kubernetes.io/hostname': 'node-1', 'topology.hostpath/zone': 'z1', 'topology.hostpath/node': 'node-1' });
  t.equal(api.node.metadata?.annotations?.[ANNOTATION_KEY_NODE_ID], '{"hostpath.csi.k8s.io":"node-1-id"}');
  // The node is patched before the CSINode is written.
  t.same(api.ops(), ['getNode', 'patchNode', 'getCSINode', 'getNode', 'createCSINode', 'updateCSINode']);
});

t.test('a second driver: both in the annotation (sorted JSON) and on the CSINode; no allocatable without a limit', async (t) => {
  const { api, nim, logger } = setup();
  await nim.installCsiDriver('b.csi', 'nb', 0, undefined);
  await nim.installCsiDriver('a.csi', 'na', 5, {});
  t.equal(api.node.metadata?.annotations?.[ANNOTATION_KEY_NODE_ID], '{"a.csi":"na","b.csi":"nb"}');
  t.same(api.csiNodes.get('node-1')?.spec?.drivers, [
    { name: 'b.csi', nodeID: 'nb', topologyKeys: [] },
    { name: 'a.csi', nodeID: 'na', topologyKeys: [], allocatable: { count: 5 } },
  ]);
  t.ok(logger.find('Invalid attach limit value 0 cannot be added to CSINode object for "b.csi"'));
  // Installing the same again changes nothing.
  const before = api.requests.length;
  await nim.installCsiDriver('a.csi', 'na', 5, {});
  t.same(
    api.requests.slice(before).map((r) => r.op),
    ['getNode', 'getCSINode'],
  );
});

t.test('two drivers registering at once: one read-modify-write at a time, so neither node ID is lost', async (t) => {
  const { api, nim } = setup();
  await Promise.all([nim.installCsiDriver('b.csi', 'nb', 0, { 'topology.b/zone': 'z1' }), nim.installCsiDriver('a.csi', 'na', 0, { 'topology.a/rack': 'r1' })]);
  t.equal(api.node.metadata?.annotations?.[ANNOTATION_KEY_NODE_ID], '{"a.csi":"na","b.csi":"nb"}');
  t.same(api.node.metadata?.labels, { 'kubernetes.io/hostname': 'node-1', 'topology.b/zone': 'z1', 'topology.a/rack': 'r1' });
  t.same(api.csiNodes.get('node-1')?.spec?.drivers?.map((d) => d.name).sort(), ['a.csi', 'b.csi']);
  await Promise.all([nim.uninstallCsiDriver('a.csi'), nim.installCsiDriver('c.csi', 'nc', 0, undefined)]);
  t.equal(api.node.metadata?.annotations?.[ANNOTATION_KEY_NODE_ID], '{"b.csi":"nb","c.csi":"nc"}');
});

t.test('a changed node ID replaces the driver entry', async (t) => {
  const { api, nim } = setup();
  await nim.installCsiDriver('a.csi', 'old', 0, { zone: 'z' });
  await nim.installCsiDriver('a.csi', 'new', 3, { zone: 'z' });
  t.same(api.csiNodes.get('node-1')?.spec?.drivers, [{ name: 'a.csi', nodeID: 'new', topologyKeys: ['zone'], allocatable: { count: 3 } }]);
  t.equal(api.node.metadata?.annotations?.[ANNOTATION_KEY_NODE_ID], '{"a.csi":"new"}');
});

t.test('uninstallCsiDriver: off the CSINode and the annotation (which goes when empty); topology labels stay, as in Go', async (t) => {
  const { api, nim } = setup();
  await nim.installCsiDriver('a.csi', 'na', 0, { zone: 'z1' });
  await nim.installCsiDriver('b.csi', 'nb', 0, undefined);
  await nim.uninstallCsiDriver('a.csi');
  t.same(api.csiNodes.get('node-1')?.spec?.drivers?.map((d) => d.name), ['b.csi']);
  t.equal(api.node.metadata?.annotations?.[ANNOTATION_KEY_NODE_ID], '{"b.csi":"nb"}');
  await nim.uninstallCsiDriver('b.csi');
  t.same(api.csiNodes.get('node-1')?.spec?.drivers, []);
  t.notOk(api.node.metadata?.annotations && ANNOTATION_KEY_NODE_ID in api.node.metadata.annotations);
  t.equal(api.node.metadata?.labels?.zone, 'z1');
  // Uninstalling an unknown driver writes nothing.
  const before = api.requests.length;
  await nim.uninstallCsiDriver('c.csi');
  t.same(
    api.requests.slice(before).map((r) => r.op),
    ['getCSINode', 'getNode'],
  );
});

t.test("uninstall removes the driver's attach limit from the Node's capacity and allocatable", async (t) => {
  const { api, nim } = setup();
  const key = csiAttachLimitKey('a.csi');
  t.equal(key, 'attachable-volumes-csi-a.csi');
  api.node.status = { capacity: { cpu: '2', [key]: '10' }, allocatable: { cpu: '2', [key]: '10' } };
  await nim.uninstallCsiDriver('a.csi');
  t.same(api.node.status, { capacity: { cpu: '2' }, allocatable: { cpu: '2' } });
  t.ok(api.ops().includes('patchNodeStatus'));
  t.match(csiAttachLimitKey('x'.repeat(60)), /^attachable-volumes-csi-x{23}[0-9a-f]{16}$/);
});

t.test('a topology label with another value is a collision: Go error, and the CSINode untouched', async (t) => {
  const { api, nim, clock } = setup();
  api.node.metadata!.labels!.zone = 'other';
  const err = await rejection(t, withClock(clock, nim.installCsiDriver('a.csi', 'na', 0, { zone: 'z1' })));
  const collision = 'detected topology value collision: driver reported "zone":"z1" but existing label is "zone":"other"';
  t.equal(err.message, `error updating Node object with CSI driver node info: error updating node: timed out waiting for the condition; caused by: ${collision}`);
  t.equal(api.csiNodes.size, 0);
  t.equal(api.ops().filter((op) => op === 'getNode').length, 4, 'updateBackoff: 4 tries');
});

t.test('an empty node ID is refused', async (t) => {
  const { nim } = setup();
  const err = await rejection(t, nim.installCsiDriver('a.csi', '', 0, undefined));
  t.equal(err.message, 'error adding CSI driver node info: driverNodeID must not be empty');
});

t.test('a conflict on the CSINode update is retried with a fresh read', async (t) => {
  const { api, nim, clock } = setup();
  await nim.initializeCsiNode();
  api.failNext('updateCSINode');
  await withClock(clock, nim.installCsiDriver('a.csi', 'na', 0, undefined));
  t.same(api.csiNodes.get('node-1')?.spec?.drivers?.map((d) => d.nodeID), ['na']);
  t.same(
    api.ops().filter((op) => op === 'getCSINode' || op === 'updateCSINode'),
    ['getCSINode', 'getCSINode', 'updateCSINode', 'getCSINode', 'updateCSINode'],
  );
});

t.test('updates that keep failing end with the errors aggregated as Go prints them', async (t) => {
  const { api, nim, clock } = setup();
  await nim.initializeCsiNode();
  for (let i = 0; i < 4; i++) api.failNext('getCSINode', new FakeApiError(500, 'InternalError', i % 2 ? 'boom' : 'bang'));
  const err = await rejection(t, withClock(clock, nim.installCsiDriver('a.csi', 'na', 0, undefined)));
  t.equal(err.message, 'error updating CSINode object with CSI driver node info: error updating CSINode: timed out waiting for the condition; caused by: [bang, boom]');
  t.equal(aggregateErrorText([new Error('x')]), 'x');
  t.equal(aggregateErrorText([new Error('x'), new Error('x')]), 'x');
});

t.test('initializeCsiNode: creates the CSINode once, with the migrated-plugins annotation when there are any', async (t) => {
  const { api, nim } = setup({ migratedPlugins: ['kubernetes.io/gce-pd', 'kubernetes.io/aws-ebs'] });
  await nim.initializeCsiNode();
  const csiNode = api.csiNodes.get('node-1');
  t.equal(csiNode?.metadata?.annotations?.[MIGRATED_PLUGINS_ANNOTATION_KEY], 'kubernetes.io/aws-ebs,kubernetes.io/gce-pd');
  t.same(csiNode?.spec, { drivers: [] });
  await nim.initializeCsiNode();
  t.same(api.ops(), ['getCSINode', 'getNode', 'createCSINode', 'getCSINode']);

  // A kubelet without migrations drops a stale annotation.
  const plain = new NodeInfoManager({ nodeName: 'node-1', api, logger: new RecordingLogger() });
  await plain.initializeCsiNode();
  t.notOk(api.csiNodes.get('node-1')?.metadata?.annotations?.[MIGRATED_PLUGINS_ANNOTATION_KEY]);
  t.equal(api.ops().at(-1), 'updateCSINode');
});

t.test('initializeCsiNode retries with initBackoff and reports the last error', async (t) => {
  const { api, nim, clock } = setup();
  for (let i = 0; i < 24; i++) api.failNext('getCSINode', new FakeApiError(503, 'ServiceUnavailable', 'apiserver down'));
  const err = await rejection(t, withClock(clock, nim.initializeCsiNode()));
  t.equal(err.message, 'Failed to initialize CSINode after retrying: error updating CSINode annotation: timed out waiting for the condition; caused by: apiserver down');
  t.equal(api.ops().length, 24, '6 rounds of 4 tries');
});
