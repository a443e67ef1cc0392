// Loading the two gRPC APIs of this package (CSI spec v1: Identity and Node; the kubelet plugin registration
// API v1) from the .proto files shipped beside dist/, as @kubelet-ts/device-manager loads its APIs:
// @grpc/proto-loader with camelCase fields, proto3 defaults filled in, enums as strings, int64 as number.
// Nothing gRPC is loaded at import: the first client or server made loads it.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';

/** Absolute path of the CSI spec's `.proto` (Identity and Node services) shipped with this package. */
export const csiProtoPath = fileURLToPath(new URL('../proto/csi.proto', import.meta.url));
/** Absolute path of the kubelet plugin registration API's `.proto` shipped with this package. */
export const pluginRegistrationProtoPath = fileURLToPath(new URL('../proto/pluginregistration-v1.proto', import.meta.url));

const require = createRequire(import.meta.url);
let grpcModule: typeof grpc | undefined;

/** @grpc/grpc-js, loaded by the first server or client made rather than with the package. */
export function grpcJs(): typeof grpc {
  grpcModule ??= require('@grpc/grpc-js') as typeof grpc;
  return grpcModule;
}

const loaderOptions: protoLoader.Options = { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true };

/** registerapi.CSIPlugin / DevicePlugin: the plugin types of PluginInfo.type. */
export const CSI_PLUGIN_TYPE = 'CSIPlugin';
export const DEVICE_PLUGIN_TYPE = 'DevicePlugin';

// ---- plugin registration v1 messages (as proto-loader gives them) ---------------------------------------------

/** pluginregistration.PluginInfo. */
export interface PluginInfo {
  type: string;
  name: string;
  endpoint: string;
  supportedVersions: string[];
}

/** pluginregistration.RegistrationStatus. */
export interface RegistrationStatus {
  pluginRegistered: boolean;
  error: string;
}

// ---- CSI Identity messages ------------------------------------------------------------------------------------

export interface GetPluginInfoResponse {
  name: string;
  vendorVersion: string;
  manifest: Record<string, string>;
}

export interface PluginCapability {
  service?: { type: 'UNKNOWN' | 'CONTROLLER_SERVICE' | 'VOLUME_ACCESSIBILITY_CONSTRAINTS' | 'GROUP_CONTROLLER_SERVICE' } | null;
  volumeExpansion?: { type: 'UNKNOWN' | 'ONLINE' | 'OFFLINE' } | null;
  type?: 'service' | 'volumeExpansion';
}

export interface ProbeResponse {
  /** Unset (null): ready. */
  ready?: { value: boolean } | null;
}

/** A generated gRPC client class of one service. */
export interface ServiceClientCtor {
  new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions): grpc.Client;
  service: grpc.ServiceDefinition;
}

export interface CsiGrpc {
  Identity: ServiceClientCtor;
  Node: ServiceClientCtor;
}

export interface PluginRegistrationGrpc {
  Registration: ServiceClientCtor;
}

let csiPackage: CsiGrpc | undefined;
let registrationPackage: PluginRegistrationGrpc | undefined;

/** The CSI services (package `csi.v1`), loaded once per process. */
export function loadCsiPackage(): CsiGrpc {
  if (!csiPackage) {
    const definition = (require('@grpc/proto-loader') as typeof protoLoader).loadSync(csiProtoPath, loaderOptions);
    csiPackage = (grpcJs().loadPackageDefinition(definition) as unknown as { csi: { v1: CsiGrpc } }).csi.v1;
  }
  return csiPackage;
}

/** The plugin registration service (package `pluginregistration`), loaded once per process. */
export function loadPluginRegistrationPackage(): PluginRegistrationGrpc {
  if (!registrationPackage) {
    const definition = (require('@grpc/proto-loader') as typeof protoLoader).loadSync(pluginRegistrationProtoPath, loaderOptions);
    registrationPackage = (grpcJs().loadPackageDefinition(definition) as unknown as { pluginregistration: PluginRegistrationGrpc }).pluginregistration;
  }
  return registrationPackage;
}

/**
 * The gRPC target of a unix socket: `unix://` (or `unix:`) prefixes are accepted and normalized, a bare path is
 * taken as a socket path (Go dials the endpoint as a unix socket).
 */
export function unixTarget(endpoint: string): string {
  return `unix:${socketPathOf(endpoint)}`;
}

/** The socket path of an endpoint, without a `unix://` or `unix:` prefix. */
export function socketPathOf(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('unix:')) return endpoint.slice('unix:'.length);
  return endpoint;
}
