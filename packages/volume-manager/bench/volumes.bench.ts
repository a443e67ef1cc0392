/**
 * Volume manager: mount cost at pod start, and the fan-out of one ConfigMap change.
 *
 * 1. Mount: 110 pods with 3 volumes each (a configMap, a secret, and the projected kube-api-access
 *    volume: serviceAccountToken + the namespace's kube-root-ca.crt configMap + downwardAPI namespace),
 *    each pod with its own configMap and secret. A KubeletVolumeManager with defaultVolumePlugins() and
 *    the watch-based ConfigMapManager/SecretManager over in-memory ListerWatchers (one object per list
 *    and per watch, as the real fieldSelector=metadata.name reflector) and a TokenManager whose
 *    requester counts TokenRequests. The pods are registered with the managers (as the kubelet's pod
 *    manager does) and waitForAttachAndMount is called for all 110 at once. Figures: total, per-pod
 *    p50/p99 (register -> mounted), API requests per pod (lists + watches + TokenRequests), RSS.
 *    Reference, same run: the bare CRI start of 110 pods at once (RunPodSandbox + CreateContainer +
 *    StartContainer over gRPC with RemoteRuntimeService) against the embedded local runtime in
 *    simulated mode, in its own process. Ratio = mount wall time / bare CRI wall time (the same as
 *    per pod amortized, both being 110 pods at once).
 * 2. Change: one configMap used by 100 pods (one configMap volume each) is modified: ONE watch
 *    MODIFIED event is delivered through the fake ListerWatcher. Figures: API requests the change
 *    causes (lists, watches, TokenRequests; target 0, the one watch event only) and the time until all
 *    100 pods' files, read from disk through the `<key> -> ..data/<key>` symlinks, show the new
 *    content. The change reaches the volume manager as the kubelet wires it (configMaps.onChange ->
 *    remountPodsReferencing). Reference: one plain AtomicWriter update of the same payload (median),
 *    times 100.
 *
 * Real clock and real files in a temp dir; by default FakeMounter, so tmpfs mounts (secret, projected)
 * are only recorded and no root is needed. With `--mounter system` (root) part 1 uses SystemMounter:
 * the 220 tmpfs mounts are made for real under the temp dir (and unmounted after each round), and the
 * figure also counts the processes the mounter spawned (the mount helper and any mount(8)/umount(8)).
 * Figures only, no thresholds.
 *
 *   tsx bench/volumes.bench.ts [--pods 110] [--fanout 100] [--rounds 5] [--changes 5] [--mounter fake|system]
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { V1ConfigMap, V1Pod, V1Secret } from '@kubernetes/client-node';
import { abortReason, pollUntil, type ListerWatcher, type WatchEvent } from '@kubelet-ts/core';
import { RemoteRuntimeService, type runtimeapi } from '@kubelet-ts/cri-client';
import {
  AtomicWriter,
  ConfigMapManager,
  KubeletVolumeManager,
  SecretManager,
  TokenManager,
  configMapNamesOf,
  defaultVolumePlugins,
  podVolumeDir,
  type FileProjection,
} from '../src/index.js';
import { FakeApiObjects } from '../src/fake-api.js';
import { FakeMounter } from '../src/testing-mounter.js';
import { SystemMounter } from '../src/mounter.js';
import type { Mounter } from '../src/types.js';

const { values } = parseArgs({
  options: {
    pods: { type: 'string', default: '110' },
    fanout: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '5' },
    changes: { type: 'string', default: '5' },
    mounter: { type: 'string', default: 'fake' },
  },
});
if (values.mounter !== 'fake' && values.mounter !== 'system') throw new Error(`--mounter: fake or system, not ${values.mounter}`);
const SYSTEM_MOUNTER = values.mounter === 'system';
if (SYSTEM_MOUNTER && process.getuid?.() !== 0) throw new Error('--mounter system mounts tmpfs for real: it needs root');
const PODS = Number(values.pods);
const FANOUT = Number(values.fanout);
const ROUNDS = Number(values.rounds);
const CHANGES = Number(values.changes);
const NAMESPACE = 'bench';
const IMAGE = 'localhost/kubelet-ts/busybox:1';
const localRuntimeCli = new URL('../../local-runtime/dist/cli.js', import.meta.url).pathname;

const fmt = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(1) : ms.toFixed(3));
const rssMiB = (): number => process.memoryUsage().rss / 1024 / 1024;
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const median = (xs: number[]): number => pct(xs, 50);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface ObjectWithMeta {
  metadata?: { namespace?: string; name?: string; resourceVersion?: string };
}

/**
 * An in-memory API server for one kind: each ListerWatcher lists and watches one object by name (the
 * only query the Node authorizer lets a kubelet make), and every list, watch and event is counted.
 */
class FakeObjectApi<T extends ObjectWithMeta> {
  lists = 0;
  watches = 0;
  events = 0;
  private readonly objects = new Map<string, T>();
  private readonly watchers = new Map<string, Set<(event: WatchEvent<T>) => void>>();
  private resourceVersion = 1;

  set(obj: T): void {
    obj.metadata = { ...obj.metadata, resourceVersion: String(++this.resourceVersion) };
    this.objects.set(`${obj.metadata.namespace ?? ''}/${obj.metadata.name ?? ''}`, obj);
  }

  /** Stores the modified object and sends one MODIFIED event to each open watch of it; returns how many. */
  modify(namespace: string, name: string, change: (obj: T) => T): number {
    const key = `${namespace}/${name}`;
    const current = this.objects.get(key);
    if (!current) throw new Error(`no object ${key}`);
    const next = change(structuredClone(current));
    this.set(next);
    let sent = 0;
    for (const deliver of this.watchers.get(key) ?? []) {
      this.events++;
      sent++;
      deliver({ type: 'MODIFIED', object: structuredClone(next) });
    }
    return sent;
  }

  openWatches(namespace: string, name: string): number {
    return this.watchers.get(`${namespace}/${name}`)?.size ?? 0;
  }

  requests(): number {
    return this.lists + this.watches;
  }

  listerWatcherFor = (namespace: string, name: string): ListerWatcher<T> => {
    const key = `${namespace}/${name}`;
    return {
      list: async () => {
        this.lists++;
        const obj = this.objects.get(key);
        return { items: obj ? [structuredClone(obj)] : [], resourceVersion: String(this.resourceVersion) };
      },
      watch: (_opts, onEvent, signal) =>
        new Promise<void>((_resolve, reject) => {
          this.watches++;
          let open = this.watchers.get(key);
          if (!open) this.watchers.set(key, (open = new Set()));
          const deliver = (event: WatchEvent<T>): void => {
            try {
              onEvent(event);
            } catch (err) {
              close();
              reject(err);
            }
          };
          const close = (): void => void open.delete(deliver);
          open.add(deliver);
          signal.addEventListener(
            'abort',
            () => {
              close();
              reject(abortReason(signal));
            },
            { once: true },
          );
        }),
    };
  };
}

/** The managers and the volume manager of one kubelet, over the fake API. */
async function startKubeletVolumes(podsDir: string, mounter: Mounter = new FakeMounter()) {
  await mkdir(podsDir, { recursive: true });
  const configMapApi = new FakeObjectApi<V1ConfigMap>();
  const secretApi = new FakeObjectApi<V1Secret>();
  const tokenApi = new FakeApiObjects();
  const configMaps = new ConfigMapManager({ listerWatcherFor: configMapApi.listerWatcherFor });
  const secrets = new SecretManager({ listerWatcherFor: secretApi.listerWatcherFor });
  const tokens = new TokenManager({ requestToken: (ns, name, request) => tokenApi.getServiceAccountToken(ns, name, request) });
  const pods: V1Pod[] = [];
  const manager = new KubeletVolumeManager({
    podsDir,
    nodeName: 'bench-node',
    plugins: defaultVolumePlugins(),
    mounter,
    pods: { getPods: () => pods },
    podState: { shouldPodContainersBeTerminating: () => false, shouldPodRuntimeBeRemoved: (uid) => !pods.some((p) => p.metadata?.uid === uid) },
    configMaps,
    secrets,
    tokens,
    node: { allocatableMilliCpu: 2000, allocatableMemoryBytes: 8 * 2 ** 30, hostIPs: () => ['10.0.0.1'] },
  });
  // As apps/kubelet/src/container.ts wires it (referencesObject of apps/kubelet/src/volumes.ts).
  const references = (pod: V1Pod, namespace: string, name: string): boolean => (pod.metadata?.namespace ?? '') === namespace && configMapNamesOf(pod).has(name);
  configMaps.onChange((namespace, name) => manager.remountPodsReferencing((pod) => references(pod, namespace, name)));
  await manager.start();
  /** What the kubelet's pod manager does on ADD: the pod becomes known and its objects are watched. */
  const addPod = (pod: V1Pod): void => {
    pods.push(pod);
    configMaps.registerPod(pod);
    secrets.registerPod(pod);
  };
  const apiRequests = () => ({ lists: configMapApi.lists + secretApi.lists, watches: configMapApi.watches + secretApi.watches, tokens: tokenApi.calls.tokens });
  const stop = async (): Promise<void> => {
    await manager.stop();
    await Promise.all([configMaps.stop(), secrets.stop()]);
    tokens.stop();
  };
  return { configMapApi, secretApi, tokenApi, configMaps, secrets, tokens, manager, mounter, addPod, apiRequests, stop };
}

function configData(seed: string, version: number): Record<string, string> {
  // About 1 KiB of configuration in two keys.
  const line = `${seed}.setting.v${version}=${'x'.repeat(40)}\n`;
  return { 'app.properties': line.repeat(20), 'version.txt': `v${version}\n` };
}

function volumePod(round: string, i: number): V1Pod {
  const mounts = ['config', 'creds', 'kube-api-access'].map((name) => ({ name, mountPath: `/etc/${name}`, readOnly: true }));
  return {
    metadata: { namespace: NAMESPACE, name: `${round}-pod-${i}`, uid: `${round}-uid-${i}` },
    spec: {
      serviceAccountName: 'default',
      containers: [{ name: 'app', image: IMAGE, volumeMounts: mounts }],
      volumes: [
        { name: 'config', configMap: { name: `app-config-${i}` } },
        { name: 'creds', secret: { secretName: `app-secret-${i}` } },
        {
          name: 'kube-api-access',
          projected: {
            defaultMode: 0o644,
            sources: [
              { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
            ],
          },
        },
      ],
    },
  };
}

/** Every process this one starts goes through ChildProcess.prototype.spawn (spawn, execFile, exec). */
let spawned = 0;
const childProto = ChildProcess.prototype as unknown as { spawn: (...args: unknown[]) => unknown };
const originalSpawn = childProto.spawn;
childProto.spawn = function countedSpawn(this: ChildProcess, ...args: unknown[]) {
  spawned++;
  return originalSpawn.apply(this, args);
};

interface MountRun {
  totalMs: number;
  /** Processes started during the round (mount helper, mount(8), umount(8)). */
  spawned: number;
  /** SystemMounter's reads of /proc/self/mountinfo during the round. */
  tableReads: number;
  perPod: number[];
  lists: number;
  watches: number;
  tokens: number;
  rssBefore: number;
  rssAfter: number;
}

/** Part 1: PODS pods x 3 volumes, all waited for at once. */
async function mountRun(root: string, round: string): Promise<MountRun> {
  const rssBefore = rssMiB();
  const spawnedBefore = spawned;
  const mounter: Mounter = SYSTEM_MOUNTER ? new SystemMounter() : new FakeMounter();
  const kubelet = await startKubeletVolumes(join(root, round, 'pods'), mounter);
  kubelet.configMapApi.set({ metadata: { namespace: NAMESPACE, name: 'kube-root-ca.crt' }, data: { 'ca.crt': `-----BEGIN CERTIFICATE-----\n${'A'.repeat(1200)}\n-----END CERTIFICATE-----\n` } });
  for (let i = 0; i < PODS; i++) {
    kubelet.configMapApi.set({ metadata: { namespace: NAMESPACE, name: `app-config-${i}` }, data: configData(`pod${i}`, 1) });
    kubelet.secretApi.set({ metadata: { namespace: NAMESPACE, name: `app-secret-${i}` }, data: { password: Buffer.from(`secret-${i}`).toString('base64'), 'tls.key': Buffer.from('k'.repeat(1600)).toString('base64') } });
  }
  const pods = Array.from({ length: PODS }, (_, i) => volumePod(round, i));
  const perPod: number[] = [];
  const start = performance.now();
  await Promise.all(
    pods.map((pod) => {
      kubelet.addPod(pod);
      return kubelet.manager.waitForAttachAndMount(pod).then(() => void perPod.push(performance.now() - start));
    }),
  );
  const totalMs = performance.now() - start;
  const rssAfter = rssMiB();
  // The reflectors open their watches right after their lists; let the last ones do so before counting.
  await pollUntil(() => kubelet.apiRequests().watches >= kubelet.apiRequests().lists, 1, 5000).catch(() => undefined);
  const requests = kubelet.apiRequests();
  // The files are there: one pod's three volumes, read through the visible symlinks.
  const uid = pods[PODS - 1].metadata!.uid!;
  const podsDir = join(root, round, 'pods');
  const config = await readFile(join(podVolumeDir(podsDir, uid, 'kubernetes.io/configmap', 'config'), 'version.txt'), 'utf8');
  const password = await readFile(join(podVolumeDir(podsDir, uid, 'kubernetes.io/secret', 'creds'), 'password'), 'utf8');
  const token = await readFile(join(podVolumeDir(podsDir, uid, 'kubernetes.io/projected', 'kube-api-access'), 'token'), 'utf8');
  const ns = await readFile(join(podVolumeDir(podsDir, uid, 'kubernetes.io/projected', 'kube-api-access'), 'namespace'), 'utf8');
  if (config !== 'v1\n' || password !== `secret-${PODS - 1}` || !token.startsWith('token-') || ns !== NAMESPACE) {
    throw new Error(`unexpected volume contents: ${JSON.stringify({ config, password, token, ns })}`);
  }
  await kubelet.stop();
  const roundSpawned = spawned - spawnedBefore;
  const tableReads = mounter instanceof SystemMounter ? mounter.tableReads : 0;
  if (SYSTEM_MOUNTER) {
    for (const target of await mounter.mountPointsUnder(join(root, round))) await mounter.unmount(target);
    mounter.close?.();
  }
  await rm(join(root, round), { recursive: true, force: true });
  return { totalMs, perPod, ...requests, rssBefore, rssAfter, spawned: roundSpawned, tableReads };
}

/** The bare CRI calls that start PODS pods (one container each), all at once; wall time in ms and per-pod latencies. */
async function bareCriStart(endpoint: string, logRoot: string, prefix: string): Promise<{ totalMs: number; perPod: number[] }> {
  const runtime = new RemoteRuntimeService({ endpoint });
  const perPod: number[] = [];
  const start = performance.now();
  await Promise.all(
    Array.from({ length: PODS }, async (_, i) => {
      const name = `${prefix}-${i}`;
      const uid = `${prefix}-uid-${i}`;
      const config: runtimeapi.PodSandboxConfigInit = {
        metadata: { name, namespace: NAMESPACE, uid, attempt: 0 },
        hostname: name,
        logDirectory: join(logRoot, uid),
        linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
      };
      const sandboxId = await runtime.runPodSandbox(config);
      const containerId = await runtime.createContainer(
        sandboxId,
        { metadata: { name: 'app', attempt: 0 }, image: { image: IMAGE }, command: ['sh', '-c', 'sleep 3600'], logPath: 'app/0.log' },
        config,
      );
      await runtime.startContainer(containerId);
      perPod.push(performance.now() - start);
    }),
  );
  const totalMs = performance.now() - start;
  const sandboxes = await runtime.listPodSandbox();
  await Promise.all(
    sandboxes.map(async (s) => {
      await runtime.stopPodSandbox(s.id).catch(() => undefined);
      await runtime.removePodSandbox(s.id).catch(() => undefined);
    }),
  );
  runtime.close();
  return { totalMs, perPod };
}

async function startSimulatedRuntime(dir: string): Promise<{ endpoint: string; process: ChildProcess }> {
  const socket = join(dir, 'sim.sock');
  const child = spawn(process.execPath, [localRuntimeCli, '--socket', socket, '--root-dir', join(dir, 'sim-root'), '--mode', 'simulated'], { stdio: 'ignore' });
  await pollUntil(() => existsSync(socket), 20, 10_000);
  return { endpoint: `unix://${socket}`, process: child };
}

interface ChangeRun {
  mountMs: number;
  /** Of the median change. */
  visibleMs: number;
  perPod: number[];
  rounds: number[];
  events: number;
  lists: number;
  watches: number;
  tokens: number;
  writeMs: number;
  rssBefore: number;
  rssAfter: number;
}

/** Part 2: one configMap, FANOUT pods; one MODIFIED event; time until every pod's file shows it. */
async function changeRun(root: string): Promise<ChangeRun> {
  const rssBefore = rssMiB();
  const podsDir = join(root, 'fanout', 'pods');
  const kubelet = await startKubeletVolumes(podsDir);
  const name = 'shared-config';
  kubelet.configMapApi.set({ metadata: { namespace: NAMESPACE, name }, data: configData('shared', 1) });
  const pods: V1Pod[] = Array.from({ length: FANOUT }, (_, i) => ({
    metadata: { namespace: NAMESPACE, name: `fan-${i}`, uid: `fan-uid-${i}` },
    spec: {
      containers: [{ name: 'app', image: IMAGE, volumeMounts: [{ name: 'config', mountPath: '/etc/config' }] }],
      volumes: [{ name: 'config', configMap: { name } }],
    },
  }));
  const mountStart = performance.now();
  await Promise.all(
    pods.map((pod) => {
      kubelet.addPod(pod);
      return kubelet.manager.waitForAttachAndMount(pod);
    }),
  );
  const mountMs = performance.now() - mountStart;
  await pollUntil(() => kubelet.configMapApi.openWatches(NAMESPACE, name) === 1, 1, 5000);
  const files = pods.map((p) => join(podVolumeDir(podsDir, p.metadata!.uid!, 'kubernetes.io/configmap', 'config'), 'version.txt'));
  for (const file of files) if ((await readFile(file, 'utf8')) !== 'v1\n') throw new Error(`${file}: not mounted`);

  const before = { ...kubelet.apiRequests(), events: kubelet.configMapApi.events };
  const changes: Array<{ visibleMs: number; perPod: number[] }> = [];
  for (let version = 2; version < 2 + CHANGES; version++) {
    const seenAt = new Array<number>(FANOUT).fill(-1);
    const want = `v${version}\n`;
    const t = performance.now();
    const sent = kubelet.configMapApi.modify(NAMESPACE, name, (cm) => ({ ...cm, data: configData('shared', version) }));
    if (sent !== 1) throw new Error(`the change reached ${sent} watches, not 1`);
    // Poll the files from disk (only those not yet seen changed), every millisecond.
    for (let remaining = FANOUT; remaining > 0; ) {
      await Promise.all(
        files.map(async (file, i) => {
          if (seenAt[i] >= 0) return;
          if ((await readFile(file, 'utf8')) === want) {
            seenAt[i] = performance.now() - t;
            remaining--;
          }
        }),
      );
      if (remaining > 0) {
        if (performance.now() - t > 30_000) throw new Error(`${remaining} pods never saw the change`);
        await sleep(1);
      }
    }
    changes.push({ visibleMs: Math.max(...seenAt), perPod: seenAt });
    // Let the rewrites settle before the next change (the plugin's ownership pass follows the swap).
    await sleep(100);
  }
  const rssAfter = rssMiB();
  // Anything the changes cause later (a re-list, a re-watch) would show within a few reconciler periods.
  await sleep(500);
  const after = { ...kubelet.apiRequests(), events: kubelet.configMapApi.events };
  await kubelet.stop();

  // Reference: one plain atomic update of the same payload, as the plugin's write does it.
  const payload = (version: number): Map<string, FileProjection> =>
    new Map(Object.entries(configData('shared', version)).map(([key, value]) => [key, { data: Buffer.from(value), mode: 0o644 }]));
  const refDir = join(root, 'fanout', 'reference');
  await mkdir(refDir, { recursive: true });
  const writer = new AtomicWriter(refDir);
  await writer.write(payload(0));
  const writes: number[] = [];
  for (let k = 1; k <= 41; k++) {
    const s = performance.now();
    await writer.write(payload(k));
    writes.push(performance.now() - s);
  }
  await rm(join(root, 'fanout'), { recursive: true, force: true });
  const typical = [...changes].sort((a, b) => a.visibleMs - b.visibleMs)[Math.floor(changes.length / 2)];
  return {
    mountMs,
    visibleMs: typical.visibleMs,
    perPod: typical.perPod,
    rounds: changes.map((c) => c.visibleMs),
    events: after.events - before.events,
    lists: after.lists - before.lists,
    watches: after.watches - before.watches,
    tokens: after.tokens - before.tokens,
    writeMs: median(writes.slice(1)),
    rssBefore,
    rssAfter,
  };
}

const root = await mkdtemp(join(tmpdir(), 'volume-manager-bench-'));
const rows: Array<[string, string, string]> = [];
try {
  console.log(
    SYSTEM_MOUNTER
      ? `Volume manager benchmark: real clock, real files under ${root}, SystemMounter in part 1 (the tmpfs mounts of secret and projected volumes are made; root), FakeMounter in part 2`
      : `Volume manager benchmark: real clock, real files under ${root}, FakeMounter (no root needed: the tmpfs mounts of secret and projected volumes are recorded, not made, so their files go to the same disk)`,
  );
  console.log('RSS is this process (volume manager, fake API, gRPC client); the CRI runtime runs in its own process.');

  // ---- 1. mount at pod start vs the bare CRI start
  const sim = await startSimulatedRuntime(root);
  const bare: Array<{ totalMs: number; perPod: number[] }> = [];
  const mounts: MountRun[] = [];
  try {
    // A warm-up round of each, then alternating rounds; medians damp a shared machine's noise.
    await bareCriStart(sim.endpoint, join(root, 'cri-logs'), 'warm');
    await mountRun(root, 'warm');
    for (let r = 0; r < ROUNDS; r++) {
      bare.push(await bareCriStart(sim.endpoint, join(root, 'cri-logs'), `bare${r}`));
      mounts.push(await mountRun(root, `r${r}`));
    }
  } finally {
    sim.process.kill('SIGTERM');
  }
  const m = [...mounts].sort((a, b) => a.totalMs - b.totalMs)[Math.floor(mounts.length / 2)];
  const b = [...bare].sort((x, y) => x.totalMs - y.totalMs)[Math.floor(bare.length / 2)];
  const requestsPerPod = (m.lists + m.watches + m.tokens) / PODS;
  console.log(`\n== 1. ${PODS} pods x 3 volumes (configMap, secret, projected token+configMap+downwardAPI), all waited for at once; median of ${ROUNDS} rounds ==`);
  console.log(
    `volume manager: all mounted ${fmt(m.totalMs)} ms (${fmt(m.totalMs / PODS)} ms/pod amortized), per pod register -> mounted p50 ${fmt(pct(m.perPod, 50))} ms p99 ${fmt(pct(m.perPod, 99))} ms; ` +
      `RSS ${m.rssBefore.toFixed(0)} -> ${m.rssAfter.toFixed(0)} MiB; ${m.spawned} processes spawned` +
      (SYSTEM_MOUNTER ? ` and ${m.tableReads} mountinfo reads (SystemMounter, ${PODS * 2} tmpfs mounts)` : ' (FakeMounter)'),
  );
  console.log(
    `  API requests: ${m.lists} lists + ${m.watches} watches + ${m.tokens} TokenRequests = ${(requestsPerPod).toFixed(2)} per pod ` +
      `(each pod's own configMap and secret: 2 lists + 2 watches; kube-root-ca.crt shared: 1 list + 1 watch for all; 1 token per pod)`,
  );
  console.log(
    `bare CRI (RunPodSandbox + CreateContainer + StartContainer, simulated local runtime over gRPC): all started ${fmt(b.totalMs)} ms (${fmt(b.totalMs / PODS)} ms/pod amortized), ` +
      `per pod p50 ${fmt(pct(b.perPod, 50))} ms p99 ${fmt(pct(b.perPod, 99))} ms`,
  );
  console.log(`ratio mount / bare CRI start: ${(m.totalMs / b.totalMs).toFixed(2)} (wall time, = per pod amortized); p50 latency ratio ${(pct(m.perPod, 50) / pct(b.perPod, 50)).toFixed(2)}`);
  console.log(`  rounds: mount ${mounts.map((x) => fmt(x.totalMs)).join(', ')} ms; bare CRI ${bare.map((x) => fmt(x.totalMs)).join(', ')} ms`);
  rows.push([`mount ${PODS} pods x 3 volumes`, `${fmt(m.totalMs)} ms (p50 ${fmt(pct(m.perPod, 50))}, p99 ${fmt(pct(m.perPod, 99))})`, `${(m.totalMs / b.totalMs).toFixed(2)} x bare CRI start (${fmt(b.totalMs)} ms)`]);
  rows.push(['  API requests per pod', `${requestsPerPod.toFixed(2)} (lists ${m.lists}, watches ${m.watches}, tokens ${m.tokens})`, '']);
  rows.push(['  RSS before -> after', `${m.rssBefore.toFixed(0)} -> ${m.rssAfter.toFixed(0)} MiB`, '']);
  rows.push(['  processes spawned per round', `${m.spawned} (${SYSTEM_MOUNTER ? 'SystemMounter, real tmpfs' : 'FakeMounter'})`, '']);

  // ---- 2. one configMap change fanned out to FANOUT pods
  const c = await changeRun(root);
  const extra = c.lists + c.watches + c.tokens;
  console.log(`\n== 2. one configMap used by ${FANOUT} pods changes: one watch MODIFIED event per change, ${CHANGES} changes, median ==`);
  console.log(`initial mount of the ${FANOUT} pods: ${fmt(c.mountMs)} ms`);
  console.log(
    `API requests caused by ${CHANGES} changes: ${c.lists} lists + ${c.watches} watches + ${c.tokens} TokenRequests = ${extra} (target 0; reads come from the watch's store, ` +
      `there is no GET), watch events ${c.events} (${(c.events / CHANGES).toFixed(0)} per change)`,
  );
  console.log(
    `new content on disk in all ${FANOUT} pods after ${fmt(c.visibleMs)} ms (per pod p50 ${fmt(pct(c.perPod, 50))} ms p99 ${fmt(pct(c.perPod, 99))} ms; files polled every ~1 ms); ` +
      `RSS ${c.rssBefore.toFixed(0)} -> ${c.rssAfter.toFixed(0)} MiB`,
  );
  console.log(`  changes: ${c.rounds.map(fmt).join(', ')} ms`);
  console.log(`reference: one AtomicWriter update of the same payload ${fmt(c.writeMs)} ms (median of 40), x ${FANOUT} = ${fmt(c.writeMs * FANOUT)} ms`);
  console.log(`ratio change -> all visible / (${FANOUT} x one atomic write): ${(c.visibleMs / (c.writeMs * FANOUT)).toFixed(2)}`);
  rows.push([`configMap change -> ${FANOUT} pods' files`, `${fmt(c.visibleMs)} ms (p50 ${fmt(pct(c.perPod, 50))}, p99 ${fmt(pct(c.perPod, 99))})`, `${(c.visibleMs / (c.writeMs * FANOUT)).toFixed(2)} x ${FANOUT} atomic writes (${fmt(c.writeMs * FANOUT)} ms)`]);
  rows.push(['  API requests per change', `${extra / CHANGES} (+ ${c.events / CHANGES} watch event)`, 'target 0']);
  rows.push(['  RSS before -> after', `${c.rssBefore.toFixed(0)} -> ${c.rssAfter.toFixed(0)} MiB`, '']);

  console.log('\n== summary ==');
  const w0 = Math.max(...rows.map((r) => r[0].length));
  const w1 = Math.max(...rows.map((r) => r[1].length));
  for (const [what, figure, reference] of rows) console.log(`${what.padEnd(w0)}  ${figure.padEnd(w1)}  ${reference}`);
} finally {
  if (SYSTEM_MOUNTER) {
    // A round that failed half-way leaves its tmpfs mounts: remove them before the directory.
    const mounter = new SystemMounter();
    for (const target of await mounter.mountPointsUnder(root)) await mounter.unmount(target).catch((err: unknown) => console.error(err));
    mounter.close?.();
  }
  await rm(root, { recursive: true, force: true });
}
