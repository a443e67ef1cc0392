// Container and image GC against a real containerd: our OWN instance (own root, bridge and CIDR),
// since GC removes images and the shared one at /tmp/kubelet-ts-containerd serves other suites.
// If containerd cannot start, this test fails (it does not skip).
import t from 'tap';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  KUBERNETES_CONTAINER_NAME_LABEL,
  KUBERNETES_POD_NAME_LABEL,
  KUBERNETES_POD_NAMESPACE_LABEL,
  KUBERNETES_POD_UID_LABEL,
  pollUntil,
} from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { RemoteImageService, RemoteRuntimeService, type runtimeapi } from '@kubelet-ts/cri-client';
import { CriImageFsStatsProvider, RealImageGCManager, type ImageFsStatsProvider, type RemovedImage } from '@kubelet-ts/image-gc';
import { buildPodLogsDirectory } from '@kubelet-ts/core';
import { ContainerGC } from '../src/index.js';
import { FakePodStateProvider } from '../src/testing.js';

const run = promisify(execFile);
const TOOLS = join(import.meta.dirname, '../../../tools');
const ROOT = '/tmp/kubelet-ts-containerd-gc';
const scriptEnv = {
  ...process.env,
  KUBELET_TS_CONTAINERD_ROOT: ROOT,
  KUBELET_TS_CNI_BRIDGE: 'kts-gc0',
  KUBELET_TS_POD_CIDR: '10.89.0.0/16',
};
const MINUTE = 60_000;

async function startContainerd(): Promise<Record<string, string>> {
  const { stdout } = await run('bash', [join(TOOLS, 'containerd/start.sh')], { env: scriptEnv, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 }).catch(
    (err: Error & { stderr?: string }) => {
      throw new Error(`our containerd did not start (see ${ROOT}/containerd.log): ${err.message}\n${err.stderr ?? ''}`);
    },
  );
  const env = Object.fromEntries(
    stdout
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  for (const key of ['CONTAINERD_ENDPOINT', 'CONTAINERD_SOCKET', 'BUSYBOX_IMAGE', 'PAUSE_IMAGE']) {
    if (!env[key]) throw new Error(`start.sh printed no ${key}: ${stdout}`);
  }
  return env;
}

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/**
 * An image with the busybox rootfs but its own config (a label), hence its own image id: the
 * busybox OCI layout with a new config blob, manifest and index, re-tarred.
 */
async function buildVariant(busyboxTar: string, workDir: string, name: string, variant: string): Promise<string> {
  const dir = join(workDir, `layout-${variant}`);
  mkdirSync(dir, { recursive: true });
  await run('tar', ['-xf', busyboxTar, '-C', dir]);
  const blob = (digest: string) => join(dir, 'blobs/sha256', digest.replace('sha256:', ''));
  const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
  const entry = index.manifests[0];
  const manifest = JSON.parse(readFileSync(blob(entry.digest), 'utf8'));
  const config = JSON.parse(readFileSync(blob(manifest.config.digest), 'utf8'));
  config.config = { ...config.config, Labels: { 'kubelet-ts.gc-variant': variant } };
  const configText = JSON.stringify(config);
  const configDigest = `sha256:${sha256(configText)}`;
  writeFileSync(blob(configDigest), configText);
  manifest.config = { ...manifest.config, digest: configDigest, size: Buffer.byteLength(configText) };
  const manifestText = JSON.stringify(manifest);
  const manifestDigest = `sha256:${sha256(manifestText)}`;
  writeFileSync(blob(manifestDigest), manifestText);
  index.manifests = [
    { ...entry, digest: manifestDigest, size: Buffer.byteLength(manifestText), annotations: { 'io.containerd.image.name': name, 'org.opencontainers.image.ref.name': name.split(':').at(-1) } },
  ];
  writeFileSync(join(dir, 'index.json'), JSON.stringify(index));
  const out = join(workDir, `${variant}.tar`);
  await run('tar', ['-cf', out, '-C', dir, 'oci-layout', 'index.json', 'blobs']);
  return out;
}

t.test('container GC then image GC on containerd remove exactly what the policy says', async (t) => {
  const env = await startContainerd();
  t.teardown(async () => {
    await run('bash', [join(TOOLS, 'containerd/stop.sh')], { env: scriptEnv, timeout: 120_000 }).catch((err: Error) => {
      console.error(`stop.sh failed: ${err.message}`);
    });
  });
  const ctr = (...args: string[]) => run('ctr', ['--address', env.CONTAINERD_SOCKET, '-n', 'k8s.io', ...args], { timeout: 60_000 });
  const runtime = new RemoteRuntimeService({ endpoint: env.CONTAINERD_ENDPOINT });
  const images = new RemoteImageService({ endpoint: env.CONTAINERD_ENDPOINT });
  t.teardown(() => {
    runtime.close();
    images.close();
  });
  const work = mkdtempSync(join(ROOT, 'gc-test-'));
  const logRoot = join(work, 'pods');
  mkdirSync(logRoot);

  // ---- images: busybox (+ an alias tag), pause (sandbox image), four variants with their own ids.
  const busyboxTar = join(process.env.KUBELET_TS_IMAGES_DIR ?? join(ROOT, 'images'), 'busybox.tar');
  const variantName = (n: number) => `localhost/kubelet-ts/gc-variant-${n}:1`;
  for (let n = 1; n <= 4; n++) await ctr('images', 'import', await buildVariant(busyboxTar, work, variantName(n), String(n)));
  await ctr('images', 'tag', env.BUSYBOX_IMAGE, 'localhost/kubelet-ts/busybox-alias:1');
  const idOf = async (ref: string): Promise<string> => {
    const status = await images.imageStatus({ image: ref });
    if (!status.image) throw new Error(`no image ${ref}`);
    return status.image.id;
  };
  const ID = {
    busybox: await idOf(env.BUSYBOX_IMAGE),
    alias: await idOf('localhost/kubelet-ts/busybox-alias:1'),
    pause: await idOf(env.PAUSE_IMAGE),
    v1: await idOf(variantName(1)),
    v2: await idOf(variantName(2)),
    v3: await idOf(variantName(3)),
    v4: await idOf(variantName(4)),
  };
  t.equal(ID.alias, ID.busybox, 'a tag shares the image id');
  t.equal(new Set(Object.values(ID)).size, 6, 'the variants have their own ids');

  // ---- pods: "live" (kept by the workers) and "gone" (deleted), host network.
  const podSandboxConfig = (name: string, uid: string): runtimeapi.PodSandboxConfigInit => {
    const logDirectory = buildPodLogsDirectory(logRoot, 'default', name, uid);
    mkdirSync(logDirectory, { recursive: true });
    return {
      metadata: { name, namespace: 'default', uid, attempt: 0 },
      hostname: '',
      logDirectory,
      labels: { [KUBERNETES_POD_NAME_LABEL]: name, [KUBERNETES_POD_NAMESPACE_LABEL]: 'default', [KUBERNETES_POD_UID_LABEL]: uid },
      linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
    };
  };
  const startContainer = async (
    sandboxId: string,
    sandbox: runtimeapi.PodSandboxConfigInit,
    name: string,
    attempt: number,
    image: string,
    script: string,
  ): Promise<string> => {
    const uid = sandbox.metadata!.uid!;
    const id = await runtime.createContainer(
      sandboxId,
      {
        metadata: { name, attempt },
        image: { image },
        command: ['sh', '-c', script],
        labels: { [KUBERNETES_CONTAINER_NAME_LABEL]: name, [KUBERNETES_POD_UID_LABEL]: uid, [KUBERNETES_POD_NAME_LABEL]: sandbox.metadata!.name!, [KUBERNETES_POD_NAMESPACE_LABEL]: 'default' },
        logPath: `${name}/${attempt}.log`,
        linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
      },
      sandbox,
    );
    await runtime.startContainer(id);
    return id;
  };
  const waitExited = (id: string) =>
    pollUntil(async () => (await runtime.containerStatus(id)).status?.state === 'CONTAINER_EXITED', 50, 30_000);

  const liveCfg = podSandboxConfig('live', 'live-uid');
  const live = await runtime.runPodSandbox(liveCfg);
  const live0 = await startContainer(live, liveCfg, 'app', 0, variantName(1), 'echo zero');
  await waitExited(live0);
  const live1 = await startContainer(live, liveCfg, 'app', 1, variantName(1), 'echo one');
  await waitExited(live1);
  const liveRunning = await startContainer(live, liveCfg, 'app', 2, 'localhost/kubelet-ts/busybox-alias:1', 'exec sleep 3600');

  const goneCfg = podSandboxConfig('gone', 'gone-uid');
  const gone = await runtime.runPodSandbox(goneCfg);
  const gone0 = await startContainer(gone, goneCfg, 'app', 0, variantName(2), 'echo gone0');
  await waitExited(gone0);
  const gone1 = await startContainer(gone, goneCfg, 'app', 1, variantName(2), 'echo gone1');
  await waitExited(gone1);
  await runtime.stopPodSandbox(gone);
  // A log directory left by a pod removed long ago.
  const oldLogs = buildPodLogsDirectory(logRoot, 'default', 'old', 'old-uid');
  mkdirSync(join(oldLogs, 'app'), { recursive: true });
  writeFileSync(join(oldLogs, 'app/0.log'), 'old\n');
  const liveLog = (attempt: number) => join(buildPodLogsDirectory(logRoot, 'default', 'live', 'live-uid'), `app/${attempt}.log`);
  t.ok(existsSync(liveLog(0)) && existsSync(liveLog(1)), 'containerd wrote the logs');

  // ---- image GC, first detection (gone's containers still reference variant 2).
  const clock = new FakeClock(Date.now());
  const logger = new RecordingLogger();
  const removed: RemovedImage[] = [];
  const forced: { stats?: { capacityBytes: number; availableBytes: number } } = {};
  const stats: ImageFsStatsProvider = { imageFsStats: async () => forced.stats ?? { capacityBytes: 100, availableBytes: 100 } };
  const imageGC = new RealImageGCManager({
    imageService: images,
    runtimeService: runtime,
    sandboxImage: env.PAUSE_IMAGE,
    statsProvider: stats,
    clock,
    logger,
    onImageRemoved: (image) => removed.push(image),
  });
  const inUse = await imageGC.detectImages();
  t.same([...inUse].sort(), [ID.busybox, ID.pause, ID.v1, ID.v2].sort(), 'in use: running and exited containers, and the sandbox image');

  // ---- container GC: maxPerPodContainer 1, "gone" and "old" are deleted.
  const pods = new FakePodStateProvider({ live: ['live-uid'], deleted: ['gone-uid', 'old-uid'] });
  const containerGC = new ContainerGC({
    runtimeService: runtime,
    podStateProvider: pods,
    podLogsRootDirectory: logRoot,
    logger,
    killContainer: (c) => runtime.stopContainer(c.id, 2),
  });
  const result = await containerGC.garbageCollectWithResult(true, false);
  t.same(new Set(result.containers), new Set([live0, gone0, gone1]), 'the older dead instance of live/app, and all of gone');
  t.same(result.sandboxes, [gone], 'the deleted pod\'s stopped sandbox');
  t.same(
    new Set(result.podLogDirectories),
    new Set([buildPodLogsDirectory(logRoot, 'default', 'gone', 'gone-uid'), oldLogs]),
    'log directories of pods that no longer exist',
  );
  const containersLeft = (await runtime.listContainers()).map((c) => c.id).sort();
  t.same(containersLeft, [live1, liveRunning].sort(), 'kept: the newest dead instance and the running one');
  t.same((await runtime.listPodSandbox()).map((s) => s.id), [live]);
  t.notOk(existsSync(liveLog(0)), 'a removed container\'s log file goes');
  t.ok(existsSync(liveLog(1)), 'a kept container\'s log file stays');
  t.notOk(existsSync(oldLogs));
  t.notOk(existsSync(buildPodLogsDirectory(logRoot, 'default', 'gone', 'gone-uid')));

  // ---- image GC over the high threshold, after minAge. A fifth variant arrives just before: too young.
  clock.step(3 * MINUTE);
  await ctr('images', 'import', await buildVariant(busyboxTar, work, variantName(5), '5'));
  const v5 = await idOf(variantName(5));
  const sizes = Object.fromEntries((await images.listImages()).map((i) => [i.id, Number(i.size)]));
  // Free exactly the two never-used variants: usage 90% of 10*S, low threshold 80% -> free S.
  const target = sizes[ID.v3] + sizes[ID.v4];
  forced.stats = { capacityBytes: 10 * target, availableBytes: target };
  await imageGC.garbageCollect();
  t.same(new Set(removed.map((r) => r.id)), new Set([ID.v3, ID.v4]), 'never-used first; stops once enough is freed');
  t.same(removed.map((r) => r.size).reduce((a, b) => a + b, 0), target);
  let left = new Set((await images.listImages()).map((i) => i.id));
  t.same(left, new Set([ID.busybox, ID.pause, ID.v1, ID.v2, v5]), 'variant 2 (used until the container GC) is next in line');

  // ---- eviction: every unused image old enough (variant 2), then variant 5 once old enough.
  await imageGC.deleteUnusedImages();
  left = new Set((await images.listImages()).map((i) => i.id));
  t.same(left, new Set([ID.busybox, ID.pause, ID.v1, v5]));
  clock.step(3 * MINUTE);
  await imageGC.deleteUnusedImages();
  left = new Set((await images.listImages()).map((i) => i.id));
  t.same(left, new Set([ID.busybox, ID.pause, ID.v1]), 'in use (running via a tag, exited) and the sandbox image stay');
  t.ok(logger.entries.some((e) => e.msg === 'Removing image to free bytes' && e.kv.imageID === ID.v2 && e.kv.size === sizes[ID.v2]));

  // ---- the default stats provider reads containerd's image filesystem.
  const real = await new CriImageFsStatsProvider({ imageService: images }).imageFsStats();
  t.ok(real.capacityBytes > 0 && real.usedBytes !== undefined, `containerd image fs at ${real.mountpoint}`);

  // ---- once the live pod is deleted, everything of it goes.
  await runtime.stopPodSandbox(live);
  pods.live.delete('live-uid');
  pods.deleted.add('live-uid');
  await containerGC.garbageCollect(true, false);
  t.same(await runtime.listContainers(), []);
  t.same(await runtime.listPodSandbox(), []);
  t.notOk(existsSync(buildPodLogsDirectory(logRoot, 'default', 'live', 'live-uid')));
  rmSync(work, { recursive: true, force: true });
});
