import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from './generated/api.js';
import type * as CriCodec from './generated/codec.cjs';

/** Absolute path of the CRI runtime.v1 `.proto` shipped with this package. */
export const criProtoPath = fileURLToPath(new URL('../proto/api.proto', import.meta.url));

/** The CRI API version the kubelet speaks. */
export const CRI_API_VERSION = 'v1';

/**
 * How messages map to JavaScript: camelCase fields, enum names as strings, proto3 defaults filled in, int64 as
 * number (nanosecond timestamps lose precision below ~256 ns, which no kubelet decision depends on).
 *
 * @deprecated The client and the local runtime's server no longer load the proto with @grpc/proto-loader: they use
 * the generated codec of {@link loadCriServices}, which gives the same objects and bytes as proto-loader with these
 * options. Kept for code that loads the proto itself.
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

/**
 * Loads the CRI gRPC package definition (service constructors and definitions, message type descriptors) with
 * @grpc/proto-loader, once per process.
 *
 * @deprecated Use {@link loadCriServices}: the same service constructors and definitions (same objects, same bytes)
 * with a generated codec, without proto-loader's parse of the .proto nor its fromObject/toObject pass on every message.
 */
export function loadCriPackage(): CriGrpcPackage {
  if (!cached) {
    const definition = (require('@grpc/proto-loader') as typeof protoLoader).loadSync(criProtoPath, criProtoLoaderOptions);
    cached = (grpcJs().loadPackageDefinition(definition) as unknown as ProtoGrpcType).runtime.v1;
  }
  return cached;
}

/** The CRI services' client constructors; each has the service definition as `service` (for a server's addService). */
export interface CriServices {
  RuntimeService: CriGrpcPackage['RuntimeService'];
  ImageService: CriGrpcPackage['ImageService'];
}

let codecModule: typeof CriCodec | undefined;
let services: CriServices | undefined;

/**
 * The generated CRI codec (src/generated/codec.cts, `npm run codegen`): per message, a serializer and a deserializer
 * giving what @grpc/proto-loader gives with {@link criProtoLoaderOptions}. Loaded by the first client or server made.
 */
export function criCodec(): typeof CriCodec {
  // Run from source (tsx, the tests' ts-node), the codec is the .cts beside this file; built, the .cjs.
  codecModule ??= require(import.meta.url.endsWith('.ts') ? './generated/codec.cts' : './generated/codec.cjs') as typeof CriCodec;
  return codecModule;
}

/**
 * The CRI RuntimeService and ImageService, once per process: the client constructors and service definitions
 * {@link loadCriPackage} gives (same method names and paths, same objects and bytes), using the generated codec.
 */
export function loadCriServices(): CriServices {
  if (!services) {
    const definitions = criCodec().serviceDefinitions();
    const grpc = grpcJs();
    services = {
      RuntimeService: grpc.makeGenericClientConstructor(definitions.RuntimeService, 'RuntimeService') as unknown as CriServices['RuntimeService'],
      ImageService: grpc.makeGenericClientConstructor(definitions.ImageService, 'ImageService') as unknown as CriServices['ImageService'],
    };
  }
  return services;
}
