// The node status setters (Go: pkg/kubelet/nodestatus/setters.go). Each fills part of a V1Node in
// place; the manager runs them in Go's order on a copy of the node it read from the API server.
import type { V1ContainerImage, V1Node, V1NodeAddress, V1NodeCondition } from '@kubernetes/client-node';
import type { MachineInfo } from './machine-info.js';
import { Quantity } from '@kubelet-ts/core';
import {
  RESOURCE_CPU,
  RESOURCE_EPHEMERAL_STORAGE,
  RESOURCE_MEMORY,
  RESOURCE_PODS,
  allocatableFrom,
  isExtendedResourceName,
  type ResourceList,
} from './resources.js';
import { metaTime } from './wire.js';

/** Records an event about the node (Go: recordNodeStatusEvent / recordEvent). */
export type NodeEventFunc = (eventType: 'Normal' | 'Warning', reason: string, message?: string) => void;

/** utilerrors.NewAggregate(errs).Error(): nil for none, the message for one, "[a, b]" for more (duplicates once). */
export function aggregateMessage(errors: ReadonlyArray<Error | undefined | null>): string | undefined {
  const msgs: string[] = [];
  for (const e of errors) {
    if (!e) continue;
    const nested = (e as { errors?: unknown }).errors;
    const parts = e instanceof AggregateError && Array.isArray(nested) ? (nested as Error[]).map((x) => x.message) : [e.message];
    for (const m of parts) if (!msgs.includes(m)) msgs.push(m);
  }
  if (msgs.length === 0) return undefined;
  return msgs.length === 1 ? msgs[0] : `[${msgs.join(', ')}]`;
}

function findCondition(node: V1Node, type: string): V1NodeCondition | undefined {
  return node.status?.conditions?.find((c) => c.type === type);
}

function conditions(node: V1Node): V1NodeCondition[] {
  node.status ??= {};
  node.status.conditions ??= [];
  return node.status.conditions;
}

export interface ReadyInputs {
  now: number;
  /** Runtime errors (container runtime down, PLEG unhealthy, ...), network, storage and node shutdown errors, in that order. */
  errors: ReadonlyArray<Error | undefined | null>;
  /** Container manager soft requirements, appended as "WARNING: ...". */
  softRequirements?: string;
  recordEvent?: NodeEventFunc;
  /** Ephemeral storage is a required capacity (LocalStorageCapacityIsolation, default true). */
  localStorageCapacityIsolation?: boolean;
}

/** nodestatus.ReadyCondition. */
export function setReadyCondition(node: V1Node, inputs: ReadyInputs): void {
  const currentTime = metaTime(inputs.now);
  const errs: Array<Error | undefined | null> = [...inputs.errors];
  const required = [RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS];
  if (inputs.localStorageCapacityIsolation ?? true) required.push(RESOURCE_EPHEMERAL_STORAGE);
  const missing = required.filter((r) => node.status?.capacity?.[r] === undefined);
  if (missing.length > 0) errs.push(new Error(`missing node capacity for resources: ${missing.join(', ')}`));
  const aggregated = aggregateMessage(errs);
  const next: V1NodeCondition =
    aggregated === undefined
      ? { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status', lastHeartbeatTime: currentTime }
      : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: aggregated, lastHeartbeatTime: currentTime };
  if (inputs.softRequirements) next.message = `${next.message}. WARNING: ${inputs.softRequirements}`;

  const list = conditions(node);
  const idx = list.findIndex((c) => c.type === 'Ready');
  let transitioned = false;
  if (idx >= 0) {
    if (list[idx].status === next.status) {
      next.lastTransitionTime = list[idx].lastTransitionTime;
    } else {
      next.lastTransitionTime = currentTime;
      transitioned = true;
    }
    list[idx] = next;
  } else {
    next.lastTransitionTime = currentTime;
    list.push(next);
  }
  if (transitioned) inputs.recordEvent?.('Normal', next.status === 'True' ? 'NodeReady' : 'NodeNotReady');
}

/** A pressure condition's type and texts, as the node status reports it. */
export interface PressureText {
  type: string;
  trueReason: string;
  trueMessage: string;
  trueEvent: string;
  falseReason: string;
  falseMessage: string;
  falseEvent: string;
}

export const MEMORY_PRESSURE: PressureText = {
  type: 'MemoryPressure',
  trueReason: 'KubeletHasInsufficientMemory',
  trueMessage: 'kubelet has insufficient memory available',
  trueEvent: 'NodeHasInsufficientMemory',
  falseReason: 'KubeletHasSufficientMemory',
  falseMessage: 'kubelet has sufficient memory available',
  falseEvent: 'NodeHasSufficientMemory',
};

export const DISK_PRESSURE: PressureText = {
  type: 'DiskPressure',
  trueReason: 'KubeletHasDiskPressure',
  trueMessage: 'kubelet has disk pressure',
  trueEvent: 'NodeHasDiskPressure',
  falseReason: 'KubeletHasNoDiskPressure',
  falseMessage: 'kubelet has no disk pressure',
  falseEvent: 'NodeHasNoDiskPressure',
};

export const PID_PRESSURE: PressureText = {
  type: 'PIDPressure',
  trueReason: 'KubeletHasInsufficientPID',
  trueMessage: 'kubelet has insufficient PID available',
  trueEvent: 'NodeHasInsufficientPID',
  falseReason: 'KubeletHasSufficientPID',
  falseMessage: 'kubelet has sufficient PID available',
  falseEvent: 'NodeHasSufficientPID',
};

/**
 * nodestatus.MemoryPressureCondition / DiskPressureCondition / PIDPressureCondition: the heartbeat
 * moves every time, status/reason/message/lastTransitionTime only on a change (a new condition
 * starts as Unknown, so it always "changes").
 */
export function setPressureCondition(node: V1Node, text: PressureText, underPressure: boolean, now: number, recordEvent?: NodeEventFunc): void {
  const currentTime = metaTime(now);
  const list = conditions(node);
  let condition = findCondition(node, text.type);
  const isNew = condition === undefined;
  condition ??= { type: text.type, status: 'Unknown' };
  condition.lastHeartbeatTime = currentTime;
  if (underPressure) {
    if (condition.status !== 'True') {
      condition.status = 'True';
      condition.reason = text.trueReason;
      condition.message = text.trueMessage;
      condition.lastTransitionTime = currentTime;
      recordEvent?.('Normal', text.trueEvent);
    }
  } else if (condition.status !== 'False') {
    condition.status = 'False';
    condition.reason = text.falseReason;
    condition.message = text.falseMessage;
    condition.lastTransitionTime = currentTime;
    recordEvent?.('Normal', text.falseEvent);
  }
  if (isNew) list.push(condition);
}

export interface MachineInfoInputs {
  nodeName: string;
  /** undefined when reading the machine failed: capacity falls back to cpu 0, memory 0, pods maxPods. */
  info: MachineInfo | undefined;
  maxPods: number;
  podsPerCore: number;
  /** The reservation per resource (GetNodeAllocatableReservation). */
  reservation: (capacity: ResourceList) => ResourceList;
  recordEvent?: NodeEventFunc;
  /**
   * The device plugins' resources (Go: GetDevicePluginResourceCapacity): device counts for capacity and
   * allocatable, and resources whose plugin is gone for good, whose capacity becomes 0.
   */
  devicePluginResourceCapacity?: () => DevicePluginCapacity;
}

/** The device manager's GetCapacity. */
export interface DevicePluginCapacity {
  capacity: Record<string, number>;
  allocatable: Record<string, number>;
  removed: string[];
}

/** cadvisor.CapacityFromMachineInfo plus the root filesystem's ephemeral-storage. */
export function capacityFromMachineInfo(info: MachineInfo): ResourceList {
  const cap: ResourceList = new Map();
  cap.set(RESOURCE_CPU, Quantity.fromMilli(info.numCores * 1000, 'DecimalSI'));
  cap.set(RESOURCE_MEMORY, Quantity.fromValue(info.memoryCapacity, 'BinarySI'));
  if (info.rootfsCapacity !== undefined) cap.set(RESOURCE_EPHEMERAL_STORAGE, Quantity.fromValue(info.rootfsCapacity, 'BinarySI'));
  return cap;
}

function toResourceList(m: Record<string, string> | undefined): ResourceList {
  const out: ResourceList = new Map();
  for (const [k, v] of Object.entries(m ?? {})) {
    try {
      out.set(k, Quantity.parse(v));
    } catch {
      // Not a quantity (someone else's garbage): keep it out of the arithmetic.
    }
  }
  return out;
}

function fromResourceList(rl: ResourceList): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of rl) out[k] = v.toString();
  return out;
}

/** nodestatus.MachineInfo: nodeInfo ids, capacity (keeping others' extended resources) and allocatable. */
export function setMachineInfo(node: V1Node, inputs: MachineInfoInputs): void {
  node.status ??= {};
  const capacity = toResourceList(node.status.capacity);
  const info = inputs.info;
  let devicePluginAllocatable: Record<string, number> | undefined;
  node.status.nodeInfo ??= emptyNodeInfo();
  if (!info) {
    capacity.set(RESOURCE_CPU, Quantity.fromMilli(0, 'DecimalSI'));
    capacity.set(RESOURCE_MEMORY, Quantity.parse('0Gi'));
    capacity.set(RESOURCE_PODS, Quantity.fromValue(inputs.maxPods, 'DecimalSI'));
  } else {
    node.status.nodeInfo.machineID = info.machineID;
    node.status.nodeInfo.systemUUID = info.systemUUID;
    for (const [k, v] of capacityFromMachineInfo(info)) capacity.set(k, v);
    const pods = inputs.podsPerCore > 0 ? Math.min(info.numCores * inputs.podsPerCore, inputs.maxPods) : inputs.maxPods;
    capacity.set(RESOURCE_PODS, Quantity.fromValue(pods, 'DecimalSI'));
    const previousBootID = node.status.nodeInfo.bootID;
    if (previousBootID && previousBootID !== info.bootID) {
      inputs.recordEvent?.('Warning', 'Rebooted', `Node ${inputs.nodeName} has been rebooted, boot id: ${info.bootID}`);
    }
    node.status.nodeInfo.bootID = info.bootID;
    const devices = inputs.devicePluginResourceCapacity?.();
    for (const [k, n] of Object.entries(devices?.capacity ?? {})) capacity.set(k, Quantity.fromValue(n, 'DecimalSI'));
    // A removed resource stays at 0, marking it as a device plugin's (not a cluster-level extended resource).
    for (const k of devices?.removed ?? []) capacity.set(k, Quantity.fromValue(0, 'DecimalSI'));
    devicePluginAllocatable = devices?.allocatable;
  }
  // Allocatable: extended resources no longer in capacity go; everything else is capacity - reservation.
  const allocatable = toResourceList(node.status.allocatable);
  for (const k of [...allocatable.keys()]) {
    if (!capacity.has(k) && isExtendedResourceName(k)) allocatable.delete(k);
  }
  const reservable: ResourceList = new Map([...capacity].filter(([k]) => k !== RESOURCE_PODS && !isExtendedResourceName(k)));
  for (const [k, v] of allocatableFrom(capacity, inputs.reservation(reservable))) allocatable.set(k, v);
  for (const [k, n] of Object.entries(devicePluginAllocatable ?? {})) allocatable.set(k, Quantity.fromValue(n, 'DecimalSI'));
  node.status.capacity = fromResourceList(capacity);
  node.status.allocatable = fromResourceList(allocatable);
}

export function emptyNodeInfo(): NonNullable<NonNullable<V1Node['status']>['nodeInfo']> {
  return {
    architecture: '',
    bootID: '',
    containerRuntimeVersion: '',
    kernelVersion: '',
    kubeProxyVersion: '',
    kubeletVersion: '',
    machineID: '',
    operatingSystem: '',
    osImage: '',
    systemUUID: '',
  };
}

/** nodestatus.VersionInfo + GoRuntime: kernel, OS image, "<runtime>://<version>" ("Unknown" if the runtime did not answer), kubelet version, OS and arch. */
export function setVersionInfo(
  node: V1Node,
  inputs: { kernelVersion: string; osImage: string; runtimeName: string; runtimeVersion?: string; kubeletVersion: string; os: string; arch: string },
): void {
  node.status ??= {};
  node.status.nodeInfo ??= emptyNodeInfo();
  const ni = node.status.nodeInfo;
  ni.kernelVersion = inputs.kernelVersion;
  ni.osImage = inputs.osImage;
  ni.containerRuntimeVersion = `${inputs.runtimeName}://${inputs.runtimeVersion ?? 'Unknown'}`;
  ni.kubeletVersion = inputs.kubeletVersion;
  ni.operatingSystem = inputs.os;
  ni.architecture = inputs.arch;
}

/** nodestatus.DaemonEndpoints. */
export function setDaemonEndpoints(node: V1Node, kubeletPort: number): void {
  node.status ??= {};
  node.status.daemonEndpoints = { kubeletEndpoint: { Port: kubeletPort } };
}

/** What the image list setter needs of a runtime image. */
export interface NodeImage {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
}

/** Go's MaxNamesPerImageInNodeStatus. */
export const MAX_NAMES_PER_IMAGE = 5;
/** Go's default --node-status-max-images. */
export const DEFAULT_NODE_STATUS_MAX_IMAGES = 50;

/** sliceutils.ByImageSize: largest first, ties by id descending. */
export function sortImagesBySize<T extends NodeImage>(images: T[]): T[] {
  return [...images].sort((a, b) => (a.size === b.size ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) : b.size - a.size));
}

/** nodestatus.Images: the largest maxImages images (-1: all), each with up to 5 names (digests first). */
export function setImages(node: V1Node, images: NodeImage[] | undefined, maxImages: number): void {
  node.status ??= {};
  if (!images) {
    node.status.images = undefined;
    return;
  }
  let list = sortImagesBySize(images);
  if (maxImages > -1 && maxImages < list.length) list = list.slice(0, maxImages);
  const out: V1ContainerImage[] = list.map((image) => ({
    names: [...image.repoDigests, ...image.repoTags].slice(0, MAX_NAMES_PER_IMAGE),
    sizeBytes: image.size,
  }));
  node.status.images = out.length > 0 ? out : undefined;
}

/** nodestatus.NodeAddress (no cloud provider): InternalIP(s) then Hostname. */
export function setAddresses(node: V1Node, internalIPs: string[], hostname: string): void {
  node.status ??= {};
  const addresses: V1NodeAddress[] = internalIPs.map((address) => ({ type: 'InternalIP', address }));
  addresses.push({ type: 'Hostname', address: hostname });
  node.status.addresses = addresses;
}

/** Extended resources in a node's capacity/allocatable zeroed (reconcileExtendedResource). */
export function zeroExtendedResources(node: V1Node): boolean {
  let changed = false;
  for (const k of Object.keys(node.status?.capacity ?? {})) {
    if (!isExtendedResourceName(k)) continue;
    node.status!.capacity![k] = '0';
    node.status!.allocatable ??= {};
    node.status!.allocatable[k] = '0';
    changed = true;
  }
  return changed;
}

/** nodestatus.VolumesInUse: the attachable and device-mountable volumes the node's pods use; none is no field. */
export function setVolumesInUse(node: V1Node, volumes: string[]): void {
  node.status ??= {};
  node.status.volumesInUse = volumes.length > 0 ? [...volumes] : undefined;
}
