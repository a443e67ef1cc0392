export * as runtimeapi from './runtimeapi.js';
export type { RuntimeService, ImageService, CallOptions, ExecSyncResult } from './services.js';
export { RemoteRuntimeService } from './remote-runtime.js';
export { RemoteImageService, type RemoteImageServiceOptions } from './remote-image.js';
export { DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS, MAX_CRI_MESSAGE_BYTES, type RemoteClientOptions } from './grpc-caller.js';
export { grpcTarget } from './endpoint.js';
export { inProcessClient, InProcessClient, type InProcessServiceImplementation, type InProcessUnaryCall } from './in-process.js';
export {
  loadCriPackage,
  loadCriServices,
  criCodec,
  grpcJs,
  criProtoPath,
  criProtoLoaderOptions,
  CRI_API_VERSION,
  type CriGrpcPackage,
  type CriServices,
} from './proto.js';
export type { MessageCodec } from './generated/codec.cjs';
export {
  CriError,
  NotFoundError,
  AlreadyExistsError,
  InvalidArgumentError,
  UnavailableError,
  DeadlineExceededError,
  CanceledError,
  UnimplementedError,
  FailedPreconditionError,
  ResourceExhaustedError,
  criError,
  grpcCodeName,
  grpcStatusFor,
  isNotFound,
  isUnavailable,
  isUnimplemented,
  type CriErrorCode,
  type CriErrorInit,
} from './errors.js';
export {
  formatCriLogLine,
  formatRFC3339Nano,
  parseCriLogLine,
  readCriLog,
  writeCriLogFormatError,
  CriLogFormatError,
  type CriLogRecord,
  type CriLogEntry,
  type LogStream,
  type LogTag,
  type ReadCriLogOptions,
} from './log-format.js';
