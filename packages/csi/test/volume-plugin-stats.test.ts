// The CSI volume plugin's stats (NodeGetVolumeStats), volumesInUse while operations are under way,
// and the CSI call deadline.
import t from 'tap';
import { createHash } from 'node:crypto';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { CsiVolumeError } from '../src/csi-util.js';
import { DRIVER, NODE, gate, inlineContext, makeFixture, makePod, makePv, pvContext, until } from './volume-plugin-fixtures.js';

const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );
const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const VA_NAME = `csi-${sha(`vol-1${DRIVER}${NODE}`)}`;
const IN_USE = `kubernetes.io/csi/${DRIVER}^vol-1`;

t.test('NodeGetVolumeStats when the driver offers GET_VOLUME_STATS', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const ctx = pvContext(f, makePod(), makePv());
  const mounted = await f.plugin.setUp(ctx);
  f.client.volumeStats = {
    usage: [
      { unit: 'BYTES', total: 1000, available: 600, used: 400 },
      { unit: 'INODES', total: 100, available: 90, used: 10 },
    ],
    volumeCondition: { abnormal: true, message: 'disk is degraded' },
  };
  t.same(await f.plugin.getVolumeStats(ctx.dir, mounted, f.host), {
    capacityBytes: 1000,
    availableBytes: 600,
    usedBytes: 400,
    inodes: 100,
    inodesFree: 90,
    inodesUsed: 10,
    abnormal: true,
    message: 'disk is degraded',
  });
  t.same(f.client.callsOf('nodeGetVolumeStats'), [{ volumeId: 'vol-1', volumePath: path.join(ctx.dir, 'mount') }]);

  f.client.volumeStats = { usage: [{ unit: 'BYTES', total: 10, available: 4, used: 6 }] };
  t.same(await f.plugin.getVolumeStats(ctx.dir, mounted, f.host), { capacityBytes: 10, availableBytes: 4, usedBytes: 6, inodes: 0, inodesFree: 0, inodesUsed: 0 }, "Go's zeros for what the driver leaves out");

  f.client.volumeStats = { usage: [] };
  await t.rejects(f.plugin.getVolumeStats(ctx.dir, mounted, f.host), { message: 'failed to get usage from response. usage is nil' });

  f.client.capabilities = ['STAGE_UNSTAGE_VOLUME'];
  t.equal(await f.plugin.getVolumeStats(ctx.dir, mounted, f.host), undefined, 'no GET_VOLUME_STATS: the caller measures the directory');

  f.drivers.remove(DRIVER);
  await t.rejects(f.plugin.getVolumeStats(ctx.dir, mounted, f.host), { message: `driver name ${DRIVER} not found in the list of registered CSI drivers` });
  t.equal(await f.plugin.getVolumeStats(path.join(f.podsDir, 'gone'), mounted, f.host), undefined, 'a directory without vol_data.json');
});

t.test('stats of block and inline volumes', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false, volumeLifecycleModes: ['Persistent', 'Ephemeral'] });
  const block = pvContext(f, makePod('uid-b', { devices: true }), makePv('pv1', { volumeMode: 'Block' }));
  const mounted = await f.plugin.setUp(block);
  await f.plugin.getVolumeStats(block.dir, mounted, f.host);
  t.same(f.client.callsOf('nodeGetVolumeStats').at(-1)!, { volumeId: 'vol-1', volumePath: mounted.devicePath });

  const inline = inlineContext(f, makePod('uid-i', { volumeName: 'scratch', inline: {} }));
  const inlineMounted = await f.plugin.setUp(inline);
  await f.plugin.getVolumeStats(inline.dir, inlineMounted, f.host);
  t.same(f.client.callsOf('nodeGetVolumeStats').at(-1)!, { volumeId: `csi-${sha('uid-iscratch')}`, volumePath: path.join(inline.dir, 'mount') });
});

t.test('volumesInUse while staging and publishing', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const ctx = pvContext(f, makePod(), makePv());
  const stage = gate(f.client, 'nodeStageVolume');
  const setUp = f.plugin.setUp(ctx);
  await until(() => stage.entered() === 1, 'NodeStageVolume');
  t.same(f.plugin.volumesInUse(), [IN_USE], 'being staged');
  stage.release();
  await setUp;
  t.same(f.plugin.volumesInUse(), [IN_USE]);
});

t.test('a pod torn down while another waits for the same volume to attach: no unstage', async (t) => {
  const f = await makeFixture(t);
  f.attachments.set(VA_NAME, { attached: true });
  const pv = makePv();
  const a = pvContext(f, makePod('uid-a'), pv);
  await f.plugin.setUp(a);

  f.attachments.set(VA_NAME, { attached: false });
  const b = pvContext(f, makePod('uid-b'), pv);
  const setUpB = f.plugin.setUp(b);
  await until(() => f.clock.pendingTimers() > 0, 'the attach wait');
  await f.plugin.tearDown(a.dir, f.host);
  t.equal(f.client.callsOf('nodeUnstageVolume').length, 0, 'pod b is about to use the staged device');

  f.attachments.set(VA_NAME, { attached: true });
  await f.clock.advance(1000);
  await setUpB;
  t.equal(f.client.callsOf('nodeStageVolume').length, 1, 'still staged: not staged again');
  await f.plugin.tearDown(b.dir, f.host);
  t.equal(f.client.callsOf('nodeUnstageVolume').length, 1);
});

t.test('a CSI call cancelled by the signal of the volume operation is not final', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const controller = new AbortController();
  const ctx = pvContext(f, makePod(), makePv(), { signal: controller.signal });
  f.client.hang('nodePublishVolume');
  const setUp = f.plugin.setUp(ctx).catch((e: unknown) => e);
  await until(() => f.client.callsOf('nodePublishVolume').length === 1, 'NodePublishVolume');
  controller.abort();
  const err = (await setUp) as CsiVolumeError;
  t.equal(err.operation, 'MountVolume.SetUp');
  t.equal(err.message, 'rpc error: code = Canceled desc = context canceled');
  t.ok(await exists(path.join(ctx.dir, 'vol_data.json')), 'not final: the volume directory stays for tearDown');
  t.equal(f.clock.pendingTimers(), 0);
});
