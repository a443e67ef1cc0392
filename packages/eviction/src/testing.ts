// Test doubles and summary builders for the eviction manager, published as `@kubelet-ts/eviction/testing`.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { formatTime } from '@kubelet-ts/core';
import { SYSTEM_CONTAINER_PODS, type ContainerStats, type FsStats, type NodeStats, type PodStats, type Summary } from '@kubelet-ts/stats';

/** The settable summary source, from `@kubelet-ts/stats/testing`: set `summary` (e.g. to buildSummary(...)) or `error`. */
export { FakeSummaryProvider } from '@kubelet-ts/stats/testing';

/** A filesystem's figures; inodes are optional. */
export interface FsFigures {
  availableBytes: number;
  capacityBytes: number;
  inodesFree?: number;
  inodes?: number;
}

/** The node side of a summary, in the figures the eviction signals are made of. */
export interface NodeFigures {
  /** memory.available = availableBytes; capacity = availableBytes + workingSetBytes. */
  memory?: { availableBytes: number; workingSetBytes: number };
  /** The `pods` system container: allocatableMemory.available. availableBytes undefined: an unlimited pods cgroup. */
  podsMemory?: { availableBytes?: number; workingSetBytes: number };
  nodeFs?: FsFigures;
  imageFs?: FsFigures;
  /** pid.available = maxpid - curproc. */
  rlimit?: { maxpid: number; curproc: number };
}

/** One container's usage. */
export interface ContainerFigures {
  memoryBytes?: number;
  rootfsBytes?: number;
  rootfsInodes?: number;
  logsBytes?: number;
  logsInodes?: number;
}

/** A pod's usage: per container by name (default: all of it on the first container of the spec), volumes by name, processes. */
export interface PodFigures extends ContainerFigures {
  containers?: Record<string, ContainerFigures>;
  volumes?: Record<string, number>;
  processes?: number;
}

const fs = (time: string, f: FsFigures): FsStats => ({
  time,
  availableBytes: f.availableBytes,
  capacityBytes: f.capacityBytes,
  usedBytes: f.capacityBytes - f.availableBytes,
  ...(f.inodesFree !== undefined ? { inodesFree: f.inodesFree } : {}),
  ...(f.inodes !== undefined ? { inodes: f.inodes, inodesUsed: f.inodes - (f.inodesFree ?? 0) } : {}),
});

function containerStats(name: string, time: string, f: ContainerFigures): ContainerStats {
  const stats: ContainerStats = { name, startTime: time };
  if (f.memoryBytes !== undefined) stats.memory = { time, workingSetBytes: f.memoryBytes, usageBytes: f.memoryBytes };
  if (f.rootfsBytes !== undefined || f.rootfsInodes !== undefined) stats.rootfs = { time, usedBytes: f.rootfsBytes ?? 0, inodesUsed: f.rootfsInodes ?? 0 };
  if (f.logsBytes !== undefined || f.logsInodes !== undefined) stats.logs = { time, usedBytes: f.logsBytes ?? 0, inodesUsed: f.logsInodes ?? 0 };
  return stats;
}

/** A pod's stats as the summary provider reports them, from figures. */
export function buildPodStats(pod: V1Pod, figures: PodFigures = {}, timeMs = Date.parse('2026-01-01T00:00:00Z')): PodStats {
  const time = formatTime(timeMs);
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  const perContainer = figures.containers ?? (names.length > 0 ? { [names[0]]: figures } : {});
  const containers = Object.entries(perContainer).map(([name, f]) => containerStats(name, time, f));
  const memory = containers.reduce((sum, c) => sum + (c.memory?.workingSetBytes ?? 0), 0);
  const stats: PodStats = {
    podRef: { name: pod.metadata?.name ?? '', namespace: pod.metadata?.namespace ?? '', uid: pod.metadata?.uid ?? '' },
    startTime: time,
    containers,
    memory: { time, workingSetBytes: memory, usageBytes: memory },
  };
  if (figures.volumes) stats.volume = Object.entries(figures.volumes).map(([name, usedBytes]) => ({ time, usedBytes, inodesUsed: 1, name }));
  if (figures.processes !== undefined) stats.process_stats = { process_count: figures.processes };
  return stats;
}

/** A summary whose figures give the wanted signal observations, all stamped `timeMs` (whole seconds, as on the wire). */
export function buildSummary(node: NodeFigures, pods: Array<[V1Pod, PodFigures?]> = [], timeMs = Date.parse('2026-01-01T00:00:00Z')): Summary {
  const time = formatTime(timeMs);
  const stats: NodeStats = { nodeName: 'fake-node', startTime: time };
  if (node.podsMemory) {
    const m = node.podsMemory;
    stats.systemContainers = [
      { name: SYSTEM_CONTAINER_PODS, startTime: time, memory: { time, workingSetBytes: m.workingSetBytes, ...(m.availableBytes !== undefined ? { availableBytes: m.availableBytes } : {}) } },
    ];
  }
  if (node.memory) stats.memory = { time, availableBytes: node.memory.availableBytes, workingSetBytes: node.memory.workingSetBytes };
  if (node.nodeFs) stats.fs = fs(time, node.nodeFs);
  if (node.imageFs) stats.runtime = { imageFs: fs(time, node.imageFs) };
  if (node.rlimit) stats.rlimit = { time, ...node.rlimit };
  return { node: stats, pods: pods.map(([pod, figures]) => buildPodStats(pod, figures, timeMs)) };
}

/** One killPod call and the status its statusFn produced. */
export interface PodKill {
  pod: V1Pod;
  gracePeriodOverrideSeconds: number;
  status: V1PodStatus;
}

/** A killPod function that records its calls (set `error` to make it reject). */
export class FakePodKiller {
  readonly kills: PodKill[] = [];
  error: Error | undefined;

  readonly killPod = async (pod: V1Pod, gracePeriodOverrideSeconds: number, statusFn: (status: V1PodStatus) => void): Promise<void> => {
    const status: V1PodStatus = { ...(pod.status ?? {}) };
    statusFn(status);
    this.kills.push({ pod, gracePeriodOverrideSeconds, status });
    if (this.error) throw this.error;
  };

  /** The killed pods' names, in order. */
  names(): string[] {
    return this.kills.map((k) => k.pod.metadata?.name ?? '');
  }
}
