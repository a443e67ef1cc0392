// The pure decisions of container GC (Go: pkg/kubelet/kuberuntime/kuberuntime_gc.go): which dead
// containers and which sandboxes go, in which order. ContainerGC executes them against the runtime.
import { KUBERNETES_POD_UID_LABEL } from '@kubelet-ts/core';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import type { ContainerGCPolicy } from './policy.js';

/** Go's podStateProvider: what the pod workers know about a pod UID. PodWorkers implements it. */
export interface PodStateProvider {
  /** The pod is gone (deleted and terminated, or evicted): everything of it may be removed. */
  shouldPodContentBeRemoved(uid: string): boolean;
  /** The pod's containers are all stopped and will not run again (terminated pods). */
  shouldPodRuntimeBeRemoved(uid: string): boolean;
}

/** Go: containerGCInfo. */
export interface ContainerGCInfo {
  id: string;
  /** The container's name in its pod. */
  name: string;
  podUid: string;
  /** CRI createdAt, nanoseconds since the epoch. */
  createdAt: number;
  /** In CONTAINER_UNKNOWN state: the GC tries to stop it before removal. */
  unknown: boolean;
  annotations: Record<string, string>;
}

/** Go: evictUnit, the dead instances of one container of one pod, keyed by (pod UID, container name). */
export interface EvictUnit {
  uid: string;
  name: string;
  containers: ContainerGCInfo[];
}

/** Go: containersByEvictUnit, in first-seen order. */
export type ContainersByEvictUnit = Map<string, EvictUnit>;

const unitKey = (uid: string, name: string): string => `${uid}\u0000${name}`;

/** Newest first (Go: byCreated). */
const byCreatedNewestFirst = (a: { createdAt: number }, b: { createdAt: number }): number => b.createdAt - a.createdAt;

/**
 * Go: evictableContainers. Every container that is not running and was created more than minAge
 * before now, grouped by (pod UID label, container name).
 */
export function evictableContainers(containers: readonly runtimeapi.Container[], minAgeMs: number, nowMs: number): ContainersByEvictUnit {
  const units: ContainersByEvictUnit = new Map();
  // CRI times are nanoseconds; compare there (ms * 1e6 stays exact well past 2100).
  const newestGCTime = (nowMs - minAgeMs) * 1_000_000;
  for (const c of containers) {
    if (c.state === 'CONTAINER_RUNNING') continue;
    const createdAt = Number(c.createdAt ?? 0);
    if (newestGCTime < createdAt) continue;
    const podUid = c.labels?.[KUBERNETES_POD_UID_LABEL] ?? '';
    const name = c.metadata?.name ?? '';
    const info: ContainerGCInfo = { id: c.id, name, podUid, createdAt, unknown: c.state === 'CONTAINER_UNKNOWN', annotations: c.annotations ?? {} };
    const key = unitKey(podUid, name);
    let unit = units.get(key);
    if (!unit) {
      unit = { uid: podUid, name, containers: [] };
      units.set(key, unit);
    }
    unit.containers.push(info);
  }
  return units;
}

function numContainers(units: ContainersByEvictUnit): number {
  let n = 0;
  for (const unit of units.values()) n += unit.containers.length;
  return n;
}

/**
 * Go: removeOldestN. Appends the oldest `toRemove` containers to `out` (oldest first) and returns the
 * ones kept: like Go, the GC assumes removals succeed so it is not too aggressive.
 */
function removeOldestN(containers: ContainerGCInfo[], toRemove: number, out: ContainerGCInfo[]): ContainerGCInfo[] {
  const numToKeep = containers.length - toRemove;
  if (numToKeep > 0) containers.sort(byCreatedNewestFirst);
  for (let i = containers.length - 1; i >= Math.max(0, numToKeep); i--) out.push(containers[i]);
  return containers.slice(0, Math.max(0, numToKeep));
}

/** Go: enforceMaxContainersPerEvictUnit. */
function enforceMaxContainersPerEvictUnit(units: ContainersByEvictUnit, maxContainers: number, out: ContainerGCInfo[]): void {
  for (const unit of units.values()) {
    const toRemove = unit.containers.length - maxContainers;
    if (toRemove > 0) unit.containers = removeOldestN(unit.containers, toRemove, out);
  }
}

export interface ContainerEvictionOptions {
  policy: ContainerGCPolicy;
  /** All pod sources have reported: only then are the containers of deleted pods removed. */
  allSourcesReady: boolean;
  /** Also remove every dead container of terminated (not only deleted) pods. */
  evictNonDeletedPods: boolean;
  podStateProvider: PodStateProvider;
}

/**
 * Go: evictContainers, as a plan. Returns the containers to remove, in removal order:
 * 1. (all sources ready) every dead container of pods whose content should be removed (or whose
 *    runtime should, with evictNonDeletedPods);
 * 2. beyond maxPerPodContainer per evict unit, oldest first;
 * 3. beyond maxContainers on the node: first an equal share per evict unit (maxContainers / units,
 *    at least 1), then the oldest across the node.
 * `units` is consumed.
 */
export function planContainerEviction(units: ContainersByEvictUnit, opts: ContainerEvictionOptions): ContainerGCInfo[] {
  const { policy, podStateProvider } = opts;
  const out: ContainerGCInfo[] = [];
  if (opts.allSourcesReady) {
    for (const [key, unit] of units) {
      if (
        podStateProvider.shouldPodContentBeRemoved(unit.uid) ||
        (opts.evictNonDeletedPods && podStateProvider.shouldPodRuntimeBeRemoved(unit.uid))
      ) {
        removeOldestN(unit.containers, unit.containers.length, out); // remove all
        units.delete(key);
      }
    }
  }

  if (policy.maxPerPodContainer >= 0) enforceMaxContainersPerEvictUnit(units, policy.maxPerPodContainer, out);

  if (policy.maxContainers >= 0 && numContainers(units) > policy.maxContainers) {
    // Leave an equal number of containers per evict unit (min: 1).
    const perUnit = Math.max(1, Math.floor(policy.maxContainers / units.size));
    enforceMaxContainersPerEvictUnit(units, perUnit, out);
    // If we still need to evict, evict oldest first.
    const remaining = numContainers(units);
    if (remaining > policy.maxContainers) {
      const flattened: ContainerGCInfo[] = [];
      for (const unit of units.values()) for (const c of unit.containers) flattened.push(c);
      flattened.sort(byCreatedNewestFirst);
      removeOldestN(flattened, remaining - policy.maxContainers, out);
    }
  }
  return out;
}

/** Go: sandboxGCInfo. */
export interface SandboxGCInfo {
  id: string;
  podUid: string;
  /** CRI createdAt, nanoseconds. */
  createdAt: number;
  /** Ready, or still has containers: never removed. */
  active: boolean;
}

/**
 * Go: evictSandboxes, as a plan. A sandbox is removed when it is not ready, has no containers, and
 * belongs to a pod whose content should be removed (or, with evictNonDeletedPods, whose runtime
 * should), or is not the newest sandbox of its pod. Returns the sandboxes to remove, in order.
 */
export function planSandboxEviction(
  containers: readonly runtimeapi.Container[],
  sandboxes: readonly runtimeapi.PodSandbox[],
  podStateProvider: PodStateProvider,
  evictNonDeletedPods: boolean,
): SandboxGCInfo[] {
  const sandboxIdsWithContainers = new Set<string>();
  for (const c of containers) sandboxIdsWithContainers.add(c.podSandboxId);

  const byPod = new Map<string, SandboxGCInfo[]>();
  for (const s of sandboxes) {
    const podUid = s.metadata?.uid ?? '';
    const info: SandboxGCInfo = {
      id: s.id,
      podUid,
      createdAt: Number(s.createdAt ?? 0),
      active: s.state === 'SANDBOX_READY' || sandboxIdsWithContainers.has(s.id),
    };
    const list = byPod.get(podUid);
    if (list) list.push(info);
    else byPod.set(podUid, [info]);
  }

  const out: SandboxGCInfo[] = [];
  for (const [podUid, list] of byPod) {
    const podGone =
      podStateProvider.shouldPodContentBeRemoved(podUid) || (evictNonDeletedPods && podStateProvider.shouldPodRuntimeBeRemoved(podUid));
    // A removed pod loses every evictable sandbox (even the newest dead one next to an active one);
    // a live pod keeps its newest.
    removeOldestNSandboxes(list, podGone ? list.length : list.length - 1, out);
  }
  return out;
}

/** Go: removeOldestNSandboxes (only inactive ones go). */
function removeOldestNSandboxes(sandboxes: SandboxGCInfo[], toRemove: number, out: SandboxGCInfo[]): void {
  const numToKeep = sandboxes.length - toRemove;
  if (numToKeep > 0) sandboxes.sort(byCreatedNewestFirst);
  for (let i = sandboxes.length - 1; i >= Math.max(0, numToKeep); i--) {
    if (!sandboxes[i].active) out.push(sandboxes[i]);
  }
}

/** Go: parsePodUIDFromLogsDirectory. `<namespace>_<name>_<uid>` -> uid. */
export function parsePodUIDFromLogsDirectory(name: string): string {
  const parts = name.split('_');
  return parts[parts.length - 1];
}
