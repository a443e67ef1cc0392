// The kubelet's Summary (Go: pkg/kubelet/server/stats/summary.go summaryProviderImpl over the CRI stats
// provider), without cAdvisor: node figures come from cgroup files, /proc and statfs, pod and container
// figures from the CRI.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_POD_LOGS_ROOT_DIRECTORY, errorText, formatTime, defaultLogger, parseMeminfo, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import type { ImageService } from '@kubelet-ts/cri-client';
import {
  SYSTEM_CONTAINER_KUBELET,
  SYSTEM_CONTAINER_MISC,
  SYSTEM_CONTAINER_PODS,
  SYSTEM_CONTAINER_RUNTIME,
  type ContainerStats,
  type CPUStats,
  type FsStats,
  type MemoryStats,
  type NetworkStats,
  type NodeStats,
  type PodStats,
  type RlimitStats,
  type Summary,
  type SummarySource,
} from './api.js';
import { CgroupFileError, FsCgroupReader, type CgroupReader } from './cgroup.js';
import { CpuUsageCache } from './cpu-usage-cache.js';
import { compact, CriPodStats, nsToMs, usageOnFilesystem, type StatsRuntimeService } from './cri-pod-stats.js';
import { defaultStatfs, fsInfo, readBootTimeMs, readHostNetwork, readTaskLimits, type FsInfo, type HostNetwork, type StatfsFunction } from './host.js';
import { VolumeDirStats, type PodVolumeStatsFunction } from './volumes.js';

/** Cgroups of the system daemons and of the pods, reported as NodeStats.systemContainers. */
export interface SystemCgroups {
  /** The kubelet's cgroup (--kubelet-cgroups). */
  kubelet?: string;
  /** The runtime's cgroup (--runtime-cgroups). */
  runtime?: string;
  /** Other system daemons (--system-cgroups). */
  misc?: string;
  /** The cgroup all pods live under (e.g. /kubepods). */
  pods?: string;
}

export interface SummaryProviderOptions {
  runtimeService: StatsRuntimeService;
  imageService: Pick<ImageService, 'imageFsInfo'>;
  nodeName: string;
  /** The kubelet root dir (--root-dir): its filesystem is the nodefs. */
  rootDir: string;
  /** Where container logs live. Default /var/log/pods. */
  podLogsDir?: string;
  /** Default /sys/fs/cgroup. Ignored when `cgroupReader` is given. */
  cgroupRoot?: string;
  /** Default /proc. */
  procRoot?: string;
  /** Reads cgroup CPU and memory; default FsCgroupReader over cgroupRoot. */
  cgroupReader?: CgroupReader;
  systemCgroups?: SystemCgroups;
  /**
   * The node's memory capacity, against which the node's available memory is computed; default MemTotal of
   * <procRoot>/meminfo. A simulated node (kubelet fleet) says its own.
   */
  nodeMemoryCapacityBytes?: () => number;
  /** The node's network interfaces; default /proc/net/dev (and /proc/net/route for the default one). */
  nodeNetwork?: () => Promise<HostNetwork>;
  /** A pod's volume stats; default du of the directories under <rootDir>/pods/<uid>/volumes. */
  podVolumeStats?: PodVolumeStatsFunction;
  /** How long a volume's du result is reused by the default podVolumeStats. Default 1 min. */
  volumeStatsPeriodMs?: number;
  statfs?: StatfsFunction;
  clock?: Clock;
  logger?: Logger;
}

/**
 * Cgroup CPU samples closer together than this keep the previous sample, so back-to-back scrapes still
 * see a rate over a meaningful window (cAdvisor samples every 10-15 s on its own).
 */
const CGROUP_CPU_MIN_INTERVAL_NS = 1e9;

const ROOT_CGROUP = '/';

export class SummaryProvider implements SummarySource {
  private readonly imageService: Pick<ImageService, 'imageFsInfo'>;
  private readonly nodeName: string;
  private readonly rootDir: string;
  private readonly procRoot: string;
  private readonly cgroups: CgroupReader;
  private readonly systemCgroups: SystemCgroups;
  private readonly nodeNetwork: () => Promise<HostNetwork>;
  private readonly nodeMemoryCapacityBytes: (() => number) | undefined;
  private readonly statfs: StatfsFunction;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly cpuCache = new CpuUsageCache();
  private readonly pods: CriPodStats;
  private readonly volumes: VolumeDirStats | undefined;
  /** When this provider was created: the kubelet system container's start time, as Go uses. */
  private readonly createdAtMs: number;
  private bootTimeMs: Promise<number> | undefined;

  constructor(opts: SummaryProviderOptions) {
    this.imageService = opts.imageService;
    this.nodeName = opts.nodeName;
    this.rootDir = opts.rootDir;
    this.procRoot = opts.procRoot ?? '/proc';
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.statfs = opts.statfs ?? defaultStatfs;
    this.nodeMemoryCapacityBytes = opts.nodeMemoryCapacityBytes;
    this.cgroups = opts.cgroupReader ?? new FsCgroupReader({ cgroupRoot: opts.cgroupRoot, procRoot: this.procRoot });
    this.systemCgroups = opts.systemCgroups ?? {};
    this.nodeNetwork = opts.nodeNetwork ?? (() => readHostNetwork(this.procRoot));
    this.createdAtMs = this.clock.now();
    if (!opts.podVolumeStats) {
      this.volumes = new VolumeDirStats({
        rootDir: opts.rootDir,
        clock: this.clock,
        cachePeriodMs: opts.volumeStatsPeriodMs,
        statfs: this.statfs,
        logger: this.logger,
      });
    }
    const volumes = this.volumes;
    this.pods = new CriPodStats({
      runtimeService: opts.runtimeService,
      clock: this.clock,
      cpuUsageCache: this.cpuCache,
      podLogsDir: opts.podLogsDir ?? DEFAULT_POD_LOGS_ROOT_DIRECTORY,
      statfs: this.statfs,
      podVolumeStats: opts.podVolumeStats ?? (volumes ? (uid) => volumes.podVolumeStats(uid) : undefined),
      logger: this.logger,
    });
  }

  /**
   * The full summary. A figure that cannot be read (a missing cgroup file, a filesystem gone, the
   * image filesystem unknown) is left out and logged; only a runtime that cannot list its pods and
   * containers fails the call, since a summary without its pods would mislead eviction.
   */
  async get(updateStats: boolean): Promise<Summary> {
    const rootFsPromise = this.rootFsInfo();
    const podsPromise = rootFsPromise.then((rootFs) =>
      this.pods.listPodStats({ updateCpu: updateStats, cpuAndMemoryOnly: false, rootFs }).catch((err: unknown) => {
        throw new Error(`failed to list pod stats: ${errorText(err)}`, { cause: err });
      }),
    );
    const [startTime, cpu, memory, network, imageFs, rlimit, systemContainers, rootFs, pods] = await Promise.all([
      this.nodeStartTime(),
      this.cgroupCpu(ROOT_CGROUP),
      this.nodeMemory(),
      this.networkStats(),
      this.imageFsStats(),
      this.rlimitStats(),
      this.systemContainerStats(),
      rootFsPromise,
      podsPromise,
    ]);
    this.volumes?.retainPods(new Set(pods.map((p) => p.podRef.uid)));
    const node: NodeStats = compact({
      nodeName: this.nodeName,
      systemContainers,
      startTime,
      cpu,
      memory,
      network,
      fs: rootFs ? rootFsStats(rootFs) : undefined,
      runtime: imageFs ? { imageFs } : undefined,
      rlimit,
    });
    return { node, pods };
  }

  /** CPU and memory only, for /metrics/resource (Go: GetCPUAndMemoryStats); never moves the pod CPU cache. */
  async getCPUAndMemoryStats(): Promise<Summary> {
    const [startTime, cpu, memory, systemContainers] = await Promise.all([
      this.nodeStartTime(),
      this.cgroupCpu(ROOT_CGROUP),
      this.nodeMemory(),
      this.systemContainerStats(),
    ]);
    let pods: PodStats[];
    try {
      pods = await this.pods.listPodStats({ updateCpu: false, cpuAndMemoryOnly: true });
    } catch (err) {
      throw new Error(`failed to list pod cpu and memory stats: ${errorText(err)}`, { cause: err });
    }
    return { node: compact({ nodeName: this.nodeName, systemContainers, startTime, cpu, memory }), pods };
  }

  private nodeStartTime(): Promise<string> {
    this.bootTimeMs ??= readBootTimeMs(this.procRoot).catch((err: unknown) => {
      this.logger.warn('Unable to read the boot time; using the kubelet start time', { err: errorText(err) });
      return this.createdAtMs;
    });
    return this.bootTimeMs.then(formatTime);
  }

  /**
   * A cgroup's CPU. The cgroup counter is sampled on every call (as cAdvisor's housekeeping does on
   * its own), so usageNanoCores is the rate since the previous call at least a second before.
   */
  private async cgroupCpu(cgroup: string): Promise<CPUStats | undefined> {
    try {
      const usage = await this.cgroups.readCpuUsageNanos(cgroup);
      const nowMs = this.clock.now();
      const usageNanoCores = this.cpuCache.update(`cgroup:${cgroup}`, { timestampNs: nowMs * 1e6, usageCoreNanoSeconds: usage }, CGROUP_CPU_MIN_INTERVAL_NS);
      return compact({ time: formatTime(nowMs), usageNanoCores, usageCoreNanoSeconds: usage });
    } catch (err) {
      this.logFigureError('cpu', cgroup, err);
      return undefined;
    }
  }

  private async cgroupMemory(cgroup: string, capacityBytes?: number): Promise<MemoryStats | undefined> {
    try {
      const memory = await this.cgroups.readMemory(cgroup);
      const limit = capacityBytes ?? memory.limitBytes;
      const workingSet = memory.workingSetBytes;
      return compact({
        time: formatTime(this.clock.now()),
        availableBytes: limit !== undefined && workingSet !== undefined ? Math.max(0, limit - workingSet) : undefined,
        usageBytes: memory.usageBytes,
        workingSetBytes: workingSet,
        rssBytes: memory.rssBytes,
        pageFaults: memory.pageFaults,
        majorPageFaults: memory.majorPageFaults,
      });
    } catch (err) {
      this.logFigureError('memory', cgroup, err);
      return undefined;
    }
  }

  /** The root cgroup's memory; available = the machine's memory (MemTotal) - working set, as cAdvisor's root limit. */
  private async nodeMemory(): Promise<MemoryStats | undefined> {
    if (this.nodeMemoryCapacityBytes) return this.cgroupMemory(ROOT_CGROUP, this.nodeMemoryCapacityBytes());
    const meminfoFile = join(this.procRoot, 'meminfo');
    let capacity: number | undefined;
    try {
      // procfs: made by the kernel on read, never waits for a disk; read synchronously, as the cgroup files.
      capacity = parseMeminfo(readFileSync(meminfoFile, 'utf8')).get('MemTotal');
    } catch (err) {
      this.logger.warn('Unable to read the memory capacity', { path: meminfoFile, err: errorText(err) });
    }
    return this.cgroupMemory(ROOT_CGROUP, capacity);
  }

  private async systemContainerStats(): Promise<ContainerStats[] | undefined> {
    const entries: [string, string | undefined][] = [
      [SYSTEM_CONTAINER_KUBELET, this.systemCgroups.kubelet],
      [SYSTEM_CONTAINER_RUNTIME, this.systemCgroups.runtime],
      [SYSTEM_CONTAINER_MISC, this.systemCgroups.misc],
      [SYSTEM_CONTAINER_PODS, this.systemCgroups.pods],
    ];
    const result: ContainerStats[] = [];
    for (const [name, cgroup] of entries) {
      if (!cgroup) continue; // not every system container is configured
      const [cpu, memory, createdMs] = await Promise.all([
        this.cgroupCpu(cgroup),
        this.cgroupMemory(cgroup),
        name === SYSTEM_CONTAINER_KUBELET ? Promise.resolve(this.createdAtMs) : this.cgroups.creationTimeMs(cgroup).catch(() => undefined),
      ]);
      if (!cpu && !memory) continue; // Go skips a system container whose stats cannot be read
      result.push(compact({ name, startTime: formatTime(createdMs ?? this.createdAtMs), cpu, memory }));
    }
    return result.length > 0 ? result : undefined;
  }

  private async networkStats(): Promise<NetworkStats | undefined> {
    try {
      const network = await this.nodeNetwork();
      const defaultInterface = network.interfaces.find((i) => i.name === network.defaultInterface);
      return compact({
        time: formatTime(this.clock.now()),
        ...(defaultInterface ?? { name: '' }),
        interfaces: network.interfaces.length > 0 ? network.interfaces : undefined,
      });
    } catch (err) {
      this.logger.warn('Unable to read the node network stats', { err: errorText(err) });
      return undefined;
    }
  }

  private async rootFsInfo(): Promise<FsInfo | undefined> {
    try {
      return await fsInfo(this.rootDir, this.clock.now(), this.statfs);
    } catch (err) {
      this.logger.warn('Unable to get the root filesystem info', { err: errorText(err) });
      return undefined;
    }
  }

  /** Image filesystem usage from CRI ImageFsInfo, capacity and free space from statfs of its mountpoint. */
  private async imageFsStats(): Promise<FsStats | undefined> {
    let usage;
    try {
      usage = (await this.imageService.imageFsInfo()).imageFilesystems[0];
    } catch (err) {
      this.logger.warn('Unable to get imageFs info from the runtime', { err: errorText(err) });
      return undefined;
    }
    if (!usage) {
      this.logger.warn('The runtime reported no image filesystem');
      return undefined;
    }
    const mountpoint = usage.fsId?.mountpoint;
    let fs: FsInfo | undefined;
    if (mountpoint) {
      try {
        fs = await fsInfo(mountpoint, this.clock.now(), this.statfs);
      } catch (err) {
        // The best-effort partial result Go also gives (heapster#1793): usage without capacity.
        this.logger.v(2).info('Failed to get the info of the filesystem with mountpoint', { mountpoint, err: errorText(err) });
      }
    }
    return usageOnFilesystem(nsToMs(usage.timestamp), fs, usage.usedBytes?.value, usage.inodesUsed?.value);
  }

  private async rlimitStats(): Promise<RlimitStats | undefined> {
    const limits = await readTaskLimits(this.procRoot);
    if (limits.maxpid === undefined && limits.curproc === undefined) return undefined;
    return compact({ time: formatTime(this.clock.now()), maxpid: limits.maxpid, curproc: limits.curproc });
  }

  private logFigureError(figure: string, cgroup: string, err: unknown): void {
    // A missing file is expected (a cgroup not created yet, a controller not mounted): quieter.
    if (err instanceof CgroupFileError && err.code === 'ENOENT') {
      this.logger.v(4).info('Cgroup stats unavailable', { figure, cgroup, err: errorText(err) });
    } else {
      this.logger.warn('Unable to read cgroup stats', { figure, cgroup, err: errorText(err) });
    }
  }
}

function rootFsStats(fs: FsInfo): FsStats {
  return usageOnFilesystem(fs.timeMs, fs, fs.usedBytes, fs.inodes - fs.inodesFree);
}
