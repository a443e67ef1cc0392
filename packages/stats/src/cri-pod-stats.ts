// Pod and container stats from the CRI (Go: pkg/kubelet/stats/cri_stats_provider.go): ListPodSandboxStats
// when the runtime implements it (containerd 1.6 does), ListContainerStats grouped by sandbox otherwise.
import {
  buildContainerLogsDirectory,
  errorText,
  forEachLimit,
  formatTime,
  KUBERNETES_CONTAINER_NAME_LABEL,
  KUBERNETES_POD_NAME_LABEL,
  KUBERNETES_POD_NAMESPACE_LABEL,
  KUBERNETES_POD_UID_LABEL,
  defaultLogger,
  type Clock,
  type Logger,
} from '@kubelet-ts/core';
import { isUnimplemented, type RuntimeService, type runtimeapi } from '@kubelet-ts/cri-client';
import type { ContainerStats, CPUStats, FsStats, MemoryStats, NetworkStats, PodStats, VolumeStats } from './api.js';
import type { CpuUsageCache } from './cpu-usage-cache.js';
import { diskUsage, fsInfo, type FsInfo, type StatfsFunction } from './host.js';
import { formatTimeMs } from './time-format.js';
import type { PodVolumeStats } from './volumes.js';

/** What the stats read from the runtime; `version`, when there, lets them avoid a runtime's known-bad ListPodSandboxStats. */
export type StatsRuntimeService = Pick<RuntimeService, 'listPodSandbox' | 'listContainers' | 'listPodSandboxStats' | 'listContainerStats'> &
  Partial<Pick<RuntimeService, 'version'>>;

/**
 * Why a runtime's ListPodSandboxStats must not be called, or undefined when it may. containerd 1.6 before 1.6.22 writes
 * its sandbox store under a read lock in ListPodSandboxStats (containerd#8130, backported in #8819), so the call beside
 * any other sandbox call (the PLEG's ListPodSandbox, a pod worker's PodSandboxStatus) can kill containerd with `fatal
 * error: concurrent map iteration and map write` (seen here on Debian 12's 1.6.20). The Go kubelet never makes the call
 * unless its PodAndContainerStatsFromCRI gate is on, so these runtimes get what it does: ListContainerStats.
 */
export function unsafeSandboxStatsReason(version: Pick<runtimeapi.VersionResponse, 'runtimeName' | 'runtimeVersion'>): string | undefined {
  if (version.runtimeName !== 'containerd') return undefined;
  const match = /^v?1\.6\.(\d+)(?:[^\d]|$)/.exec(version.runtimeVersion);
  if (!match || Number(match[1]) >= 22) return undefined;
  return `containerd ${version.runtimeVersion} can crash when ListPodSandboxStats runs beside other sandbox calls (containerd#8130, fixed in 1.6.22)`;
}

export interface ListPodStatsOptions {
  /** Move the CPU usage cache on (Go: ListPodStatsAndUpdateCPUNanoCoreUsage). */
  updateCpu: boolean;
  /** Only CPU and memory (Go: ListPodCPUAndMemoryStats): no filesystems, volumes, network. */
  cpuAndMemoryOnly: boolean;
  /** The nodefs (kubelet root dir), for ephemeral-storage capacity. */
  rootFs?: FsInfo;
}

export interface CriPodStatsOptions {
  runtimeService: StatsRuntimeService;
  clock: Clock;
  cpuUsageCache: CpuUsageCache;
  podLogsDir: string;
  statfs: StatfsFunction;
  podVolumeStats?: (podUid: string) => Promise<PodVolumeStats | undefined>;
  logger?: Logger;
}

/** Scrape-local memo of filesystem infos by path, so N containers on one filesystem cost one statfs. */
type FsInfoMemo = Map<string, Promise<FsInfo | undefined>>;

/** How many pods have their storage figures (du of the logs, volumes) read at once. */
const POD_READ_CONCURRENCY = 16;

/** What does not change while a container exists (its name, creation time, log directory): kept by container id. */
interface StaticContainerInfo {
  name: string;
  startTime: string;
  logDir: string;
}

export class CriPodStats {
  private readonly runtime: StatsRuntimeService;
  private readonly clock: Clock;
  private readonly cpuCache: CpuUsageCache;
  private readonly podLogsDir: string;
  private readonly statfs: StatfsFunction;
  private readonly podVolumeStats: ((podUid: string) => Promise<PodVolumeStats | undefined>) | undefined;
  private readonly logger: Logger;
  /** False once the runtime answered ListPodSandboxStats with Unimplemented: do not ask again. */
  private sandboxStatsSupported = true;
  /** Whether the runtime's version has been checked against unsafeSandboxStatsReason. */
  private sandboxStatsChecked = false;
  /** By container id; an entry goes when its container is no longer listed. */
  private readonly staticInfo = new Map<string, StaticContainerInfo>();
  /** A sandbox's start time by sandbox id; an entry goes when its sandbox is no longer listed. */
  private readonly sandboxStartTimes = new Map<string, string>();

  constructor(opts: CriPodStatsOptions) {
    this.runtime = opts.runtimeService;
    this.clock = opts.clock;
    this.cpuCache = opts.cpuUsageCache;
    this.podLogsDir = opts.podLogsDir;
    this.statfs = opts.statfs;
    this.podVolumeStats = opts.podVolumeStats;
    this.logger = opts.logger ?? defaultLogger;
  }

  /** Asks the runtime's version once (again after a failed ask) and stops using a ListPodSandboxStats known to crash it. */
  private async checkSandboxStatsSafe(): Promise<void> {
    if (!this.runtime.version) {
      this.sandboxStatsChecked = true;
      return;
    }
    let version: runtimeapi.VersionResponse;
    try {
      version = await this.runtime.version('v1');
    } catch (err) {
      this.logger.v(4).info('Runtime version unknown; asking again at the next scrape', { err: errorText(err) });
      return;
    }
    this.sandboxStatsChecked = true;
    const reason = unsafeSandboxStatsReason(version);
    if (reason) {
      this.sandboxStatsSupported = false;
      this.logger.warn('Not calling ListPodSandboxStats; using ListContainerStats', { reason });
    }
  }

  /** Whether the runtime serves ListPodSandboxStats (true until it says Unimplemented or is known to crash on it). */
  get usesSandboxStats(): boolean {
    return this.sandboxStatsSupported;
  }

  async listPodStats(opts: ListPodStatsOptions): Promise<PodStats[]> {
    const { containers, sandboxes } = await this.podAndContainerMaps();
    const memo: FsInfoMemo = new Map();
    let pods: PodStats[] | undefined;
    if (this.sandboxStatsSupported && !this.sandboxStatsChecked) await this.checkSandboxStatsSafe();
    if (this.sandboxStatsSupported) {
      try {
        const sandboxStats = await this.runtime.listPodSandboxStats({});
        pods = await this.podStatsFromSandboxStats(sandboxStats, containers, sandboxes, opts, memo);
      } catch (err) {
        if (isUnimplemented(err)) {
          this.sandboxStatsSupported = false;
          this.logger.v(2).info('The runtime does not implement ListPodSandboxStats; using ListContainerStats', { err: errorText(err) });
        } else {
          // containerd fails the whole call when one sandbox fails; the container stats still tell most.
          this.logger.warn('ListPodSandboxStats failed; using ListContainerStats for this scrape', { err: errorText(err) });
        }
      }
    }
    if (!pods) {
      let containerStats: runtimeapi.ContainerStats[];
      try {
        containerStats = await this.runtime.listContainerStats({});
      } catch (err) {
        throw new Error(`failed to list all container stats: ${errorText(err)}`, { cause: err });
      }
      pods = await this.podStatsFromContainerStats(containerStats, containers, sandboxes, opts, memo);
    }
    this.cpuCache.cleanup(this.clock.now());
    for (const id of this.staticInfo.keys()) if (!containers.has(id)) this.staticInfo.delete(id);
    for (const id of this.sandboxStartTimes.keys()) if (!sandboxes.has(id)) this.sandboxStartTimes.delete(id);
    return pods;
  }

  /** The number of containers and sandboxes whose static figures are cached (for tests: they go with their container). */
  get cachedInfoSize(): { containers: number; sandboxes: number } {
    return { containers: this.staticInfo.size, sandboxes: this.sandboxStartTimes.size };
  }

  private async podAndContainerMaps(): Promise<{ containers: Map<string, runtimeapi.Container>; sandboxes: Map<string, runtimeapi.PodSandbox> }> {
    let containerList: runtimeapi.Container[];
    let sandboxList: runtimeapi.PodSandbox[];
    try {
      containerList = await this.runtime.listContainers({});
    } catch (err) {
      throw new Error(`failed to list all containers: ${errorText(err)}`, { cause: err });
    }
    try {
      sandboxList = await this.runtime.listPodSandbox({});
    } catch (err) {
      throw new Error(`failed to list all pod sandboxes: ${errorText(err)}`, { cause: err });
    }
    return {
      containers: new Map(removeTerminatedContainers(containerList).map((c) => [c.id, c])),
      sandboxes: new Map(removeTerminatedPods(sandboxList).map((s) => [s.id, s])),
    };
  }

  private async podStatsFromSandboxStats(
    sandboxStats: runtimeapi.PodSandboxStats[],
    containers: Map<string, runtimeapi.Container>,
    sandboxes: Map<string, runtimeapi.PodSandbox>,
    opts: ListPodStatsOptions,
    memo: FsInfoMemo,
  ): Promise<PodStats[]> {
    // Which pods and containers are reported is decided up front; their files are then read a few pods at a time.
    const work: { stats: runtimeapi.PodSandboxStats; sandbox: runtimeapi.PodSandbox; containers: [runtimeapi.ContainerStats, runtimeapi.Container][] }[] = [];
    for (const stats of sandboxStats) {
      const sandbox = stats.attributes ? sandboxes.get(stats.attributes.id) : undefined;
      if (!sandbox) continue; // gone since ListPodSandbox, or an older instance of the pod
      const ready = sandbox.state === 'SANDBOX_READY';
      const linux = stats.linux;
      const reported: [runtimeapi.ContainerStats, runtimeapi.Container][] = [];
      for (const cs of linux?.containers ?? []) {
        const container = cs.attributes ? containers.get(cs.attributes.id) : undefined;
        if (!container) continue;
        if (!ready && !hasCpuOrMemory(cs)) continue;
        reported.push([cs, container]);
      }
      if (!ready && reported.length === 0 && !linux?.cpu && !linux?.memory) continue;
      work.push({ stats, sandbox, containers: reported });
    }
    const result: PodStats[] = new Array(work.length);
    await forEachLimit(
      work.map((w, i) => ({ ...w, i })),
      POD_READ_CONCURRENCY,
      async ({ stats, sandbox, containers: reported, i }) => {
        const linux = stats.linux;
        const containerStats = await Promise.all(reported.map(([cs, container]) => this.containerStats(cs, container, sandbox, opts, memo)));
        const pod = this.buildPodStats(sandbox, containerStats);
        pod.cpu = linux?.cpu ? this.cpuStats(linux.cpu, `pod:${sandbox.id}`, opts.updateCpu) : this.sumContainerCpu(sandbox.id, containerStats, opts.updateCpu);
        pod.memory = linux?.memory ? memoryStats(linux.memory) : sumContainerMemory(containerStats);
        if (!opts.cpuAndMemoryOnly) {
          const network = linux?.network ? networkStats(linux.network) : undefined;
          if (network) pod.network = network;
          await this.addStorageStats(pod, opts);
          const processCount = linux?.process?.processCount?.value;
          if (processCount !== undefined) pod.process_stats = { process_count: processCount };
        }
        result[i] = compact(pod);
      },
    );
    return result;
  }

  private async podStatsFromContainerStats(
    allStats: runtimeapi.ContainerStats[],
    containers: Map<string, runtimeapi.Container>,
    sandboxes: Map<string, runtimeapi.PodSandbox>,
    opts: ListPodStatsOptions,
    memo: FsInfoMemo,
  ): Promise<PodStats[]> {
    const bySandbox = new Map<string, { sandbox: runtimeapi.PodSandbox; containers: [runtimeapi.ContainerStats, runtimeapi.Container][] }>();
    for (const stats of allStats) {
      const container = stats.attributes ? containers.get(stats.attributes.id) : undefined;
      if (!container) continue;
      const sandbox = sandboxes.get(container.podSandboxId);
      if (!sandbox) continue;
      if (sandbox.state !== 'SANDBOX_READY' && !hasCpuOrMemory(stats)) continue;
      let entry = bySandbox.get(sandbox.id);
      if (!entry) {
        entry = { sandbox, containers: [] };
        bySandbox.set(sandbox.id, entry);
      }
      entry.containers.push([stats, container]);
    }
    const work = [...bySandbox.values()];
    const result: PodStats[] = new Array(work.length);
    await forEachLimit(
      work.map((w, i) => ({ ...w, i })),
      POD_READ_CONCURRENCY,
      async ({ sandbox, containers: reported, i }) => {
        const containerStats = await Promise.all(reported.map(([stats, container]) => this.containerStats(stats, container, sandbox, opts, memo)));
        const pod = this.buildPodStats(sandbox, containerStats);
        // Without sandbox stats (and without cAdvisor) the pod's CPU and memory are its containers' sum.
        pod.cpu = this.sumContainerCpu(sandbox.id, containerStats, opts.updateCpu);
        pod.memory = sumContainerMemory(containerStats);
        if (!opts.cpuAndMemoryOnly) await this.addStorageStats(pod, opts);
        result[i] = compact(pod);
      },
    );
    return result;
  }

  /** The figures of a container that do not change while it exists, computed once per container id. */
  private staticContainerInfo(stats: runtimeapi.ContainerStats, container: runtimeapi.Container, sandbox: runtimeapi.PodSandbox): StaticContainerInfo {
    let info = this.staticInfo.get(container.id);
    if (!info) {
      const name = stats.attributes?.metadata?.name || container.metadata?.name || '';
      const meta = sandbox.metadata;
      info = {
        name,
        // The summary's start time of a container is its creation time.
        startTime: formatTime(nsToMs(container.createdAt)),
        logDir: buildContainerLogsDirectory(this.podLogsDir, meta?.namespace ?? '', meta?.name ?? '', meta?.uid ?? '', name),
      };
      this.staticInfo.set(container.id, info);
    }
    return info;
  }

  private buildPodStats(sandbox: runtimeapi.PodSandbox, containers: ContainerStats[]): PodStats {
    let startTime = this.sandboxStartTimes.get(sandbox.id);
    if (startTime === undefined) {
      // The summary's start time of a pod is its sandbox's creation time.
      startTime = formatTime(nsToMs(sandbox.createdAt));
      this.sandboxStartTimes.set(sandbox.id, startTime);
    }
    return {
      podRef: { name: sandbox.metadata?.name ?? '', namespace: sandbox.metadata?.namespace ?? '', uid: sandbox.metadata?.uid ?? '' },
      startTime,
      containers,
      cpu: undefined,
      memory: undefined,
      network: undefined,
      volume: undefined,
      'ephemeral-storage': undefined,
      process_stats: undefined,
    };
  }

  private async containerStats(
    stats: runtimeapi.ContainerStats,
    container: runtimeapi.Container,
    sandbox: runtimeapi.PodSandbox,
    opts: ListPodStatsOptions,
    memo: FsInfoMemo,
  ): Promise<ContainerStats> {
    const info = this.staticContainerInfo(stats, container, sandbox);
    const nowMs = this.clock.now();
    const result: ContainerStats = {
      name: info.name,
      startTime: info.startTime,
      // A container without CPU or memory figures (exited) reports zeros, as Go does.
      cpu: stats.cpu ? this.cpuStats(stats.cpu, container.id, opts.updateCpu) : { time: formatTimeMs(nowMs), usageNanoCores: 0, usageCoreNanoSeconds: 0 },
      memory: stats.memory ? memoryStats(stats.memory) : { time: formatTimeMs(nowMs), workingSetBytes: 0 },
    };
    if (opts.cpuAndMemoryOnly) return result;
    // The writable layer's filesystem and the log directory's du are independent reads.
    const [rootfs, logs] = await Promise.all([stats.writableLayer ? this.rootfsStats(stats.writableLayer, memo) : undefined, this.containerLogStats(info, memo)]);
    if (rootfs) result.rootfs = rootfs;
    if (logs) result.logs = logs;
    return result;
  }

  /** CPU from a CRI sample; usageNanoCores from the runtime, else from the previous sample (cache). */
  private cpuStats(cpu: runtimeapi.CpuUsage, cacheId: string, updateCpu: boolean): CPUStats {
    const usage = cpu.usageCoreNanoSeconds?.value;
    let usageNanoCores = cpu.usageNanoCores?.value;
    if (usageNanoCores === undefined && usage !== undefined) {
      usageNanoCores = updateCpu ? this.cpuCache.update(cacheId, { timestampNs: cpu.timestamp, usageCoreNanoSeconds: usage }) : this.cpuCache.get(cacheId);
    }
    return compact({ time: formatTimeMs(nsToMs(cpu.timestamp)), usageNanoCores, usageCoreNanoSeconds: usage });
  }

  /**
   * The pod's CPU as the sum of its containers'. usageNanoCores is summed when every container has
   * one; otherwise it comes from the pod's own cached samples of the summed counter.
   */
  private sumContainerCpu(sandboxId: string, containers: ContainerStats[], updateCpu: boolean): CPUStats | undefined {
    const withCpu = containers.filter((c) => c.cpu);
    if (withCpu.length === 0) return undefined;
    const usage = withCpu.reduce((sum, c) => sum + (c.cpu?.usageCoreNanoSeconds ?? 0), 0);
    const latestMs = Math.max(...withCpu.map((c) => Date.parse(c.cpu?.time ?? '') || 0));
    let usageNanoCores: number | undefined;
    if (withCpu.every((c) => c.cpu?.usageNanoCores !== undefined)) {
      usageNanoCores = withCpu.reduce((sum, c) => sum + (c.cpu?.usageNanoCores ?? 0), 0);
    } else {
      const id = `pod:${sandboxId}`;
      usageNanoCores = updateCpu ? this.cpuCache.update(id, { timestampNs: this.clock.now() * 1e6, usageCoreNanoSeconds: usage }) : this.cpuCache.get(id);
    }
    return compact({ time: formatTimeMs(latestMs), usageNanoCores, usageCoreNanoSeconds: usage });
  }

  private async rootfsStats(layer: runtimeapi.FilesystemUsage, memo: FsInfoMemo): Promise<FsStats> {
    const mountpoint = layer.fsId?.mountpoint;
    const fs = mountpoint ? await this.fsInfoOnce(mountpoint, memo) : undefined;
    return usageOnFilesystem(nsToMs(layer.timestamp), fs, layer.usedBytes?.value, layer.inodesUsed?.value);
  }

  /**
   * A container's log usage (Go: getContainerLogStats): du of <podLogsDir>/<ns>_<name>_<uid>/<container>,
   * with capacity and free space of the filesystem holding the logs. Undefined when the directory is
   * missing (the old /var/log/pods/<uid> layout, or the pod being removed).
   */
  private async containerLogStats(info: StaticContainerInfo, memo: FsInfoMemo): Promise<FsStats | undefined> {
    let usage;
    try {
      usage = await diskUsage(info.logDir);
    } catch (err) {
      this.logger.v(4).info('Unable to fetch container log stats', { containerName: info.name, path: info.logDir, err: errorText(err) });
      return undefined;
    }
    const fs = await this.fsInfoOnce(this.podLogsDir, memo);
    return usageOnFilesystem(this.clock.now(), fs, usage.bytes, usage.inodes);
  }

  /** Volumes and ephemeral-storage (Go: makePodStorageStats + calcEphemeralStorage). */
  private async addStorageStats(pod: PodStats, opts: ListPodStatsOptions): Promise<void> {
    let ephemeralVolumes: VolumeStats[] = [];
    if (this.podVolumeStats) {
      try {
        const volumes = await this.podVolumeStats(pod.podRef.uid);
        if (volumes) {
          ephemeralVolumes = volumes.ephemeralVolumes;
          const all = [...volumes.ephemeralVolumes, ...volumes.persistentVolumes];
          if (all.length > 0) pod.volume = all;
        }
      } catch (err) {
        this.logger.warn('Unable to get pod volume stats', { pod: `${pod.podRef.namespace}/${pod.podRef.name}`, err: errorText(err) });
      }
    }
    const rootFs = opts.rootFs;
    let timeMs = rootFs?.timeMs ?? 0;
    let usedBytes: number | undefined;
    let inodesUsed: number | undefined;
    const add = (fs: FsStats | undefined, countInodes = true): void => {
      if (!fs) return;
      if (fs.usedBytes !== undefined) usedBytes = (usedBytes ?? 0) + fs.usedBytes;
      if (countInodes && fs.inodesUsed !== undefined) inodesUsed = (inodesUsed ?? 0) + fs.inodesUsed;
      timeMs = Math.max(timeMs, Date.parse(fs.time) || 0);
    };
    for (const container of pod.containers) {
      // Go counts a container's logs only alongside its writable layer.
      if (!container.rootfs) continue;
      add(container.rootfs);
      add(container.logs);
    }
    for (const volume of ephemeralVolumes) add(volume);
    pod['ephemeral-storage'] = usageOnFilesystem(timeMs || this.clock.now(), rootFs, usedBytes, inodesUsed);
  }

  private fsInfoOnce(path: string, memo: FsInfoMemo): Promise<FsInfo | undefined> {
    let pending = memo.get(path);
    if (!pending) {
      pending = fsInfo(path, this.clock.now(), this.statfs).catch((err: unknown) => {
        this.logger.v(2).info('Failed to get the info of the filesystem', { path, err: errorText(err) });
        return undefined;
      });
      memo.set(path, pending);
    }
    return pending;
  }
}

function hasCpuOrMemory(stats: runtimeapi.ContainerStats): boolean {
  return Boolean(stats.cpu || stats.memory);
}

/** CRI timestamps are nanoseconds since the epoch. */
export function nsToMs(ns: number): number {
  return ns / 1e6;
}

export function memoryStats(memory: runtimeapi.MemoryUsage): MemoryStats {
  const available = memory.availableBytes?.value;
  return compact({
    time: formatTimeMs(nsToMs(memory.timestamp)),
    // containerd reports 0 for a container without a limit, where cAdvisor leaves the figure out.
    availableBytes: available ? available : undefined,
    usageBytes: memory.usageBytes?.value,
    workingSetBytes: memory.workingSetBytes?.value,
    rssBytes: memory.rssBytes?.value,
    pageFaults: memory.pageFaults?.value,
    majorPageFaults: memory.majorPageFaults?.value,
  });
}

/** The pod's memory as the sum of its containers' (Go: addPodCPUMemoryStats without cAdvisor). */
function sumContainerMemory(containers: ContainerStats[]): MemoryStats | undefined {
  const withMemory = containers.map((c) => c.memory).filter((m): m is MemoryStats => m !== undefined);
  if (withMemory.length === 0) return undefined;
  const sum = (key: Exclude<keyof MemoryStats, 'time'>): number | undefined =>
    withMemory.some((m) => m[key] !== undefined) ? withMemory.reduce((total, m) => total + (m[key] ?? 0), 0) : undefined;
  const latestMs = Math.max(...withMemory.map((m) => Date.parse(m.time) || 0));
  return compact({
    time: formatTimeMs(latestMs),
    availableBytes: sum('availableBytes'),
    usageBytes: sum('usageBytes'),
    workingSetBytes: sum('workingSetBytes'),
    rssBytes: sum('rssBytes'),
    pageFaults: sum('pageFaults'),
    majorPageFaults: sum('majorPageFaults'),
  });
}

export function networkStats(network: runtimeapi.NetworkUsage): NetworkStats | undefined {
  const iface = (i: runtimeapi.NetworkInterfaceUsage) =>
    compact({ name: i.name, rxBytes: i.rxBytes?.value, rxErrors: i.rxErrors?.value, txBytes: i.txBytes?.value, txErrors: i.txErrors?.value });
  if (!network.defaultInterface && network.interfaces.length === 0) return undefined;
  const defaultInterface = network.defaultInterface ? iface(network.defaultInterface) : { name: '' };
  return compact({
    time: formatTimeMs(nsToMs(network.timestamp)),
    ...defaultInterface,
    interfaces: network.interfaces.length > 0 ? network.interfaces.map(iface) : undefined,
  });
}

/** What something uses on a filesystem, with that filesystem's capacity and free space (rootfs, logs, imagefs, ephemeral storage). */
export function usageOnFilesystem(timeMs: number, fs: FsInfo | undefined, usedBytes: number | undefined, inodesUsed: number | undefined): FsStats {
  return fsStats({
    time: formatTimeMs(timeMs),
    availableBytes: fs?.availableBytes,
    capacityBytes: fs?.capacityBytes,
    usedBytes,
    inodesFree: fs?.inodesFree,
    inodes: fs?.inodes,
    inodesUsed,
  });
}

/** FsStats with Go's field order. */
export function fsStats(fs: FsStats): FsStats {
  return compact({
    time: fs.time,
    availableBytes: fs.availableBytes,
    capacityBytes: fs.capacityBytes,
    usedBytes: fs.usedBytes,
    inodesFree: fs.inodesFree,
    inodes: fs.inodes,
    inodesUsed: fs.inodesUsed,
  });
}

/** Drops keys whose value is undefined (Go's omitempty on nil pointers), keeping the key order. */
export function compact<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) if (value[key] === undefined) delete value[key];
  return value;
}

/**
 * Sandboxes worth reporting (Go: removeTerminatedPods): of several sandboxes of one pod name and
 * namespace (the pod recreated, or its sandbox), the ready ones, or the newest when none is ready.
 */
export function removeTerminatedPods(sandboxes: runtimeapi.PodSandbox[]): runtimeapi.PodSandbox[] {
  const byPod = new Map<string, runtimeapi.PodSandbox[]>();
  for (const sandbox of [...sandboxes].sort((a, b) => a.createdAt - b.createdAt)) {
    const key = `${sandbox.metadata?.namespace ?? ''}/${sandbox.metadata?.name ?? ''}`;
    byPod.set(key, [...(byPod.get(key) ?? []), sandbox]);
  }
  const result: runtimeapi.PodSandbox[] = [];
  for (const group of byPod.values()) {
    const ready = group.filter((s) => s.state === 'SANDBOX_READY');
    result.push(...(group.length === 1 ? group : ready.length > 0 ? ready : [group[group.length - 1]]));
  }
  return result;
}

/**
 * Containers worth reporting (Go 1.20: removeTerminatedContainers): of several containers of one name
 * in one pod (restarts), the running ones, or the newest when none runs.
 */
export function removeTerminatedContainers(containers: runtimeapi.Container[]): runtimeapi.Container[] {
  const byName = new Map<string, runtimeapi.Container[]>();
  for (const container of [...containers].sort((a, b) => a.createdAt - b.createdAt)) {
    const key = containerRefKey(container);
    byName.set(key, [...(byName.get(key) ?? []), container]);
  }
  const result: runtimeapi.Container[] = [];
  for (const group of byName.values()) {
    const running = group.filter((c) => c.state === 'CONTAINER_RUNNING');
    result.push(...(group.length === 1 ? group : running.length > 0 ? running : [group[group.length - 1]]));
  }
  return result;
}

/** The pod (by the kubelet's labels, else the sandbox) and name a container belongs to. */
function containerRefKey(container: runtimeapi.Container): string {
  const labels = container.labels ?? {};
  const name = labels[KUBERNETES_CONTAINER_NAME_LABEL] ?? container.metadata?.name ?? '';
  if (labels[KUBERNETES_POD_UID_LABEL] !== undefined || labels[KUBERNETES_POD_NAME_LABEL] !== undefined) {
    return JSON.stringify([labels[KUBERNETES_POD_NAMESPACE_LABEL] ?? '', labels[KUBERNETES_POD_NAME_LABEL] ?? '', labels[KUBERNETES_POD_UID_LABEL] ?? '', name]);
  }
  return JSON.stringify(['sandbox', container.podSandboxId, name]);
}
