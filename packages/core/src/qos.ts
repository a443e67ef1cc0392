// A pod's QoS class (Go: pkg/apis/core/v1/helper/qos.GetPodQOS) and the CPU conversions every user of
// cgroups shares (Go: cm.MilliCPUToShares / cm.MilliCPUToQuota, and kuberuntime's copies of them).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { Quantity } from './quantity.js';

/** Go: v1.PodQOSClass. */
export type PodQOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** Go: cm.MinShares, the kernel's minimum cpu.shares. */
export const CPU_MIN_SHARES = 2;
/** Go: cm.MaxShares. */
export const CPU_MAX_SHARES = 262144;
/** Go: cm.SharesPerCPU. */
export const CPU_SHARES_PER_CPU = 1024;
/** Go: cm.QuotaPeriod, the default CFS period in microseconds (100 ms). */
export const CPU_QUOTA_PERIOD_US = 100_000;
/** Go: cm.MinQuotaPeriod: a CFS quota is at least 1 ms. */
export const CPU_MIN_QUOTA_PERIOD_US = 1000;

const MILLI_CPU_TO_CPU = 1000;
// Go: supportedQoSComputeResources.
const QOS_COMPUTE_RESOURCES = ['cpu', 'memory'];

/** Go: MilliCPUToShares: cpu.shares for a CPU request in millicores (2 for none, at most 262144). */
export function milliCpuToShares(milliCpu: number): number {
  if (milliCpu === 0) return CPU_MIN_SHARES;
  const shares = Math.floor((milliCpu * CPU_SHARES_PER_CPU) / MILLI_CPU_TO_CPU);
  return Math.min(Math.max(shares, CPU_MIN_SHARES), CPU_MAX_SHARES);
}

/** Go: MilliCPUToQuota: the CFS quota (µs per period) for a CPU limit in millicores; 0 for no limit, else at least 1 ms. */
export function milliCpuToQuota(milliCpu: number, periodUs: number): number {
  if (milliCpu === 0) return 0;
  return Math.max(Math.floor((milliCpu * periodUs) / MILLI_CPU_TO_CPU), CPU_MIN_QUOTA_PERIOD_US);
}

/**
 * A container's requests as the API server stores them: a resource with a limit and no request
 * requests its limit (SetDefaults_Pod), so a pod that skipped defaulting gets the same answers.
 */
export function effectiveRequests(container: V1Container): Record<string, string> {
  const requests: Record<string, string> = { ...(container.resources?.requests ?? {}) };
  for (const [name, limit] of Object.entries(container.resources?.limits ?? {})) requests[name] ??= limit;
  return requests;
}

function addPositive(sum: Map<string, Quantity>, list: Record<string, string>, found?: Set<string>): void {
  for (const [name, raw] of Object.entries(list)) {
    if (!QOS_COMPUTE_RESOURCES.includes(name)) continue;
    const quantity = Quantity.fromJSON(raw);
    if (quantity.sign() <= 0) continue;
    found?.add(name);
    const previous = sum.get(name);
    sum.set(name, previous ? previous.add(quantity) : quantity);
  }
}

/**
 * Go: v1qos.GetPodQOS. Only cpu and memory count, zero quantities are ignored; init containers count like
 * regular ones. Guaranteed when every container limits both cpu and memory and the summed requests
 * equal the summed limits; BestEffort when nothing is requested or limited; Burstable otherwise.
 */
export function getPodQOS(pod: V1Pod): PodQOSClass {
  const requests = new Map<string, Quantity>();
  const limits = new Map<string, Quantity>();
  let isGuaranteed = true;
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  for (const container of containers) {
    addPositive(requests, effectiveRequests(container));
    const limitsFound = new Set<string>();
    addPositive(limits, container.resources?.limits ?? {}, limitsFound);
    if (!limitsFound.has('memory') || !limitsFound.has('cpu')) isGuaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (isGuaranteed) {
    for (const [name, request] of requests) {
      const limit = limits.get(name);
      if (!limit || limit.cmp(request) !== 0) {
        isGuaranteed = false;
        break;
      }
    }
  }
  return isGuaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}
