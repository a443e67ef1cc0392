import { formatDuration } from '@kubelet-ts/core';
// The container garbage collection policy (Go: kubecontainer.GCPolicy) and its validation.

/** Go: kubecontainer.GCPolicy, with the age in milliseconds. */
export interface ContainerGCPolicy {
  /** Minimum age of a dead container before it is collected (--minimum-container-ttl-duration). Default 0. */
  minAgeMs: number;
  /**
   * Dead instances kept per (pod UID, container name) (--maximum-dead-containers-per-container).
   * Default 1; negative means no limit.
   */
  maxPerPodContainer: number;
  /** Dead containers kept on the node (--maximum-dead-containers). Default -1: no limit. */
  maxContainers: number;
}

/** The Go kubelet's defaults. */
export const DEFAULT_CONTAINER_GC_POLICY: Readonly<ContainerGCPolicy> = Object.freeze({
  minAgeMs: 0,
  maxPerPodContainer: 1,
  maxContainers: -1,
});

export function containerGCPolicyWithDefaults(policy: Partial<ContainerGCPolicy> = {}): ContainerGCPolicy {
  return {
    minAgeMs: policy.minAgeMs ?? DEFAULT_CONTAINER_GC_POLICY.minAgeMs,
    maxPerPodContainer: policy.maxPerPodContainer ?? DEFAULT_CONTAINER_GC_POLICY.maxPerPodContainer,
    maxContainers: policy.maxContainers ?? DEFAULT_CONTAINER_GC_POLICY.maxContainers,
  };
}

export class ContainerGCPolicyError extends Error {
  override readonly name = 'ContainerGCPolicyError';
}

/** Go: NewContainerGC's check (a negative minimum age), plus integer counts. */
export function validateContainerGCPolicy(policy: ContainerGCPolicy): void {
  if (!Number.isFinite(policy.minAgeMs) || policy.minAgeMs < 0) {
    throw new ContainerGCPolicyError(`invalid minimum garbage collection age: ${formatDuration(policy.minAgeMs)}`);
  }
  if (!Number.isInteger(policy.maxPerPodContainer)) {
    throw new ContainerGCPolicyError(`invalid maximum dead containers per container: ${policy.maxPerPodContainer}, must be an integer`);
  }
  if (!Number.isInteger(policy.maxContainers)) {
    throw new ContainerGCPolicyError(`invalid maximum dead containers: ${policy.maxContainers}, must be an integer`);
  }
}
