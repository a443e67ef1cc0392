import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import type { Clock, Logger, TimerHandle } from '@kubelet-ts/core';
import type { runtimeapi as api } from '@kubelet-ts/cri-client';
import { RuntimeError, invalidArgument } from './errors.js';
import { SpdyConnection, type SpdyStream } from './streaming-spdy.js';

/**
 * The CRI streaming server of the local runtime (Go: k8s.io/kubelet/pkg/cri/streaming, as containerd runs it): Exec
 * and Attach return a URL with a one-time token on an HTTP server on 127.0.0.1; the kubelet proxies the client's
 * SPDY/3.1 upgrade there, and the remotecommand protocol (v4, v3 or v2.channel.k8s.io) carries stdin, stdout,
 * stderr, resize and the error stream with the command's exit status.
 */

/** Go's streaming.CacheTTL: a token not used within a minute expires. */
export const STREAMING_TOKEN_TTL_MS = 60_000;
/** Go's streaming.MaxInFlight: tokens outstanding at once. */
export const STREAMING_MAX_IN_FLIGHT = 1000;
/** Go's remotecommandconsts.DefaultStreamCreationTimeout. */
const STREAM_CREATION_TIMEOUT_MS = 30_000;
/** Go's tokenLen: 8 base64url characters. */
const TOKEN_BYTES = 6;

export const StreamProtocolV4 = 'v4.channel.k8s.io';
export const StreamProtocolV3 = 'v3.channel.k8s.io';
export const StreamProtocolV2 = 'v2.channel.k8s.io';
/** The remotecommand protocols served, in the server's order. */
export const SUPPORTED_STREAM_PROTOCOLS = [StreamProtocolV4, StreamProtocolV3, StreamProtocolV2];
/** The port-forward protocol (Go: portforward.ProtocolV1Name). */
export const PortForwardProtocolV1 = 'portforward.k8s.io';

/** One forwarded connection's data stream, as the runtime sees it. */
export interface PortForwardStream {
  /** What the client sends (ends when the client closes its side). */
  input: Readable;
  write(data: Buffer): void;
  /** Aborted when the client goes away or the server stops. */
  signal: AbortSignal;
}

/** The streams of one exec or attach session, as the runtime sees them. */
export interface StreamingIO {
  /** The client's stdin (ends when the client closes it), when requested. */
  stdin?: Readable;
  /** Writes to the client's stdout, when requested (with tty: the terminal, stderr included). */
  stdout?: (data: Buffer) => void;
  /** Writes to the client's stderr, when requested (never with tty). */
  stderr?: (data: Buffer) => void;
  tty: boolean;
  /** Aborted when the client goes away or the server stops: the command should be ended. */
  signal: AbortSignal;
}

/** What the streaming server runs commands with: the runtime. */
export interface StreamingRuntime {
  /**
   * Runs `cmd` in the container; resolves with its exit code. A rejection (the command could not be run at all)
   * is reported to the client as an internal error, as containerd does.
   */
  exec(containerId: string, cmd: string[], io: StreamingIO): Promise<number>;
  /** Streams the container's output until it exits or the client goes away. */
  attach(containerId: string, io: StreamingIO): Promise<void>;
  /**
   * Forwards one connection to `port` of the sandbox until the pod's side closes it; a rejection's message is
   * written to the client's error stream.
   */
  portForward(podSandboxId: string, port: number, stream: PortForwardStream): Promise<void>;
}

export interface StreamingServerOptions {
  runtime: StreamingRuntime;
  /** Token expiry and the stream creation timeout. */
  clock: Clock;
  logger: Logger;
  /** Default 127.0.0.1. */
  address?: string;
  /** Default 0: a random port. */
  port?: number;
}

type CachedRequest =
  | { kind: 'exec'; request: api.ExecRequest }
  | { kind: 'attach'; request: api.AttachRequest }
  | { kind: 'portforward'; request: api.PortForwardRequest };

interface CacheEntry {
  value: CachedRequest;
  expiresAt: number;
}

/** Go's validateExecRequest / validateAttachRequest. */
function validateStreams(request: { containerId: string; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }): void {
  if (!request.containerId) throw invalidArgument('missing required container_id');
  if (request.tty && request.stderr) throw invalidArgument('tty and stderr cannot both be true');
  if (!request.stdin && !request.stdout && !request.stderr) throw invalidArgument('one of stdin, stdout, or stderr must be set');
}

/** A metav1.Status as Go's encoding/json writes it (field order: metadata, status, message, reason, details, code). */
interface Status {
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: { causes: { reason?: string; message?: string }[] };
  code?: number;
}

function statusJson(status: Status): string {
  const out: Record<string, unknown> = { metadata: {}, status: status.status };
  if (status.message) out.message = status.message;
  if (status.reason) out.reason = status.reason;
  if (status.details) out.details = status.details;
  if (status.code) out.code = status.code;
  return JSON.stringify(out);
}

/** Go's ServeExec status for a command that exited non-zero (the message as containerd words its exit error). */
export function nonZeroExitStatus(cmd: string[], exitCode: number): Status {
  return {
    status: 'Failure',
    message: `command terminated with non-zero exit code: error executing command [${cmd.join(' ')}], exit code ${exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

/** apierrors.NewInternalError. */
function internalErrorStatus(message: string): Status {
  return {
    status: 'Failure',
    message: `Internal error occurred: ${message}`,
    reason: 'InternalError',
    details: { causes: [{ message }] },
    code: 500,
  };
}

/** The header's values, one per header line, as Go's http.Header holds them. */
function headerValues(request: IncomingMessage, name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < request.rawHeaders.length; i += 2) {
    if (request.rawHeaders[i]!.toLowerCase() === name) values.push(request.rawHeaders[i + 1]!);
  }
  return values;
}

/** An HTTP error answer on a socket not yet upgraded (Go's http.Error). */
function writeHttpError(socket: Duplex, status: number, message: string, extraHeaders: string[] = []): void {
  if (socket.destroyed) return;
  const reasons: Record<number, string> = { 400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 503: 'Service Unavailable' };
  const body = `${message}\n`;
  socket.end(
    [
      `HTTP/1.1 ${status} ${reasons[status] ?? 'Error'}`,
      'Content-Type: text/plain; charset=utf-8',
      'X-Content-Type-Options: nosniff',
      ...extraHeaders,
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
      '',
      body,
    ].join('\r\n'),
  );
}

/**
 * The streaming server: an HTTP server on 127.0.0.1 (a random port unless told), started by start(), serving
 * `/exec/<token>` and `/attach/<token>` (GET or POST) for tokens that getExec()/getAttach() handed out.
 */
export class StreamingServer {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly connections = new Set<Socket>();
  private readonly sessions = new Set<AbortController>();
  private server: Server | undefined;
  private base = '';
  private stopped = false;

  constructor(private readonly options: StreamingServerOptions) {}

  /** `http://127.0.0.1:<port>` once started. */
  get baseUrl(): string {
    return this.base;
  }

  /** Tokens handed out and not yet used (expired ones included until the next insert). */
  get pendingTokens(): number {
    return this.cache.size;
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = createServer((request, response) => this.onRequest(request, response));
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(request, socket, head));
    server.on('connection', (socket: Socket) => {
      this.connections.add(socket);
      socket.once('close', () => this.connections.delete(socket));
    });
    const address = this.options.address ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port ?? 0, address, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    const port = (server.address() as AddressInfo).port;
    this.base = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
    this.options.logger.v(2).info('Local runtime streaming server listening', { url: this.base });
  }

  /** Go's server.GetExec: validates the request and returns its one-time URL. */
  getExec(request: api.ExecRequest): string {
    validateStreams(request);
    return `${this.base}/exec/${this.insert({ kind: 'exec', request })}`;
  }

  /** Go's server.GetAttach. */
  getAttach(request: api.AttachRequest): string {
    validateStreams(request);
    return `${this.base}/attach/${this.insert({ kind: 'attach', request })}`;
  }

  /** Go's server.GetPortForward. */
  getPortForward(request: api.PortForwardRequest): string {
    if (!request.podSandboxId) throw invalidArgument('missing required pod_sandbox_id');
    return `${this.base}/portforward/${this.insert({ kind: 'portforward', request })}`;
  }

  /** Closes the server and every connection; running sessions are aborted. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const session of this.sessions) session.abort();
    const server = this.server;
    this.server = undefined;
    for (const socket of this.connections) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    this.cache.clear();
  }

  /** Go's requestCache.Insert: drops expired tokens, refuses past MaxInFlight, stores a fresh unique token. */
  private insert(value: CachedRequest): string {
    const now = this.options.clock.now();
    for (const [token, entry] of this.cache) {
      if (entry.expiresAt > now) break;
      this.cache.delete(token);
    }
    if (this.cache.size >= STREAMING_MAX_IN_FLIGHT) {
      throw new RuntimeError('ResourceExhausted', 'maximum number of in-flight requests exceeded');
    }
    for (let i = 0; i < 10; i++) {
      const token = randomBytes(TOKEN_BYTES).toString('base64url');
      if (this.cache.has(token)) continue;
      this.cache.set(token, { value, expiresAt: now + STREAMING_TOKEN_TTL_MS });
      return token;
    }
    throw new RuntimeError('Internal', 'failed to generate unique token');
  }

  /** Go's requestCache.Consume: a token works once, and not after it expired. */
  private consume(token: string): CachedRequest | undefined {
    const entry = this.cache.get(token);
    if (!entry) return undefined;
    this.cache.delete(token);
    if (this.options.clock.now() > entry.expiresAt) return undefined;
    return entry.value;
  }

  /** The cached request of a `/exec/<token>` or `/attach/<token>` path, or the HTTP error to answer. */
  private route(request: IncomingMessage): { value: CachedRequest } | { status: number; message: string } {
    const path = new URL(request.url ?? '/', 'http://streaming').pathname;
    const match = /^\/(exec|attach|portforward)\/([^/]+)$/.exec(path);
    if (!match) return { status: 404, message: '404 page not found' };
    if (request.method !== 'GET' && request.method !== 'POST') return { status: 405, message: '405: Method Not Allowed' };
    const value = this.consume(match[2]!);
    if (!value || value.kind !== match[1]) return { status: 404, message: '404 page not found' };
    return { value };
  }

  private onRequest(request: IncomingMessage, response: ServerResponse): void {
    // No upgrade asked for: Go consumes the token, then its handshake refuses the request.
    const routed = this.route(request);
    let status = 400;
    let message = `unable to upgrade: missing upgrade headers in request: ${JSON.stringify(request.headers)}`;
    const headers: Record<string, string | string[]> = { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' };
    const answer = 'status' in routed ? routed : this.handshake(request, routed.value.kind);
    if ('status' in answer) {
      status = answer.status;
      message = answer.message;
      if ('headers' in answer) Object.assign(headers, answer.headers);
    }
    const body = `${message}\n`;
    headers['Content-Length'] = String(Buffer.byteLength(body));
    headers.Connection = 'close';
    response.writeHead(status, headers);
    response.end(body);
  }

  /** Go's httpstream.Handshake: the first protocol the client offers that the server accepts. */
  private handshake(
    request: IncomingMessage,
    kind: CachedRequest['kind'],
  ): { protocol: string } | { status: number; message: string; headers?: Record<string, string[]> } {
    const supported = kind === 'portforward' ? [PortForwardProtocolV1] : SUPPORTED_STREAM_PROTOCOLS;
    const offered = headerValues(request, 'x-stream-protocol-version');
    if (offered.length === 0) return { status: 400, message: 'unable to upgrade: X-Stream-Protocol-Version is required' };
    const protocol = offered.find((p) => supported.includes(p));
    if (!protocol) {
      return {
        status: 403,
        message: `unable to upgrade: unable to negotiate protocol: client supports [${offered.join(' ')}], server accepts [${supported.join(' ')}]`,
        headers: { 'X-Accepted-Stream-Protocol-Versions': supported },
      };
    }
    return { protocol };
  }

  private onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const routed = this.route(request);
    if ('status' in routed) {
      writeHttpError(socket, routed.status, routed.message);
      return;
    }
    const upgrade = (request.headers.upgrade ?? '').toLowerCase();
    if (upgrade === 'websocket') {
      writeHttpError(socket, 400, 'unable to upgrade: the local runtime streams over SPDY/3.1 only, not WebSocket');
      return;
    }
    const shaken = this.handshake(request, routed.value.kind);
    if ('status' in shaken) {
      const extra = Object.entries(shaken.headers ?? {}).flatMap(([name, values]) => values.map((value) => `${name}: ${value}`));
      writeHttpError(socket, shaken.status, shaken.message, extra);
      return;
    }
    const connection = (request.headers.connection ?? '').toLowerCase();
    if (!connection.includes('upgrade') || !upgrade.includes('spdy/3.1')) {
      writeHttpError(socket, 400, `unable to upgrade: missing upgrade headers in request: ${JSON.stringify(request.headers)}`);
      return;
    }
    socket.write(
      ['HTTP/1.1 101 Switching Protocols', 'Connection: Upgrade', 'Upgrade: SPDY/3.1', `X-Stream-Protocol-Version: ${shaken.protocol}`, '', ''].join('\r\n'),
    );
    const spdy = new SpdyConnection(socket, 'server', head);
    const cached = routed.value;
    if (cached.kind === 'portforward') void this.servePortForward(spdy, cached.request);
    else void this.serve(spdy, shaken.protocol, cached);
  }

  /**
   * A port-forward connection (Go: portforward.handleHTTPStreams): the client opens an error and a data stream per
   * forwarded connection (headers `streamType`, `port`, `requestID`); each complete pair is forwarded by the runtime,
   * then both streams are closed, with the failure's message on the error stream. The connection lasts until the
   * client closes it.
   */
  private async servePortForward(spdy: SpdyConnection, request: api.PortForwardRequest): Promise<void> {
    const controller = new AbortController();
    this.sessions.add(controller);
    spdy.once('close', () => controller.abort());
    controller.signal.addEventListener('abort', () => spdy.destroy(), { once: true });
    const pairs = new Map<string, { error?: SpdyStream; data?: SpdyStream; timer: TimerHandle }>();
    spdy.on('stream', (stream) => {
      const portHeader = stream.header('port') ?? '';
      const type = stream.header('streamtype') ?? '';
      const port = /^\d+$/.test(portHeader) ? Number(portHeader) : NaN;
      if (!(port >= 1 && port <= 65535) || (type !== 'error' && type !== 'data')) {
        // Go's httpStreamReceived refuses the stream: it is reset.
        this.options.logger.v(2).info('Port-forward stream refused', { port: portHeader, streamType: type });
        stream.reset();
        return;
      }
      // Clients older than the requestID header: the error stream's id, the data stream's id - 2.
      const requestId = stream.header('requestid') ?? String(type === 'error' ? stream.id : stream.id - 2);
      let pair = pairs.get(requestId);
      if (!pair) {
        const created: { error?: SpdyStream; data?: SpdyStream; timer: TimerHandle } = {
          timer: this.options.clock.setTimeout(() => {
            pairs.delete(requestId);
            void created.error?.write(`(conn=${spdy.role}, request=${requestId}) timed out waiting for streams`);
            void created.error?.end();
            void created.data?.end();
          }, STREAM_CREATION_TIMEOUT_MS),
        };
        pair = created;
        pairs.set(requestId, pair);
      }
      if (pair[type]) {
        this.options.logger.v(2).info('Port-forward stream already assigned', { requestID: requestId, streamType: type });
        stream.reset();
        return;
      }
      pair[type] = stream;
      void stream.reply();
      if (!pair.error || !pair.data) return;
      pair.timer.cancel();
      pairs.delete(requestId);
      void this.forward(request.podSandboxId, port, pair.error, pair.data, controller.signal);
    });
    await spdy.closed;
    for (const pair of pairs.values()) pair.timer.cancel();
    this.sessions.delete(controller);
  }

  private async forward(podSandboxId: string, port: number, error: SpdyStream, data: SpdyStream, signal: AbortSignal): Promise<void> {
    error.input.resume();
    try {
      await this.options.runtime.portForward(podSandboxId, port, { input: data.input, write: (chunk) => void data.write(chunk), signal });
    } catch (failure) {
      await error.write(`error forwarding port ${port} to pod ${podSandboxId}, uid : ${(failure as Error).message}`);
    }
    await Promise.all([data.end(), error.end()]);
  }

  /** One remotecommand session: waits for the client's streams, runs the command, writes the status, closes. */
  private async serve(spdy: SpdyConnection, protocol: string, cached: Exclude<CachedRequest, { kind: 'portforward' }>): Promise<void> {
    const { request } = cached;
    const controller = new AbortController();
    this.sessions.add(controller);
    spdy.once('close', () => controller.abort());
    const expected = 1 + Number(request.stdin) + Number(request.stdout) + Number(request.stderr) + Number(request.tty && protocol !== StreamProtocolV2);
    const streams: Partial<Record<'error' | 'stdin' | 'stdout' | 'stderr' | 'resize', SpdyStream>> = {};
    let timer: TimerHandle | undefined;
    try {
      const ready = await new Promise<boolean>((resolve) => {
        let received = 0;
        timer = this.options.clock.setTimeout(() => resolve(false), STREAM_CREATION_TIMEOUT_MS);
        controller.signal.addEventListener('abort', () => resolve(false), { once: true });
        spdy.on('stream', (stream) => {
          const type = stream.header('streamtype') ?? '';
          const known = type === 'error' || type === 'stdin' || type === 'stdout' || type === 'stderr' || type === 'resize';
          if (known) streams[type] = stream;
          else this.options.logger.v(2).info('Unexpected stream type', { streamType: type });
          void stream.reply().then(() => {
            if (known && ++received === expected) resolve(true);
          });
        });
      });
      timer?.cancel();
      if (!ready) {
        if (!controller.signal.aborted) this.options.logger.info('Timed out waiting for client to create streams');
        spdy.destroy();
        return;
      }
      // The resize stream's terminal sizes are read and dropped: the local runtime runs no terminals.
      streams.resize?.input.resume();
      const io: StreamingIO = {
        stdin: streams.stdin?.input,
        stdout: streams.stdout ? (data) => void streams.stdout!.write(data) : undefined,
        stderr: streams.stderr ? (data) => void streams.stderr!.write(data) : undefined,
        tty: request.tty,
        signal: controller.signal,
      };
      if (!io.stdin) streams.stdin?.input.resume();
      let status: Status;
      try {
        if (cached.kind === 'exec') {
          const code = await this.options.runtime.exec(request.containerId, cached.request.cmd, io);
          status = code === 0 ? { status: 'Success' } : nonZeroExitStatus(cached.request.cmd, code);
        } else {
          await this.options.runtime.attach(request.containerId, io);
          status = { status: 'Success' };
        }
      } catch (error) {
        const what = cached.kind === 'exec' ? 'error executing command in container' : 'error attaching to container';
        status = internalErrorStatus(`${what}: ${(error as Error).message}`);
      }
      await Promise.all([streams.stdout?.end(), streams.stderr?.end()]);
      const error = streams.error;
      if (error) {
        // v4 writes the whole status as JSON; v2 and v3 only a failure's message.
        if (protocol === StreamProtocolV4) await error.write(statusJson(status));
        else if (status.status !== 'Success') await error.write(status.message ?? '');
        await error.end();
      }
      // As Go's server: the client closes the connection once it has read the streams to their end.
      await spdy.close({ waitForPeer: true });
    } finally {
      timer?.cancel();
      this.sessions.delete(controller);
      if (spdy.isOpen && controller.signal.aborted) spdy.destroy();
    }
  }
}
