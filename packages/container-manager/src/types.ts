// The shapes of Go's pkg/kubelet/cm/types.go: cgroup names, resource configs and the cgroup manager.

/** Go: the --cgroup-driver values. */
export type CgroupDriver = 'cgroupfs' | 'systemd';

/** Legacy per-controller hierarchies (v1) or the unified hierarchy (v2). */
export type CgroupVersion = 'v1' | 'v2';

/** Go's CgroupName: path components, e.g. ['kubepods', 'burstable', 'pod<uid>']; [] is the root. */
export type CgroupName = readonly string[];

/**
 * Go's ResourceConfig: what a cgroup is limited to. An absent field is left as it is; `cpuQuota` -1
 * and `memoryLimitBytes` -1 mean unlimited, `pidsLimit` <= 0 means `max`.
 */
export interface ResourceConfig {
  memoryLimitBytes?: number;
  cpuShares?: number;
  /** CFS quota in µs per period; -1 for none. */
  cpuQuota?: number;
  /** CFS period in µs. */
  cpuPeriod?: number;
  pidsLimit?: number;
}

/**
 * The filesystem seam over /sys/fs/cgroup. The real one is node:fs (`nodeCgroupFs`: synchronous reads, asynchronous writes);
 * `./testing` has FakeCgroupFs. Errors carry Node's `code` (ENOENT, EEXIST, EBUSY, EACCES).
 */
export interface CgroupFs {
  readFile(path: string): Promise<string>;
  writeFile(path: string, data: string): Promise<void>;
  /** One directory (not recursive); rejects with EEXIST when it exists. */
  mkdir(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
  readdir(path: string): Promise<string[]>;
  exists(path: string): Promise<boolean>;
}

/** A cgroup's OOM counters (v2 memory.events; v1 has only oomKill). */
export interface MemoryEvents {
  /** Times the cgroup was reclaimed below memory.low. */
  low?: number;
  /** Times processes were throttled for exceeding memory.high. */
  high?: number;
  /** Times the usage was about to go over memory.max. */
  max?: number;
  /** Times the cgroup's limit was hit and the OOM killer was about to run. */
  oom?: number;
  /** Processes the OOM killer killed. */
  oomKill: number;
  /** Times a whole memory.oom.group was killed (Linux 5.17+). */
  oomGroupKill?: number;
}

/** One line of a PSI file: the share of wall time stalled (percent) over 10, 60 and 300 s, and the total in µs. */
export interface PsiData {
  avg10: number;
  avg60: number;
  avg300: number;
  total: number;
}

/** A PSI file: `some` (at least one task stalled) and `full` (all non-idle tasks stalled; absent on old kernels for cpu). */
export interface PsiStats {
  some: PsiData;
  full?: PsiData;
}

/** A cgroup's cpu.pressure, memory.pressure and io.pressure. */
export interface PressureStats {
  cpu?: PsiStats;
  memory?: PsiStats;
  io?: PsiStats;
}

/** Go: cm.CgroupManager, for the cgroupfs and systemd drivers. */
export interface CgroupManager {
  readonly version: CgroupVersion;
  /**
   * The literal cgroupfs name the runtime gets as cgroupParent: "/kubepods/burstable/pod<uid>" (cgroupfs),
   * "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice" (systemd).
   */
  name(name: CgroupName): string;
  /** Go: CgroupManager.CgroupName: a literal cgroupfs name on the host back to a CgroupName (the inverse of name()). */
  cgroupName(literal: string): CgroupName;
  exists(name: CgroupName): Promise<boolean>;
  /** Creates the cgroup (and its missing ancestors) and applies `resources`. */
  create(name: CgroupName, resources?: ResourceConfig): Promise<void>;
  update(name: CgroupName, resources: ResourceConfig): Promise<void>;
  /** Removes the cgroup and every cgroup below it. */
  destroy(name: CgroupName): Promise<void>;
  /** The processes in the cgroup and its descendants, sorted. */
  pids(name: CgroupName): Promise<number[]>;
  memoryUsageBytes(name: CgroupName): Promise<number>;
  /** The names of the cgroup's child cgroups (in any v1 hierarchy), sorted; [] when it does not exist. */
  listChildren(name: CgroupName): Promise<string[]>;
  /**
   * cgroup v2 with cgroup.kill (Linux 5.14+): kills every process in the cgroup and below it at once and waits until
   * cgroup.events says `populated 0`; true when done. false when the kernel has no cgroup.kill (v1, older kernels):
   * the caller then signals the pids one by one, as Go's killOnePid does.
   */
  killAllProcesses(name: CgroupName): Promise<boolean>;
  /**
   * The cgroup's OOM counters: v2 memory.events (hierarchical: the cgroup and everything below it); v1 the `oom_kill`
   * of memory.oom_control (the cgroup's own kills only). undefined when the cgroup or the counter is absent; an
   * unreadable or malformed file is an error naming it. `child`: the directory of that name right below the cgroup
   * (one of listChildren's names, e.g. a runtime's container cgroup, which has no CgroupName of its own on systemd).
   */
  memoryEvents(name: CgroupName, child?: string): Promise<MemoryEvents | undefined>;
  /**
   * The cgroup's (or its `child`'s) pressure stall information (v2 cpu.pressure, memory.pressure, io.pressure);
   * undefined on v1, without PSI or without the cgroup.
   */
  pressure(name: CgroupName, child?: string): Promise<PressureStats | undefined>;
}

/** Go: cm.QOSContainersInfo: the parents of the pod cgroups per QoS class. */
export interface QOSContainersInfo {
  guaranteed: CgroupName;
  burstable: CgroupName;
  bestEffort: CgroupName;
}
