// The CSI volume plugin with inline ephemeral volumes (`volumes[].csi`).
import t from 'tap';
import { createHash } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { CsiVolumeError } from '../src/csi-util.js';
import type { NodePublishVolumeRequest } from '../src/types.js';
import { DRIVER, NODE, inlineContext, makeFixture, makePod } from './volume-plugin-fixtures.js';

const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );
const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const HANDLE = `csi-${sha('uid-1scratch')}`;

const inlinePod = (extra: Record<string, unknown> = {}) =>
  makePod('uid-1', { volumeName: 'scratch', inline: { volumeAttributes: { size: '1Gi' }, ...extra } });

t.test('publish an inline volume: Go handle, pod info with ephemeral=true, no stage, no attach', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: true, podInfoOnMount: true, volumeLifecycleModes: ['Persistent', 'Ephemeral'] });
  const pod = inlinePod({ fsType: 'xfs', readOnly: true });
  const ctx = inlineContext(f, pod);
  t.ok(f.plugin.canSupport(pod.spec!.volumes![0]));

  const mounted = await f.plugin.setUp(ctx);
  t.same(mounted, { path: path.join(ctx.dir, 'mount'), readOnly: true, selinuxRelabel: true }, 'no inUseName: inline volumes are neither attachable nor staged');
  t.same(f.client.methods(), ['nodePublishVolume']);
  t.same(f.client.calls[0].request as NodePublishVolumeRequest, {
    volumeId: HANDLE,
    publishContext: {},
    targetPath: path.join(ctx.dir, 'mount'),
    volumeCapability: { mount: { fsType: 'xfs', mountFlags: [] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
    readonly: true,
    secrets: {},
    volumeContext: {
      size: '1Gi',
      'csi.storage.k8s.io/pod.name': 'web-uid-1',
      'csi.storage.k8s.io/pod.namespace': 'default',
      'csi.storage.k8s.io/pod.uid': 'uid-1',
      'csi.storage.k8s.io/serviceAccount.name': 'builder',
      'csi.storage.k8s.io/ephemeral': 'true',
    },
  });
  t.same(f.attachments.gets, [], 'inline volumes are never attached');
  t.equal(
    await readFile(path.join(ctx.dir, 'vol_data.json'), 'utf8'),
    `{"attachmentID":"csi-${sha(`${HANDLE}${DRIVER}${NODE}`)}","driverName":"${DRIVER}","nodeName":"${NODE}","specVolID":"scratch","volumeHandle":"${HANDLE}","volumeLifecycleMode":"Ephemeral"}\n`,
  );
  t.same(f.plugin.volumesInUse(), []);

  await f.plugin.setUp(ctx);
  t.equal(f.client.calls.length, 1, 'published once');

  const restarted = f.restart();
  t.same(await restarted.reconstruct(ctx.dir, f.host), { path: path.join(ctx.dir, 'mount'), readOnly: false, selinuxRelabel: true });
  t.same(restarted.volumesInUse(), []);

  await restarted.tearDown(ctx.dir, f.host);
  t.same(f.client.methods(), ['nodePublishVolume', 'nodeUnpublishVolume'], 'no unstage for an inline volume');
  t.same(f.client.calls[1].request, { volumeId: HANDLE, targetPath: path.join(ctx.dir, 'mount') });
  t.notOk(await exists(ctx.dir));
});

t.test('the CSIDriver must allow Ephemeral', async (t) => {
  const f = await makeFixture(t);
  const ctx = inlineContext(f, inlinePod());
  const err = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.type(err, CsiVolumeError);
  t.equal(err.operation, 'MountVolume.NewMounter initialization');
  t.equal(err.message, `volume mode "Ephemeral" not supported by driver ${DRIVER} (no CSIDriver object)`);

  f.csiDrivers.set(DRIVER, {});
  await t.rejects(f.plugin.setUp(ctx), { message: `volume mode "Ephemeral" not supported by driver ${DRIVER} (only supports ["Persistent"])` });
  f.csiDrivers.set(DRIVER, { volumeLifecycleModes: ['Persistent'] });
  await t.rejects(f.plugin.setUp(ctx), { message: `volume mode "Ephemeral" not supported by driver ${DRIVER} (only supports ["Persistent"])` });
  t.same(f.client.calls, []);
  t.notOk(await exists(ctx.dir), 'nothing written for a refused volume');
});

t.test('nodePublishSecretRef is read from the pod namespace', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { volumeLifecycleModes: ['Ephemeral'] });
  const ctx = inlineContext(f, inlinePod({ nodePublishSecretRef: { name: 'creds' } }));
  const err = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'MountVolume.SetUp');
  t.equal(err.message, 'fetching NodePublishSecretRef default/creds failed: secret "creds" not found');
  f.api.setSecret({ metadata: { namespace: 'default', name: 'creds' }, data: { token: Buffer.from('abc').toString('base64') } });
  await f.plugin.setUp(ctx);
  t.same((f.client.callsOf('nodePublishVolume')[0] as NodePublishVolumeRequest).secrets, { token: 'abc' });
});

t.test('an unregistered driver', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { volumeLifecycleModes: ['Ephemeral'] });
  f.drivers.remove(DRIVER);
  const err = (await f.plugin.setUp(inlineContext(f, inlinePod())).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'MountVolume.SetUp');
  t.equal(err.eventMessage('scratch'), `MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name ${DRIVER} not found in the list of registered CSI drivers`);
});

t.test('fsGroup on an inline volume needs an fsType (or the File policy)', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { volumeLifecycleModes: ['Ephemeral'] });
  await f.plugin.setUp(inlineContext(f, inlinePod(), { fsGroup: 3000 }));
  t.same(f.ownership.chowns, [], 'no fsType: skipped');

  const g = await makeFixture(t);
  g.csiDrivers.set(DRIVER, { volumeLifecycleModes: ['Ephemeral'] });
  const ctx = inlineContext(g, inlinePod({ fsType: 'ext4' }), { fsGroup: 3000 });
  await g.plugin.setUp(ctx);
  t.same(g.ownership.chowns, [{ path: path.join(ctx.dir, 'mount'), uid: 0, gid: 3000 }]);
});

t.test('CSIInlineVolume off: inline csi volumes are not this plugin\'s; PersistentVolumes still are', async (t) => {
  const on = await makeFixture(t);
  const off = await makeFixture(t, { inlineVolumes: false });
  const volume = { name: 'inline', csi: { driver: DRIVER } };
  t.ok(on.plugin.canSupport(volume));
  t.notOk(off.plugin.canSupport(volume));
  t.ok(off.plugin.canSupportPersistentVolume({ metadata: { name: 'pv1' }, spec: { csi: { driver: DRIVER, volumeHandle: 'h' } } }));
});
