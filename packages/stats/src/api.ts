// The kubelet Summary API (Go: k8s.io/kubelet/pkg/apis/stats/v1alpha1), as served on /stats/summary.
//
// Field names are Go's json tags, and objects are built in Go's struct field order, so JSON.stringify
// of a Summary reads like the Go kubelet's. Optional fields are Go's `omitempty` pointers: left out
// when unknown, never written as 0. Times are metav1.Time on the wire: RFC 3339, UTC, whole seconds.
// Byte and count figures are uint64 in Go; JS numbers are exact up to 2^53, which no figure here
// reaches in practice (8 PiB, or 104 days of one core's CPU time in nanoseconds for a counter).

/** The full summary: the node and every pod the runtime reports. */
export interface Summary {
  node: NodeStats;
  pods: PodStats[];
}

export interface NodeStats {
  nodeName: string;
  /** Stats of the system daemons' cgroups (kubelet, runtime, misc) and of the pods cgroup. */
  systemContainers?: ContainerStats[];
  /** When the node booted. */
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  /** The filesystem of the kubelet root dir (nodefs). */
  fs?: FsStats;
  runtime?: RuntimeStats;
  rlimit?: RlimitStats;
}

/** Names of NodeStats.systemContainers entries (Go: statsapi.SystemContainer*). */
export const SYSTEM_CONTAINER_KUBELET = 'kubelet';
export const SYSTEM_CONTAINER_RUNTIME = 'runtime';
export const SYSTEM_CONTAINER_MISC = 'misc';
export const SYSTEM_CONTAINER_PODS = 'pods';

export interface RlimitStats {
  time: string;
  /** The most tasks the system allows (min of kernel.pid_max and kernel.threads-max). */
  maxpid?: number;
  /** Tasks running now. */
  curproc?: number;
}

export interface RuntimeStats {
  /** The filesystem holding images (and, for CRI runtimes, container writable layers). */
  imageFs?: FsStats;
}

export interface ProcessStats {
  process_count?: number;
}

export interface PodStats {
  podRef: PodReference;
  /** When the pod (its sandbox) was created. */
  startTime: string;
  containers: ContainerStats[];
  cpu?: CPUStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  volume?: VolumeStats[];
  /** Local ephemeral storage: container writable layers and logs plus local ephemeral volumes. */
  'ephemeral-storage'?: FsStats;
  process_stats?: ProcessStats;
}

export interface ContainerStats {
  name: string;
  /** When the container was created. */
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  /** The container's writable layer. */
  rootfs?: FsStats;
  /** The container's log files. */
  logs?: FsStats;
}

export interface PodReference {
  name: string;
  namespace: string;
  uid: string;
}

export interface InterfaceStats {
  name: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

/** Go inlines InterfaceStats (the default interface) into NetworkStats. */
export interface NetworkStats extends InterfaceStats {
  time: string;
  interfaces?: InterfaceStats[];
}

export interface CPUStats {
  time: string;
  /** Average usage over the last sampling interval, in billionths of a core. */
  usageNanoCores?: number;
  /** Cumulative CPU time, in core-nanoseconds. */
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats {
  time: string;
  /** Memory left before the limit (or, for the node, its capacity): limit - workingSet. */
  availableBytes?: number;
  usageBytes?: number;
  /** Usage minus inactive file cache: what the OOM killer and eviction look at. */
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface PVCReference {
  name: string;
  namespace: string;
}

/** Go inlines FsStats into VolumeStats, before name and pvcRef. */
export interface VolumeStats extends FsStats {
  name?: string;
  pvcRef?: PVCReference;
}

export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

/**
 * What serves summaries: SummaryProvider, or FakeSummaryProvider in tests (Go: stats.SummaryProvider).
 */
export interface SummarySource {
  /**
   * The full summary. `updateStats` also moves the CPU usage cache on (usageNanoCores is computed
   * from the previous sample); the eviction manager passes true, the /stats/summary handler false.
   */
  get(updateStats: boolean): Promise<Summary>;
  /** Only CPU and memory, for /metrics/resource: cheaper, no filesystems walked. */
  getCPUAndMemoryStats(): Promise<Summary>;
}

/** The CPU and memory part of a summary, as getCPUAndMemoryStats() returns it. */
export function cpuAndMemoryOnly(summary: Summary): Summary {
  const cpuMemory = <T extends { cpu?: CPUStats; memory?: MemoryStats }>(s: T) => ({
    ...(s.cpu ? { cpu: structuredClone(s.cpu) } : {}),
    ...(s.memory ? { memory: structuredClone(s.memory) } : {}),
  });
  const node = summary.node;
  return {
    node: {
      nodeName: node.nodeName,
      ...(node.systemContainers
        ? { systemContainers: node.systemContainers.map((c) => ({ name: c.name, startTime: c.startTime, ...cpuMemory(c) })) }
        : {}),
      startTime: node.startTime,
      ...cpuMemory(node),
    },
    pods: summary.pods.map((pod) => ({
      podRef: { ...pod.podRef },
      startTime: pod.startTime,
      containers: pod.containers.map((c) => ({ name: c.name, startTime: c.startTime, ...cpuMemory(c) })),
      ...cpuMemory(pod),
    })),
  };
}
