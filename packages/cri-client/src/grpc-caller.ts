import type * as grpc from '@grpc/grpc-js';
import { CanceledError, fromServiceError } from './errors.js';
import { grpcJs } from './proto.js';
import { grpcTarget } from './endpoint.js';
import type { InProcessClient } from './in-process.js';
import type { CallOptions } from './services.js';

/** The Go kubelet's default --runtime-request-timeout. */
export const DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS = 2 * 60 * 1000;

/** The Go kubelet's CRI message size limit (16 MiB) in both directions. */
export const MAX_CRI_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface RemoteClientOptions {
  /** `unix:///path/to/socket`, an absolute socket path, or `tcp://host:port`. */
  endpoint: string;
  /** Default deadline of every unary call in ms (runtimeRequestTimeout); 0 disables it. */
  timeoutMs?: number;
  /** Extra grpc-js channel options. */
  channelOptions?: grpc.ChannelOptions;
  /**
   * Call this in-process client (see {@link inProcessClient}) instead of opening a gRPC channel: no socket, and
   * grpc-js is not loaded. `endpoint` then only names the runtime in errors (e.g. `inprocess://node-0`).
   */
  client?: InProcessClient;
}

/**
 * Reconnect quickly after the runtime restarts, as the Go kubelet's CRI client does
 * (100 ms base delay growing to at most 3 s), instead of grpc-js's 1 s to 120 s default.
 */
const reconnectOptions: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.min_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 3000,
  'grpc.max_receive_message_length': MAX_CRI_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_CRI_MESSAGE_BYTES,
};

type UnaryMethod = (
  request: unknown,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, response?: unknown) => void,
) => grpc.ClientUnaryCall;

type ClientConstructor = new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ChannelOptions) => grpc.Client;

/**
 * Shared by the runtime and image clients: one gRPC client per endpoint, unary calls with deadlines,
 * AbortSignal cancellation and typed errors naming the RPC and the object.
 */
export class GrpcCaller {
  readonly endpoint: string;
  readonly timeoutMs: number;
  readonly client: grpc.Client | InProcessClient;

  /** `Client` is called only when no in-process client is given (it loads grpc-js). */
  constructor(
    private readonly serviceName: string,
    Client: () => ClientConstructor,
    options: RemoteClientOptions,
  ) {
    this.endpoint = options.endpoint;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS;
    this.client =
      options.client ??
      new (Client())(grpcTarget(options.endpoint), grpcJs().credentials.createInsecure(), {
        ...reconnectOptions,
        ...options.channelOptions,
      });
  }

  rpcName(method: string): string {
    return `${this.serviceName}/${method}`;
  }

  unary<Response>(
    method: string,
    request: unknown,
    object: string | undefined,
    options: CallOptions | undefined,
    defaultTimeoutMs = this.timeoutMs,
  ): Promise<Response> {
    return new Promise<Response>((resolve, reject) => {
      const signal = options?.signal;
      if (signal?.aborted) {
        reject(this.canceled(method, object, signal.reason));
        return;
      }
      const timeoutMs = options?.timeoutMs ?? defaultTimeoutMs;
      const callOptions: grpc.CallOptions = timeoutMs > 0 ? { deadline: Date.now() + timeoutMs } : {};
      const onAbort = () => call.cancel();
      const call = ((this.client as unknown as Record<string, UnaryMethod>)[method]).call(
        this.client,
        request,
        callOptions,
        (error, response) => {
          signal?.removeEventListener('abort', onAbort);
          if (error) reject(fromServiceError(error, this.rpcName(method), object, this.endpoint));
          else resolve(response as Response);
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A server stream as an async iterable; ends quietly when the signal aborts. */
  async *serverStream<Response>(method: string, request: unknown, signal?: AbortSignal): AsyncGenerator<Response> {
    if (signal?.aborted) return;
    const start = (this.client as unknown as Record<string, (req: unknown, options: grpc.CallOptions) => grpc.ClientReadableStream<Response>>)[method];
    const call = start.call(this.client, request, {});
    const onAbort = () => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const message of call) yield message as Response;
    } catch (error) {
      if (signal?.aborted) return;
      throw fromServiceError(error as grpc.ServiceError, this.rpcName(method), undefined, this.endpoint);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      call.cancel();
    }
  }

  close(): void {
    this.client.close();
  }

  private canceled(method: string, object: string | undefined, reason: unknown): CanceledError {
    const details = reason instanceof Error ? reason.message : 'the call was canceled before it started';
    return new CanceledError({ rpc: this.rpcName(method), object, code: 'Canceled', details, cause: reason });
  }
}
