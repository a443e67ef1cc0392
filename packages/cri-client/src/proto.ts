import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from './generated/api.js';

/** Absolute path of the CRI runtime.v1 `.proto` shipped with this package. */
export const criProtoPath = fileURLToPath(new URL('../proto/api.proto', import.meta.url));

/** The CRI API version the kubelet speaks. */
export const CRI_API_VERSION = 'v1';

/**
 * How messages map to JavaScript, shared by the client, the local runtime's server and the benchmark's
 * bare client so that all three encode the same bytes: camelCase fields, enum names as strings, proto3
 * defaults filled in, int64 as number (nanosecond timestamps lose precision below ~256 ns, which no
 * kubelet decision depends on).
 */
export const criProtoLoaderOptions: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

export type CriGrpcPackage = ProtoGrpcType['runtime']['v1'];

let cached: CriGrpcPackage | undefined;
let grpcModule: typeof grpc | undefined;
const require = createRequire(import.meta.url);

/**
 * @grpc/grpc-js, loaded by the first client or server made rather than with the package (~9 MiB and ~0.2 s): a user
 * of the log parser, the error helpers or the types never pays for it.
 */
export function grpcJs(): typeof grpc {
  grpcModule ??= require('@grpc/grpc-js') as typeof grpc;
  return grpcModule;
}

/** Loads the CRI gRPC package definition (service constructors and definitions), once per process. */
export function loadCriPackage(): CriGrpcPackage {
  if (!cached) {
    const definition = (require('@grpc/proto-loader') as typeof protoLoader).loadSync(criProtoPath, criProtoLoaderOptions);
    cached = (grpcJs().loadPackageDefinition(definition) as unknown as ProtoGrpcType).runtime.v1;
  }
  return cached;
}
