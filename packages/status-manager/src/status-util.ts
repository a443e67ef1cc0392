// The status manager's rules on statuses (Go: status_manager.go helpers).
import type { V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import {
  generateContainersReadyConditionForTerminalPhase,
  generatePodReadyConditionForTerminalPhase,
  getPodCondition,
  isPodPhaseTerminal,
  podConditionByKubelet,
  podConditionSharedByKubelet,
  PodConditionType,
} from './generate.js';
import { podStatusToJson } from './json.js';
import { deepEqual, isRestartableInitContainer } from '@kubelet-ts/core';

/** kubecontainer.MaxPodTerminationMessageLogLength: the termination message budget shared by a pod's containers. */
export const MaxPodTerminationMessageLogLength = 1024 * 12;

const clone = <T>(v: T): T => structuredClone(v);

const truncSeconds = (d: Date | undefined): Date | undefined => (d ? new Date(Math.floor(d.getTime() / 1000) * 1000) : d);

/**
 * Go's normalizeStatus, in place: times to whole seconds (what the API server keeps), termination
 * messages cut to the pod's budget, regular container statuses sorted by name and init container
 * statuses in spec order, so statuses compare equal after a round trip through the API server.
 */
export function normalizeStatus(pod: V1Pod, status: V1PodStatus): V1PodStatus {
  const containers = (pod.spec?.containers?.length ?? 0) + (pod.spec?.initContainers?.length ?? 0);
  const bytesPerStatus = containers > 0 ? Math.floor(MaxPodTerminationMessageLogLength / containers) : MaxPodTerminationMessageLogLength;
  if (status.startTime) status.startTime = truncSeconds(toDate(status.startTime));
  for (const c of status.conditions ?? []) {
    if (c.lastProbeTime) c.lastProbeTime = truncSeconds(toDate(c.lastProbeTime));
    if (c.lastTransitionTime) c.lastTransitionTime = truncSeconds(toDate(c.lastTransitionTime));
  }
  const normalizeContainer = (cs: V1ContainerStatus): void => {
    for (const state of [cs.state, cs.lastState]) {
      if (state?.running?.startedAt) state.running.startedAt = truncSeconds(toDate(state.running.startedAt));
      const t = state?.terminated;
      if (t) {
        if (t.startedAt) t.startedAt = truncSeconds(toDate(t.startedAt));
        if (t.finishedAt) t.finishedAt = truncSeconds(toDate(t.finishedAt));
        if (t.message && Buffer.byteLength(t.message) > bytesPerStatus) t.message = Buffer.from(t.message).subarray(0, bytesPerStatus).toString();
      }
    }
  };
  for (const cs of status.containerStatuses ?? []) normalizeContainer(cs);
  for (const cs of status.initContainerStatuses ?? []) normalizeContainer(cs);
  status.containerStatuses?.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (status.initContainerStatuses) {
    const order = new Map((pod.spec?.initContainers ?? []).map((c, i) => [c.name, i]));
    status.initContainerStatuses.sort((a, b) => (order.get(a.name) ?? Infinity) - (order.get(b.name) ?? Infinity));
  }
  return status;
}

/** client-node hands times back as Dates; statuses built by hand may carry strings. */
function toDate(v: Date | string): Date {
  return v instanceof Date ? v : new Date(v);
}

/**
 * Go's isPodStatusByKubeletEqual: equal when the kubelet's (owned and shared) conditions agree in
 * status, reason and message, and everything else is equal (conditions' times do not count).
 */
export function isPodStatusByKubeletEqual(oldStatus: V1PodStatus, status: V1PodStatus): boolean {
  for (const c of status.conditions ?? []) {
    if (podConditionByKubelet(c.type) || podConditionSharedByKubelet(c.type)) {
      const oc = getPodCondition(oldStatus.conditions, c.type);
      if (!oc || oc.status !== c.status || (oc.message ?? '') !== (c.message ?? '') || (oc.reason ?? '') !== (c.reason ?? '')) return false;
    }
  }
  const a = podStatusToJson({ ...oldStatus, conditions: status.conditions });
  const b = podStatusToJson(status);
  return deepEqual(a, b);
}

/**
 * Go's checkContainerStateTransition: unless the restart policy allows it, a terminated container
 * (and a non-sidecar init container) may not go back to a non-terminated state. A status for a new
 * container (a different container ID) is not a transition of the old one and is let through.
 */
export function checkContainerStateTransition(oldStatus: V1PodStatus, newStatus: V1PodStatus, pod: V1Pod): string | undefined {
  const policy = pod.spec?.restartPolicy ?? 'Always';
  if (policy === 'Always') return undefined;
  const check = (olds: V1ContainerStatus[] | undefined, news: V1ContainerStatus[] | undefined, isInit: boolean): string | undefined => {
    for (const old of olds ?? []) {
      if (isInit) {
        const spec = pod.spec?.initContainers?.find((c) => c.name === old.name);
        if (spec && isRestartableInitContainer(spec)) continue;
      }
      const terminated = old.state?.terminated;
      if (!terminated) continue;
      if (terminated.exitCode !== 0 && policy === 'OnFailure') continue;
      for (const next of news ?? []) {
        if (next.name !== old.name || next.state?.terminated) continue;
        const oldId = old.containerID ?? terminated.containerID;
        if (next.containerID && oldId && next.containerID !== oldId) continue;
        return `terminated container ${next.name} attempted illegal transition to non-terminated state`;
      }
    }
    return undefined;
  };
  return check(oldStatus.containerStatuses, newStatus.containerStatuses, false) ?? check(oldStatus.initContainerStatuses, newStatus.initContainerStatuses, true);
}

/**
 * Go's mergePodStatus: the API server's conditions the kubelet does not own are kept, the
 * kubelet's replace theirs; a move to a terminal phase waits while containers could still run;
 * a terminal phase never reports Ready or ContainersReady True.
 */
export function mergePodStatus(oldPodStatus: V1PodStatus, newPodStatus: V1PodStatus, couldHaveRunningContainers: boolean, now: number = Date.now()): V1PodStatus {
  const merged = clone(newPodStatus);
  const conditions: V1PodCondition[] = [];
  for (const c of oldPodStatus.conditions ?? []) if (!podConditionByKubelet(c.type)) conditions.push(clone(c));
  const transitioningToTerminal = !isPodPhaseTerminal(oldPodStatus.phase) && isPodPhaseTerminal(newPodStatus.phase);
  for (const c of newPodStatus.conditions ?? []) {
    if (podConditionByKubelet(c.type)) conditions.push(clone(c));
    else if (podConditionSharedByKubelet(c.type) && transitioningToTerminal && !couldHaveRunningContainers) {
      const i = conditions.findIndex((x) => x.type === c.type);
      if (i >= 0) conditions[i] = clone(c);
      else conditions.push(clone(c));
    }
  }
  merged.conditions = conditions;
  if (transitioningToTerminal && couldHaveRunningContainers) {
    merged.phase = oldPodStatus.phase;
    merged.reason = oldPodStatus.reason;
    merged.message = oldPodStatus.message;
  }
  if (isPodPhaseTerminal(merged.phase)) {
    const ready = getPodCondition(merged.conditions, PodConditionType.Ready);
    const containersReady = getPodCondition(merged.conditions, PodConditionType.ContainersReady);
    if (ready?.status === 'True' || containersReady?.status === 'True') {
      replaceCondition(merged, generateContainersReadyConditionForTerminalPhase(merged.phase!), now);
      replaceCondition(merged, generatePodReadyConditionForTerminalPhase(merged.phase!), now);
    }
  }
  return merged;
}

/** podutil.UpdatePodCondition: replaces (keeping the transition time when the status is the same) or appends. */
function replaceCondition(status: V1PodStatus, condition: V1PodCondition, now: number): void {
  status.conditions ??= [];
  const i = status.conditions.findIndex((c) => c.type === condition.type);
  if (i < 0) {
    condition.lastTransitionTime ??= new Date(Math.floor(now / 1000) * 1000);
    status.conditions.push(condition);
    return;
  }
  const old = status.conditions[i];
  condition.lastTransitionTime = old.status === condition.status ? old.lastTransitionTime : new Date(Math.floor(now / 1000) * 1000);
  status.conditions[i] = condition;
}

/** Go's hasPodInitialized: a regular container ever left waiting, or the last init container completed. */
export function hasPodInitialized(pod: V1Pod, status: V1PodStatus | undefined = pod.status): boolean {
  if ((pod.spec?.initContainers ?? []).length === 0) return true;
  for (const s of status?.containerStatuses ?? []) {
    if (s.lastState?.terminated || !s.state?.waiting) return true;
  }
  const inits = status?.initContainerStatuses ?? [];
  const last = inits[inits.length - 1];
  if (last) {
    if (last.lastState?.terminated?.exitCode === 0) return true;
    if (last.state?.terminated?.exitCode === 0) return true;
  }
  return false;
}

/** Go's initializedContainers: the statuses up to the last one that ever started (at least the first). */
export function initializedContainers(containers: V1ContainerStatus[]): V1ContainerStatus[] {
  for (let i = containers.length - 1; i >= 0; i--) {
    if (!containers[i].state?.waiting || containers[i].lastState?.terminated) return containers.slice(0, i + 1);
  }
  return containers.slice(0, 1);
}

/** The reason and message of the status whose phase another status was forced back to. */
export function keepPhaseReason(status: V1PodStatus, from: V1PodStatus): void {
  if (from.reason) status.reason = from.reason;
  else delete status.reason;
  if (from.message) status.message = from.message;
  else delete status.message;
}
