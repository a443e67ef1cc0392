// Pod usage, requests, ranking for eviction and the eviction message (Go: rankMemoryPressure,
// rankPIDPressure, rankDiskPressureFunc, podDiskUsage, evictionMessage in pkg/kubelet/eviction/helpers.go).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { Quantity, type EvictionSignal } from '@kubelet-ts/core';
import type { FsStats, PodStats } from '@kubelet-ts/stats';
import type { ReclaimResource, StatsFunc } from './signals.js';

/** Which of a pod's filesystem figures count (Go: fsStatsType). */
export type FsStatsType = 'root' | 'logs' | 'localVolumeSource';

/** Sorts the pods in place, first to evict first (Go: rankFunc). */
export type RankFunc = (pods: V1Pod[], stats: StatsFunc) => void;

type Resources = Record<string, string | number | undefined> | undefined;

const quantityOf = (value: string | number | undefined): Quantity | undefined => (value === undefined ? undefined : Quantity.fromJSON(value));

/**
 * Go's GetResourceRequestQuantity: the containers' requests summed, at least each init container's, plus
 * the pod overhead when the total is not zero.
 */
export function podRequest(pod: V1Pod, resource: string): Quantity {
  const format = resource === 'memory' || resource === 'ephemeral-storage' || resource === 'storage' ? 'BinarySI' : 'DecimalSI';
  let total = Quantity.zero(format);
  for (const c of pod.spec?.containers ?? []) {
    const q = quantityOf((c.resources?.requests as Resources)?.[resource]);
    if (q) total = total.add(q);
  }
  for (const c of pod.spec?.initContainers ?? []) {
    const q = quantityOf((c.resources?.requests as Resources)?.[resource]);
    if (q && total.cmp(q) < 0) total = q;
  }
  const overhead = quantityOf((pod.spec?.overhead as Resources)?.[resource]);
  if (overhead && !total.isZero()) total = total.add(overhead);
  return total;
}

/**
 * Go's PodRequestsAndLimits for one resource's limit: the containers' limits summed, at least each init
 * container's, plus the overhead when not zero; undefined when no container sets it.
 */
export function podLimit(pod: V1Pod, resource: string): Quantity | undefined {
  let total: Quantity | undefined;
  for (const c of pod.spec?.containers ?? []) {
    const q = quantityOf((c.resources?.limits as Resources)?.[resource]);
    if (q) total = total ? total.add(q) : q;
  }
  for (const c of pod.spec?.initContainers ?? []) {
    const q = quantityOf((c.resources?.limits as Resources)?.[resource]);
    if (q && (!total || total.cmp(q) < 0)) total = q;
  }
  const overhead = quantityOf((pod.spec?.overhead as Resources)?.[resource]);
  if (total && overhead && !total.isZero()) total = total.add(overhead);
  return total;
}

const used = (fs: FsStats | undefined): number => fs?.usedBytes ?? 0;
const inodesUsed = (fs: FsStats | undefined): number => fs?.inodesUsed ?? 0;

/** Go's localVolumeNames: hostPath, disk-backed emptyDir, configMap and gitRepo volumes. */
function localVolumeNames(pod: V1Pod): string[] {
  return (pod.spec?.volumes ?? [])
    .filter((v) => v.hostPath || (v.emptyDir && v.emptyDir.medium !== 'Memory') || v.configMap || v.gitRepo)
    .map((v) => v.name);
}

/** Go's IsLocalEphemeralVolume: gitRepo, disk-backed emptyDir, configMap and downwardAPI volumes. */
function localEphemeralVolumeNames(pod: V1Pod): string[] {
  return (pod.spec?.volumes ?? []).filter((v) => v.gitRepo || (v.emptyDir && v.emptyDir.medium !== 'Memory') || v.configMap || v.downwardAPI).map((v) => v.name);
}

export interface PodDiskUsage {
  bytes: number;
  inodes: number;
}

function usageOf(podStats: PodStats, volumeNames: string[] | undefined, statsToMeasure: readonly FsStatsType[]): PodDiskUsage {
  let bytes = 0;
  let inodes = 0;
  const root = statsToMeasure.includes('root');
  const logs = statsToMeasure.includes('logs');
  for (const c of podStats.containers) {
    if (root) {
      bytes += used(c.rootfs);
      inodes += inodesUsed(c.rootfs);
    }
    if (logs) {
      bytes += used(c.logs);
      inodes += inodesUsed(c.logs);
    }
  }
  if (volumeNames && statsToMeasure.includes('localVolumeSource')) {
    for (const name of volumeNames) {
      const volume = podStats.volume?.find((v) => v.name === name);
      if (!volume) continue;
      bytes += used(volume);
      inodes += inodesUsed(volume);
    }
  }
  return { bytes, inodes };
}

/** Go's podDiskUsage: container rootfs and/or logs, and the local volumes. */
export function podDiskUsage(podStats: PodStats, pod: V1Pod, statsToMeasure: readonly FsStatsType[]): PodDiskUsage {
  return usageOf(podStats, localVolumeNames(pod), statsToMeasure);
}

/** Go's podLocalEphemeralStorageUsage without the etc-hosts file (the caller adds it). */
export function podLocalEphemeralStorageUsage(podStats: PodStats, pod: V1Pod, statsToMeasure: readonly FsStatsType[]): PodDiskUsage {
  return usageOf(podStats, localEphemeralVolumeNames(pod), statsToMeasure);
}

const podPriority = (pod: V1Pod): number => pod.spec?.priority ?? 0;

/** Go's cmpBool: true before false. */
const cmpBool = (a: boolean, b: boolean): number => (a === b ? 0 : b ? 1 : -1);
const cmpNumber = (a: number, b: number): number => (a === b ? 0 : a < b ? -1 : 1);

/** A pod's sort key, computed once per pass instead of on every comparison as Go does. */
interface RankKey {
  pod: V1Pod;
  found: boolean;
  exceeds: boolean;
  priority: number;
  /** What is compared last, largest first (usage above requests, process count). */
  usage: number;
}

/**
 * Go's orderedBy(exceedRequests, priority, usage): pods without stats first, then pods using more than they
 * request, then lower priority, then larger usage above requests.
 */
function compareExceedPriorityUsage(a: RankKey, b: RankKey): number {
  if (!a.found || !b.found) {
    const c = cmpBool(!a.found, !b.found);
    if (c !== 0) return c;
  } else {
    const c = cmpBool(a.exceeds, b.exceeds);
    if (c !== 0) return c;
  }
  const p = cmpNumber(a.priority, b.priority);
  if (p !== 0) return p;
  if (!a.found || !b.found) return 0;
  return cmpNumber(b.usage, a.usage);
}

function sortByKeys(pods: V1Pod[], keys: RankKey[], compare: (a: RankKey, b: RankKey) => number): void {
  keys.sort(compare);
  for (let i = 0; i < keys.length; i++) pods[i] = keys[i].pod;
}

/** Go's rankMemoryPressure: exceeds memory requests, priority, memory usage above requests. */
export const rankMemoryPressure: RankFunc = (pods, stats) => {
  const keys = pods.map((pod): RankKey => {
    const s = stats(pod);
    const usage = s?.memory?.workingSetBytes ?? 0;
    const request = podRequest(pod, 'memory').value();
    return { pod, found: s !== undefined, exceeds: usage > request, priority: podPriority(pod), usage: usage - request };
  });
  sortByKeys(pods, keys, compareExceedPriorityUsage);
};

/** Go's rankPIDPressure: priority, then process count, largest first. */
export const rankPIDPressure: RankFunc = (pods, stats) => {
  const keys = pods.map((pod): RankKey => {
    const s = stats(pod);
    return { pod, found: s !== undefined, exceeds: false, priority: podPriority(pod), usage: s?.process_stats?.process_count ?? 0 };
  });
  sortByKeys(pods, keys, (a, b) => {
    const p = cmpNumber(a.priority, b.priority);
    if (p !== 0) return p;
    if (!a.found || !b.found) return cmpBool(!a.found, !b.found);
    return cmpNumber(b.usage, a.usage);
  });
};

/**
 * Go's rankDiskPressureFunc: exceeds its request of the resource, priority, usage above the
 * ephemeral-storage request (Go subtracts that request for inodes too).
 */
export function rankDiskPressureFunc(statsToMeasure: readonly FsStatsType[], resource: 'ephemeral-storage' | 'inodes'): RankFunc {
  return (pods, stats) => {
    const keys = pods.map((pod): RankKey => {
      const s = stats(pod);
      const usage = s ? podDiskUsage(s, pod, statsToMeasure) : { bytes: 0, inodes: 0 };
      const amount = resource === 'inodes' ? usage.inodes : usage.bytes;
      return {
        pod,
        found: s !== undefined,
        exceeds: amount > podRequest(pod, resource).value(),
        priority: podPriority(pod),
        usage: amount - podRequest(pod, 'ephemeral-storage').value(),
      };
    });
    sortByKeys(pods, keys, compareExceedPriorityUsage);
  };
}

/** Go's buildSignalToRankFunc: what counts toward disk usage depends on whether images have their own filesystem. */
export function buildSignalToRankFunc(withImageFs: boolean): Map<EvictionSignal, RankFunc> {
  const all: FsStatsType[] = ['root', 'logs', 'localVolumeSource'];
  const nodeFs: FsStatsType[] = withImageFs ? ['logs', 'localVolumeSource'] : all;
  const imageFs: FsStatsType[] = withImageFs ? ['root'] : all;
  return new Map<EvictionSignal, RankFunc>([
    ['memory.available', rankMemoryPressure],
    ['allocatableMemory.available', rankMemoryPressure],
    ['pid.available', rankPIDPressure],
    ['nodefs.available', rankDiskPressureFunc(nodeFs, 'ephemeral-storage')],
    ['nodefs.inodesFree', rankDiskPressureFunc(nodeFs, 'inodes')],
    ['imagefs.available', rankDiskPressureFunc(imageFs, 'ephemeral-storage')],
    ['imagefs.inodesFree', rankDiskPressureFunc(imageFs, 'inodes')],
  ]);
}

/** The Evicted status reason (Go: eviction.Reason). */
export const EVICTION_REASON = 'Evicted';
/** Event annotation keys (Go: OffendingContainersKey, OffendingContainersUsageKey, StarvedResourceKey). */
export const OFFENDING_CONTAINERS_KEY = 'offending_containers';
export const OFFENDING_CONTAINERS_USAGE_KEY = 'offending_containers_usage';
export const STARVED_RESOURCE_KEY = 'starved_resource';

/**
 * Go's evictionMessage: "The node was low on resource: memory. " plus, for each container using more
 * than it requests, "Container app was using 300Mi, which exceeds its request of 100Mi. "; the annotations
 * name those containers, their usage and the starved resource.
 */
export function evictionMessage(resource: ReclaimResource, pod: V1Pod, stats: StatsFunc): { message: string; annotations: Record<string, string> } {
  let message = `The node was low on resource: ${resource}. `;
  const annotations: Record<string, string> = {};
  const podStats = stats(pod);
  if (!podStats) return { message, annotations };
  const containers: string[] = [];
  const usages: string[] = [];
  const specs = new Map<string, V1Container>((pod.spec?.containers ?? []).map((c) => [c.name, c]));
  for (const cs of podStats.containers) {
    const container = specs.get(cs.name);
    if (!container) continue;
    const request = quantityOf((container.resources?.requests as Resources)?.[resource]) ?? Quantity.zero();
    let usage: Quantity | undefined;
    if (resource === 'ephemeral-storage') {
      if (cs.rootfs?.usedBytes !== undefined && cs.logs?.usedBytes !== undefined) usage = Quantity.fromValue(cs.rootfs.usedBytes + cs.logs.usedBytes, 'BinarySI');
    } else if (resource === 'memory') {
      if (cs.memory?.workingSetBytes !== undefined) usage = Quantity.fromValue(cs.memory.workingSetBytes, 'BinarySI');
    }
    if (usage && usage.cmp(request) > 0) {
      message += `Container ${container.name} was using ${usage.toString()}, which exceeds its request of ${request.toString()}. `;
      containers.push(container.name);
      usages.push(usage.toString());
    }
  }
  annotations[OFFENDING_CONTAINERS_KEY] = containers.join(',');
  annotations[OFFENDING_CONTAINERS_USAGE_KEY] = usages.join(',');
  annotations[STARVED_RESOURCE_KEY] = resource;
  return { message, annotations };
}
