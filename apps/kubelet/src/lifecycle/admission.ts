// Pod admission (Go: pkg/kubelet/lifecycle interfaces.go PodAdmitHandler, kubelet.go canAdmitPod and
// rejectPod). The kubelet runs its handlers in order on each pod it is about to start; the first one
// that refuses decides the reason, and the pod is failed without running.
//
// Go v1.20 registers, in this order: the eviction manager's admit handler, the sysctl allowlist
// (SysctlAllowlistAdmitHandler), the container manager's resource allocation handler (cpu/device/topology
// managers), then the predicate handler (PredicateAdmitHandler).
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { noopEventRecorder, type EventRecorder } from '@kubelet-ts/core';

export interface PodAdmitAttributes {
  /** The pod to admit. */
  pod: V1Pod;
  /**
   * The pods already admitted and still active on the node, not including `pod`. Choosing them is the
   * caller's job, as in Go's HandlePodAdditions: the pod manager's (non-mirror) pods as they were
   * before `pod` was added, minus terminated ones (phase Succeeded/Failed, or deleted with every
   * container stopped). Terminated pods passed here count against capacity and host ports.
   */
  otherPods: V1Pod[];
}

export interface PodAdmitResult {
  admit: boolean;
  /** A CamelCase reason when refused, e.g. `OutOfcpu`, `NodeAffinity`, `SysctlForbidden`. */
  reason?: string;
  /** A human readable message when refused. */
  message?: string;
}

/** Go: lifecycle.PodAdmitHandler. */
export interface PodAdmitHandler {
  admit(attrs: PodAdmitAttributes): PodAdmitResult;
}

/** Go's canAdmitPod: runs the handlers in order; the first refusal wins; admits when all admit. */
export function admitPod(handlers: readonly PodAdmitHandler[], attrs: PodAdmitAttributes): PodAdmitResult {
  for (const handler of handlers) {
    const result = handler.admit(attrs);
    if (!result.admit) return { admit: false, reason: result.reason ?? '', message: result.message ?? '' };
  }
  return { admit: true };
}

/** An admit handler that may answer later (the device manager's allocation calls its plugins). */
export interface AsyncPodAdmitHandler {
  admit(attrs: PodAdmitAttributes): PodAdmitResult | Promise<PodAdmitResult>;
}

/** admitPod for handlers that may be asynchronous: each runs after the one before it answered. */
export async function admitPodAsync(handlers: readonly AsyncPodAdmitHandler[], attrs: PodAdmitAttributes): Promise<PodAdmitResult> {
  for (const handler of handlers) {
    const result = await handler.admit(attrs);
    if (!result.admit) return { admit: false, reason: result.reason ?? '', message: result.message ?? '' };
  }
  return { admit: true };
}

/** The status Go's rejectPod sets on a refused pod: Failed, with the reason and `Pod <message>`. */
export function rejectedPodStatus(reason: string, message: string): V1PodStatus {
  return { phase: 'Failed', reason, message: `Pod ${message}` };
}

export interface RejectPodDeps {
  recorder?: EventRecorder;
  /** The status manager's setPodStatus. */
  setPodStatus: (pod: V1Pod, status: V1PodStatus) => void;
}

/** Go's rejectPod: a Warning event with the reason and message, and the Failed status. */
export function rejectPod(pod: V1Pod, reason: string, message: string, deps: RejectPodDeps): void {
  (deps.recorder ?? noopEventRecorder).event(pod, 'Warning', reason, message);
  deps.setPodStatus(pod, rejectedPodStatus(reason, message));
}
