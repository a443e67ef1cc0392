import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';

/** The gRPC status code names, as the Go kubelet prints them (`code = NotFound`). */
export type CriErrorCode =
  | 'OK' | 'Canceled' | 'Unknown' | 'InvalidArgument' | 'DeadlineExceeded' | 'NotFound' | 'AlreadyExists'
  | 'PermissionDenied' | 'ResourceExhausted' | 'FailedPrecondition' | 'Aborted' | 'OutOfRange'
  | 'Unimplemented' | 'Internal' | 'Unavailable' | 'DataLoss' | 'Unauthenticated';

const codeNames: Record<number, CriErrorCode> = {
  [GrpcStatus.OK]: 'OK',
  [GrpcStatus.CANCELLED]: 'Canceled',
  [GrpcStatus.UNKNOWN]: 'Unknown',
  [GrpcStatus.INVALID_ARGUMENT]: 'InvalidArgument',
  [GrpcStatus.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
  [GrpcStatus.NOT_FOUND]: 'NotFound',
  [GrpcStatus.ALREADY_EXISTS]: 'AlreadyExists',
  [GrpcStatus.PERMISSION_DENIED]: 'PermissionDenied',
  [GrpcStatus.RESOURCE_EXHAUSTED]: 'ResourceExhausted',
  [GrpcStatus.FAILED_PRECONDITION]: 'FailedPrecondition',
  [GrpcStatus.ABORTED]: 'Aborted',
  [GrpcStatus.OUT_OF_RANGE]: 'OutOfRange',
  [GrpcStatus.UNIMPLEMENTED]: 'Unimplemented',
  [GrpcStatus.INTERNAL]: 'Internal',
  [GrpcStatus.UNAVAILABLE]: 'Unavailable',
  [GrpcStatus.DATA_LOSS]: 'DataLoss',
  [GrpcStatus.UNAUTHENTICATED]: 'Unauthenticated',
};

export interface CriErrorInit {
  /** The RPC, e.g. `RuntimeService/StopContainer`. */
  rpc: string;
  /** The object the call was about, e.g. `container "3f2a..."`; absent for list calls. */
  object?: string;
  code: CriErrorCode;
  /** What the runtime said. */
  details: string;
  cause?: unknown;
}

/** A failed CRI call. Subclasses name the common codes so callers can `instanceof` them. */
export class CriError extends Error {
  readonly rpc: string;
  readonly object?: string;
  readonly code: CriErrorCode;
  readonly details: string;

  constructor(init: CriErrorInit) {
    const about = init.object ? ` for ${init.object}` : '';
    super(`${init.rpc}${about} failed: rpc error: code = ${init.code} desc = ${init.details}`, { cause: init.cause });
    this.name = 'CriError';
    this.rpc = init.rpc;
    this.object = init.object;
    this.code = init.code;
    this.details = init.details;
  }
}

export class NotFoundError extends CriError { override name = 'NotFoundError'; }
export class AlreadyExistsError extends CriError { override name = 'AlreadyExistsError'; }
export class InvalidArgumentError extends CriError { override name = 'InvalidArgumentError'; }
export class UnavailableError extends CriError { override name = 'UnavailableError'; }
export class DeadlineExceededError extends CriError { override name = 'DeadlineExceededError'; }
export class CanceledError extends CriError { override name = 'CanceledError'; }
export class UnimplementedError extends CriError { override name = 'UnimplementedError'; }
export class FailedPreconditionError extends CriError { override name = 'FailedPreconditionError'; }
export class ResourceExhaustedError extends CriError { override name = 'ResourceExhaustedError'; }

const classes: Partial<Record<CriErrorCode, new (init: CriErrorInit) => CriError>> = {
  NotFound: NotFoundError,
  AlreadyExists: AlreadyExistsError,
  InvalidArgument: InvalidArgumentError,
  Unavailable: UnavailableError,
  DeadlineExceeded: DeadlineExceededError,
  Canceled: CanceledError,
  Unimplemented: UnimplementedError,
  FailedPrecondition: FailedPreconditionError,
  ResourceExhausted: ResourceExhaustedError,
};

/** Builds the typed error for a code; used by the client and by fakes so both fail alike. */
export function criError(init: CriErrorInit): CriError {
  const ErrorClass = classes[init.code] ?? CriError;
  return new ErrorClass(init);
}

export function grpcCodeName(code: number): CriErrorCode {
  return codeNames[code] ?? 'Unknown';
}

/** The gRPC status number for a code name; servers (the local runtime) answer with it. */
export function grpcStatusFor(code: CriErrorCode): number {
  const entry = Object.entries(codeNames).find(([, name]) => name === code);
  return entry ? Number(entry[0]) : GrpcStatus.UNKNOWN;
}

export function fromServiceError(error: ServiceError, rpc: string, object?: string): CriError {
  return criError({ rpc, object, code: grpcCodeName(error.code), details: error.details || error.message, cause: error });
}

export function isNotFound(error: unknown): boolean {
  return error instanceof CriError && error.code === 'NotFound';
}

export function isUnavailable(error: unknown): boolean {
  return error instanceof CriError && error.code === 'Unavailable';
}

export function isUnimplemented(error: unknown): boolean {
  return error instanceof CriError && error.code === 'Unimplemented';
}
