// The optional VolumePlugin hooks as the volume manager uses them: volumesInUse, reconstruct, getVolumeStats.
import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1PersistentVolume, V1Pod, V1Volume } from '@kubernetes/client-node';
import { FakeClock, RecordingEventRecorder, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeApiObjects } from '../src/fake-api.js';
import { FakeMounter } from '../src/testing-mounter.js';
import type { MountedVolume, VolumeContext, VolumeHost, VolumePlugin, VolumeUsageStats } from '../src/types.js';
import { KubeletVolumeManager, type VolumeManagerOptions } from '../src/volume-manager.js';

/** A CSI-like plugin: serves `csi` PVs and inline `csi` volumes, with every optional hook. */
class HookedPlugin implements VolumePlugin {
  readonly name = 'kubernetes.io/csi';
  readonly requiresRemount = false;
  readonly setUps: string[] = [];
  readonly tearDowns: string[] = [];
  inUse: string[] = [];
  inUseError: Error | undefined;
  /** What reconstruct answers per directory name; an Error is thrown. */
  readonly reconstructed = new Map<string, MountedVolume | undefined | Error>();
  readonly stats = new Map<string, VolumeUsageStats | Error>();
  canSupport(volume: V1Volume): boolean {
    return volume.csi !== undefined;
  }
  canSupportPersistentVolume(pv: V1PersistentVolume): boolean {
    return pv.spec?.csi !== undefined;
  }
  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    this.setUps.push(ctx.dir);
    await mkdir(ctx.dir, { recursive: true });
    return { path: join(ctx.dir, 'mount'), readOnly: false, selinuxRelabel: true, inUseName: `kubernetes.io/csi/fake^${ctx.volume.name}` };
  }
  async tearDown(dir: string, _host: VolumeHost): Promise<void> {
    this.tearDowns.push(dir);
    await rm(dir, { recursive: true, force: true });
  }
  volumesInUse(): string[] {
    if (this.inUseError) throw this.inUseError;
    return this.inUse;
  }
  async reconstruct(dir: string): Promise<MountedVolume | undefined> {
    const answer = this.reconstructed.get(dir.split('/').pop()!);
    if (answer instanceof Error) throw answer;
    return answer;
  }
  async getVolumeStats(dir: string, mounted: MountedVolume): Promise<VolumeUsageStats | undefined> {
    const answer = this.stats.get(dir.split('/').pop()!);
    if (answer instanceof Error) throw answer;
    return answer ? { ...answer, message: mounted.path } : undefined;
  }
}

/** A plugin without any hook (an emptyDir). */
class PlainPlugin implements VolumePlugin {
  readonly name = 'kubernetes.io/empty-dir';
  readonly requiresRemount = false;
  readonly setUps: string[] = [];
  readonly tearDowns: string[] = [];
  canSupport(volume: V1Volume): boolean {
    return volume.emptyDir !== undefined;
  }
  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    this.setUps.push(ctx.dir);
    await mkdir(ctx.dir, { recursive: true });
    return { path: ctx.dir, readOnly: false, selinuxRelabel: true };
  }
  async tearDown(dir: string): Promise<void> {
    this.tearDowns.push(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

function pod(name: string, volumes: V1Volume[]): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { volumes, containers: [{ name: 'c', image: 'busybox', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/mnt/${v.name}` })) }] },
  };
}

const inline = (name: string): V1Volume => ({ name, csi: { driver: 'fake.csi.k8s.io' } });

async function setup(t: Test, extra: Partial<VolumeManagerOptions> = {}) {
  const root = await mkdtemp(join(tmpdir(), 'vm-hooks-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const podsDir = (extra.podsDir as string | undefined) ?? join(root, 'pods');
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const api = new FakeApiObjects(() => clock.now());
  const hooked = new HookedPlugin();
  const plain = new PlainPlugin();
  const pods: V1Pod[] = [];
  const manager = new KubeletVolumeManager({
    podsDir,
    nodeName: 'node-1',
    plugins: [hooked, plain],
    mounter: new FakeMounter(),
    pods: { getPods: () => pods },
    podState: { shouldPodContainersBeTerminating: () => false, shouldPodRuntimeBeRemoved: (uid) => !pods.some((p) => p.metadata!.uid === uid) },
    persistentVolumes: api,
    clock,
    logger,
    ...extra,
  });
  t.teardown(() => manager.stop());
  return { root, podsDir, clock, logger, api, hooked, plain, pods, manager };
}

/** Lets real I/O (temp dirs) finish until cond holds. */
async function eventually(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
}

t.test("volumesInUse: the mounted volumes' names and what each plugin reports, once each, sorted", async (t) => {
  const { hooked, pods, manager, logger } = await setup(t);
  const p = pod('web', [inline('a'), { name: 'scratch', emptyDir: {} }]);
  pods.push(p);
  await manager.start();
  await manager.waitForAttachAndMount(p);
  t.same(manager.getVolumesInUse(), ['kubernetes.io/csi/fake^a']);
  hooked.inUse = ['kubernetes.io/csi/fake^staged', 'kubernetes.io/csi/fake^a'];
  t.same(manager.getVolumesInUse(), ['kubernetes.io/csi/fake^a', 'kubernetes.io/csi/fake^staged']);
  hooked.inUseError = new Error('boom');
  t.same(manager.getVolumesInUse(), ['kubernetes.io/csi/fake^a'], "a failing plugin's list is left out");
  t.ok(logger.messages('error').includes('Failed to list the volumes in use of a volume plugin'));
});

t.test('reconstruct: a described volume counts as set up with its mount path and is not set up again', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'vm-hooks-restart-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const podsDir = join(root, 'pods');
  const csiDir = (uid: string, name: string) => join(podsDir, uid, 'volumes', 'kubernetes.io~csi', name);
  for (const [uid, name] of [['uid-web', 'a'], ['uid-web', 'b'], ['uid-gone', 'broken'], ['uid-gone', 'empty']]) await mkdir(csiDir(uid, name), { recursive: true });
  await mkdir(join(podsDir, 'uid-web', 'volumes', 'kubernetes.io~empty-dir', 'scratch'), { recursive: true });
  let ready = false;
  const { hooked, plain, pods, manager, clock, logger } = await setup(t, { podsDir, sourcesReady: () => ready });
  hooked.reconstructed.set('a', { path: join(csiDir('uid-web', 'a'), 'mount'), readOnly: true, selinuxRelabel: true, inUseName: 'kubernetes.io/csi/fake^a' });
  hooked.reconstructed.set('b', undefined);
  hooked.reconstructed.set('broken', new Error('vol_data.json: unexpected end of JSON input'));
  hooked.reconstructed.set('empty', undefined);
  const p = pod('web', [inline('a'), inline('b'), { name: 'scratch', emptyDir: {} }]);
  pods.push(p);
  await manager.start();

  t.same(manager.getVolumesInUse(), ['kubernetes.io/csi/fake^a'], "a reconstructed volume's in-use name is reported at once");
  t.same(manager.getMountedVolumesForPod('uid-web').get('a'), { path: join(csiDir('uid-web', 'a'), 'mount'), readOnly: true, selinuxRelabel: true, inUseName: 'kubernetes.io/csi/fake^a' });
  t.notOk(manager.actual.get('uid-gone', 'empty'), 'a directory with nothing set up is not counted');
  t.ok(manager.actual.get('uid-gone', 'broken'), 'a volume the plugin could not read is kept for its tearDown');
  t.ok(logger.messages('error').includes('Could not reconstruct volume; it is kept as set up at its directory for the plugin to tear down'));
  t.ok(logger.messages('info').includes('Volume directory holds nothing set up; not reconstructed'));

  await manager.waitForAttachAndMount(p);
  t.same(hooked.setUps, [csiDir('uid-web', 'b')], 'only the volume with nothing set up is set up');
  t.same(plain.setUps, [join(podsDir, 'uid-web', 'volumes', 'kubernetes.io~empty-dir', 'scratch')], 'a plugin without the hook sets up again (idempotent)');

  await clock.advance(500);
  t.same(hooked.tearDowns, [], 'nothing torn down before every source is ready');
  ready = true;
  await clock.advance(200);
  await eventually(() => !manager.podVolumesExist('uid-gone'));
  t.same(hooked.tearDowns, [csiDir('uid-gone', 'broken')]);
  await manager.cleanupOrphanedPodDirs(new Set());
  t.same(await readdir(podsDir), ['uid-web'], "the pod that is gone loses its directory, the volume with nothing set up with it");
});

t.test('reconstruct: a claim volume found under its PV name is adopted without a new setUp and gets its claim reference', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'vm-hooks-claim-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const podsDir = join(root, 'pods');
  const dir = join(podsDir, 'uid-web', 'volumes', 'kubernetes.io~csi', 'pv1');
  await mkdir(dir, { recursive: true });
  const { hooked, api, pods, manager } = await setup(t, { podsDir, sourcesReady: () => true });
  hooked.reconstructed.set('pv1', { path: join(dir, 'mount'), readOnly: false, selinuxRelabel: true });
  hooked.stats.set('pv1', { usedBytes: 10 });
  api.setClaim({ metadata: { name: 'c', namespace: 'default', uid: 'c-uid' }, spec: { volumeName: 'pv1' }, status: { phase: 'Bound' } });
  api.setVolume({ metadata: { name: 'pv1' }, spec: { claimRef: { uid: 'c-uid' }, csi: { driver: 'fake.csi.k8s.io', volumeHandle: 'h' } } });
  const p = pod('web', [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }]);
  pods.push(p);
  await manager.start();
  await manager.waitForAttachAndMount(p);
  t.same(hooked.setUps, []);
  t.same(hooked.tearDowns, []);
  t.equal(manager.getMountedVolumesForPod('uid-web').get('data')?.path, join(dir, 'mount'));
  t.same(await manager.getVolumeStats('uid-web'), [{ volumeName: 'data', pvcRef: { name: 'c', namespace: 'default' }, stats: { usedBytes: 10, message: join(dir, 'mount') } }]);
});

t.test("getVolumeStats: the pod's volumes whose plugin reports usage; failures are logged and skipped", async (t) => {
  const { hooked, api, pods, manager, logger } = await setup(t);
  api.setClaim({ metadata: { name: 'c', namespace: 'default', uid: 'c-uid' }, spec: { volumeName: 'pv1' }, status: { phase: 'Bound' } });
  api.setVolume({ metadata: { name: 'pv1' }, spec: { claimRef: { uid: 'c-uid' }, csi: { driver: 'fake.csi.k8s.io', volumeHandle: 'h' } } });
  const p = pod('web', [inline('a'), inline('b'), inline('nothing'), { name: 'data', persistentVolumeClaim: { claimName: 'c' } }, { name: 'scratch', emptyDir: {} }]);
  pods.push(p);
  await manager.start();
  await manager.waitForAttachAndMount(p);
  const usage: VolumeUsageStats = { capacityBytes: 100, availableBytes: 60, usedBytes: 40, inodes: 10, inodesFree: 7, inodesUsed: 3 };
  hooked.stats.set('a', usage);
  hooked.stats.set('b', new Error('rpc error: code = NotFound'));
  hooked.stats.set('pv1', { usedBytes: 1, abnormal: true });
  const stats = await manager.getVolumeStats('uid-web');
  t.same(
    stats.sort((x, y) => x.volumeName.localeCompare(y.volumeName)),
    [
      { volumeName: 'a', stats: { ...usage, message: manager.getMountedVolumesForPod('uid-web').get('a')!.path } },
      { volumeName: 'data', pvcRef: { name: 'c', namespace: 'default' }, stats: { usedBytes: 1, abnormal: true, message: manager.getMountedVolumesForPod('uid-web').get('data')!.path } },
    ],
    'an emptyDir (no hook), a failing volume and one without stats are not listed',
  );
  t.ok(logger.messages('error').includes('Failed to get the stats of a volume'));
  t.same(await manager.getVolumeStats('uid-unknown'), []);
});

/** A failure that says which step failed and whether the volume may be set up anyway (as CSI's CsiVolumeError). */
class StepError extends Error {
  constructor(
    readonly operation: string,
    message: string,
    readonly uncertain: boolean,
  ) {
    super(message);
  }
  eventMessage(volumeName: string): string {
    return `${this.operation} failed for volume ${JSON.stringify(volumeName)} : ${this.message}`;
  }
}

t.test('a setUp failure that may have set the volume up anyway: not given to containers, set up again, torn down when the pod goes; events name the step and the PV', async (t) => {
  const recorder = new RecordingEventRecorder();
  const { hooked, api, pods, manager, clock } = await setup(t, { recorder, sourcesReady: () => true });
  api.setClaim({ metadata: { name: 'c', namespace: 'default', uid: 'c-uid' }, spec: { volumeName: 'pv1' }, status: { phase: 'Bound' } });
  api.setVolume({ metadata: { name: 'pv1' }, spec: { claimRef: { uid: 'c-uid' }, csi: { driver: 'fake.csi.k8s.io', volumeHandle: 'h' } } });
  let failures = [new StepError('MountVolume.MountDevice', 'rpc error: code = DeadlineExceeded desc = context deadline exceeded', true)];
  const setUp = hooked.setUp.bind(hooked);
  hooked.setUp = async (ctx) => {
    const failure = failures.shift();
    if (failure) {
      hooked.setUps.push(ctx.dir);
      throw failure;
    }
    return setUp(ctx);
  };
  const p = pod('web', [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }]);
  pods.push(p);
  await manager.start();
  await eventually(() => hooked.setUps.length === 1 && recorder.messages('FailedMount').length === 1);
  t.same(recorder.messages('FailedMount'), ['MountVolume.MountDevice failed for volume "pv1" : rpc error: code = DeadlineExceeded desc = context deadline exceeded']);
  t.equal(manager.getMountedVolumesForPod('uid-web').size, 0, 'an uncertain volume is not handed to containers');
  t.ok(manager.podVolumesExist('uid-web'), 'but it counts as existing, so it is torn down if the pod goes');

  // Retried after the backoff: set up for good.
  await clock.advance(1_000);
  await manager.waitForAttachAndMount(p);
  t.equal(hooked.setUps.length, 2);
  t.equal(manager.getMountedVolumesForPod('uid-web').get('data')?.path, join(hooked.setUps[1]!, 'mount'));

  // A second pod whose setUp fails uncertainly, then goes: its volume is torn down.
  failures = [new StepError('MountVolume.SetUp', 'rpc error: code = Unavailable desc = connection refused', true)];
  const other = pod('other', [inline('x')]);
  pods.push(other);
  manager.sync();
  await eventually(() => recorder.messages('FailedMount').length === 2);
  t.equal(recorder.messages('FailedMount')[1], 'MountVolume.SetUp failed for volume "x" : rpc error: code = Unavailable desc = connection refused', 'an inline volume is named by the pod');
  pods.splice(pods.indexOf(other), 1);
  // The teardown waits out the failed setUp's backoff (Go: the operation's exponential backoff per volume).
  await clock.advance(1_000);
  manager.sync();
  await eventually(() => !manager.podVolumesExist('uid-other'));
  t.ok(hooked.tearDowns.some((dir) => dir.endsWith(join('uid-other', 'volumes', 'kubernetes.io~csi', 'x'))), 'the uncertain volume was torn down');
});
