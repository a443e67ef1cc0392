import { formatDuration } from '@kubelet-ts/core';

/** The KubeletConfiguration fields of graceful node shutdown, in ms. */
export interface ShutdownGracePeriods {
  /** shutdownGracePeriod: the total time the node delays its shutdown for pods; 0 disables the manager. */
  shutdownGracePeriodMs: number;
  /** shutdownGracePeriodCriticalPods: the part of it reserved for critical pods, which stop last. */
  shutdownGracePeriodCriticalPodsMs: number;
}

/**
 * Go: the GracefulNodeShutdown part of ValidateKubeletConfiguration. Returns its messages (empty when valid);
 * with the gate off, Go refuses either period being set.
 */
export function validateShutdownGracePeriods(periods: ShutdownGracePeriods, gracefulNodeShutdownEnabled = true): string[] {
  const { shutdownGracePeriodMs: total, shutdownGracePeriodCriticalPodsMs: critical } = periods;
  const errors: string[] = [];
  if (!gracefulNodeShutdownEnabled) {
    if (total > 0 || critical > 0) {
      errors.push('invalid configuration: specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown');
    }
    return errors;
  }
  if (total < 0 || critical < 0 || critical > total) {
    errors.push(
      `invalid configuration: shutdownGracePeriod ${formatDuration(total)} must be >= 0, shutdownGracePeriodCriticalPods ${formatDuration(critical)} must be >= 0, and shutdownGracePeriodCriticalPods ${formatDuration(critical)} must be <= shutdownGracePeriod ${formatDuration(total)}`,
    );
  }
  if (total > 0 && total < 1000) {
    errors.push(`invalid configuration: shutdownGracePeriod ${formatDuration(total)} must be either zero or otherwise >= 1 sec`);
  }
  if (critical > 0 && critical < 1000) {
    errors.push(`invalid configuration: shutdownGracePeriodCriticalPods ${formatDuration(critical)} must be either zero or otherwise >= 1 sec`);
  }
  return errors;
}
