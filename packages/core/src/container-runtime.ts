import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Backoff } from './backoff.js';
import type { PodStatus, RuntimePod } from './runtime-model.js';

// The runtime as the kubelet's components use it (Go: kubecontainer.Runtime). runtime-manager
// implements it over CRI; PLEG, pod workers and the kubelet depend only on this interface.

/** What one step of a pod sync did (Go: kubecontainer.SyncAction). */
export type SyncAction =
  | 'StartContainer'
  | 'KillContainer'
  | 'SetupNetwork'
  | 'TeardownNetwork'
  | 'InitContainer'
  | 'CreatePodSandbox'
  | 'ConfigPodSandbox'
  | 'KillPodSandbox';

/** The reasons the Go kubelet reports for failed sync steps; they become container waiting reasons. */
export const SyncErrorReason = {
  ErrImagePull: 'ErrImagePull',
  ImagePullBackOff: 'ImagePullBackOff',
  ErrImageNeverPull: 'ErrImageNeverPull',
  ErrInvalidImageName: 'InvalidImageName',
  CrashLoopBackOff: 'CrashLoopBackOff',
  CreateContainerConfigError: 'CreateContainerConfigError',
  CreateContainerError: 'CreateContainerError',
  RunContainerError: 'RunContainerError',
  KillContainerError: 'KillContainerError',
  CreatePodSandboxError: 'CreatePodSandboxError',
  ConfigPodSandboxError: 'ConfigPodSandboxError',
  KillPodSandboxError: 'KillPodSandboxError',
  PreStartHookError: 'PreStartHookError',
} as const;
export type SyncErrorReason = (typeof SyncErrorReason)[keyof typeof SyncErrorReason];

/** One step of a sync: its target (container name or sandbox id) and how it ended. */
export interface SyncResult {
  action: SyncAction;
  target: string;
  /** Set when the step failed: one of SyncErrorReason, or another CamelCase reason. */
  error?: string;
  message?: string;
}

/** The outcome of SyncPod (Go: kubecontainer.PodSyncResult). */
export interface PodSyncResult {
  syncResults: SyncResult[];
  /** An error outside any single step (e.g. computing the pod's actions failed). */
  syncError?: Error;
}

/** Collapses a PodSyncResult into one error, or undefined when every step succeeded (Go: PodSyncResult.Error). */
export function podSyncError(result: PodSyncResult): Error | undefined {
  if (result.syncError) return result.syncError;
  const failed = result.syncResults.filter((r) => r.error);
  if (failed.length === 0) return undefined;
  return new Error(
    `failed to "${failed.map((r) => `${r.action}" for "${r.target}" with ${r.error}: "${r.message ?? ''}`).join('; failed to "')}"`,
  );
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface RuntimeStatus {
  conditions: RuntimeCondition[];
}

export interface ContainerRuntime {
  /** The runtime's name, e.g. 'containerd'; container ids are qualified by it. */
  type(): string;
  version(): Promise<{ runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }>;
  status(): Promise<RuntimeStatus>;
  /** Pods with at least one container or sandbox; with `all`, exited ones too. */
  getPods(all: boolean): Promise<RuntimePod[]>;
  getPodStatus(uid: string, name: string, namespace: string): Promise<PodStatus>;
  /**
   * Drives the runtime toward the pod spec: create sandbox, pull images, start/kill containers. When
   * `options.signal` aborts (the pod started terminating), every runtime call in flight is cancelled
   * and the promise rejects with the signal's reason instead of reporting a failed step.
   */
  syncPod(pod: V1Pod, podStatus: PodStatus, pullSecrets: V1Secret[], backoff: Backoff, options?: { signal?: AbortSignal }): Promise<PodSyncResult>;
  /**
   * Kills every container and the sandboxes of a pod. `pod` may be undefined for an orphan the kubelet
   * only knows from the runtime; the grace period then comes from the container labels. When
   * `options.signal` aborts (e.g. a second delete shortened the grace period), the kill stops waiting
   * and rejects with the signal's reason; the caller then kills again with the shorter grace period.
   */
  killPod(pod: V1Pod | undefined, runningPod: RuntimePod, gracePeriodOverrideSeconds?: number, options?: { signal?: AbortSignal }): Promise<void>;
}
