// Go: cm.ResourceConfigForPod (helper_linux.go) and resource.PodRequestsAndLimits (pkg/api/v1/resource), v1.20.
import type { V1Pod } from '@kubernetes/client-node';
import { CPU_MIN_SHARES, CPU_QUOTA_PERIOD_US, effectiveRequests, getPodQOS, milliCpuToQuota, milliCpuToShares, Quantity } from '@kubelet-ts/core';
import type { ResourceConfig } from './types.js';

type ResourceList = Map<string, Quantity>;

function toList(raw: Record<string, string> | undefined): ResourceList {
  return new Map(Object.entries(raw ?? {}).map(([name, value]) => [name, Quantity.fromJSON(value)]));
}

function addResourceList(list: ResourceList, add: ResourceList): void {
  for (const [name, quantity] of add) {
    const previous = list.get(name);
    list.set(name, previous ? previous.add(quantity) : quantity);
  }
}

function maxResourceList(list: ResourceList, other: ResourceList): void {
  for (const [name, quantity] of other) {
    const previous = list.get(name);
    if (!previous || quantity.cmp(previous) > 0) list.set(name, quantity);
  }
}

/**
 * Go: PodRequestsAndLimits: the containers' sums, raised to any init container's own value (init containers
 * run one at a time), plus the pod overhead (added to the requests, and to the limits that are set).
 */
export function podRequestsAndLimits(pod: V1Pod): { requests: Map<string, Quantity>; limits: Map<string, Quantity> } {
  const requests: ResourceList = new Map();
  const limits: ResourceList = new Map();
  for (const container of pod.spec?.containers ?? []) {
    addResourceList(requests, toList(effectiveRequests(container)));
    addResourceList(limits, toList(container.resources?.limits));
  }
  for (const container of pod.spec?.initContainers ?? []) {
    maxResourceList(requests, toList(effectiveRequests(container)));
    maxResourceList(limits, toList(container.resources?.limits));
  }
  const overhead = toList(pod.spec?.overhead);
  addResourceList(requests, overhead);
  for (const [name, quantity] of overhead) {
    const limit = limits.get(name);
    if (limit) limits.set(name, limit.add(quantity));
  }
  return { requests, limits };
}

export interface ResourceConfigForPodOptions {
  /** --cpu-cfs-quota; default true. false: no CFS quota (-1) for pods that would get one. */
  enforceCpuLimits?: boolean;
  /** --cpu-cfs-quota-period in µs; default 100000. */
  cpuPeriodUs?: number;
}

/**
 * Go: ResourceConfigForPod: the pod cgroup's limits. Guaranteed: shares, quota, period and memory;
 * Burstable: shares, plus quota/period only when every container limits cpu and memory only when every
 * container limits memory; BestEffort: 2 shares.
 */
export function resourceConfigForPod(pod: V1Pod, opts: ResourceConfigForPodOptions = {}): ResourceConfig {
  const enforceCpuLimits = opts.enforceCpuLimits ?? true;
  const cpuPeriod = opts.cpuPeriodUs ?? CPU_QUOTA_PERIOD_US;
  const { requests, limits } = podRequestsAndLimits(pod);
  const cpuRequests = requests.get('cpu')?.milliValue() ?? 0;
  const cpuLimits = limits.get('cpu')?.milliValue() ?? 0;
  const memoryLimits = limits.get('memory')?.value() ?? 0;

  const cpuShares = milliCpuToShares(cpuRequests);
  let cpuQuota = milliCpuToQuota(cpuLimits, cpuPeriod);
  let cpuLimitsDeclared = true;
  let memoryLimitsDeclared = true;
  for (const container of pod.spec?.containers ?? []) {
    const containerLimits = container.resources?.limits ?? {};
    if (Quantity.fromJSON(containerLimits['cpu']).isZero()) cpuLimitsDeclared = false;
    if (Quantity.fromJSON(containerLimits['memory']).isZero()) memoryLimitsDeclared = false;
  }
  // Go: quota is not capped when cfs quota is disabled.
  if (!enforceCpuLimits) cpuQuota = -1;

  switch (getPodQOS(pod)) {
    case 'Guaranteed':
      return { cpuShares, cpuQuota, cpuPeriod, memoryLimitBytes: memoryLimits };
    case 'Burstable': {
      const result: ResourceConfig = { cpuShares };
      if (cpuLimitsDeclared) {
        result.cpuQuota = cpuQuota;
        result.cpuPeriod = cpuPeriod;
      }
      if (memoryLimitsDeclared) result.memoryLimitBytes = memoryLimits;
      return result;
    }
    default:
      return { cpuShares: CPU_MIN_SHARES };
  }
}
