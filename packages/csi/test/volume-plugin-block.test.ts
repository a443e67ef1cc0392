// The CSI volume plugin with raw block PersistentVolumes (volumeMode Block, volumeDevices).
import t from 'tap';
import { createHash } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { CsiVolumeError } from '../src/csi-util.js';
import { GrpcCode } from '../src/errors.js';
import type { NodePublishVolumeRequest, NodeStageVolumeRequest } from '../src/types.js';
import { DRIVER, NODE, makeFixture, makePod, makePv, pvContext } from './volume-plugin-fixtures.js';

const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );
const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const VA_NAME = `csi-${sha(`vol-1${DRIVER}${NODE}`)}`;
const IN_USE = `kubernetes.io/csi/${DRIVER}^vol-1`;

t.test('stage and publish a block volume at Go 1.20 volumeDevices paths; unstage after the last pod', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { podInfoOnMount: true });
  f.attachments.set(VA_NAME, { attached: true, attachmentMetadata: { lun: '3' } });
  const pv = makePv('pv1', { volumeMode: 'Block' });
  const a = pvContext(f, makePod('uid-a', { devices: true }), pv);
  const devices = path.join(f.pluginsDir, 'kubernetes.io/csi/volumeDevices');
  const stagingPath = path.join(devices, 'staging/pv1');
  const publishA = path.join(devices, 'publish/pv1/uid-a');

  const mounted = await f.plugin.setUp(a);
  t.same(mounted, { path: a.dir, devicePath: publishA, readOnly: false, selinuxRelabel: false, inUseName: IN_USE });
  t.same(f.client.methods(), ['nodeGetCapabilities', 'nodeStageVolume', 'nodePublishVolume']);
  t.same(f.client.calls[1].request as NodeStageVolumeRequest, {
    volumeId: 'vol-1',
    publishContext: { lun: '3' },
    stagingTargetPath: stagingPath,
    volumeCapability: { block: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
    secrets: {},
    volumeContext: { tier: 'fast' },
  });
  t.same(f.client.calls[2].request as NodePublishVolumeRequest, {
    volumeId: 'vol-1',
    publishContext: { lun: '3' },
    stagingTargetPath: stagingPath,
    targetPath: publishA,
    volumeCapability: { block: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
    readonly: false,
    secrets: {},
    volumeContext: { tier: 'fast' },
  }, 'Go passes no pod info to block volumes');
  t.equal(
    await readFile(path.join(devices, 'pv1/data/vol_data.json'), 'utf8'),
    `{"attachmentID":"${VA_NAME}","driverName":"${DRIVER}","nodeName":"${NODE}","specVolID":"pv1","volumeHandle":"vol-1"}\n`,
  );
  t.match(JSON.parse(await readFile(path.join(a.dir, 'vol_data.json'), 'utf8')), { volumeMode: 'Block', specVolID: 'pv1' });

  // A second pod: Go stages again (drivers are idempotent) and publishes to its own device file.
  const b = pvContext(f, makePod('uid-b', { devices: true }), pv);
  const mountedB = await f.plugin.setUp(b);
  t.equal(mountedB.devicePath, path.join(devices, 'publish/pv1/uid-b'));
  t.equal(f.client.callsOf('nodeStageVolume').length, 2);
  await f.plugin.setUp(b);
  t.equal(f.client.callsOf('nodePublishVolume').length, 2, 'an already published device is not published again');

  const restarted = f.restart();
  t.same(await restarted.reconstruct(a.dir, f.host), { path: a.dir, devicePath: publishA, readOnly: false, selinuxRelabel: false, inUseName: IN_USE });
  t.same(restarted.volumesInUse(), [IN_USE]);

  await restarted.tearDown(a.dir, f.host);
  t.same(f.client.callsOf('nodeUnpublishVolume'), [{ volumeId: 'vol-1', targetPath: publishA }]);
  t.equal(f.client.callsOf('nodeUnstageVolume').length, 0);
  t.notOk(await exists(a.dir));

  await restarted.tearDown(b.dir, f.host);
  t.same(f.client.callsOf('nodeUnstageVolume'), [{ volumeId: 'vol-1', stagingTargetPath: stagingPath }]);
  t.notOk(await exists(devices + '/pv1'), 'volumeDevices/<pv> removed');
  t.notOk(await exists(stagingPath));
  t.notOk(await exists(path.join(devices, 'publish/pv1')));
  t.same(restarted.volumesInUse(), []);
  t.same(f.mounter.mounts, []);
});

t.test('volume modes must match the use', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  await t.rejects(f.plugin.setUp(pvContext(f, makePod('uid-1', { devices: true }), makePv('pv1'))), {
    message: 'volume data has volumeMode Filesystem, but is specified in volumeDevices',
  });
  t.same(f.client.calls, []);
});

t.test('block set-up failures', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const pv = makePv('pv1', { volumeMode: 'Block', csi: { nodeStageSecretRef: { namespace: 'ns', name: 'stage' } } });
  const ctx = pvContext(f, makePod('uid-1', { devices: true }), pv);

  f.drivers.remove(DRIVER);
  let err = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'MapVolume.SetUpDevice');
  t.equal(err.message, `kubernetes.io/csi: blockMapper.SetUpDevice failed to get CSI client: driver name ${DRIVER} not found in the list of registered CSI drivers`);
  f.drivers.add(DRIVER, f.client);

  err = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.message, 'failed to get NodeStageSecretRef ns/stage: secret "stage" not found');

  f.api.setSecret({ metadata: { namespace: 'ns', name: 'stage' }, data: {} });
  f.client.failOn('nodePublishVolume', GrpcCode.NotFound, 'no device');
  err = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'MapVolume.MapPodDevice');
  t.equal(err.message, 'rpc error: code = NotFound desc = no device');
  t.same(f.plugin.volumesInUse(), [IN_USE], 'staged: still in use');

  await f.plugin.setUp(ctx);
  f.client.failOn('nodeUnstageVolume', GrpcCode.Internal, 'busy');
  err = (await f.plugin.tearDown(ctx.dir, f.host).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'UnmapDevice');
  t.equal(err.message, 'kubernetes.io/csi: blockMapper.unstageVolumeForBlock failed: rpc error: code = Internal desc = busy');
  t.ok(await exists(ctx.dir), 'kept for the retry');
  await f.plugin.tearDown(ctx.dir, f.host);
  t.notOk(await exists(ctx.dir));
  t.same(f.plugin.volumesInUse(), []);
});

t.test('a block driver without STAGE_UNSTAGE_VOLUME', async (t) => {
  const f = await makeFixture(t);
  f.client.capabilities = [];
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const ctx = pvContext(f, makePod('uid-1', { devices: true }), makePv('pv1', { volumeMode: 'Block' }));
  await f.plugin.setUp(ctx);
  t.same(f.client.methods(), ['nodeGetCapabilities', 'nodePublishVolume']);
  t.equal((f.client.calls[1].request as NodePublishVolumeRequest).stagingTargetPath, path.join(f.pluginsDir, 'kubernetes.io/csi/volumeDevices/staging/pv1'), 'Go passes the staging path anyway');
  await f.plugin.tearDown(ctx.dir, f.host);
  t.same(f.client.methods().slice(2), ['nodeUnpublishVolume']);
  t.notOk(await exists(path.join(f.pluginsDir, 'kubernetes.io/csi/volumeDevices/pv1')));
});
