import type { ServiceError } from '@grpc/grpc-js';

/** gRPC's status codes (the wire protocol's numbers, as grpc-js's `status` enum has them, without loading grpc-js). */
const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

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

/**
 * The typed error for a failed call. `endpoint` (the client's `--container-runtime-endpoint`) names the runtime when
 * grpc-js could not connect at all: its `No connection established. Last error: ... Resolution note: ...` text
 * becomes one sentence naming the endpoint and saying why (see {@link describeConnectionFailure}).
 */
export function fromServiceError(error: ServiceError, rpc: string, object?: string, endpoint?: string): CriError {
  const raw = error.details || error.message;
  const details = error.code === GrpcStatus.UNAVAILABLE ? describeConnectionFailure(raw, endpoint) : raw;
  return criError({ rpc, object, code: grpcCodeName(error.code), details, cause: error });
}

const RUNNING = '; is the runtime running?';
const connectReasons: Record<string, (address: string) => string> = {
  ENOENT: (address) => `the socket ${address} does not exist (connect ENOENT)${RUNNING}`,
  ECONNREFUSED: (address) => `connection refused: nothing is listening on ${address} (connect ECONNREFUSED)${RUNNING}`,
  EACCES: (address) => `permission denied on ${address} (connect EACCES)`,
  EPERM: (address) => `permission denied on ${address} (connect EPERM)`,
  ENOTSOCK: (address) => `${address} is not a socket (connect ENOTSOCK)`,
  ETIMEDOUT: (address) => `connection to ${address} timed out (connect ETIMEDOUT)`,
  EHOSTUNREACH: (address) => `the host of ${address} is unreachable (connect EHOSTUNREACH)`,
  ENETUNREACH: (address) => `the network of ${address} is unreachable (connect ENETUNREACH)`,
};

/**
 * grpc-js's details of an Unavailable call that never reached the runtime, made readable:
 * `No connection established. Last error: Error: connect ENOENT /run/x.sock. Resolution note: ` becomes
 * `cannot connect to the CRI runtime at unix:///run/x.sock: the socket /run/x.sock does not exist (connect ENOENT);
 * is the runtime running?`. An empty resolution note is dropped, a non-empty one kept. Details of
 * any other shape (an Unavailable answered by the runtime itself) are returned as they are.
 */
export function describeConnectionFailure(details: string, endpoint?: string): string {
  const match = /^(?:\w+: )?No connection established\. Last error: ([\s\S]*?)\. Resolution note: ([\s\S]*)$/.exec(details);
  if (!match) return details.replace(/\.? Resolution note: ?$/, '');
  const lastError = match[1].replace(/^(?:\w*Error: )/, '').trim();
  const note = match[2].trim();
  const target = endpoint ? `the CRI runtime at ${endpoint}` : 'the CRI runtime';
  const syscall = /^connect (E[A-Z]+) (.+)$/.exec(lastError);
  const known = syscall ? connectReasons[syscall[1]] : undefined;
  let reason: string;
  if (syscall && known) reason = known(syscall[2]);
  else if (lastError && lastError !== 'null' && lastError !== 'undefined') reason = lastError;
  else reason = 'no connection could be established';
  return `cannot connect to ${target}: ${reason}${note ? `; ${note}` : ''}`;
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
