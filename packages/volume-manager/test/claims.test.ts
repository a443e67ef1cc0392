// Claims resolved to PersistentVolumes by the populator: plugins that serve a PV (canSupportPersistentVolume),
// the PersistentClaimPlugin fallback, generic ephemeral volumes, volumeMode checks and raw block volumes.
import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1Volume } from '@kubernetes/client-node';
import { FakeClock, RecordingEventRecorder, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeApiObjects } from '../src/fake-api.js';
import { PersistentClaimPlugin } from '../src/plugins/pvc.js';
import { FakeMounter } from '../src/testing-mounter.js';
import type { MountedVolume, VolumeContext, VolumeHost, VolumePlugin } from '../src/types.js';
import { KubeletVolumeManager, type VolumeManagerOptions } from '../src/volume-manager.js';

/** Serves PVs with a `csi` source, as the CSI plugin does; records what setUp was given. */
class FakePvPlugin implements VolumePlugin {
  readonly name = 'kubernetes.io/csi';
  readonly requiresRemount = false;
  readonly setUps: VolumeContext[] = [];
  readonly tearDowns: string[] = [];
  /** Whether a Block volume gets a device path. */
  mapsDevices = true;
  canSupport(): boolean {
    return false;
  }
  canSupportPersistentVolume(pv: V1PersistentVolume): boolean {
    return pv.spec?.csi !== undefined;
  }
  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    this.setUps.push(ctx);
    await mkdir(ctx.dir, { recursive: true });
    const block = ctx.persistentVolume?.volume.spec?.volumeMode === 'Block';
    return {
      path: ctx.dir,
      readOnly: ctx.persistentVolume?.readOnly ?? false,
      selinuxRelabel: true,
      ...(block && this.mapsDevices ? { devicePath: `/dev/fake/${ctx.persistentVolume!.volume.metadata!.name}` } : {}),
    };
  }
  async tearDown(dir: string, _host: VolumeHost): Promise<void> {
    this.tearDowns.push(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

function claim(name: string, overrides: Partial<V1PersistentVolumeClaim['metadata']> = {}, pvName = 'pv1'): V1PersistentVolumeClaim {
  return { metadata: { name, namespace: 'default', uid: `${name}-uid`, ...overrides }, spec: { volumeName: pvName }, status: { phase: 'Bound' } };
}

function pv(name: string, claimName: string, spec: V1PersistentVolume['spec'] = {}): V1PersistentVolume {
  return { metadata: { name }, spec: { claimRef: { namespace: 'default', name: claimName, uid: `${claimName}-uid` }, ...spec } };
}

const csi = { driver: 'fake.csi.k8s.io', volumeHandle: 'vol-1' };

function pod(name: string, volumes: V1Volume[], use: 'mounts' | 'devices' = 'mounts'): V1Pod {
  const container =
    use === 'mounts'
      ? { name: 'c', image: 'busybox', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/mnt/${v.name}` })) }
      : { name: 'c', image: 'busybox', volumeDevices: volumes.map((v) => ({ name: v.name, devicePath: `/dev/${v.name}` })) };
  return { metadata: { name, namespace: 'default', uid: `uid-${name}` }, spec: { volumes, containers: [container] } };
}

async function setup(t: Test, extra: Partial<VolumeManagerOptions> = {}) {
  const root = await mkdtemp(join(tmpdir(), 'vm-claims-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const podsDir = join(root, 'pods');
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const recorder = new RecordingEventRecorder();
  const api = new FakeApiObjects(() => clock.now());
  const pvPlugin = new FakePvPlugin();
  const pods: V1Pod[] = [];
  const manager = new KubeletVolumeManager({
    podsDir,
    nodeName: 'node-1',
    plugins: [pvPlugin, new PersistentClaimPlugin()],
    mounter: new FakeMounter(),
    pods: { getPods: () => pods },
    podState: {
      shouldPodContainersBeTerminating: () => false,
      shouldPodRuntimeBeRemoved: (uid) => !pods.some((p) => p.metadata!.uid === uid),
    },
    persistentVolumes: api,
    clock,
    logger,
    recorder,
    ...extra,
  });
  t.teardown(() => manager.stop());
  return { root, podsDir, clock, logger, recorder, api, pvPlugin, pods, manager };
}

/** Lets real I/O (temp dirs) finish until cond holds. */
async function eventually(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
}

/** A few turns of the event loop: the in-memory API answers and the populator's callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

async function waitError(manager: KubeletVolumeManager, p: V1Pod): Promise<string> {
  return manager.waitForAttachAndMount(p).then(
    () => 'mounted',
    (err: Error) => err.message,
  );
}

t.test('a claim whose PV a plugin serves: the PV-named directory and ctx.persistentVolume; the claim is read once', async (t) => {
  const { api, pvPlugin, pods, manager, podsDir, clock } = await setup(t);
  api.setClaim(claim('data-claim'));
  api.setVolume(pv('pv1', 'data-claim', { csi }));
  const p = pod('web', [{ name: 'data', persistentVolumeClaim: { claimName: 'data-claim', readOnly: true } }]);
  pods.push(p);
  await manager.start();
  await manager.waitForAttachAndMount(p);
  t.equal(pvPlugin.setUps.length, 1);
  const ctx = pvPlugin.setUps[0];
  t.equal(ctx.dir, join(podsDir, 'uid-web', 'volumes', 'kubernetes.io~csi', 'pv1'), "Go's spec name is the PV's name");
  t.equal(ctx.volume.name, 'data');
  t.equal(ctx.persistentVolume?.claim.metadata?.name, 'data-claim');
  t.equal(ctx.persistentVolume?.volume.metadata?.name, 'pv1');
  t.equal(ctx.persistentVolume?.readOnly, true);
  const mounted = manager.getMountedVolumesForPod('uid-web');
  t.same([...mounted.keys()], ['data'], "filed under the pod's name for the volume");
  t.equal(mounted.get('data')!.path, ctx.dir);
  t.equal(manager.actual.get('uid-web', 'data')?.uniqueName, 'kubernetes.io/csi/uid-web-pv1');
  t.same(manager.actual.get('uid-web', 'data')?.pvcRef, { name: 'data-claim', namespace: 'default' });
  await clock.advance(1000);
  await manager.waitForAttachAndMount(p);
  t.same([api.calls.claims, api.calls.volumes], [1, 1], 'a resolved claim is cached for the pod volume');
  t.equal(pvPlugin.setUps.length, 1);
});

t.test('a missing claim: the wait fails with Go\'s text; the claim is read again on later passes and then mounts', async (t) => {
  const { api, pvPlugin, pods, manager, clock, logger } = await setup(t);
  const p = pod('web', [{ name: 'data', persistentVolumeClaim: { claimName: 'data-claim' } }]);
  pods.push(p);
  await manager.start();
  t.equal(
    await waitError(manager, p),
    'unmounted volumes=[data], unattached volumes=[data]: error processing PVC default/data-claim: failed to fetch PVC from API server: persistentvolumeclaim "data-claim" not found',
  );
  await clock.advance(300);
  t.ok(api.calls.claims >= 3, `read again on each populator pass (${api.calls.claims} reads)`);
  t.equal(logger.messages('error').filter((m) => m === 'Error processing volume').length, 1, 'the same error is logged once');
  api.setClaim(claim('data-claim', {}, 'pv1'));
  api.setVolume(pv('pv1', 'data-claim', { csi }));
  await clock.advance(100);
  await eventually(() => manager.getMountedVolumesForPod('uid-web').has('data'));
  await manager.waitForAttachAndMount(p);
  t.equal(pvPlugin.setUps.length, 1);
});

t.test('claim and PV checks keep Go\'s messages', async (t) => {
  const { api, pods, manager, clock } = await setup(t);
  const p = pod('web', [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }]);
  pods.push(p);
  await manager.start();
  const prefix = 'unmounted volumes=[data], unattached volumes=[data]: error processing PVC default/c: ';
  const expectAfterPass = async (message: string) => {
    await clock.advance(100);
    await settle();
    t.equal(await waitError(manager, p), `${prefix}${message}`);
  };
  api.setClaim({ ...claim('c'), status: { phase: 'Pending' } });
  await expectAfterPass('PVC is not bound');
  api.setClaim(claim('c', { deletionTimestamp: new Date() }));
  await expectAfterPass('PVC is being deleted');
  api.setClaim(claim('c'));
  await expectAfterPass('failed to fetch PV pv1 from API server: persistentvolume "pv1" not found');
  api.setVolume(pv('pv1', 'other', { csi }));
  await expectAfterPass('found PV object pv1 but its pv.Spec.ClaimRef.UID other-uid does not point to claim.UID c-uid');
});

t.test('a generic ephemeral volume: the claim <pod>-<volume> must be controlled by the pod', async (t) => {
  const { api, pvPlugin, pods, manager, clock, podsDir } = await setup(t);
  const p = pod('web', [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } } }]);
  pods.push(p);
  await manager.start();
  t.equal(
    await waitError(manager, p),
    'unmounted volumes=[scratch], unattached volumes=[scratch]: error processing PVC default/web-scratch: failed to fetch PVC from API server: persistentvolumeclaim "web-scratch" not found',
    'waits while the ephemeral volume controller has not created the claim',
  );
  api.setClaim(claim('web-scratch', { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'someone-else', controller: true }] }));
  api.setVolume(pv('pv1', 'web-scratch', { csi }));
  await clock.advance(100);
  await settle();
  t.equal(
    await waitError(manager, p),
    'unmounted volumes=[scratch], unattached volumes=[scratch]: PVC default/web-scratch was not created for pod default/web (pod is not owner)',
  );
  api.setClaim(claim('web-scratch', { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-web', controller: true }] }));
  await clock.advance(100);
  await eventually(() => manager.getMountedVolumesForPod('uid-web').has('scratch'));
  await manager.waitForAttachAndMount(p);
  t.equal(pvPlugin.setUps[0].dir, join(podsDir, 'uid-web', 'volumes', 'kubernetes.io~csi', 'pv1'));
  t.equal(pvPlugin.setUps[0].persistentVolume?.readOnly, false);
});

t.test('GenericEphemeralVolume off: an ephemeral volume waits with Go\'s error and its claim is never read', async (t) => {
  const { api, pvPlugin, pods, manager } = await setup(t, { genericEphemeralVolumes: false });
  const p = pod('web', [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } } }]);
  api.setClaim(claim('web-scratch', { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-web', controller: true }] }));
  api.setVolume(pv('pv1', 'web-scratch', { csi }));
  pods.push(p);
  await manager.start();
  t.equal(await waitError(manager, p), 'unmounted volumes=[scratch], unattached volumes=[scratch]: volume scratch is a generic ephemeral volume, but that feature is disabled in kubelet');
  t.same(pvPlugin.setUps, []);
});

t.test('claims whose PV no plugin serves go to the PersistentClaimPlugin, in the pod-named directory, without a second read', async (t) => {
  const { api, pods, manager, root, podsDir } = await setup(t);
  const data = join(root, 'pv-data');
  api.setClaim(claim('c'));
  api.setVolume(pv('pv1', 'c', { hostPath: { path: data, type: 'DirectoryOrCreate' } }));
  api.setClaim(claim('web-eph', { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-web', controller: true }] }, 'pv2'));
  const local = join(root, 'disk');
  await mkdir(local);
  api.setVolume(pv('pv2', 'web-eph', { local: { path: local } }));
  const p = pod('web', [
    { name: 'data', persistentVolumeClaim: { claimName: 'c' } },
    { name: 'eph', ephemeral: { volumeClaimTemplate: { spec: {} } } },
  ]);
  pods.push(p);
  await manager.start();
  await manager.waitForAttachAndMount(p);
  const mounted = manager.getMountedVolumesForPod('uid-web');
  t.same(mounted.get('data'), { path: data, readOnly: false, selinuxRelabel: false });
  t.same(mounted.get('eph'), { path: local, readOnly: false, selinuxRelabel: true, inUseName: 'kubernetes.io/local-volume/pv2' });
  t.equal(manager.actual.get('uid-web', 'data')?.dir, join(podsDir, 'uid-web', 'volumes', 'kubernetes.io~persistent-claim', 'data'));
  t.same([api.calls.claims, api.calls.volumes], [2, 2], 'the plugin used the claim and PV the populator read');
  t.same(manager.getVolumesInUse(), ['kubernetes.io/local-volume/pv2']);
});

t.test("volumeMode checks in Go's words; a Block PV reaches a container when its plugin maps a device", async (t) => {
  const { api, pvPlugin, pods, manager, clock, recorder } = await setup(t);
  api.setClaim(claim('blk'));
  api.setVolume(pv('pv1', 'blk', { csi, volumeMode: 'Block' }));
  api.setClaim(claim('fs', {}, 'pv2'));
  api.setVolume(pv('pv2', 'fs', { csi }));
  const mountsBlock = pod('a', [{ name: 'data', persistentVolumeClaim: { claimName: 'blk' } }]);
  const devicesFs = pod('b', [{ name: 'data', persistentVolumeClaim: { claimName: 'fs' } }], 'devices');
  const devicesBlock = pod('c', [{ name: 'data', persistentVolumeClaim: { claimName: 'blk' } }], 'devices');
  pods.push(mountsBlock, devicesFs, devicesBlock);
  await manager.start();
  t.equal(await waitError(manager, mountsBlock), 'unmounted volumes=[data], unattached volumes=[data]: volume data has volumeMode Block, but is specified in volumeMounts');
  t.equal(await waitError(manager, devicesFs), 'unmounted volumes=[data], unattached volumes=[data]: volume data has volumeMode Filesystem, but is specified in volumeDevices');
  await manager.waitForAttachAndMount(devicesBlock);
  t.equal(manager.getMountedVolumesForPod('uid-c').get('data')?.devicePath, '/dev/fake/pv1');

  // A plugin that sets no device path for a volume used in volumeDevices fails the mount.
  pvPlugin.mapsDevices = false;
  const unmapped = pod('d', [{ name: 'data', persistentVolumeClaim: { claimName: 'blk' } }], 'devices');
  pods.push(unmapped);
  const waiting = waitError(manager, unmapped);
  await clock.advance(120_000);
  t.match(await waiting, /timed out waiting for the condition/);
  t.match(recorder.messages('FailedMount')[0], /MountVolume.SetUp failed for volume "pv1" : volume data is specified in volumeDevices, but volume plugin kubernetes.io\/csi mapped no block device for it/);
});

t.test('after a restart a claim volume found under its PV name is kept and adopted once the claim is read', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'vm-claims-restart-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const podsDir = join(root, 'pods');
  const dir = join(podsDir, 'uid-web', 'volumes', 'kubernetes.io~csi', 'pv1');
  await mkdir(dir, { recursive: true });
  const { api, pvPlugin, pods, manager, clock } = await setup(t, { podsDir, sourcesReady: () => true });
  const p = pod('web', [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }]);
  pods.push(p);
  // The API server is not there yet: the claim cannot be read.
  await manager.start();
  await clock.advance(1000);
  t.same(pvPlugin.tearDowns, [], "a running pod's volume is not torn down while its claim is unresolved");
  t.ok(manager.actual.get('uid-web', 'pv1')?.reconstructed);
  api.setClaim(claim('c'));
  api.setVolume(pv('pv1', 'c', { csi }));
  await clock.advance(100);
  await eventually(() => manager.getMountedVolumesForPod('uid-web').has('data'));
  await manager.waitForAttachAndMount(p);
  t.same(pvPlugin.tearDowns, [], 'never torn down');
  t.equal(manager.actual.get('uid-web', 'pv1'), undefined);
  t.equal(manager.actual.get('uid-web', 'data')?.dir, dir);
  t.same(await readdir(join(podsDir, 'uid-web', 'volumes', 'kubernetes.io~csi')), ['pv1']);
});

t.test('a pod that goes away while its claim is being read leaves nothing behind', async (t) => {
  const { api, pods, manager, clock } = await setup(t);
  api.setClaim(claim('c'));
  api.setVolume(pv('pv1', 'c', { csi }));
  const p = pod('web', [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }]);
  pods.push(p);
  await manager.start();
  pods.length = 0;
  await clock.advance(200);
  await settle();
  // A setUp that began before the pod went finishes with real fs calls; its teardown follows without fake time.
  await eventually(() => !manager.podVolumesExist('uid-web'));
  t.notOk(manager.desired.hasPod('uid-web'));
  t.notOk(manager.podVolumesExist('uid-web'));
});

t.test('a claim read before the manager starts is used once it runs', async (t) => {
  const { api, pvPlugin, pods, manager } = await setup(t);
  api.setClaim(claim('c'));
  api.setVolume(pv('pv1', 'c', { csi }));
  const p = pod('web', [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }]);
  pods.push(p);
  const waiting = manager.waitForAttachAndMount(p);
  await settle();
  t.equal(api.calls.claims, 1, 'read by the first wait');
  await manager.start();
  await waiting;
  t.equal(pvPlugin.setUps.length, 1);
  t.equal(api.calls.claims, 1);
});
