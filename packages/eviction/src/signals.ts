// Signal observations and the threshold bookkeeping of one synchronize pass (Go: makeSignalObservations,
// thresholdsMet, thresholdsFirstObservedAt, thresholdsMetGracePeriod, thresholdsUpdatedStats,
// nodeConditions* and byEvictionPriority in pkg/kubelet/eviction/helpers.go).
import type { EvictionSignal, EvictionThreshold, EvictionThresholdValue } from '@kubelet-ts/core';
import { SYSTEM_CONTAINER_PODS, type PodStats, type Summary } from '@kubelet-ts/stats';

/** The node conditions the eviction manager reports (Go: v1.NodeMemoryPressure, NodeDiskPressure, NodePIDPressure). */
export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** The resource a signal reclaims (Go: signalToResource; `inodes` and `pids` are the eviction manager's own names). */
export type ReclaimResource = 'memory' | 'ephemeral-storage' | 'inodes' | 'pids';

/** Go: signalToNodeCondition. */
export const SIGNAL_TO_NODE_CONDITION: Readonly<Partial<Record<EvictionSignal, PressureCondition>>> = Object.freeze({
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'imagefs.available': 'DiskPressure',
  'nodefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
});

/** Go: signalToResource. */
export const SIGNAL_TO_RESOURCE: Readonly<Partial<Record<EvictionSignal, ReclaimResource>>> = Object.freeze({
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'pid.available': 'pids',
});

/** Node conditions in the order they are reported. */
const CONDITION_ORDER: readonly PressureCondition[] = ['MemoryPressure', 'DiskPressure', 'PIDPressure'];

/**
 * One signal's observation (Go: signalObservation). `availableBytes` is the amount left (bytes for memory
 * and filesystems, free inodes for inode signals, free process ids for pid.available); `capacityBytes` the
 * total percentages are taken of; `time` when the stats were collected (ms, 0 when unknown).
 */
export interface SignalObservation {
  availableBytes: number;
  capacityBytes?: number;
  time: number;
}

export type SignalObservations = Map<EvictionSignal, SignalObservation>;

/** A pod's stats by its uid (Go: statsFunc). */
export type StatsFunc = (pod: { metadata?: { uid?: string } }) => PodStats | undefined;

/** What the observations fall back to when the summary lacks a figure. */
export interface ObservationCapacity {
  /** The machine's memory: memory.available's capacity when the summary has no working set. */
  memoryBytes?: number;
  /** capacity - reserved: allocatableMemory.available = this - the pods cgroup's working set when the summary has no pods availableBytes. */
  allocatableMemoryBytes?: number;
}

const timeOf = (time: string | undefined): number => {
  const ms = time ? Date.parse(time) : NaN;
  return Number.isFinite(ms) ? ms : 0;
};

const known = (v: number | undefined): v is number => typeof v === 'number' && Number.isFinite(v);

/** Go's cachedStatsFunc: pod stats by uid. */
export function cachedStatsFunc(pods: readonly PodStats[]): StatsFunc {
  const byUid = new Map<string, PodStats>();
  for (const stats of pods) byUid.set(stats.podRef.uid, stats);
  return (pod) => byUid.get(pod.metadata?.uid ?? '');
}

/**
 * Go's makeSignalObservations: memory.available from the node's memory (capacity = available + working
 * set), allocatableMemory.available from the `pods` system container, nodefs from node.fs, imagefs from
 * node.runtime.imageFs, pid.available = maxpid - curproc.
 */
export function makeSignalObservations(summary: Summary, fallback: ObservationCapacity = {}): SignalObservations {
  const result: SignalObservations = new Map();
  const node = summary.node;
  const memory = node.memory;
  if (memory && known(memory.availableBytes)) {
    const capacityBytes = known(memory.workingSetBytes) ? memory.availableBytes + memory.workingSetBytes : fallback.memoryBytes;
    if (capacityBytes !== undefined) result.set('memory.available', { availableBytes: memory.availableBytes, capacityBytes, time: timeOf(memory.time) });
  }
  const pods = node.systemContainers?.find((c) => c.name === SYSTEM_CONTAINER_PODS)?.memory;
  if (pods && known(pods.availableBytes) && known(pods.workingSetBytes)) {
    result.set('allocatableMemory.available', {
      availableBytes: pods.availableBytes,
      capacityBytes: pods.availableBytes + pods.workingSetBytes,
      time: timeOf(pods.time),
    });
  } else if (pods && known(pods.workingSetBytes) && known(fallback.allocatableMemoryBytes)) {
    // The pods cgroup has no memory limit (node allocatable not enforced on it): allocatable - working set.
    result.set('allocatableMemory.available', {
      availableBytes: fallback.allocatableMemoryBytes - pods.workingSetBytes,
      capacityBytes: fallback.allocatableMemoryBytes,
      time: timeOf(pods.time),
    });
  }
  const fs = node.fs;
  if (fs) {
    const time = timeOf(fs.time);
    if (known(fs.availableBytes) && known(fs.capacityBytes)) result.set('nodefs.available', { availableBytes: fs.availableBytes, capacityBytes: fs.capacityBytes, time });
    if (known(fs.inodesFree) && known(fs.inodes)) result.set('nodefs.inodesFree', { availableBytes: fs.inodesFree, capacityBytes: fs.inodes, time });
  }
  const imageFs = node.runtime?.imageFs;
  if (imageFs && known(imageFs.availableBytes) && known(imageFs.capacityBytes)) {
    const time = timeOf(imageFs.time);
    result.set('imagefs.available', { availableBytes: imageFs.availableBytes, capacityBytes: imageFs.capacityBytes, time });
    if (known(imageFs.inodesFree) && known(imageFs.inodes)) result.set('imagefs.inodesFree', { availableBytes: imageFs.inodesFree, capacityBytes: imageFs.inodes, time });
  }
  const rlimit = node.rlimit;
  if (rlimit && known(rlimit.maxpid) && known(rlimit.curproc)) {
    result.set('pid.available', { availableBytes: rlimit.maxpid - rlimit.curproc, capacityBytes: rlimit.maxpid, time: timeOf(rlimit.time) });
  }
  return result;
}

/** evictionapi.GetThresholdQuantity over numbers: the quantity's value, or percentage * capacity, truncated. */
export function thresholdValue(value: EvictionThresholdValue, capacity: number | undefined): number {
  if (value.quantity) return value.quantity.value();
  return Math.trunc((capacity ?? 0) * (value.percentage ?? 0));
}

/**
 * Go's thresholdsMet: the thresholds whose signal is below the threshold; with enforceMinReclaim, below
 * threshold + minimum reclaim (a threshold met before stays met until the reclaim is done).
 */
export function thresholdsMet(
  thresholds: readonly EvictionThreshold[],
  observations: SignalObservations,
  enforceMinReclaim: boolean,
  onMissing?: (signal: EvictionSignal) => void,
): EvictionThreshold[] {
  const results: EvictionThreshold[] = [];
  for (const threshold of thresholds) {
    const observed = observations.get(threshold.signal);
    if (!observed) {
      onMissing?.(threshold.signal);
      continue;
    }
    let quantity = thresholdValue(threshold, observed.capacityBytes);
    if (enforceMinReclaim && threshold.minReclaim) quantity += thresholdValue(threshold.minReclaim, observed.capacityBytes);
    if (threshold.operator === 'LessThan' && quantity > observed.availableBytes) results.push(threshold);
  }
  return results;
}

/** Go's mergeThresholds: a, then b's thresholds not in a. */
export function mergeThresholds(a: readonly EvictionThreshold[], b: readonly EvictionThreshold[]): EvictionThreshold[] {
  const out = [...a];
  for (const threshold of b) if (!out.includes(threshold)) out.push(threshold);
  return out;
}

/** Go's thresholdsFirstObservedAt: when each met threshold was first seen met (now for new ones). */
export function thresholdsFirstObservedAt(
  thresholds: readonly EvictionThreshold[],
  lastObservedAt: ReadonlyMap<EvictionThreshold, number>,
  now: number,
): Map<EvictionThreshold, number> {
  const results = new Map<EvictionThreshold, number>();
  for (const threshold of thresholds) results.set(threshold, lastObservedAt.get(threshold) ?? now);
  return results;
}

/** Go's thresholdsMetGracePeriod: the thresholds met for at least their grace period. */
export function thresholdsMetGracePeriod(observedAt: ReadonlyMap<EvictionThreshold, number>, now: number): EvictionThreshold[] {
  const results: EvictionThreshold[] = [];
  for (const [threshold, at] of observedAt) if (now - at >= (threshold.gracePeriodMs ?? 0)) results.push(threshold);
  return results;
}

/** Go's thresholdsUpdatedStats: only thresholds whose signal has stats newer than the last pass's. */
export function thresholdsUpdatedStats(
  thresholds: readonly EvictionThreshold[],
  observations: SignalObservations,
  lastObservations: SignalObservations,
): EvictionThreshold[] {
  return thresholds.filter((threshold) => {
    const observed = observations.get(threshold.signal);
    if (!observed) return false;
    const last = lastObservations.get(threshold.signal);
    return !last || observed.time === 0 || observed.time > last.time;
  });
}

/** Go's nodeConditions: the conditions the thresholds map to, each once. */
export function nodeConditions(thresholds: readonly EvictionThreshold[]): PressureCondition[] {
  const results: PressureCondition[] = [];
  for (const threshold of thresholds) {
    const condition = SIGNAL_TO_NODE_CONDITION[threshold.signal];
    if (condition && !results.includes(condition)) results.push(condition);
  }
  return results;
}

/** Go's nodeConditionsLastObservedAt: now for the conditions seen now, the earlier time for the others. */
export function nodeConditionsLastObservedAt(
  conditions: readonly PressureCondition[],
  lastObservedAt: ReadonlyMap<PressureCondition, number>,
  now: number,
): Map<PressureCondition, number> {
  const results = new Map<PressureCondition, number>();
  for (const condition of conditions) results.set(condition, now);
  for (const [condition, at] of lastObservedAt) if (!results.has(condition)) results.set(condition, at);
  return results;
}

/** Go's nodeConditionsObservedSince: the conditions seen within the pressure transition period (in a fixed order). */
export function nodeConditionsObservedSince(observedAt: ReadonlyMap<PressureCondition, number>, periodMs: number, now: number): PressureCondition[] {
  return CONDITION_ORDER.filter((condition) => {
    const at = observedAt.get(condition);
    return at !== undefined && now - at < periodMs;
  });
}

/** Go's byEvictionPriority, as a stable order: memory signals first, signals without a resource to reclaim last. */
export function sortByEvictionPriority(thresholds: readonly EvictionThreshold[]): EvictionThreshold[] {
  const rank = (t: EvictionThreshold): number =>
    t.signal === 'memory.available' || t.signal === 'allocatableMemory.available' ? 0 : SIGNAL_TO_RESOURCE[t.signal] ? 1 : 2;
  return [...thresholds].sort((a, b) => rank(a) - rank(b));
}

/** Go's getReclaimableThreshold: the first threshold with a resource to reclaim. */
export function getReclaimableThreshold(thresholds: readonly EvictionThreshold[]): { threshold: EvictionThreshold; resource: ReclaimResource } | undefined {
  for (const threshold of thresholds) {
    const resource = SIGNAL_TO_RESOURCE[threshold.signal];
    if (resource) return { threshold, resource };
  }
  return undefined;
}
