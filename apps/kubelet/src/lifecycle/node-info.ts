// What the kubelet's admission knows about its node and the pods on it (Go v1.20:
// pkg/scheduler/framework NodeInfo, Resource and HostPortInfo; noderesources.Fits; the resource-name
// helpers of pkg/apis/core/v1/helper). Feature gates as Go v1.20 defaults them: PodOverhead and
// LocalStorageCapacityIsolation on.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { quantityMilliValue, quantityValue } from '@kubelet-ts/core';
import { qualifiedNameErrors } from '@kubelet-ts/node-status';

/** A v1.ResourceList as the client-node models carry it (strings; numbers from a hand-written manifest). */
export type ResourceListLike = Record<string, string | number> | undefined;

export const RESOURCE_CPU = 'cpu';
export const RESOURCE_MEMORY = 'memory';
export const RESOURCE_EPHEMERAL_STORAGE = 'ephemeral-storage';
export const RESOURCE_PODS = 'pods';

const RESOURCE_DEFAULT_NAMESPACE_PREFIX = 'kubernetes.io/';
const RESOURCE_REQUESTS_PREFIX = 'requests.';
const RESOURCE_HUGE_PAGES_PREFIX = 'hugepages-';
const RESOURCE_ATTACHABLE_VOLUMES_PREFIX = 'attachable-volumes-';

/** v1helper.IsPrefixedNativeResource: the name contains `kubernetes.io/`. */
export function isPrefixedNativeResource(name: string): boolean {
  return name.includes(RESOURCE_DEFAULT_NAMESPACE_PREFIX);
}

/** v1helper.IsNativeResource: unprefixed, or in the *kubernetes.io/ namespace. */
export function isNativeResource(name: string): boolean {
  return !name.includes('/') || isPrefixedNativeResource(name);
}

/**
 * v1helper.IsExtendedResourceName: not native, no `requests.` prefix, and `requests.<name>` is a
 * qualified name. (node-status's isExtendedResourceName is a looser check for node capacity.)
 */
export function isExtendedResourceName(name: string): boolean {
  if (isNativeResource(name) || name.startsWith(RESOURCE_REQUESTS_PREFIX)) return false;
  return qualifiedNameErrors(`${RESOURCE_REQUESTS_PREFIX}${name}`).length === 0;
}

export function isHugePageResourceName(name: string): boolean {
  return name.startsWith(RESOURCE_HUGE_PAGES_PREFIX);
}

export function isAttachableVolumeResourceName(name: string): boolean {
  return name.startsWith(RESOURCE_ATTACHABLE_VOLUMES_PREFIX);
}

/** v1helper.IsScalarResourceName: extended, hugepages, prefixed native or attachable volume. */
export function isScalarResourceName(name: string): boolean {
  return isExtendedResourceName(name) || isHugePageResourceName(name) || isPrefixedNativeResource(name) || isAttachableVolumeResourceName(name);
}

/** framework.Resource: cpu in millicores, the rest in units (Quantity.Value(), rounded up). */
export class Resource {
  milliCPU = 0;
  memory = 0;
  ephemeralStorage = 0;
  allowedPodNumber = 0;
  /** Scalar resources (extended, hugepages, ...) in the order they were first seen. */
  readonly scalarResources = new Map<string, number>();

  static fromList(list: ResourceListLike): Resource {
    const r = new Resource();
    r.add(list);
    return r;
  }

  /** Resource.Add; throws on a malformed quantity. */
  add(list: ResourceListLike): void {
    for (const [name, value] of Object.entries(list ?? {})) {
      switch (name) {
        case RESOURCE_CPU:
          this.milliCPU += quantityMilliValue(value);
          break;
        case RESOURCE_MEMORY:
          this.memory += quantityValue(value);
          break;
        case RESOURCE_PODS:
          this.allowedPodNumber += quantityValue(value);
          break;
        case RESOURCE_EPHEMERAL_STORAGE:
          this.ephemeralStorage += quantityValue(value);
          break;
        default:
          if (isScalarResourceName(name)) this.scalarResources.set(name, (this.scalarResources.get(name) ?? 0) + quantityValue(value));
      }
    }
  }

  /** Resource.SetMaxResource: each resource becomes the larger of itself and the list's. */
  setMaxResource(list: ResourceListLike): void {
    for (const [name, value] of Object.entries(list ?? {})) {
      switch (name) {
        case RESOURCE_MEMORY:
          this.memory = Math.max(this.memory, quantityValue(value));
          break;
        case RESOURCE_CPU:
          this.milliCPU = Math.max(this.milliCPU, quantityMilliValue(value));
          break;
        case RESOURCE_EPHEMERAL_STORAGE:
          this.ephemeralStorage = Math.max(this.ephemeralStorage, quantityValue(value));
          break;
        default:
          if (isScalarResourceName(name)) {
            const v = quantityValue(value);
            if (v > (this.scalarResources.get(name) ?? 0)) this.scalarResources.set(name, v);
          }
      }
    }
  }
}

/**
 * A pod's effective request: max(sum of its containers, each init container) plus its overhead (Go v1.20
 * computePodResourceRequest, and NodeInfo's calculateResource for the pods already on the node).
 */
export function computePodResourceRequest(pod: V1Pod): Resource {
  const result = new Resource();
  for (const c of pod.spec?.containers ?? []) result.add(c.resources?.requests);
  for (const c of pod.spec?.initContainers ?? []) result.setMaxResource(c.resources?.requests);
  if (pod.spec?.overhead) result.add(pod.spec.overhead);
  return result;
}

export const DEFAULT_BIND_ALL_HOST_IP = '0.0.0.0';

/** framework.HostPortInfo: host IP -> the `protocol/port` pairs bound on it. */
export class HostPortInfo {
  private readonly byIp = new Map<string, Set<string>>();

  private static sanitize(ip: string | undefined, protocol: string | undefined): [string, string] {
    return [ip ? ip : DEFAULT_BIND_ALL_HOST_IP, protocol ? protocol : 'TCP'];
  }

  add(ip: string | undefined, protocol: string | undefined, port: number | undefined): void {
    if (port === undefined || port <= 0) return;
    const [host, proto] = HostPortInfo.sanitize(ip, protocol);
    let ports = this.byIp.get(host);
    if (!ports) this.byIp.set(host, (ports = new Set()));
    ports.add(`${proto}/${port}`);
  }

  /** 0.0.0.0 conflicts with the pair on any IP; another IP with itself and 0.0.0.0. */
  checkConflict(ip: string | undefined, protocol: string | undefined, port: number | undefined): boolean {
    if (port === undefined || port <= 0) return false;
    const [host, proto] = HostPortInfo.sanitize(ip, protocol);
    const pp = `${proto}/${port}`;
    if (host === DEFAULT_BIND_ALL_HOST_IP) {
      for (const ports of this.byIp.values()) if (ports.has(pp)) return true;
      return false;
    }
    return [DEFAULT_BIND_ALL_HOST_IP, host].some((key) => this.byIp.get(key)?.has(pp) ?? false);
  }

  /** The number of (ip, protocol, port) entries. */
  get size(): number {
    let n = 0;
    for (const ports of this.byIp.values()) n += ports.size;
    return n;
  }
}

/** framework.NodeInfo as NewNodeInfo(otherPods...) + SetNode(node) builds it for admission. */
export class NodeInfo {
  readonly requested = new Resource();
  readonly allocatable: Resource;
  readonly usedPorts = new HostPortInfo();
  readonly pods: V1Pod[] = [];

  constructor(
    readonly node: V1Node,
    pods: readonly V1Pod[] = [],
  ) {
    this.allocatable = Resource.fromList(node.status?.allocatable);
    for (const pod of pods) this.addPod(pod);
  }

  addPod(pod: V1Pod): void {
    const res = computePodResourceRequest(pod);
    this.requested.milliCPU += res.milliCPU;
    this.requested.memory += res.memory;
    this.requested.ephemeralStorage += res.ephemeralStorage;
    for (const [name, v] of res.scalarResources) this.requested.scalarResources.set(name, (this.requested.scalarResources.get(name) ?? 0) + v);
    this.pods.push(pod);
    // Only regular containers' ports count, as in Go's updateUsedPorts.
    for (const c of pod.spec?.containers ?? []) for (const p of c.ports ?? []) this.usedPorts.add(p.hostIP, p.protocol, p.hostPort);
  }
}

/** noderesources.InsufficientResource. */
export interface InsufficientResource {
  resourceName: string;
  reason: string;
  requested: number;
  used: number;
  capacity: number;
}

/**
 * noderesources.Fits as of Go v1.20: pods count first, then (when the pod requests anything) cpu,
 * memory, ephemeral-storage and each scalar resource, comparing allocatable with used + requested.
 * Scalar resources are checked in the order the pod's request lists them (Go ranges over a map).
 */
export function fitsRequest(podRequest: Resource, nodeInfo: NodeInfo): InsufficientResource[] {
  const out: InsufficientResource[] = [];
  const allowedPodNumber = nodeInfo.allocatable.allowedPodNumber;
  if (nodeInfo.pods.length + 1 > allowedPodNumber) {
    out.push({ resourceName: RESOURCE_PODS, reason: 'Too many pods', requested: 1, used: nodeInfo.pods.length, capacity: allowedPodNumber });
  }
  if (podRequest.milliCPU === 0 && podRequest.memory === 0 && podRequest.ephemeralStorage === 0 && podRequest.scalarResources.size === 0) {
    return out;
  }
  const { allocatable, requested } = nodeInfo;
  if (allocatable.milliCPU < podRequest.milliCPU + requested.milliCPU) {
    out.push({ resourceName: RESOURCE_CPU, reason: 'Insufficient cpu', requested: podRequest.milliCPU, used: requested.milliCPU, capacity: allocatable.milliCPU });
  }
  if (allocatable.memory < podRequest.memory + requested.memory) {
    out.push({ resourceName: RESOURCE_MEMORY, reason: 'Insufficient memory', requested: podRequest.memory, used: requested.memory, capacity: allocatable.memory });
  }
  if (allocatable.ephemeralStorage < podRequest.ephemeralStorage + requested.ephemeralStorage) {
    out.push({
      resourceName: RESOURCE_EPHEMERAL_STORAGE,
      reason: 'Insufficient ephemeral-storage',
      requested: podRequest.ephemeralStorage,
      used: requested.ephemeralStorage,
      capacity: allocatable.ephemeralStorage,
    });
  }
  for (const [name, quant] of podRequest.scalarResources) {
    const capacity = allocatable.scalarResources.get(name) ?? 0;
    const used = requested.scalarResources.get(name) ?? 0;
    if (capacity < quant + used) out.push({ resourceName: name, reason: `Insufficient ${name}`, requested: quant, used, capacity });
  }
  return out;
}

/** noderesources.Fits(pod, nodeInfo, nil). */
export function fits(pod: V1Pod, nodeInfo: NodeInfo): InsufficientResource[] {
  return fitsRequest(computePodResourceRequest(pod), nodeInfo);
}
