import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { PodStatus, RuntimePod } from '@kubelet-ts/core';

/** Why a pod is being synced (Go: kubetypes.SyncPodType). */
export type SyncPodType = 'create' | 'update' | 'sync' | 'kill';

/** Where a pod is in the worker's lifecycle (Go: PodWorkerState). */
export type PodWorkerState = 'sync' | 'terminating' | 'terminated';

/** Overrides the API status of a pod being killed, e.g. to record an eviction (Go: PodStatusFunc). */
export type PodStatusFunc = (status: V1PodStatus) => void;

/** Options of a kill (Go: KillPodOptions). */
export interface KillPodOptions {
  /** A grace period shorter than the pod's; a grace period only ever shrinks. */
  gracePeriodOverrideSeconds?: number;
  /** The kubelet evicts the pod: its content may be reclaimed at once. */
  evict?: boolean;
  /** Applied to the status written for the pod while it terminates; the latest kill's function wins. */
  podStatusFn?: PodStatusFunc;
  /**
   * Called once the kill is complete (syncTerminatingPod succeeded), at once if the pod has already
   * terminated or is not terminating (Go closes CompletedCh in the same cases).
   */
  completed?: () => void;
}

/** One change for a pod's worker (Go: UpdatePodOptions). Either pod or runningPod is set. */
export interface UpdatePodOptions {
  updateType: SyncPodType;
  /** The pod's spec; required unless runningPod is given. */
  pod?: V1Pod;
  /** The mirror pod of a static pod; the last one seen is remembered. */
  mirrorPod?: V1Pod;
  /** A pod known only from the runtime (no config): it can only be killed. Ignored when pod is set. */
  runningPod?: RuntimePod;
  /** When the change was made, ms; kept (the oldest one) for latency metrics. */
  startTime?: number;
  killPodOptions?: KillPodOptions;
}

/**
 * What the kubelet implements and the pod workers drive (Go: podSyncer). Each method honours the
 * signal: it is aborted when a pod starts terminating or its grace period shrinks (the worker then
 * runs again with the newer update) and on stop(). A method that gives up because of the signal
 * should reject with the signal's reason (an AbortError).
 */
export interface PodSyncer {
  /**
   * Sets the pod up and (re)starts its containers. Resolves true once the pod reached a terminal
   * phase (it then moves to terminating); rejects to have the sync retried after a backoff.
   */
  syncPod(updateType: SyncPodType, pod: V1Pod, mirrorPod: V1Pod | undefined, podStatus: PodStatus, signal: AbortSignal): Promise<boolean>;
  /**
   * Stops the pod's containers within gracePeriodSeconds (undefined: the pod's own), records final
   * status (through podStatusFn when given). Called again, possibly with a shorter grace period,
   * until it resolves.
   */
  syncTerminatingPod(
    pod: V1Pod,
    podStatus: PodStatus,
    gracePeriodSeconds: number | undefined,
    podStatusFn: PodStatusFunc | undefined,
    signal: AbortSignal,
  ): Promise<void>;
  /** Stops the containers of a pod the kubelet has no config for; resolves only once none runs. */
  syncTerminatingRuntimePod(runningPod: RuntimePod, signal: AbortSignal): Promise<void>;
  /** Releases what must go before the pod counts as finished on the node (volumes, status). */
  syncTerminatedPod(pod: V1Pod, podStatus: PodStatus, signal: AbortSignal): Promise<void>;
}

/** What syncKnownPods reports for a worker (Go: PodWorkerSync). */
export interface PodWorkerSync {
  state: PodWorkerState;
  /** The pod is no longer in the desired set. */
  orphan: boolean;
  /** A pod spec is known (not only a runtime pod). */
  hasConfig: boolean;
  /** The spec known is a static pod's. */
  static: boolean;
}

/** The pod workers as the kubelet uses them (Go: PodWorkers). */
export interface PodWorkers {
  updatePod(options: UpdatePodOptions): void;
  syncKnownPods(desiredPods: V1Pod[]): Map<string, PodWorkerSync>;
  isPodKnownTerminated(uid: string): boolean;
  couldHaveRunningContainers(uid: string): boolean;
  shouldPodBeFinished(uid: string): boolean;
  isPodTerminationRequested(uid: string): boolean;
  shouldPodContainersBeTerminating(uid: string): boolean;
  shouldPodRuntimeBeRemoved(uid: string): boolean;
  shouldPodContentBeRemoved(uid: string): boolean;
  isPodForMirrorPodTerminatingByFullName(podFullName: string): boolean;
}
