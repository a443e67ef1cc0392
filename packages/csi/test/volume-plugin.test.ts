// The CSI volume plugin with PersistentVolumes (filesystem): attach wait, stage, publish, tear down.
import t from 'tap';
import { createHash } from 'node:crypto';
import { access, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CsiVolumeError } from '../src/csi-util.js';
import { GrpcCode } from '../src/errors.js';
import type { NodePublishVolumeRequest, NodeStageVolumeRequest } from '../src/types.js';
import { DRIVER, NODE, makeFixture, makePod, makePv, pvContext, until } from './volume-plugin-fixtures.js';

const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );
const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const IN_USE = `kubernetes.io/csi/${DRIVER}^vol-1`;
const VA_NAME = `csi-${sha(`vol-1${DRIVER}${NODE}`)}`;

t.test('stage and publish a PV whose driver needs no attach, with pod info', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false, podInfoOnMount: true });
  const pv = makePv('pv1', { mountOptions: ['noatime'] });
  const pod = makePod();
  const ctx = pvContext(f, pod, pv);

  t.ok(f.plugin.canSupportPersistentVolume(pv));
  t.notOk(f.plugin.canSupport(pod.spec!.volumes![0]), 'a claim volume is not an inline CSI volume');
  const mounted = await f.plugin.setUp(ctx);

  const globalPath = path.join(f.pluginsDir, 'kubernetes.io/csi/pv/pv1/globalmount');
  t.same(mounted, { path: path.join(ctx.dir, 'mount'), readOnly: false, selinuxRelabel: true, inUseName: IN_USE });
  t.same(f.client.methods(), ['nodeGetCapabilities', 'nodeStageVolume', 'nodeGetCapabilities', 'nodePublishVolume']);
  const stage = f.client.callsOf('nodeStageVolume')[0] as NodeStageVolumeRequest;
  t.same(stage, {
    volumeId: 'vol-1',
    publishContext: {},
    stagingTargetPath: globalPath,
    volumeCapability: { mount: { fsType: 'ext4', mountFlags: ['noatime'] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
    secrets: {},
    volumeContext: { tier: 'fast' },
  });
  const publish = f.client.callsOf('nodePublishVolume')[0] as NodePublishVolumeRequest;
  t.same(publish, {
    volumeId: 'vol-1',
    publishContext: {},
    stagingTargetPath: globalPath,
    targetPath: path.join(ctx.dir, 'mount'),
    volumeCapability: { mount: { fsType: 'ext4', mountFlags: ['noatime'] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
    readonly: false,
    secrets: {},
    volumeContext: {
      tier: 'fast',
      'csi.storage.k8s.io/pod.name': 'web-uid-1',
      'csi.storage.k8s.io/pod.namespace': 'default',
      'csi.storage.k8s.io/pod.uid': 'uid-1',
      'csi.storage.k8s.io/serviceAccount.name': 'builder',
      'csi.storage.k8s.io/ephemeral': 'false',
    },
  });
  t.equal(
    await readFile(path.join(ctx.dir, 'vol_data.json'), 'utf8'),
    `{"attachmentID":"${VA_NAME}","driverName":"${DRIVER}","nodeName":"${NODE}","specVolID":"pv1","volumeHandle":"vol-1","volumeLifecycleMode":"Persistent"}\n`,
    "the pod's vol_data.json has Go's keys, as Go's json.Encoder writes them",
  );
  t.equal(await readFile(path.join(f.pluginsDir, 'kubernetes.io/csi/pv/pv1/vol_data.json'), 'utf8'), `{"driverName":"${DRIVER}","volumeHandle":"vol-1"}\n`);
  t.equal((await stat(ctx.dir)).mode & 0o777, 0o750);
  t.same(f.attachments.gets, [], 'no VolumeAttachment is read when the driver needs no attach');
  t.same(f.plugin.volumesInUse(), [IN_USE]);

  // Set up again (a retry, or the volume manager after a restart): neither staged nor published twice.
  const again = await f.plugin.setUp(ctx);
  t.same(again, mounted);
  t.equal(f.client.callsOf('nodeStageVolume').length, 1);
  t.equal(f.client.callsOf('nodePublishVolume').length, 1);
  t.equal(f.clock.pendingTimers(), 0, 'no CSI call deadline is left behind');
});

t.test('without a CSIDriver object the VolumeAttachment is waited for; its metadata is the publish context', async (t) => {
  const f = await makeFixture(t, { pollIntervalMs: 1000 });
  const pv = makePv();
  const ctx = pvContext(f, makePod(), pv);
  let settled = false;
  const setUp = f.plugin.setUp(ctx).finally(() => (settled = true));
  await until(() => f.clock.pendingTimers() > 0, 'the attach wait');
  await f.clock.advance(3000);
  t.notOk(settled, 'still waiting while there is no VolumeAttachment');
  t.ok(f.attachments.gets.length >= 3);
  t.ok(f.attachments.gets.every((n) => n === VA_NAME), 'the VolumeAttachment is named csi-sha256(handle+driver+node)');
  t.same(f.plugin.volumesInUse(), [IN_USE], 'a volume being attached is in use');
  t.same(f.client.calls, [], 'nothing staged before it is attached');

  f.attachments.set(VA_NAME, { attached: false });
  await f.clock.advance(1000);
  t.notOk(settled, 'still waiting while not attached');
  f.attachments.set(VA_NAME, { attached: true, attachmentMetadata: { devicePath: '/dev/sdb' } });
  await f.clock.advance(1000);
  await setUp;
  const stage = f.client.callsOf('nodeStageVolume')[0] as NodeStageVolumeRequest;
  const publish = f.client.callsOf('nodePublishVolume')[0] as NodePublishVolumeRequest;
  t.same(stage.publishContext, { devicePath: '/dev/sdb' });
  t.same(publish.publishContext, { devicePath: '/dev/sdb' });
  t.notOk('csi.storage.k8s.io/pod.name' in publish.volumeContext, 'no pod info without a CSIDriver asking for it');
});

t.test('attach failures read as Go words them', async (t) => {
  t.test('the attacher reports an error', async (t) => {
    const f = await makeFixture(t);
    f.attachments.set(VA_NAME, { attached: false, attachError: { message: 'rpc error: code = NotFound desc = disk vol-1 not found' } });
    const err = await f.plugin.setUp(pvContext(f, makePod(), makePv())).catch((e: unknown) => e);
    t.type(err, CsiVolumeError);
    t.equal((err as CsiVolumeError).operation, 'MountVolume.WaitForAttach');
    t.equal((err as Error).message, 'rpc error: code = NotFound desc = disk vol-1 not found');
    t.equal((err as CsiVolumeError).eventMessage('pv1'), 'MountVolume.WaitForAttach failed for volume "pv1" : rpc error: code = NotFound desc = disk vol-1 not found');
    t.same(f.plugin.volumesInUse(), [], 'nothing in use once the set-up gave up');
  });
  t.test('the attachment is being deleted', async (t) => {
    const f = await makeFixture(t);
    f.attachments.set(VA_NAME, { attached: true }, true);
    await t.rejects(f.plugin.setUp(pvContext(f, makePod(), makePv())), { message: 'volume attachment is being deleted' });
  });
  t.test('the GET fails', async (t) => {
    const f = await makeFixture(t);
    f.attachments.error = new Error('connection refused');
    await t.rejects(f.plugin.setUp(pvContext(f, makePod(), makePv())), { message: `volume vol-1 has GET error for volume attachment ${VA_NAME}: connection refused` });
  });
  t.test('timeout after attachTimeoutMs', async (t) => {
    const f = await makeFixture(t, { attachTimeoutMs: 10 * 60_000, pollIntervalMs: 1000 });
    const setUp = f.plugin.setUp(pvContext(f, makePod(), makePv())).catch((e: unknown) => e);
    await until(() => f.clock.pendingTimers() > 0, 'the attach wait');
    await f.clock.advance(10 * 60_000);
    const err = (await setUp) as CsiVolumeError;
    t.equal(err.message, 'attachdetachment timeout for volume vol-1');
    t.equal(err.operation, 'MountVolume.WaitForAttach');
    t.equal(f.clock.pendingTimers(), 0);
  });
  t.test('the wait is aborted by the signal', async (t) => {
    const f = await makeFixture(t);
    const controller = new AbortController();
    const setUp = f.plugin.setUp(pvContext(f, makePod(), makePv(), { signal: controller.signal })).catch((e: unknown) => e);
    await until(() => f.clock.pendingTimers() > 0, 'the attach wait');
    await f.clock.advance(1000);
    controller.abort(new Error('pod deleted'));
    t.match(await setUp, { message: 'pod deleted' });
    t.equal(f.clock.pendingTimers(), 0);
    t.same(f.plugin.volumesInUse(), []);
  });
});

t.test('a driver that is not registered', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  f.drivers.remove(DRIVER);
  const ctx = pvContext(f, makePod(), makePv());
  const err = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'MountVolume.MountDevice');
  t.equal(err.message, `kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name ${DRIVER} not found in the list of registered CSI drivers`);

  // Set up while registered, then the driver goes away: tearDown is refused and leaves everything.
  f.drivers.add(DRIVER, f.client);
  await f.plugin.setUp(ctx);
  f.drivers.remove(DRIVER);
  const tearDownErr = (await f.plugin.tearDown(ctx.dir, f.host).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(tearDownErr.operation, 'UnmountVolume.TearDown');
  t.equal(tearDownErr.message, `kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name ${DRIVER} not found in the list of registered CSI drivers`);
  t.ok(await exists(path.join(ctx.dir, 'vol_data.json')));
  t.ok(f.mounter.isMounted(path.join(ctx.dir, 'mount')));
  t.same(f.plugin.volumesInUse(), [IN_USE]);

  // Back: the retry goes through.
  f.drivers.add(DRIVER, f.client);
  await f.plugin.tearDown(ctx.dir, f.host);
  t.notOk(await exists(ctx.dir));
  t.same(f.plugin.volumesInUse(), []);
});

t.test('NodeStageVolume errors: a final one removes the global directory, an uncertain one keeps it', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const ctx = pvContext(f, makePod(), makePv());
  const globalDir = path.join(f.pluginsDir, 'kubernetes.io/csi/pv/pv1');

  f.client.failOn('nodeStageVolume', GrpcCode.InvalidArgument, 'bad fsType');
  const err = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'MountVolume.MountDevice');
  t.equal(err.message, 'rpc error: code = InvalidArgument desc = bad fsType');
  t.notOk(await exists(globalDir), 'final error: globalmount and vol_data.json removed');

  t.equal(err.uncertain, false);
  t.same(f.plugin.volumesInUse(), []);

  f.client.failOn('nodeStageVolume', GrpcCode.DeadlineExceeded, 'context deadline exceeded');
  const uncertainErr = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.match(uncertainErr, { message: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded', uncertain: true });
  t.ok(await exists(path.join(globalDir, 'globalmount')), 'uncertain: kept for UnmountDevice');
  t.same(f.plugin.volumesInUse(), [IN_USE], 'maybe staged: in use');

  await f.plugin.setUp(ctx);
  t.equal(f.client.callsOf('nodeStageVolume').length, 3);
});

t.test('NodePublishVolume errors: a final one removes the volume directory', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const ctx = pvContext(f, makePod(), makePv());
  f.client.failOn('nodePublishVolume', GrpcCode.Internal, 'mount failed: exit status 32');
  const err = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'MountVolume.SetUp');
  t.equal(err.eventMessage('pv1'), 'MountVolume.SetUp failed for volume "pv1" : rpc error: code = Internal desc = mount failed: exit status 32');
  t.notOk(await exists(ctx.dir), 'mount dir, vol_data.json and the volume dir are gone');
  t.same(f.plugin.volumesInUse(), [IN_USE], 'the device stays staged');

  t.equal(err.uncertain, false);

  f.client.failOn('nodePublishVolume', GrpcCode.Unavailable, 'driver restarting');
  t.match(await f.plugin.setUp(ctx).catch((e: unknown) => e), { operation: 'MountVolume.SetUp', uncertain: true });
  t.ok(await exists(path.join(ctx.dir, 'vol_data.json')), 'uncertain: kept so tearDown can unpublish');
  await f.plugin.tearDown(ctx.dir, f.host);
  t.same(f.plugin.volumesInUse(), [], 'torn down: unpublished and unstaged');
  t.equal(f.client.callsOf('nodeUnstageVolume').length, 1);
});

t.test('a driver without STAGE_UNSTAGE_VOLUME: publish only, the global data still kept and removed', async (t) => {
  const f = await makeFixture(t);
  f.client.capabilities = [];
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const ctx = pvContext(f, makePod(), makePv());
  await f.plugin.setUp(ctx);
  t.same(f.client.methods(), ['nodeGetCapabilities', 'nodeGetCapabilities', 'nodePublishVolume']);
  const publish = f.client.callsOf('nodePublishVolume')[0] as NodePublishVolumeRequest;
  t.notOk('stagingTargetPath' in publish);
  t.ok(await exists(path.join(f.pluginsDir, 'kubernetes.io/csi/pv/pv1/vol_data.json')));
  await f.plugin.tearDown(ctx.dir, f.host);
  t.same(f.client.methods().slice(3), ['nodeUnpublishVolume', 'nodeGetCapabilities']);
  t.notOk(await exists(path.join(f.pluginsDir, 'kubernetes.io/csi/pv/pv1')));
});

t.test('two pods share a volume: unstaged only after the last one', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const pv = makePv();
  const a = pvContext(f, makePod('uid-a'), pv);
  const b = pvContext(f, makePod('uid-b'), pv);
  await f.plugin.setUp(a);
  await f.plugin.setUp(b);
  t.equal(f.client.callsOf('nodeStageVolume').length, 1, 'staged once');
  t.equal(f.client.callsOf('nodePublishVolume').length, 2);

  await f.plugin.tearDown(a.dir, f.host);
  t.equal(f.client.callsOf('nodeUnstageVolume').length, 0, 'still published to pod b');
  t.notOk(await exists(a.dir));
  t.same(f.plugin.volumesInUse(), [IN_USE]);

  await f.plugin.tearDown(b.dir, f.host);
  t.same(f.client.callsOf('nodeUnstageVolume'), [{ volumeId: 'vol-1', stagingTargetPath: path.join(f.pluginsDir, 'kubernetes.io/csi/pv/pv1/globalmount') }]);
  t.notOk(await exists(b.dir));
  t.notOk(await exists(path.join(f.pluginsDir, 'kubernetes.io/csi/pv/pv1')));
  t.same(f.plugin.volumesInUse(), []);
  t.same(f.mounter.mounts, []);

  // A directory gone already (a second tearDown) is no error.
  await f.plugin.tearDown(b.dir, f.host);
});

t.test('a failed NodeUnstageVolume keeps the pod directory so the next tearDown retries it', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const ctx = pvContext(f, makePod(), makePv());
  await f.plugin.setUp(ctx);
  f.client.failOn('nodeUnstageVolume', GrpcCode.Internal, 'device busy');
  const err = (await f.plugin.tearDown(ctx.dir, f.host).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'UnmountDevice');
  t.equal(err.message, 'kubernetes.io/csi: attacher.UnmountDevice failed: rpc error: code = Internal desc = device busy');
  t.ok(await exists(path.join(ctx.dir, 'vol_data.json')));
  t.notOk(await exists(path.join(ctx.dir, 'mount')), 'the unpublished target is gone');
  t.same(f.plugin.volumesInUse(), [IN_USE], 'still staged: node status keeps it in use');

  await f.plugin.tearDown(ctx.dir, f.host);
  t.equal(f.client.callsOf('nodeUnpublishVolume').length, 2, 'NodeUnpublishVolume again (idempotent)');
  t.equal(f.client.callsOf('nodeUnstageVolume').length, 2);
  t.notOk(await exists(ctx.dir));
  t.same(f.plugin.volumesInUse(), []);
});

t.test('a kubelet restart: nothing staged or published twice, the volume reconstructed as in use', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const ctx = pvContext(f, makePod(), makePv());
  const mounted = await f.plugin.setUp(ctx);
  const restarted = f.restart();
  t.same(restarted.volumesInUse(), []);
  t.same(await restarted.reconstruct(ctx.dir, f.host), { path: mounted.path, readOnly: false, selinuxRelabel: true, inUseName: IN_USE });
  t.same(restarted.volumesInUse(), [IN_USE]);
  await restarted.setUp(ctx);
  t.equal(f.client.callsOf('nodeStageVolume').length, 1);
  t.equal(f.client.callsOf('nodePublishVolume').length, 1);
  await restarted.tearDown(ctx.dir, f.host);
  t.equal(f.client.callsOf('nodeUnstageVolume').length, 1);
  t.same(restarted.volumesInUse(), []);
  t.equal(await restarted.reconstruct(ctx.dir, f.host), undefined, 'nothing left to reconstruct');
});

t.test('secrets: nodeStageSecretRef and nodePublishSecretRef', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const pv = makePv('pv1', { csi: { nodeStageSecretRef: { namespace: 'kube-system', name: 'stage' }, nodePublishSecretRef: { namespace: 'kube-system', name: 'publish' } } });
  const ctx = pvContext(f, makePod(), pv);

  const err = (await f.plugin.setUp(ctx).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'MountVolume.MountDevice');
  t.equal(err.message, 'fetching NodeStageSecretRef kube-system/stage failed: secret "stage" not found');

  f.api.setSecret({ metadata: { namespace: 'kube-system', name: 'stage' }, data: { key: Buffer.from('s3cret').toString('base64') } });
  await t.rejects(f.plugin.setUp(ctx), { message: 'fetching NodePublishSecretRef kube-system/publish failed: secret "publish" not found' });

  f.api.setSecret({ metadata: { namespace: 'kube-system', name: 'publish' }, data: { user: Buffer.from('admin').toString('base64') } });
  await f.plugin.setUp(ctx);
  t.same((f.client.callsOf('nodeStageVolume').at(-1)! as NodeStageVolumeRequest).secrets, { key: 's3cret' });
  t.same((f.client.callsOf('nodePublishVolume').at(-1)! as NodePublishVolumeRequest).secrets, { user: 'admin' });
});

t.test('fsGroup as the CSIDriver fsGroupPolicy allows', async (t) => {
  const cases: Array<{ name: string; policy?: string; accessModes?: string[]; fsType?: string; readOnly?: boolean; applied: boolean }> = [
    { name: 'default policy, ext4, RWO', applied: true },
    { name: 'default policy without fsType', fsType: '', applied: false },
    { name: 'default policy, RWX', accessModes: ['ReadWriteMany'], applied: false },
    { name: 'File policy without fsType', policy: 'File', fsType: '', accessModes: ['ReadWriteMany'], applied: true },
    { name: 'None policy', policy: 'None', applied: false },
    { name: 'read-only claim', readOnly: true, applied: false },
  ];
  for (const c of cases) {
    t.test(c.name, async (t) => {
      const f = await makeFixture(t);
      f.csiDrivers.set(DRIVER, { attachRequired: false, ...(c.policy ? { fsGroupPolicy: c.policy } : {}) });
      const pv = makePv('pv1', { ...(c.accessModes ? { accessModes: c.accessModes } : {}), csi: c.fsType !== undefined ? { fsType: c.fsType } : {} });
      const ctx = pvContext(f, makePod(), pv, { fsGroup: 2000, ...(c.readOnly ? { readOnly: true } : {}) });
      await f.plugin.setUp(ctx);
      t.same(
        f.ownership.chowns.map((x) => x.gid),
        c.applied ? [2000] : [],
      );
      if (c.applied) t.equal(f.ownership.chowns[0].path, path.join(ctx.dir, 'mount'));
    });
  }
});

t.test('access modes, read-only and volume modes', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false });
  const pv = makePv('pv1', { accessModes: ['ReadOnlyMany', 'ReadWriteOnce'] });
  const ctx = pvContext(f, makePod(), pv, { readOnly: true });
  const mounted = await f.plugin.setUp(ctx);
  const publish = f.client.callsOf('nodePublishVolume')[0] as NodePublishVolumeRequest;
  t.equal(publish.volumeCapability.accessMode.mode, 'MULTI_NODE_READER_ONLY', "the PV's first access mode");
  t.equal(publish.readonly, true);
  t.equal(mounted.readOnly, true);

  const g = await makeFixture(t);
  g.csiDrivers.set(DRIVER, { attachRequired: false });
  const rwx = pvContext(g, makePod(), makePv('pv1', { accessModes: ['ReadWriteMany'], csi: { readOnly: true } }));
  await g.plugin.setUp(rwx);
  const p2 = g.client.callsOf('nodePublishVolume')[0] as NodePublishVolumeRequest;
  t.equal(p2.volumeCapability.accessMode.mode, 'MULTI_NODE_MULTI_WRITER');
  t.equal(p2.readonly, true, 'spec.csi.readOnly makes it read-only too');

  await t.rejects(g.plugin.setUp(pvContext(g, makePod('uid-2'), makePv('pv2', { volumeMode: 'Block' }))), {
    message: 'volume data has volumeMode Block, but is specified in volumeMounts',
  });
});

t.test('the CSIDriver must allow Persistent volumes', async (t) => {
  const f = await makeFixture(t);
  f.csiDrivers.set(DRIVER, { attachRequired: false, volumeLifecycleModes: ['Ephemeral'] });
  const err = (await f.plugin.setUp(pvContext(f, makePod(), makePv())).catch((e: unknown) => e)) as CsiVolumeError;
  t.equal(err.operation, 'MountVolume.NewMounter initialization');
  t.equal(err.message, `volume mode "Persistent" not supported by driver ${DRIVER} (only supports ["Ephemeral"])`);
  t.same(f.client.calls, []);
});

t.test('tearDown of a directory without vol_data.json', async (t) => {
  const f = await makeFixture(t);
  const dir = path.join(f.podsDir, 'uid-9', 'volumes', 'kubernetes.io~csi', 'pv9');
  await mkdir(path.join(dir, 'mount'), { recursive: true });
  await f.mounter.bindMount('/x', path.join(dir, 'mount'));
  await t.rejects(f.plugin.tearDown(dir, f.host), {
    message: `kubernetes.io/csi: unmounter failed to load volume data file [${path.join(dir, 'mount')}]: open ${path.join(dir, 'vol_data.json')}: no such file or directory`,
  });
  await f.mounter.unmount(path.join(dir, 'mount'));
  await writeFile(path.join(dir, 'leftover'), '');
  await f.plugin.tearDown(dir, f.host);
  t.notOk(await exists(dir), 'nothing mounted: the directory is removed without calling the driver');
  t.same(f.client.calls, []);
});
