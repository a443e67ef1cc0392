// The populator, reconciler and waits of KubeletVolumeManager, with a recording plugin and FakeClock.
import t from 'tap';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { FakeClock, RecordingEventRecorder, RecordingLogger } from '@kubelet-ts/core/testing';
import { KubeletVolumeManager, type PodStateProvider, type VolumeManagerOptions } from '../src/volume-manager.js';
import { FakeMounter } from '../src/testing-mounter.js';
import type { MountedVolume, VolumeContext, VolumeHost, VolumePlugin } from '../src/types.js';

class RecordingPlugin implements VolumePlugin {
  readonly setUps: string[] = [];
  readonly tearDowns: string[] = [];
  /** Volume names whose setUp fails, with the error's message. */
  readonly failing = new Map<string, string>();
  constructor(
    readonly name: string,
    readonly requiresRemount: boolean,
    private readonly field: 'configMap' | 'emptyDir',
  ) {}
  canSupport(volume: V1Volume): boolean {
    return volume[this.field] !== undefined;
  }
  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    this.setUps.push(`${ctx.pod.metadata!.name}/${ctx.volume.name}`);
    const failure = this.failing.get(ctx.volume.name);
    if (failure) throw new Error(failure);
    await mkdir(ctx.dir, { recursive: true });
    return { path: ctx.dir, readOnly: this.requiresRemount, selinuxRelabel: true };
  }
  async tearDown(dir: string, _host: VolumeHost): Promise<void> {
    this.tearDowns.push(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

function pod(name: string, volumes: V1Volume[], mounted = volumes.map((v) => v.name)): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { volumes, containers: [{ name: 'c', image: 'busybox', volumeMounts: mounted.map((n) => ({ name: n, mountPath: `/mnt/${n}` })) }] },
  };
}

async function setup(t: { teardown(fn: () => unknown): void }, extra: Partial<VolumeManagerOptions> = {}) {
  const root = await mkdtemp(join(tmpdir(), 'vm-test-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const podsDir = join(root, 'pods');
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const recorder = new RecordingEventRecorder();
  const configMaps = new RecordingPlugin('kubernetes.io/configmap', true, 'configMap');
  const emptyDirs = new RecordingPlugin('kubernetes.io/empty-dir', false, 'emptyDir');
  const pods: V1Pod[] = [];
  const terminating = new Set<string>();
  const removed = new Set<string>();
  const podState: PodStateProvider = {
    shouldPodContainersBeTerminating: (uid) => terminating.has(uid),
    shouldPodRuntimeBeRemoved: (uid) => removed.has(uid) || !pods.some((p) => p.metadata!.uid === uid),
  };
  const mounter = new FakeMounter();
  const manager = new KubeletVolumeManager({
    podsDir,
    nodeName: 'node-1',
    plugins: [configMaps, emptyDirs],
    mounter,
    pods: { getPods: () => pods },
    podState,
    clock,
    logger,
    recorder,
    ...extra,
  });
  t.teardown(() => manager.stop());
  return { root, podsDir, clock, logger, recorder, configMaps, emptyDirs, pods, terminating, removed, manager, mounter };
}

/** Lets real I/O finish (the plugins write to a temp dir) until cond holds. */
async function eventually(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
}


t.test('a pod waits until its volumes are set up; unused volumes are skipped', async (t) => {
  const { clock, configMaps, emptyDirs, pods, manager, podsDir } = await setup(t);
  const p = pod('web', [{ name: 'config', configMap: { name: 'cm' } }, { name: 'scratch', emptyDir: {} }, { name: 'unused', emptyDir: {} }], ['config', 'scratch']);
  pods.push(p);
  await manager.start();
  await manager.waitForAttachAndMount(p);
  t.same(configMaps.setUps, ['web/config']);
  t.same(emptyDirs.setUps, ['web/scratch'], 'a volume no container mounts is not set up');
  const mounted = manager.getMountedVolumesForPod('uid-web');
  t.same([...mounted.keys()].sort(), ['config', 'scratch']);
  t.equal(mounted.get('config')!.path, join(podsDir, 'uid-web', 'volumes', 'kubernetes.io~configmap', 'config'));
  t.same(await readdir(join(podsDir, 'uid-web', 'volumes')), ['kubernetes.io~configmap', 'kubernetes.io~empty-dir']);
  // A second sync rewrites the API-backed volume only (Go: ReprocessPod / RequiresRemount).
  await manager.waitForAttachAndMount(p);
  await clock.advance(200);
  t.same(configMaps.setUps, ['web/config', 'web/config']);
  t.same(emptyDirs.setUps, ['web/scratch']);
});

t.test('a failing volume: FailedMount events with backoff, then Go\'s timeout message; it mounts once it can', async (t) => {
  const { clock, configMaps, pods, manager, recorder } = await setup(t);
  const p = pod('web', [{ name: 'config', configMap: { name: 'cm' } }, { name: 'scratch', emptyDir: {} }]);
  configMaps.failing.set('config', 'configmap "cm" not found');
  pods.push(p);
  await manager.start();
  const waiting = manager.waitForAttachAndMount(p).then(
    () => undefined,
    (err: Error) => err,
  );
  await clock.advance(60_000);
  const attemptsInAMinute = configMaps.setUps.length;
  t.ok(attemptsInAMinute >= 5 && attemptsInAMinute <= 9, `backoff doubles from 500 ms (${attemptsInAMinute} attempts in 1 min)`);
  await clock.advance(60_000);
  const err = await waiting;
  t.ok(err instanceof Error);
  t.equal(err!.message, 'unmounted volumes=[config], unattached volumes=[config scratch]: timed out waiting for the condition');
  const event = recorder.events.find((e) => e.reason === 'FailedMount');
  t.equal(event?.message, 'MountVolume.SetUp failed for volume "config" : configmap "cm" not found');
  t.equal(event?.type, 'Warning');
  // The object appears: the pods referencing it retry at once, not after the backoff.
  configMaps.failing.clear();
  manager.remountPodsReferencing((candidate) => candidate.metadata!.uid === 'uid-web');
  await manager.waitForAttachAndMount(p);
  t.ok(manager.getMountedVolumesForPod('uid-web').has('config'));
});

t.test('onOperationComplete reports each mount and unmount by plugin, failures with their error', async (t) => {
  const operations: Array<{ pluginName: string; operationName: string; durationMs: number; error?: unknown }> = [];
  const { clock, configMaps, pods, manager, removed } = await setup(t, { onOperationComplete: (op) => operations.push(op) });
  const p = pod('web', [{ name: 'config', configMap: { name: 'cm' } }, { name: 'scratch', emptyDir: {} }]);
  configMaps.failing.set('config', 'configmap "cm" not found');
  pods.push(p);
  await manager.start();
  await clock.advance(0);
  await eventually(() => operations.length >= 2);
  const failed = operations.find((o) => o.error !== undefined);
  t.equal(failed?.pluginName, 'kubernetes.io/configmap');
  t.equal(failed?.operationName, 'volume_mount');
  t.match(String(failed?.error), /configmap "cm" not found/);
  t.same(
    operations.filter((o) => o.error === undefined).map((o) => `${o.pluginName} ${o.operationName}`),
    ['kubernetes.io/empty-dir volume_mount'],
  );
  t.type(operations[0].durationMs, 'number');
  configMaps.failing.clear();
  manager.remountPodsReferencing(() => true);
  await manager.waitForAttachAndMount(p);
  removed.add('uid-web');
  await manager.waitForUnmount(p);
  const unmounts = () => operations.filter((o) => o.operationName === 'volume_unmount');
  await eventually(() => unmounts().length === 2); // reported once each operation has ended
  t.same(
    unmounts().map((o) => o.pluginName).sort(),
    ['kubernetes.io/configmap', 'kubernetes.io/empty-dir'],
  );
});

t.test('a volume no plugin supports fails the wait at once with the populator\'s error', async (t) => {
  const { pods, manager } = await setup(t);
  const p = pod('web', [{ name: 'nfs', nfs: { server: 'x', path: '/' } }]);
  pods.push(p);
  await manager.start();
  await t.rejects(manager.waitForAttachAndMount(p), {
    message: 'unmounted volumes=[nfs], unattached volumes=[nfs]: failed to get Plugin from volumeSpec for volume "nfs" err=no volume plugin matched',
  });
});

t.test('a terminated pod\'s volumes are torn down; waitForUnmount resolves then; the directory goes with housekeeping', async (t) => {
  const { clock, configMaps, emptyDirs, pods, manager, podsDir, removed } = await setup(t);
  const p = pod('web', [{ name: 'config', configMap: { name: 'cm' } }, { name: 'scratch', emptyDir: {} }]);
  pods.push(p);
  await manager.start();
  await manager.waitForAttachAndMount(p);
  removed.add('uid-web');
  await manager.waitForUnmount(p);
  t.equal(configMaps.tearDowns.length + emptyDirs.tearDowns.length, 2);
  t.notOk(manager.podVolumesExist('uid-web'));
  await writeFile(join(podsDir, 'uid-web', 'etc-hosts'), '');
  await manager.cleanupOrphanedPodDirs(new Set(['uid-web']));
  t.same(await readdir(podsDir), ['uid-web'], 'a pod still known keeps its directory');
  pods.length = 0;
  await clock.advance(200);
  await manager.cleanupOrphanedPodDirs(new Set());
  t.same(await readdir(podsDir), [], 'an unknown pod without volumes loses its directory');
});

t.test('the volumes of a pod that goes away are torn down by the reconciler', async (t) => {
  const { clock, emptyDirs, pods, manager } = await setup(t);
  const p = pod('web', [{ name: 'scratch', emptyDir: {} }]);
  pods.push(p);
  await manager.start();
  await manager.waitForAttachAndMount(p);
  pods.length = 0;
  await clock.advance(200);
  await eventually(() => !manager.podVolumesExist('uid-web'));
  t.equal(emptyDirs.tearDowns.length, 1);
  t.notOk(manager.podVolumesExist('uid-web'));
});

t.test('after a restart the volumes on disk count as set up without a new mount, and orphans go once sources are ready', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'vm-restart-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const podsDir = join(root, 'pods');
  await mkdir(join(podsDir, 'uid-web', 'volumes', 'kubernetes.io~empty-dir', 'scratch'), { recursive: true });
  await mkdir(join(podsDir, 'uid-gone', 'volumes', 'kubernetes.io~empty-dir', 'old'), { recursive: true });
  let ready = false;
  const { clock, emptyDirs, pods, manager } = await setup(t, { podsDir, sourcesReady: () => ready });
  pods.push(pod('web', [{ name: 'scratch', emptyDir: {} }]));
  await manager.start();
  t.ok(manager.podVolumesExist('uid-gone'), 'reconstructed from disk');
  await clock.advance(500);
  t.same(emptyDirs.tearDowns, [], 'nothing torn down before every source is ready');
  await manager.waitForAttachAndMount(pods[0]);
  ready = true;
  await clock.advance(200);
  // The teardown starts with the volume's subPath cleanup (a directory read), then tears the volume down.
  await eventually(() => !manager.podVolumesExist('uid-gone'));
  t.same(emptyDirs.tearDowns, [join(podsDir, 'uid-gone', 'volumes', 'kubernetes.io~empty-dir', 'old')]);
  t.ok(manager.getMountedVolumesForPod('uid-web').has('scratch'));
  await manager.cleanupOrphanedPodDirs(new Set());
  t.same((await readdir(podsDir)).sort(), ['uid-web'], 'the orphaned pod directory is removed; the desired pod keeps its own');
});

t.test('a pod directory with something still mounted is never removed', async (t) => {
  const { podsDir, manager, mounter } = await setup(t);
  await mkdir(join(podsDir, 'uid-old', 'volumes', 'x'), { recursive: true });
  await mounter.mountTmpfs(join(podsDir, 'uid-old', 'volumes', 'x'));
  await manager.cleanupOrphanedPodDirs(new Set());
  t.same(await readdir(podsDir), ['uid-old']);
});

t.test('an aborted wait rejects with the abort reason, not a mount error', async (t) => {
  const { configMaps, pods, manager } = await setup(t);
  const p = pod('web', [{ name: 'config', configMap: { name: 'cm' } }]);
  configMaps.failing.set('config', 'nope');
  pods.push(p);
  await manager.start();
  const controller = new AbortController();
  const waiting = manager.waitForAttachAndMount(p, controller.signal);
  controller.abort(new Error('pod deleted'));
  await t.rejects(waiting, { message: 'pod deleted' });
});
