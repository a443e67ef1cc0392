import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type * as grpc from '@grpc/grpc-js';

/** gRPC status numbers used here (grpc-js's `status` enum, without loading grpc-js). */
const CANCELLED = 1;
const UNKNOWN = 2;
const DEADLINE_EXCEEDED = 4;
const UNIMPLEMENTED = 12;
const INTERNAL = 13;

const statusNames: Record<number, string> = {
  0: 'OK', 1: 'CANCELLED', 2: 'UNKNOWN', 3: 'INVALID_ARGUMENT', 4: 'DEADLINE_EXCEEDED', 5: 'NOT_FOUND',
  6: 'ALREADY_EXISTS', 7: 'PERMISSION_DENIED', 8: 'RESOURCE_EXHAUSTED', 9: 'FAILED_PRECONDITION', 10: 'ABORTED',
  11: 'OUT_OF_RANGE', 12: 'UNIMPLEMENTED', 13: 'INTERNAL', 14: 'UNAVAILABLE', 15: 'DATA_LOSS', 16: 'UNAUTHENTICATED',
};

/** What a handler answers a failed call with, as a grpc-js server takes it: a status code and details. */
interface HandlerError {
  code?: number;
  details?: string;
  message?: string;
}

/** The error a grpc-js client gives for a status: `<code> <NAME>: <details>` with code and details set. */
function statusError(code: number, details: string): grpc.ServiceError {
  const error = new Error(`${code} ${statusNames[code] ?? 'UNKNOWN'}: ${details}`) as Error & Partial<grpc.ServiceError>;
  return Object.assign(error, { code, details, metadata: undefined }) as unknown as grpc.ServiceError;
}

/** grpc-js's serverErrorToStatus: an integer `code` with string `details`, else UNKNOWN with the message. */
function toStatus(error: unknown): { code: number; details: string } {
  const e = (error ?? {}) as HandlerError;
  if (typeof e.code === 'number' && Number.isInteger(e.code)) {
    return { code: e.code, details: typeof e.details === 'string' ? e.details : (e.message ?? 'Unknown Error') };
  }
  return { code: UNKNOWN, details: e.message ?? 'Unknown Error' };
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** The server side of one in-process call, as a grpc-js handler sees it (ServerUnaryCall / ServerWritableStream). */
class InProcessServerCall extends EventEmitter {
  cancelled = false;

  constructor(
    readonly request: unknown,
    private readonly path: string,
    private readonly deadline: number,
  ) {
    super();
  }

  getPath(): string {
    return this.path;
  }

  getPeer(): string {
    return 'in-process';
  }

  getDeadline(): number {
    return this.deadline;
  }

  sendMetadata(): void {
    // no metadata in process
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.emit('cancelled', 'cancelled');
  }
}

/** The server side of a server-streaming call: write/end go to the client's Readable, through the codec. */
class InProcessServerStream extends InProcessServerCall {
  private ended = false;

  constructor(
    request: unknown,
    path: string,
    private readonly readable: Readable,
    private readonly roundTrip: (message: unknown) => unknown,
  ) {
    super(request, path, Infinity);
  }

  /** Messages written and not yet read by the client (a grpc-js stream's buffered count, in object mode). */
  get writableLength(): number {
    return this.readable.readableLength;
  }

  write(message: unknown): boolean {
    if (this.ended || this.cancelled) return false;
    let decoded: unknown;
    try {
      decoded = this.roundTrip(message);
    } catch (error) {
      this.fail(statusError(INTERNAL, `Error serializing response: ${messageOf(error)}`));
      return false;
    }
    return this.readable.push(decoded);
  }

  end(): void {
    if (this.ended || this.cancelled) return;
    this.ended = true;
    this.readable.push(null);
    this.emit('finish');
    this.emit('close');
  }

  /** Ends the stream with a status (grpc-js's emit('error', status) on the server side). */
  fail(error: grpc.ServiceError): void {
    if (this.ended || this.cancelled) return;
    this.ended = true;
    this.readable.destroy(error);
    this.emit('close');
  }

  /** The client cancelled: the handler sees 'cancelled', the client's iteration fails with CANCELLED. */
  override cancel(): void {
    if (this.ended || this.cancelled) return;
    super.cancel();
    this.readable.destroy(statusError(CANCELLED, 'Cancelled on client'));
    this.emit('close');
  }
}

/**
 * Handlers by method name (`Version`, `GetContainerEvents`, ...), as a grpc-js server's addService takes them
 * (a `grpc.UntypedServiceImplementation` is one). A unary handler gets `(call, callback)`: `call.request` is the
 * decoded request, `call.on('cancelled', ...)` fires on the client's deadline or cancel; `callback(null, response)`
 * answers, `callback({ code, details })` fails with that gRPC status. A server-streaming handler gets `(call)` with
 * `write(message)`, `end()` and `writableLength` as well.
 */
export type InProcessServiceImplementation = Record<string, (call: any, callback: any) => void>;

/** The grpc-js client call handle an in-process unary call returns: `cancel()` fails it with CANCELLED. */
export interface InProcessUnaryCall {
  cancel(): void;
}

type UnaryCallback = (error: grpc.ServiceError | null, response?: unknown) => void;

/**
 * A client for one CRI service that calls a grpc-js service implementation in this process, with no socket and
 * without loading grpc-js. It has the methods of a grpc-js client made from the same service definition
 * (`client.Version(request, options, callback)`, `client.GetContainerEvents(request, options)` as a readable
 * stream), so {@link RemoteRuntimeService} and {@link RemoteImageService} use it unchanged through their `client`
 * option. Every request and response goes through the definition's serializers and deserializers (so callers get the
 * same objects as over gRPC: defaults filled, enums as strings, int64 as numbers); a failed handler gives the same
 * `{code, details}` error a grpc-js client gives; `deadline` and `cancel()` behave as in grpc-js.
 */
export class InProcessClient {
  private closed = false;
  private readonly methods = new Map<string, (request: unknown, options?: grpc.CallOptions, callback?: UnaryCallback) => unknown>();

  constructor(
    definition: grpc.ServiceDefinition,
    implementation: InProcessServiceImplementation,
  ) {
    for (const [name, method] of Object.entries(definition)) {
      // As grpc-js's addService: the handler by name, else by the method's original (camelCase) name.
      const handler = (implementation[name] ?? (method.originalName ? implementation[method.originalName] : undefined)) as
        | ((...args: unknown[]) => void)
        | undefined;
      const call = method.responseStream
        ? (request: unknown, options?: grpc.CallOptions) => this.serverStream(name, method, handler, request, options)
        : (request: unknown, options?: grpc.CallOptions | UnaryCallback, callback?: UnaryCallback) =>
            this.unary(name, method, handler, request, typeof options === 'function' ? {} : (options ?? {}), typeof options === 'function' ? options : callback!);
      this.methods.set(name, call as never);
      (this as unknown as Record<string, unknown>)[name] = call;
      if (method.originalName) (this as unknown as Record<string, unknown>)[method.originalName] = call;
    }
  }

  /** The method names this client answers (the service definition's keys). */
  get methodNames(): string[] {
    return [...this.methods.keys()];
  }

  /** As grpc-js's Client.close(): later calls throw `Channel has been shut down`; calls in flight complete. */
  close(): void {
    this.closed = true;
  }

  private checkOpen(): void {
    if (this.closed) throw new Error('Channel has been shut down');
  }

  private unary(
    name: string,
    method: grpc.MethodDefinition<unknown, unknown>,
    handler: ((...args: unknown[]) => void) | undefined,
    request: unknown,
    options: grpc.CallOptions,
    callback: UnaryCallback,
  ): InProcessUnaryCall {
    this.checkOpen();
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    let server: InProcessServerCall | undefined;
    const started = Date.now();
    const finish = (error: grpc.ServiceError | null, response?: unknown, byClient = false): void => {
      if (done) return;
      done = true;
      if (timer) clearTimeout(timer);
      // A deadline or cancel() ends the call for the handler too, as grpc-js's server emits 'cancelled'.
      if (byClient) server?.cancel();
      callback(error, response);
    };
    const deadline = options.deadline === undefined ? Infinity : Number(options.deadline instanceof Date ? options.deadline.getTime() : options.deadline);
    if (Number.isFinite(deadline)) {
      const fire = (): void =>
        finish(statusError(DEADLINE_EXCEEDED, `Deadline exceeded after ${((Date.now() - started) / 1000).toFixed(3)}s`), undefined, true);
      timer = setTimeout(fire, Math.max(0, deadline - started));
    }
    // As over a socket, the handler runs later: the caller has its call handle before anything can answer.
    queueMicrotask(() => {
      if (done) return;
      let decoded: unknown;
      try {
        decoded = method.requestDeserialize(method.requestSerialize(request));
      } catch (error) {
        finish(statusError(INTERNAL, `Request message serialization failure: ${messageOf(error)}`));
        return;
      }
      if (!handler) {
        finish(statusError(UNIMPLEMENTED, `The server does not implement the method ${name}`));
        return;
      }
      server = new InProcessServerCall(decoded, method.path, deadline);
      const respond = (error: unknown, value?: unknown): void => {
        if (done) return;
        if (error) {
          const status = toStatus(error);
          finish(statusError(status.code, status.details));
          return;
        }
        let response: unknown;
        try {
          response = method.responseDeserialize(method.responseSerialize(value));
        } catch (serializeError) {
          finish(statusError(INTERNAL, `Error serializing response: ${messageOf(serializeError)}`));
          return;
        }
        finish(null, response);
      };
      try {
        handler(server, respond);
      } catch (error) {
        finish(statusError(UNKNOWN, `Server method handler threw error ${messageOf(error)}`));
      }
    });
    return { cancel: () => finish(statusError(CANCELLED, 'Cancelled on client'), undefined, true) };
  }

  private serverStream(
    name: string,
    method: grpc.MethodDefinition<unknown, unknown>,
    handler: ((...args: unknown[]) => void) | undefined,
    request: unknown,
    options: grpc.CallOptions = {},
  ): Readable & { cancel(): void } {
    this.checkOpen();
    let server: InProcessServerStream | undefined;
    let pending: grpc.ServiceError | undefined;
    const readable = new Readable({ objectMode: true, read: () => undefined }) as Readable & { cancel(): void };
    // The reader gets errors through its iteration; one no longer reading must not crash the process.
    readable.on('error', () => undefined);
    readable.cancel = () => {
      if (server) server.cancel();
      else pending ??= statusError(CANCELLED, 'Cancelled on client');
      if (!readable.destroyed) readable.destroy(pending ?? statusError(CANCELLED, 'Cancelled on client'));
    };
    const roundTrip = (message: unknown): unknown => method.responseDeserialize(method.responseSerialize(message));
    const deadline = options.deadline === undefined ? Infinity : Number(options.deadline instanceof Date ? options.deadline.getTime() : options.deadline);
    if (Number.isFinite(deadline)) {
      const started = Date.now();
      const timer = setTimeout(() => {
        const error = statusError(DEADLINE_EXCEEDED, `Deadline exceeded after ${((Date.now() - started) / 1000).toFixed(3)}s`);
        if (server) server.fail(error);
        else readable.destroy(error);
      }, Math.max(0, deadline - started));
      readable.once('close', () => clearTimeout(timer));
    }
    queueMicrotask(() => {
      if (readable.destroyed) return;
      let decoded: unknown;
      try {
        decoded = method.requestDeserialize(method.requestSerialize(request));
      } catch (error) {
        readable.destroy(statusError(INTERNAL, `Request message serialization failure: ${messageOf(error)}`));
        return;
      }
      if (!handler) {
        readable.destroy(statusError(UNIMPLEMENTED, `The server does not implement the method ${name}`));
        return;
      }
      server = new InProcessServerStream(decoded, method.path, readable, roundTrip);
      // The client stopped reading (its iteration ended or it was destroyed): the handler sees 'cancelled'.
      readable.once('close', () => server?.cancel());
      try {
        handler(server);
      } catch (error) {
        server.fail(statusError(UNKNOWN, `Server method handler threw error ${messageOf(error)}`));
      }
    });
    return readable;
  }
}

/**
 * An in-process client of `definition` answered by `implementation` (the handlers a grpc-js server's addService
 * takes), for the `client` option of RemoteRuntimeService / RemoteImageService:
 *
 * ```ts
 * const defs = criCodec().serviceDefinitions();
 * const runtime = new RemoteRuntimeService({ endpoint: 'inprocess://node-0', client: inProcessClient(defs.RuntimeService, handlers) });
 * ```
 */
export function inProcessClient(definition: grpc.ServiceDefinition, implementation: InProcessServiceImplementation): InProcessClient {
  return new InProcessClient(definition, implementation);
}
