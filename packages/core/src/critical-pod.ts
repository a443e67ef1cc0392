// Go: kubelettypes.IsCriticalPod (pkg/kubelet/types/pod_update.go): pods the kubelet never evicts or
// preempts, and admits under node pressure.
import type { V1Pod } from '@kubernetes/client-node';
import { isMirrorPod, isStaticPod } from './pod-update.js';

/** Go: scheduling.SystemCriticalPriority (2 * HighestUserDefinablePriority). */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** Go: IsCriticalPodBasedOnPriority. */
export function isCriticalPodBasedOnPriority(priority: number): boolean {
  return priority >= SYSTEM_CRITICAL_PRIORITY;
}

/** Go: IsCriticalPod: a static pod, a mirror pod, or a priority of at least SYSTEM_CRITICAL_PRIORITY. */
export function isCriticalPod(pod: V1Pod): boolean {
  if (isStaticPod(pod) || isMirrorPod(pod)) return true;
  const priority = pod.spec?.priority;
  return priority !== undefined && priority !== null && isCriticalPodBasedOnPriority(priority);
}
