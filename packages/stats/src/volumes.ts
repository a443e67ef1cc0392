// Pod volume stats from the volume directories the volume manager mounts under
// <rootDir>/pods/<uid>/volumes/<plugin>/<volume> (Go: server/stats volumeStatCalculator with
// volume.MetricsDu): du for bytes and inodes used, statfs for capacity and free. du is slow on large
// volumes, so results are cached per volume for a period (Go: --volume-stats-agg-period, 1 min).
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { errorText, formatTime, isNotExist, defaultLogger, type Clock, type Logger } from '@kubelet-ts/core';
import type { VolumeStats } from './api.js';
import { defaultStatfs, diskUsage, fsInfo, TMPFS_MAGIC, type StatfsFunction } from './host.js';

/** A pod's volumes split as Go's resource analyzer does: only local ephemeral ones count toward ephemeral-storage. */
export interface PodVolumeStats {
  ephemeralVolumes: VolumeStats[];
  persistentVolumes: VolumeStats[];
}

/** Supplies a pod's volume stats; `undefined` when not known (yet). */
export type PodVolumeStatsFunction = (podUid: string) => Promise<PodVolumeStats | undefined>;

/**
 * Plugins whose volumes live on the node's disk and count as local ephemeral storage (Go:
 * IsLocalEphemeralVolume: gitRepo, emptyDir on the default medium, configMap, downwardAPI). An
 * emptyDir on tmpfs (medium Memory) is memory, not disk, and is left out by its filesystem type.
 */
const LOCAL_EPHEMERAL_PLUGINS = new Set(['kubernetes.io~empty-dir', 'kubernetes.io~git-repo', 'kubernetes.io~configmap', 'kubernetes.io~downward-api']);

export const DEFAULT_VOLUME_STATS_PERIOD_MS = 60_000;

export interface VolumeDirStatsOptions {
  /** The kubelet root dir (--root-dir). */
  rootDir: string;
  clock: Clock;
  /** How long one volume's du result is reused. Default 1 min. */
  cachePeriodMs?: number;
  statfs?: StatfsFunction;
  logger?: Logger;
  /**
   * Plugin directories (escaped, e.g. `kubernetes.io~csi`) whose volumes are not measured here because their
   * plugin reports their usage itself (Go: a plugin's MetricsProvider, e.g. CSI's NodeGetVolumeStats).
   */
  skipPluginDirs?: Iterable<string>;
}

interface CachedVolume {
  atMs: number;
  stats: VolumeStats;
  ephemeral: boolean;
}

export class VolumeDirStats {
  private readonly rootDir: string;
  private readonly clock: Clock;
  private readonly cachePeriodMs: number;
  private readonly statfs: StatfsFunction;
  private readonly logger: Logger;
  private readonly skipPluginDirs: ReadonlySet<string>;
  private readonly cache = new Map<string, CachedVolume>();
  private readonly inFlight = new Map<string, Promise<CachedVolume | undefined>>();
  private lastSweepMs: number;

  constructor(opts: VolumeDirStatsOptions) {
    this.rootDir = opts.rootDir;
    this.clock = opts.clock;
    this.cachePeriodMs = opts.cachePeriodMs ?? DEFAULT_VOLUME_STATS_PERIOD_MS;
    this.statfs = opts.statfs ?? defaultStatfs;
    this.logger = opts.logger ?? defaultLogger;
    this.skipPluginDirs = new Set(opts.skipPluginDirs ?? []);
    this.lastSweepMs = this.clock.now();
  }

  /** How many volumes have a measurement kept (for tests and the soak's leak hunt). */
  get cachedVolumeCount(): number {
    return this.cache.size;
  }

  /** The volumes of one pod; undefined when the pod has no volumes directory. */
  async podVolumeStats(podUid: string): Promise<PodVolumeStats | undefined> {
    this.sweepExpired();
    const volumesDir = join(this.rootDir, 'pods', podUid, 'volumes');
    let plugins: string[];
    try {
      plugins = await readdir(volumesDir);
    } catch (err) {
      if (!isNotExist(err)) this.logger.warn('Unable to list pod volumes', { path: volumesDir, err: errorText(err) });
      return undefined;
    }
    const paths: { plugin: string; name: string; path: string }[] = [];
    for (const plugin of plugins.sort()) {
      if (this.skipPluginDirs.has(plugin)) continue;
      const names = await readdir(join(volumesDir, plugin)).catch(() => [] as string[]);
      for (const name of names.sort()) paths.push({ plugin, name, path: join(volumesDir, plugin, name) });
    }
    const result: PodVolumeStats = { ephemeralVolumes: [], persistentVolumes: [] };
    const volumes = await Promise.all(paths.map((p) => this.volume(p.plugin, p.name, p.path)));
    for (const volume of volumes) {
      if (!volume) continue;
      (volume.ephemeral ? result.ephemeralVolumes : result.persistentVolumes).push(structuredClone(volume.stats));
    }
    return result;
  }

  /** Forgets volumes of pods not in `podUids` (pods gone from the node). */
  retainPods(podUids: Set<string>): void {
    const prefix = join(this.rootDir, 'pods') + '/';
    for (const path of this.cache.keys()) {
      const uid = path.slice(prefix.length).split('/')[0];
      if (!podUids.has(uid)) this.cache.delete(path);
    }
  }

  /**
   * Once a period, forgets the measurements older than the period: volume() would measure them again anyway, and
   * those of pods gone from the node would otherwise stay for good, one per volume of every pod the node ever ran
   * (Go's fsResourceAnalyzer rebuilds its calculator cache from the active pods every period and stops the others).
   */
  private sweepExpired(): void {
    if (this.clock.since(this.lastSweepMs) < this.cachePeriodMs) return;
    this.lastSweepMs = this.clock.now();
    for (const [path, entry] of this.cache) if (this.clock.since(entry.atMs) >= this.cachePeriodMs) this.cache.delete(path);
  }

  private volume(plugin: string, name: string, path: string): Promise<CachedVolume | undefined> {
    const cached = this.cache.get(path);
    if (cached && this.clock.since(cached.atMs) < this.cachePeriodMs) return Promise.resolve(cached);
    let pending = this.inFlight.get(path);
    if (!pending) {
      pending = this.measure(plugin, name, path).finally(() => this.inFlight.delete(path));
      this.inFlight.set(path, pending);
    }
    return pending;
  }

  private async measure(plugin: string, name: string, path: string): Promise<CachedVolume | undefined> {
    try {
      const nowMs = this.clock.now();
      const [fs, usage] = await Promise.all([fsInfo(path, nowMs, this.statfs), diskUsage(path)]);
      const stats: VolumeStats = {
        time: formatTime(nowMs),
        availableBytes: fs.availableBytes,
        capacityBytes: fs.capacityBytes,
        usedBytes: usage.bytes,
        inodesFree: fs.inodesFree,
        inodes: fs.inodes,
        inodesUsed: usage.inodes,
        name,
      };
      const entry: CachedVolume = { atMs: nowMs, stats, ephemeral: LOCAL_EPHEMERAL_PLUGINS.has(plugin) && fs.type !== TMPFS_MAGIC };
      this.cache.set(path, entry);
      return entry;
    } catch (err) {
      // Unmounted or removed meanwhile: skip this volume, keep the others.
      this.cache.delete(path);
      this.logger.v(4).info('Unable to measure volume', { path, err: errorText(err) });
      return undefined;
    }
  }
}
