// Loading the two gRPC APIs of this package (device plugin v1beta1, pod resources v1) from the .proto
// files shipped beside dist/, the way @kubelet-ts/cri-client loads the CRI: @grpc/proto-loader with
// camelCase fields, proto3 defaults filled in, int64 as number.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';

/** Absolute path of the device plugin API's `.proto` shipped with this package. */
export const devicePluginProtoPath = fileURLToPath(new URL('../proto/deviceplugin-v1beta1.proto', import.meta.url));
/** Absolute path of the pod resources API's `.proto` shipped with this package. */
export const podResourcesProtoPath = fileURLToPath(new URL('../proto/podresources-v1.proto', import.meta.url));

const require = createRequire(import.meta.url);
let grpcModule: typeof grpc | undefined;

/** @grpc/grpc-js, loaded by the first server or client made rather than with the package (~9 MiB, ~0.2 s). */
export function grpcJs(): typeof grpc {
  grpcModule ??= require('@grpc/grpc-js') as typeof grpc;
  return grpcModule;
}

const loaderOptions: protoLoader.Options = { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true };

/** pluginapi.Version: the device plugin API version this kubelet speaks. */
export const DEVICE_PLUGIN_API_VERSION = 'v1beta1';
/** pluginapi.SupportedVersions. */
export const SUPPORTED_VERSIONS: readonly string[] = ['v1beta1'];
/** pluginapi.Healthy / Unhealthy. */
export const HEALTHY = 'Healthy';
export const UNHEALTHY = 'Unhealthy';
/** pluginapi.KubeletSocket: the Registration socket's name in the device plugin directory. */
export const KUBELET_SOCKET = 'kubelet.sock';
/** pluginapi.DevicePluginPath: the device plugin directory of a kubelet with the default root dir. */
export const DEVICE_PLUGIN_PATH = '/var/lib/kubelet/device-plugins/';

// ---- device plugin v1beta1 messages (as proto-loader gives them) ------------------------------------------------

export interface DevicePluginOptions {
  preStartRequired: boolean;
  getPreferredAllocationAvailable: boolean;
}
export interface RegisterRequest {
  version: string;
  endpoint: string;
  resourceName: string;
  options?: DevicePluginOptions | null;
}
export interface NUMANode {
  ID: number;
}
export interface TopologyInfo {
  nodes: NUMANode[];
}
export interface Device {
  ID: string;
  health: string;
  topology?: TopologyInfo | null;
}
export interface ListAndWatchResponse {
  devices: Device[];
}
export interface ContainerPreferredAllocationRequest {
  availableDeviceIDs: string[];
  mustIncludeDeviceIDs: string[];
  allocationSize: number;
}
export interface PreferredAllocationRequest {
  containerRequests: ContainerPreferredAllocationRequest[];
}
export interface PreferredAllocationResponse {
  containerResponses: Array<{ deviceIDs: string[] }>;
}
export interface AllocateRequest {
  containerRequests: Array<{ devicesIds: string[] }>;
}
export interface Mount {
  containerPath: string;
  hostPath: string;
  readOnly: boolean;
}
export interface DeviceSpec {
  containerPath: string;
  hostPath: string;
  permissions: string;
}
export interface ContainerAllocateResponse {
  envs: Record<string, string>;
  mounts: Mount[];
  devices: DeviceSpec[];
  annotations: Record<string, string>;
  cdiDevices: Array<{ name: string }>;
}
export interface AllocateResponse {
  containerResponses: ContainerAllocateResponse[];
}
export interface PreStartContainerRequest {
  devicesIds: string[];
}

// ---- pod resources v1 messages ----------------------------------------------------------------------------------

export interface ContainerDevices {
  resourceName: string;
  deviceIds: string[];
  topology?: TopologyInfo | null;
}
export interface ContainerMemory {
  memoryType: string;
  size: number;
  topology?: TopologyInfo | null;
}
export interface ContainerResources {
  name: string;
  devices: ContainerDevices[];
  cpuIds: number[];
  memory: ContainerMemory[];
}
export interface PodResources {
  name: string;
  namespace: string;
  containers: ContainerResources[];
}
export interface ListPodResourcesResponse {
  podResources: PodResources[];
}
export interface AllocatableResourcesResponse {
  devices: ContainerDevices[];
  cpuIds: number[];
  memory: ContainerMemory[];
}
export interface GetPodResourcesRequest {
  podName: string;
  podNamespace: string;
}
export interface GetPodResourcesResponse {
  podResources?: PodResources | null;
}

/** A generated gRPC client class of one service. */
export interface ServiceClientCtor {
  new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions): grpc.Client;
  service: grpc.ServiceDefinition;
}

export interface DevicePluginGrpc {
  Registration: ServiceClientCtor;
  DevicePlugin: ServiceClientCtor;
}
export interface PodResourcesGrpc {
  PodResourcesLister: ServiceClientCtor;
}

let devicePluginPackage: { pkg: DevicePluginGrpc; definition: protoLoader.PackageDefinition } | undefined;
let podResourcesPackage: PodResourcesGrpc | undefined;

function loadDevicePlugin(): { pkg: DevicePluginGrpc; definition: protoLoader.PackageDefinition } {
  if (!devicePluginPackage) {
    const definition = (require('@grpc/proto-loader') as typeof protoLoader).loadSync(devicePluginProtoPath, loaderOptions);
    const pkg = (grpcJs().loadPackageDefinition(definition) as unknown as { v1beta1: DevicePluginGrpc }).v1beta1;
    devicePluginPackage = { pkg, definition };
  }
  return devicePluginPackage;
}

/** The device plugin API's services (package `v1beta1`), loaded once per process. */
export function loadDevicePluginPackage(): DevicePluginGrpc {
  return loadDevicePlugin().pkg;
}

/** The pod resources API's service (package `v1`), loaded once per process. */
export function loadPodResourcesPackage(): PodResourcesGrpc {
  if (!podResourcesPackage) {
    const definition = (require('@grpc/proto-loader') as typeof protoLoader).loadSync(podResourcesProtoPath, loaderOptions);
    podResourcesPackage = (grpcJs().loadPackageDefinition(definition) as unknown as { v1: PodResourcesGrpc }).v1;
  }
  return podResourcesPackage;
}

function allocateMethod(): grpc.MethodDefinition<AllocateRequest, AllocateResponse> {
  const def = loadDevicePlugin().definition['v1beta1.DevicePlugin'] as unknown as Record<string, grpc.MethodDefinition<AllocateRequest, AllocateResponse>>;
  return def.Allocate;
}

/**
 * The protobuf bytes of one ContainerAllocateResponse, as Go's checkpoint keeps it (AllocResp). It is the
 * AllocateResponse holding only it, without that message's field tag and length.
 */
export function marshalContainerAllocateResponse(resp: ContainerAllocateResponse): Buffer {
  const whole = allocateMethod().responseSerialize({ containerResponses: [resp] });
  if (whole.length === 0) return Buffer.alloc(0);
  // Field 1, wire type 2 (0x0a), then the length as a varint.
  let i = 1;
  while (whole[i] & 0x80) i++;
  return whole.subarray(i + 1);
}

/** The inverse of marshalContainerAllocateResponse. */
export function unmarshalContainerAllocateResponse(bytes: Uint8Array): ContainerAllocateResponse {
  const len: number[] = [];
  let n = bytes.length;
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    len.push(b);
  } while (n > 0);
  const whole = Buffer.concat([Buffer.from([0x0a, ...len]), Buffer.from(bytes)]);
  const decoded = allocateMethod().responseDeserialize(whole);
  return decoded.containerResponses[0] ?? emptyContainerAllocateResponse();
}

export function emptyContainerAllocateResponse(): ContainerAllocateResponse {
  return { envs: {}, mounts: [], devices: [], annotations: {}, cdiDevices: [] };
}
