// CsiCallError: a failed gRPC call to a CSI driver (or a plugin's registration service), worded as Go's
// status error prints: `rpc error: code = <Name> desc = <details>`.

/** grpc codes.Code's String() names (google.golang.org/grpc/codes), by code number. */
export const GRPC_CODE_NAMES: readonly string[] = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

/** The gRPC status codes by name, as numbers (grpc-js's `status` enum, without loading grpc-js). */
export const GrpcCode = {
  OK: 0,
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
} as const;

/** Go's codes.Code.String(): the name, or `Code(n)` for a number it does not know. */
export function grpcCodeName(code: number): string {
  return GRPC_CODE_NAMES[code] ?? `Code(${code})`;
}

/** A gRPC call that failed with a status: `code` is the status number, `details` its description. */
export class CsiCallError extends Error {
  readonly code: number;
  readonly codeName: string;
  readonly details: string;

  constructor(code: number, details: string, options?: { cause?: unknown }) {
    super(`rpc error: code = ${grpcCodeName(code)} desc = ${details}`, options);
    this.name = 'CsiCallError';
    this.code = code;
    this.codeName = grpcCodeName(code);
    this.details = details;
  }
}

/** True for a CsiCallError (or any error with a numeric gRPC `code` and `details`) of the given code. */
export function isCsiCallError(err: unknown, code?: number): err is CsiCallError {
  if (!(err instanceof CsiCallError)) return false;
  return code === undefined || err.code === code;
}

/** How the call ended when it was the caller, not the driver, that stopped it. */
export type CallEnd = 'aborted' | 'deadline' | undefined;

/**
 * The CsiCallError of a grpc-js ServiceError, with Go's wording where the two differ: a call the caller
 * cancelled reads `context canceled`, one past its deadline `context deadline exceeded`, and a socket that
 * cannot be dialed reads as Go's transport error (`connection error: desc = "transport: Error while dialing
 * dial unix <path>: connect: no such file or directory"`).
 */
export function toCsiCallError(err: unknown, socketPath: string, end?: CallEnd): CsiCallError {
  if (err instanceof CsiCallError) return err;
  if (end === 'aborted') return new CsiCallError(GrpcCode.Canceled, 'context canceled', { cause: err });
  if (end === 'deadline') return new CsiCallError(GrpcCode.DeadlineExceeded, 'context deadline exceeded', { cause: err });
  const e = err as { code?: unknown; details?: unknown; message?: unknown };
  if (typeof e?.code === 'number') {
    const details = typeof e.details === 'string' ? e.details : String(e.message ?? '');
    if (e.code === GrpcCode.Unavailable) {
      const dial = goDialText(details, socketPath);
      if (dial) return new CsiCallError(e.code, dial, { cause: err });
    }
    if (e.code === GrpcCode.DeadlineExceeded) return new CsiCallError(e.code, 'context deadline exceeded', { cause: err });
    if (e.code === GrpcCode.Canceled) return new CsiCallError(e.code, 'context canceled', { cause: err });
    return new CsiCallError(e.code, details, { cause: err });
  }
  return new CsiCallError(GrpcCode.Unknown, err instanceof Error ? err.message : String(err), { cause: err });
}

const DIAL_ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  ECONNREFUSED: 'connection refused',
  EACCES: 'permission denied',
  ENOTSOCK: 'socket operation on non-socket',
  ECONNRESET: 'connection reset by peer',
};

function goDialText(details: string, socketPath: string): string | undefined {
  const match = /connect (E[A-Z]+)/.exec(details);
  if (!match) return undefined;
  const text = DIAL_ERRNO_TEXT[match[1] as string];
  if (!text) return undefined;
  return `connection error: desc = "transport: Error while dialing dial unix ${socketPath}: connect: ${text}"`;
}
