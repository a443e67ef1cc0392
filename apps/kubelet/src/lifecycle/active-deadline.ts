// spec.activeDeadlineSeconds (Go v1.20: pkg/kubelet/active_deadline.go activeDeadlineHandler). The
// kubelet asks its sync loop handlers whether a pod needs a sync now (shouldSync, in getPodsToSync)
// and its sync handlers whether to fail it (shouldEvict, when generating the API status: phase Failed
// with the returned reason and message, after which the pod's containers are killed).
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { noopEventRecorder, type Clock, type EventRecorder } from '@kubelet-ts/core';

export const DeadlineExceededReason = 'DeadlineExceeded';
export const DeadlineExceededMessage = 'Pod was active on the node longer than the specified deadline';

/** Go: lifecycle.ShouldEvictResponse. */
export interface ShouldEvictResponse {
  evict: boolean;
  reason?: string;
  message?: string;
}

/** Go: lifecycle.PodSyncLoopHandler. */
export interface PodSyncLoopHandler {
  shouldSync(pod: V1Pod): boolean;
}

/** Go: lifecycle.PodSyncHandler. */
export interface PodSyncHandler {
  shouldEvict(pod: V1Pod): ShouldEvictResponse;
}

export interface ActiveDeadlineHandlerOptions {
  clock: Clock;
  /** The status manager's latest status for a pod UID (Go: PodStatusProvider.GetPodStatus). */
  getPodStatus: (uid: string) => V1PodStatus | undefined;
  /** Receives a Normal DeadlineExceeded event each time shouldEvict says yes. */
  recorder?: EventRecorder;
}

/** startTime as ms since the epoch; undefined for no (or an unreadable) time, Go's IsZero. */
function startTimeMs(t: Date | string | number | undefined): number | undefined {
  if (t === undefined || t === null) return undefined;
  const ms = t instanceof Date ? t.getTime() : typeof t === 'number' ? t : Date.parse(t);
  return Number.isFinite(ms) ? ms : undefined;
}

export class ActiveDeadlineHandler implements PodSyncLoopHandler, PodSyncHandler {
  private readonly clock: Clock;
  private readonly getPodStatus: (uid: string) => V1PodStatus | undefined;
  private readonly recorder: EventRecorder;

  constructor(opts: ActiveDeadlineHandlerOptions) {
    this.clock = opts.clock;
    this.getPodStatus = opts.getPodStatus;
    this.recorder = opts.recorder ?? noopEventRecorder;
  }

  /** True once the pod is past its active deadline, so the sync loop syncs it to fail it. */
  shouldSync(pod: V1Pod): boolean {
    return this.pastActiveDeadline(pod);
  }

  /** Evict (fail) a pod past its active deadline, recording a Normal DeadlineExceeded event. */
  shouldEvict(pod: V1Pod): ShouldEvictResponse {
    if (!this.pastActiveDeadline(pod)) return { evict: false };
    this.recorder.event(pod, 'Normal', DeadlineExceededReason, DeadlineExceededMessage);
    return { evict: true, reason: DeadlineExceededReason, message: DeadlineExceededMessage };
  }

  /**
   * The pod has a deadline and has been active at least that long since its status' startTime (the
   * status manager's copy, else the pod's own status); a pod not started yet is never past it.
   */
  private pastActiveDeadline(pod: V1Pod): boolean {
    const deadlineSeconds = pod.spec?.activeDeadlineSeconds;
    if (deadlineSeconds === undefined || deadlineSeconds === null) return false;
    const status = this.getPodStatus(pod.metadata?.uid ?? '') ?? pod.status;
    const start = startTimeMs(status?.startTime as Date | string | number | undefined);
    if (start === undefined) return false;
    return this.clock.since(start) >= deadlineSeconds * 1000;
  }
}
