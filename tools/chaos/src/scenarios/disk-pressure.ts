import { setTimeout as sleep } from 'node:timers/promises';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { boundPod, condition, execThroughCri, sleepForever, type KubeObject } from '@kubelet-ts/cluster-e2e';
import type { InvariantResult } from '../invariants.js';
import type { ChaosNodeOptions } from '../node.js';
import type { FaultReport, Scenario, ScenarioContext } from '../scenario.js';

const execFileAsync = promisify(execFile);
const MiB = 1 << 20;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;

/** The kubelet's root filesystem: a loop-mounted ext4 image of this size, no blocks reserved for root. */
const ROOT_FS_MIB = 384;
/** --eviction-hard=nodefs.available<THRESHOLD_MIB Mi. */
const THRESHOLD_MIB = 100;
/** --eviction-minimum-reclaim=nodefs.available=RECLAIM_MIB Mi: once met, the threshold holds until THRESHOLD + RECLAIM are free. */
const RECLAIM_MIB = 52;
/** --eviction-pressure-transition-period. */
const TRANSITION_S = 20;
/** How far below the threshold the host's fill takes the filesystem once the pods wrote their data. */
const BELOW_MIB = 24;
const HIGH_PRIORITY_CLASS = 'chaos-disk-pressure-high';
const HIGH_PRIORITY = 1000;
const TAINT = 'node.kubernetes.io/disk-pressure';
/** How long the kubelet reuses a volume's du (Go's --volume-stats-agg-period default). */
const VOLUME_STATS_PERIOD_MS = 60_000;

/** One pod that writes `writeMiB` into an emptyDir and then sleeps. */
interface Filler {
  name: string;
  writeMiB: number;
  requestMiB: number;
  priority: 0 | typeof HIGH_PRIORITY;
}

/**
 * The filler pods, and Go's nodefs ranking for them with images on their own filesystem (rankDiskPressureFunc over
 * logs and local volumes): pods using more than their ephemeral-storage request first, then lower priority, then the
 * larger usage above the request. The fill is sized so that reclaiming THRESHOLD + RECLAIM takes the first three.
 */
export const FILLERS: readonly Filler[] = [
  // Over its request, priority 0, 32 MiB above the request: Go evicts it first.
  { name: 'fill-over-low', writeMiB: 40, requestMiB: 8, priority: 0 },
  // Over its (zero) request, priority 0, 16 MiB above: second.
  { name: 'fill-over-small', writeMiB: 16, requestMiB: 0, priority: 0 },
  // Over its request, but priority 1000: third, after every priority-0 pod over its request.
  { name: 'fill-over-high', writeMiB: 40, requestMiB: 8, priority: HIGH_PRIORITY },
  // The largest user, but within its request: after every pod over its request (and after priority-0 pods that use
  // more above their requests: the churn's), so never reached here.
  { name: 'fill-within', writeMiB: 48, requestMiB: 96, priority: 0 },
];

/** Go's order of the fillers: exceeds its request, priority ascending, usage above the request descending. */
export function goDiskRank(fillers: readonly Filler[]): string[] {
  return [...fillers]
    .sort((a, b) => {
      const ea = a.writeMiB > a.requestMiB;
      const eb = b.writeMiB > b.requestMiB;
      if (ea !== eb) return ea ? -1 : 1;
      if (a.priority !== b.priority) return a.priority - b.priority;
      return b.writeMiB - b.requestMiB - (a.writeMiB - a.requestMiB);
    })
    .map((filler) => filler.name);
}

/** The pods Go evicts, in order, until THRESHOLD + RECLAIM are free again, starting `belowMiB` under the threshold. */
export function expectedEvictions(fillers: readonly Filler[], belowMiB: number, reclaimMiB: number): string[] {
  const byName = new Map(fillers.map((filler) => [filler.name, filler]));
  const evicted: string[] = [];
  let deficit = belowMiB + reclaimMiB;
  for (const name of goDiskRank(fillers)) {
    if (deficit <= 0) break;
    evicted.push(name);
    deficit -= byName.get(name)!.writeMiB;
  }
  return evicted;
}

const CONFIG_MAP = 'disk-pressure-config';
const CONFIG_POD = 'config-reader';
const CONFIG_VOLUME = 'config';

/** A ConfigMap's payload of one version: a large file (so a write cannot fit a full disk) and a small one. */
export function configPayload(version: number): Record<string, string> {
  const line = `version ${version} ${'0123456789abcdef'.repeat(4)}\n`;
  return { 'large.txt': line.repeat(Math.ceil((version === 1 ? 300 : 600) * 1024 / line.length)), 'small.txt': `version ${version}\n` };
}

const md5 = (data: string | Buffer) => createHash('md5').update(data).digest('hex');

/** What the writer's directory holds on the host: the ..data link, its target, the files read through the visible links, leftovers. */
export function inspectAtomicDir(dir: string, payload: Record<string, string>): { ok: boolean; detail: string } {
  const problems: string[] = [];
  let target = '';
  try {
    target = readlinkSync(join(dir, '..data'));
  } catch (error) {
    return { ok: false, detail: `..data: ${(error as Error).message}` };
  }
  if (!existsSync(join(dir, target))) problems.push(`..data dangles (-> ${target})`);
  const entries = readdirSync(dir);
  if (entries.includes('..data_tmp')) problems.push('a ..data_tmp left');
  const tsDirs = entries.filter((name) => /^\.\.\d{4}_/.test(name));
  if (tsDirs.length !== 1) problems.push(`${tsDirs.length} timestamped directories (${tsDirs.join(', ')})`);
  for (const [key, content] of Object.entries(payload)) {
    try {
      if (!lstatSync(join(dir, key)).isSymbolicLink()) problems.push(`${key} is not a link into ..data`);
      const onDisk = readFileSync(join(dir, key));
      if (md5(onDisk) !== md5(content)) problems.push(`${key}: ${onDisk.length} bytes, md5 ${md5(onDisk).slice(0, 8)}, wanted ${Buffer.byteLength(content)} bytes ${md5(content).slice(0, 8)}`);
    } catch (error) {
      problems.push(`${key}: ${(error as Error).message}`);
    }
  }
  return { ok: problems.length === 0, detail: problems.length === 0 ? `..data -> ${target}, ${Object.keys(payload).length} files whole` : problems.join('; ') };
}

/** Writes `path` until the filesystem says ENOSPC (or `limitBytes` are written); the bytes written. */
export function fillFile(path: string, limitBytes = Number.POSITIVE_INFINITY): number {
  const fd = openSync(path, 'a');
  let written = 0;
  try {
    for (const size of [MiB, 64 << 10, 4 << 10]) {
      const chunk = Buffer.alloc(size, 0x5a);
      for (;;) {
        const want = Math.min(size, limitBytes - written);
        if (want <= 0) return written;
        try {
          written += writeSync(fd, chunk, 0, want);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw error;
        }
      }
    }
    return written;
  } finally {
    closeSync(fd);
  }
}

/** Free bytes of the filesystem at `path` for an unprivileged writer, as the kubelet's nodefs.available. */
export const availableBytes = (path: string) => {
  const stats = statfsSync(path);
  return stats.bavail * stats.bsize;
};

/** The checkpoint and state files the kubelet keeps under its root dir, each parsed: they must stay valid JSON. */
export function checkpointFiles(rootDir: string): { files: number; invalid: string[] } {
  const invalid: string[] = [];
  let files = 0;
  for (const dir of [rootDir, join(rootDir, 'device-plugins'), join(rootDir, 'checkpoints')]) {
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir)) {
      if (!/checkpoint|_state$/.test(name)) continue;
      const path = join(dir, name);
      if (!lstatSync(path).isFile()) continue;
      files++;
      try {
        JSON.parse(readFileSync(path, 'utf8'));
      } catch (error) {
        invalid.push(`${path.slice(rootDir.length + 1)}: ${(error as Error).message}`);
      }
    }
  }
  return { files, invalid };
}

interface Eviction {
  pod: string;
  at: number;
  phase: 1 | 2;
  reason?: string;
  message?: string;
}

/**
 * Scenario 4: the disk filling up. The kubelet's root dir is a loop-mounted ext4 filesystem of ROOT_FS_MIB, with
 * `nodefs.available<THRESHOLD` and a minimum reclaim. Phase 1: filler pods write into emptyDirs (different requests
 * and priorities) and the host fills the rest to under the threshold; the kubelet must set DiskPressure (and the
 * taint follows), evict in Go's order exactly the pods needed to reclaim THRESHOLD + RECLAIM, each Failed/Evicted with
 * an Evicted event, and clear DiskPressure after the transition period. Phase 2: the host fills the disk to ENOSPC and
 * keeps it full while a ConfigMap a pod mounts is updated: the atomic writer must fail cleanly (a FailedMount event
 * naming ENOSPC), the pod and the host must still see the whole old content (no half-written file, no dangling
 * ..data), and once space is back the whole new content. Throughout, the kubelet must not crash and its checkpoints
 * stay valid JSON. The containerd root (imagefs) is not filled: it needs a second containerd on a small root.
 */
export class DiskPressure implements Scenario {
  readonly name = 'disk-pressure';
  private rootDir = '';
  private kubectl?: ScenarioContext['node']['kubectl'];

  nodeOptions(): Partial<ChaosNodeOptions> {
    return {
      extraArgs: [
        `--eviction-hard=nodefs.available<${THRESHOLD_MIB}Mi,nodefs.inodesFree<5%`,
        `--eviction-minimum-reclaim=nodefs.available=${RECLAIM_MIB}Mi`,
        `--eviction-pressure-transition-period=${TRANSITION_S}s`,
      ],
      prepareDir: async (dir: string) => {
        const image = join(dir, 'root.img');
        const root = join(dir, 'root');
        mkdirSync(root, { recursive: true });
        await execFileAsync('truncate', ['-s', `${ROOT_FS_MIB}M`, image]);
        await execFileAsync('mkfs.ext4', ['-q', '-F', '-m', '0', image]);
        // -o loop: the loop device is released (autoclear) when the node's destroy() unmounts it.
        await execFileAsync('mount', ['-o', 'loop', image, root]);
        this.rootDir = root;
      },
    };
  }

  async inject(context: ScenarioContext): Promise<FaultReport> {
    const { node, settings } = context;
    const { kubectl, namespace } = node;
    this.kubectl = kubectl;
    const log = (line: string) => settings.log(`disk-pressure: ${line}`);
    const root = node.rootDir;
    const invariants: InvariantResult[] = [];
    const recoveriesMs: number[] = [];
    const evictions: Eviction[] = [];
    const hogs = [join(root, 'chaos-fill'), join(root, 'chaos-enospc')];
    const image = node.containerd.busyboxImage;
    let phase: 1 | 2 = 1;

    const nodeObject = () => kubectl.getOrUndefined(['node', node.name]).catch(() => undefined);
    const diskPressure = (object: KubeObject | undefined) => condition(object, 'DiskPressure')?.status;
    const tainted = (object: KubeObject | undefined) => (object?.spec?.taints ?? []).some((taint: KubeObject) => taint.key === TAINT);
    const podsNamed = async (): Promise<Map<string, KubeObject>> =>
      new Map(((await kubectl.json(['get', 'pods', '-n', namespace])).items as KubeObject[]).map((pod) => [pod.metadata.name as string, pod]));
    const waitFor = async (what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<number> => {
      const started = Date.now();
      for (;;) {
        if (await check().catch(() => false)) return Date.now() - started;
        if (Date.now() - started > timeoutMs) throw new Error(`disk-pressure: ${what} not within ${timeoutMs / 1000} s\n${node.kubelet.logTail(20)}`);
        await sleep(500);
      }
    };

    // Pods and their evictions, seen every half second (the order evictions happen in).
    let watching = true;
    const seenEvicted = new Set<string>();
    let pressureSeen = false;
    let taintSeen = false;
    const watcher = (async () => {
      while (watching) {
        try {
          const [pods, object] = await Promise.all([podsNamed(), nodeObject()]);
          if (diskPressure(object) === 'True') pressureSeen = true;
          if (tainted(object)) taintSeen = true;
          for (const [name, pod] of pods) {
            if (pod.status?.reason !== 'Evicted' || seenEvicted.has(pod.metadata.uid)) continue;
            seenEvicted.add(pod.metadata.uid);
            evictions.push({ pod: name, at: Date.now(), phase, reason: pod.status.reason, message: pod.status.message });
            log(`evicted ${name} (phase ${phase}): ${pod.status.message}`);
          }
        } catch {
          // the API server may be away (scenario 3 runs beside this one)
        }
        await sleep(500);
      }
    })();

    try {
      // The ConfigMap, its reader and the fillers.
      await kubectl.apply({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: HIGH_PRIORITY_CLASS }, value: HIGH_PRIORITY, description: 'chaos disk-pressure' });
      // create/replace: kubectl apply's last-applied annotation (256 KiB at most) cannot hold the payload.
      await kubectl.run(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: CONFIG_MAP, namespace }, data: configPayload(1) }));
      const where = (name: string) => ({ name, namespace, node: node.name, image });
      const storage = (requestMiB: number) => (requestMiB > 0 ? { resources: { requests: { 'ephemeral-storage': `${requestMiB}Mi` } } } : {});
      await kubectl.apply(
        boundPod(
          where(CONFIG_POD),
          { command: ['sh', '-c', sleepForever], volumeMounts: [{ name: CONFIG_VOLUME, mountPath: '/config' }], ...storage(16) },
          { priorityClassName: HIGH_PRIORITY_CLASS, volumes: [{ name: CONFIG_VOLUME, configMap: { name: CONFIG_MAP } }] },
        ),
        ...FILLERS.map((filler) =>
          boundPod(
            where(filler.name),
            {
              command: ['sh', '-c', `dd if=/dev/urandom of=/data/fill bs=1M count=${filler.writeMiB} 2>/dev/null && sync && touch /data/done; ${sleepForever}`],
              volumeMounts: [{ name: 'data', mountPath: '/data' }],
              ...storage(filler.requestMiB),
            },
            { volumes: [{ name: 'data', emptyDir: {} }], ...(filler.priority ? { priorityClassName: HIGH_PRIORITY_CLASS } : {}) },
          ),
        ),
      );
      const names = [CONFIG_POD, ...FILLERS.map((filler) => filler.name)];
      await waitFor(
        'the fillers written',
        async () => {
          const pods = await podsNamed();
          return (
            names.every((name) => pods.get(name)?.status?.phase === 'Running') &&
            FILLERS.every((filler) => existsSync(join(root, 'pods', pods.get(filler.name)!.metadata.uid, 'volumes/kubernetes.io~empty-dir/data/done')))
          );
        },
        180_000,
      );
      const before = await podsNamed();
      // The volumes' du is cached for a minute (Go's --volume-stats-agg-period, as ours): let every filler's usage be
      // measured after its write, or the ranking would see a stale (empty) volume, as Go's would.
      await sleep(VOLUME_STATS_PERIOD_MS + 5000);

      // Phase 1: the host fills the rest to BELOW_MIB under the threshold.
      const free = availableBytes(root);
      if (free < (THRESHOLD_MIB + BELOW_MIB) * MiB) throw new Error(`disk-pressure: only ${mib(free)} free once the fillers wrote; the ${ROOT_FS_MIB} MiB filesystem is too small`);
      const fill = Math.max(0, free - (THRESHOLD_MIB - BELOW_MIB) * MiB);
      fillFile(hogs[0], fill);
      const filledAt = Date.now();
      const expected = expectedEvictions(FILLERS, BELOW_MIB, RECLAIM_MIB);
      log(`${mib(free)} free after the fillers; filled ${mib(fill)} on the host, ${mib(availableBytes(root))} left; Go evicts ${expected.join(', ')}`);
      await waitFor('the expected evictions', async () => expected.every((name) => evictions.some((e) => e.pod === name)), 240_000);
      const reclaimedAt = Date.now();
      // The reclaim is met: DiskPressure goes after the transition period, and nothing more is evicted.
      const cleared = await waitFor('DiskPressure False after phase 1', async () => diskPressure(await nodeObject()) === 'False', 180_000);
      log(`phase 1: DiskPressure cleared ${(cleared / 1000).toFixed(0)} s after the last expected eviction`);
      recoveriesMs.push(await context.recovered(reclaimedAt));
      const phase1 = evictions.filter((e) => e.phase === 1);
      const fillersEvicted = phase1.filter((e) => names.includes(e.pod)).map((e) => e.pod);
      const churnEvicted = phase1.filter((e) => !names.includes(e.pod)).map((e) => e.pod);
      invariants.push({
        name: "evictions in Go's order",
        held: JSON.stringify(fillersEvicted) === JSON.stringify(expected),
        detail: `evicted ${fillersEvicted.join(' > ') || 'none'} (Go: ${expected.join(' > ')})${churnEvicted.length ? `; and ${churnEvicted.length} churn pod(s)` : ''}`,
      });
      invariants.push({
        name: 'DiskPressure and its taint while over the threshold',
        held: pressureSeen && taintSeen,
        detail: `DiskPressure True ${pressureSeen ? 'seen' : 'never seen'}, taint ${TAINT} ${taintSeen ? 'seen' : 'never seen'}`,
      });
      const events = ((await kubectl.json(['get', 'events', '-n', namespace, '--field-selector', 'reason=Evicted'])).items as KubeObject[]).map(
        (event) => `${event.involvedObject?.name}: ${event.message}`,
      );
      const badStatus: string[] = [];
      for (const name of expected) {
        const eviction = evictions.find((e) => e.pod === name);
        const pod = (await podsNamed()).get(name);
        if (pod?.status?.phase !== 'Failed' || !/^The node was low on resource: ephemeral-storage\. /.test(pod?.status?.message ?? '')) {
          badStatus.push(`${name}: ${pod?.status?.phase} ${pod?.status?.reason} ${JSON.stringify(pod?.status?.message ?? eviction?.message)}`);
        }
        if (!events.some((event) => event.startsWith(`${name}: The node was low on resource: ephemeral-storage.`))) badStatus.push(`${name}: no Evicted event`);
      }
      invariants.push({
        name: 'Evicted pod status and event',
        held: badStatus.length === 0,
        detail: badStatus.length === 0 ? `${expected.length} pods Failed/Evicted "The node was low on resource: ephemeral-storage.", each with an Evicted event` : badStatus.join('; '),
      });

      // Phase 2: the disk full (kept full) while the ConfigMap changes.
      phase = 2;
      const reader = before.get(CONFIG_POD)!;
      const configDir = join(root, 'pods', reader.metadata.uid, 'volumes/kubernetes.io~configmap', CONFIG_VOLUME);
      const v1 = configPayload(1);
      const v2 = configPayload(2);
      const inPod = async (payload: Record<string, string>): Promise<{ ok: boolean; detail: string }> => {
        const fresh = (await podsNamed()).get(CONFIG_POD);
        if (!fresh) return { ok: false, detail: `${CONFIG_POD} is gone` };
        const out = await execThroughCri(node.runtime, fresh, ['sh', '-c', 'cd /config && md5sum large.txt small.txt && readlink ..data'], 'app', 10);
        const want = Object.entries(payload).map(([key, content]) => `${md5(content)}  ${key}`);
        return { ok: want.every((line) => out.includes(line)), detail: out.trim().split('\n').join(', ') };
      };
      const hostBefore = inspectAtomicDir(configDir, v1);
      let full = true;
      const keepFull = (async () => {
        while (full) {
          fillFile(hogs[1]);
          await sleep(200);
        }
      })();
      const fullAt = Date.now();
      log(`disk full: ${mib(availableBytes(root))} left; updating the ConfigMap`);
      await kubectl.run(['replace', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: CONFIG_MAP, namespace }, data: v2 }));
      let enospc = '';
      await waitFor(
        'a FailedMount naming ENOSPC for the ConfigMap',
        async () => {
          const failed = ((await kubectl.json(['get', 'events', '-n', namespace, '--field-selector', `involvedObject.name=${CONFIG_POD},reason=FailedMount`])).items as KubeObject[]).find(
            (event) => /no space left on device|ENOSPC/.test(event.message),
          );
          enospc = failed?.message ?? '';
          return enospc !== '';
        },
        120_000,
      );
      log(`the writer failed: ${enospc}`);
      const podWhileFull = await inPod(v1);
      // The writer may be between creating its directory and removing it again after ENOSPC: look again then.
      let hostWhileFull = inspectAtomicDir(configDir, v1);
      for (let i = 0; i < 5 && !hostWhileFull.ok; i++) {
        await sleep(300);
        hostWhileFull = inspectAtomicDir(configDir, v1);
      }
      full = false;
      await keepFull;
      for (const hog of hogs) rmSync(hog, { force: true });
      const freedAt = Date.now();
      log(`space back (${mib(availableBytes(root))} free) after ${((freedAt - fullAt) / 1000).toFixed(0)} s full`);
      let podAfter = { ok: false, detail: '' };
      await waitFor('the new ConfigMap content in the pod', async () => (podAfter = await inPod(v2)).ok, 180_000).catch(() => undefined);
      const hostAfter = inspectAtomicDir(configDir, v2);
      invariants.push({
        name: 'no volume data corrupted by a half write',
        held: hostBefore.ok && podWhileFull.ok && hostWhileFull.ok && podAfter.ok && hostAfter.ok,
        detail:
          `ENOSPC: "${enospc.slice(0, 160)}"; while full: pod ${podWhileFull.ok ? 'old content whole' : `WRONG (${podWhileFull.detail})`}, host ${hostWhileFull.detail}; ` +
          `space back: pod ${podAfter.ok ? 'new content whole' : `WRONG (${podAfter.detail})`}, host ${hostAfter.detail}`,
      });
      // Disk full, nothing over its request is left: priority 0 (fill-within, the churn) goes before the reader (1000).
      const phase2 = evictions.filter((e) => e.phase === 2).map((e) => e.pod);
      const readerAt = phase2.indexOf(CONFIG_POD);
      invariants.push({
        name: "evictions in Go's order while full",
        held: readerAt < 0 || (phase2.indexOf('fill-within') >= 0 && phase2.indexOf('fill-within') < readerAt),
        detail: `evicted ${phase2.join(' > ') || 'none'}`,
      });
      await waitFor('DiskPressure False after phase 2', async () => diskPressure(await nodeObject()) === 'False' && !tainted(await nodeObject()), 180_000);
      recoveriesMs.push(await context.recovered(freedAt));
      invariants.push({ name: 'DiskPressure clears once freed', held: true, detail: 'False and untainted after each phase' });

      // The kubelet lived through it.
      const checkpoints = checkpointFiles(root);
      invariants.push({
        name: 'the kubelet did not crash and its checkpoints are valid',
        held: node.generations.length === 1 && node.kubelet.running && checkpoints.invalid.length === 0,
        detail: `${node.generations.length} kubelet generation(s), ${node.kubelet.running ? 'running' : 'EXITED'}; ${checkpoints.files} checkpoint file(s)${checkpoints.invalid.length ? `, invalid: ${checkpoints.invalid.join('; ')}` : ' valid JSON'}`,
      });
      return {
        faults: `nodefs filled to ${BELOW_MIB} MiB under nodefs.available<${THRESHOLD_MIB}Mi, then to ENOSPC for ${((freedAt - fullAt) / 1000).toFixed(0)} s across a ConfigMap update`,
        recoveriesMs,
        invariants,
        figures: [`${evictions.length} evictions (${evictions.map((e) => `${e.pod}@${((e.at - filledAt) / 1000).toFixed(0)}s`).join(', ')})`],
      };
    } finally {
      watching = false;
      await watcher;
      for (const hog of hogs) rmSync(hog, { force: true });
      await this.removeWorkloads(namespace);
    }
  }

  /** The scenario's pods, its ConfigMap, and the pods evictions left Failed (the churn's count only its live pods). */
  private async removeWorkloads(namespace: string): Promise<void> {
    const kubectl = this.kubectl;
    if (!kubectl) return;
    const names = [CONFIG_POD, ...FILLERS.map((filler) => filler.name)];
    await kubectl.run(['delete', 'pods', '-n', namespace, '--ignore-not-found', '--wait=false', ...names]).catch(() => undefined);
    await kubectl.run(['delete', 'pods', '-n', namespace, '--field-selector=status.phase=Failed', '--wait=false']).catch(() => undefined);
    await kubectl.run(['delete', 'configmap', '-n', namespace, CONFIG_MAP, '--ignore-not-found']).catch(() => undefined);
  }

  async teardown(): Promise<void> {
    await this.kubectl?.run(['delete', 'priorityclass', HIGH_PRIORITY_CLASS, '--ignore-not-found']).catch(() => undefined);
  }
}
