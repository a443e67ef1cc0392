// A fault-injecting relay on the CRI socket (issue 33, scenario 2 "containerd slowed down"): the kubelet dials the
// proxy's socket, every gRPC call is relayed at the HTTP/2 level (no proto knowledge) to the runtime's socket, and
// a fault set at run time delays, drops or hangs the calls it matches.
import http2 from 'node:http2';
import type {
  ClientHttp2Session,
  ClientHttp2Stream,
  Http2Server,
  IncomingHttpHeaders,
  OutgoingHttpHeaders,
  ServerHttp2Session,
  ServerHttp2Stream,
} from 'node:http2';
import { connect as netConnect } from 'node:net';
import { mkdirSync, unlinkSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseDuration, realClock, removeStaleSocket, type Clock, type TimerHandle } from '@kubelet-ts/core';

/** A fault the proxy applies to the calls it matches; set with {@link CriChaosProxy.setFault}. */
export interface CriFault {
  /** Delay each matching call this long before it is forwarded. */
  delayMs?: number;
  /** Extra random delay 0..jitterMs. */
  jitterMs?: number;
  /** Fraction 0..1 of matching calls answered at once with grpc-status 14 UNAVAILABLE ("dropped by the CRI chaos proxy"). */
  dropRate?: number;
  /**
   * Matching calls are held, neither forwarded nor answered: a hung runtime. A call whose client gives up (its
   * deadline) is dropped; the calls still held when the fault is cleared or changed are forwarded then, as a wedged
   * runtime that comes back answers what it had queued.
   */
  hang?: boolean;
  /** Which methods (e.g. ['RunPodSandbox', 'ListContainers']); default every method. */
  methods?: string[];
}

/** What the proxy saw since it started or since {@link CriChaosProxy.resetStats}. */
export interface CriProxyStats {
  /** Calls received (every method, faulted or not). */
  calls: number;
  /** Calls delayed by a fault's delayMs/jitterMs. */
  delayed: number;
  /** Calls answered UNAVAILABLE by a fault's dropRate. */
  dropped: number;
  /** Calls held by a fault's hang. */
  hung: number;
  /** Calls received per method name (e.g. `ListContainers`). */
  byMethod: Record<string, number>;
  /** Calls not finished yet on both sides (a server stream counts until it is cancelled or ends). Not reset. */
  inFlight: number;
}

export interface CriChaosProxyOptions {
  /** Where the proxy listens (a unix socket path; a stale socket left there is replaced). */
  socketPath: string;
  /** The runtime's socket: `unix:///run/containerd/containerd.sock` or `/run/containerd/containerd.sock`. */
  upstream: string;
  /** Draws drops and jitter; default Math.random. */
  random?: () => number;
  /** Times delays; default the real clock. */
  clock?: Pick<Clock, 'now' | 'setTimeout'>;
}

/** The grpc-message of a call dropped by a fault. */
export const CRI_PROXY_DROP_MESSAGE = 'dropped by the CRI chaos proxy';

const GRPC_UNAVAILABLE = 14;
const { NGHTTP2_CANCEL, NGHTTP2_NO_ERROR, NGHTTP2_FLAG_END_STREAM } = http2.constants;
/** Headers HTTP/2 forbids relaying (connection-specific); gRPC never sends them, a relay must not forward them. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'http2-settings']);
/** Room for CRI messages up to cri-client's 16 MiB limit in flight on one session. */
const MAX_SESSION_MEMORY_MB = 64;
const grpcTimeoutUnitMs: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** `unix:///x.sock`, `unix:/x.sock` or `/x.sock` -> `/x.sock`. */
export function unixSocketPath(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('unix:')) return endpoint.slice('unix:'.length);
  if (endpoint.includes('://')) throw new Error(`CRI chaos proxy: upstream ${endpoint} is not a unix socket endpoint`);
  return endpoint;
}

/** gRPC's grpc-message encoding: bytes outside printable ASCII, and '%', percent-encoded (UTF-8). */
export function encodeGrpcMessage(message: string): string {
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function relayableHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/** The grpc-timeout header (e.g. `1999871u`) less the time the proxy held the call, in whole ms (at least 1). */
export function remainingGrpcTimeout(value: string, elapsedMs: number): string {
  const match = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (!match || elapsedMs <= 0) return value;
  const remaining = Number(match[1]) * grpcTimeoutUnitMs[match[2]] - elapsedMs;
  return `${Math.max(1, Math.ceil(remaining))}m`;
}

function statusHeaders(code: number, message: string): OutgoingHttpHeaders {
  return { 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(message) };
}

/** Answers a call that has not responded yet with a gRPC status (a trailers-only response). */
function answerStatus(stream: ServerHttp2Stream, code: number, message: string): void {
  if (stream.closed || stream.destroyed || stream.headersSent) return;
  stream.respond({ ':status': 200, 'content-type': 'application/grpc', ...statusHeaders(code, message) }, { endStream: true });
}

function matches(fault: CriFault, method: string): boolean {
  return !fault.methods || fault.methods.length === 0 || fault.methods.includes(method);
}

/**
 * An h2c relay on a unix socket in front of a CRI runtime's socket, injecting faults on demand. Every incoming
 * stream goes to one upstream HTTP/2 session (re-dialled when it closes, so a restarted runtime is found again):
 * request headers and body, response headers, data and trailers, server streams and RST_STREAM both ways are
 * relayed. With the runtime down, calls are answered UNAVAILABLE naming the upstream socket.
 */
export class CriChaosProxy {
  /** The endpoint to give the kubelet: `unix://<socketPath>`. */
  readonly endpoint: string;
  private readonly upstreamPath: string;
  private readonly random: () => number;
  private readonly clock: Pick<Clock, 'now' | 'setTimeout'>;
  private readonly sessions = new Set<ServerHttp2Session>();
  /** Calls held by a fault (hang, or a delay not yet over), with how to release them. */
  private readonly parked = new Map<ServerHttp2Stream, () => void>();
  /** Hung calls (a subset of parked), with how to forward them when the hang ends. */
  private readonly hungCalls = new Map<ServerHttp2Stream, () => void>();
  private upstream: ClientHttp2Session | undefined;
  private upstreamError: Error | undefined;
  private fault: CriFault | undefined;
  private counters: Omit<CriProxyStats, 'inFlight'> = { calls: 0, delayed: 0, dropped: 0, hung: 0, byMethod: {} };
  private inFlight = 0;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly server: Http2Server,
    private readonly socketPath: string,
    options: CriChaosProxyOptions,
  ) {
    this.endpoint = `unix://${socketPath}`;
    this.upstreamPath = resolve(unixSocketPath(options.upstream));
    this.random = options.random ?? Math.random;
    this.clock = options.clock ?? realClock;
    server.on('session', (session) => {
      this.sessions.add(session);
      session.on('close', () => this.sessions.delete(session));
      session.on('error', () => {}); // a client gone mid-write; its streams close on their own
    });
    server.on('stream', (stream, headers) => this.onStream(stream, headers));
  }

  /** Listens on options.socketPath; the upstream is dialled at the first call (it may be down until then). */
  static async start(options: CriChaosProxyOptions): Promise<CriChaosProxy> {
    const socketPath = resolve(unixSocketPath(options.socketPath));
    mkdirSync(dirname(socketPath), { recursive: true });
    await removeStaleSocket(socketPath);
    const server = http2.createServer({ maxSessionMemory: MAX_SESSION_MEMORY_MB });
    const proxy = new CriChaosProxy(server, socketPath, options);
    await new Promise<void>((resolvePromise, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolvePromise();
      });
    });
    server.on('error', () => {}); // after listening, errors belong to sessions
    return proxy;
  }

  /** Sets (or with undefined clears) the fault; it applies to calls that start after this. */
  setFault(fault: CriFault | undefined): void {
    this.fault = fault ? { ...fault, methods: fault.methods ? [...fault.methods] : undefined } : undefined;
    for (const forward of [...this.hungCalls.values()]) forward();
  }

  stats(): CriProxyStats {
    return { ...this.counters, byMethod: { ...this.counters.byMethod }, inFlight: this.inFlight };
  }

  resetStats(): void {
    this.counters = { calls: 0, delayed: 0, dropped: 0, hung: 0, byMethod: {} };
  }

  /** Stops listening, answers held calls UNAVAILABLE, closes both sides' sessions and removes the socket. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    for (const release of [...this.parked.values()]) release();
    // Calls being relayed (server streams included) fail UNAVAILABLE when their upstream stream goes.
    this.upstream?.destroy();
    this.upstream = undefined;
    const closed = new Promise<void>((resolvePromise) => this.server.close(() => resolvePromise()));
    for (const session of this.sessions) session.close();
    await closed;
    try {
      unlinkSync(this.socketPath);
    } catch {
      // the server removed it
    }
  }

  private onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => {}); // the client reset or went away; 'close' handles it
    const path = String(headers[':path'] ?? '');
    const method = path.slice(path.lastIndexOf('/') + 1);
    this.counters.calls++;
    this.counters.byMethod[method] = (this.counters.byMethod[method] ?? 0) + 1;
    this.inFlight++;
    const started = this.clock.now();
    let upstreamOpen = false;
    let downstreamOpen = true;
    const settle = (): void => {
      if (!upstreamOpen && !downstreamOpen) this.inFlight--;
    };
    stream.once('close', () => {
      downstreamOpen = false;
      settle();
    });
    const forward = (): void => {
      const request = this.forward(stream, headers, started);
      if (!request) return;
      upstreamOpen = true;
      request.once('close', () => {
        upstreamOpen = false;
        settle();
      });
    };
    if (this.closing) {
      answerStatus(stream, GRPC_UNAVAILABLE, 'the CRI chaos proxy is closing');
      return;
    }
    const fault = this.fault;
    if (!fault || !matches(fault, method)) {
      forward();
      return;
    }
    if (fault.dropRate !== undefined && fault.dropRate > 0 && this.random() < fault.dropRate) {
      this.counters.dropped++;
      stream.resume();
      answerStatus(stream, GRPC_UNAVAILABLE, CRI_PROXY_DROP_MESSAGE);
      return;
    }
    if (fault.hang) {
      this.counters.hung++;
      this.park(stream, undefined, forward);
      return;
    }
    const delayMs = Math.max(0, fault.delayMs ?? 0) + (fault.jitterMs && fault.jitterMs > 0 ? this.random() * fault.jitterMs : 0);
    if (delayMs <= 0) {
      forward();
      return;
    }
    this.counters.delayed++;
    this.park(stream, delayMs, forward);
  }

  /**
   * Holds a call: with delayMs, until the delay is over; without (a hang), until the fault changes. Then `onRelease`
   * (the forward) runs. Either way the client's cancel frees it, and close() answers it UNAVAILABLE.
   */
  private park(stream: ServerHttp2Stream, delayMs: number | undefined, onRelease: () => void): void {
    const unpark = (): void => {
      timer?.cancel();
      this.parked.delete(stream);
      this.hungCalls.delete(stream);
      stream.off('close', unpark);
    };
    this.parked.set(stream, () => {
      unpark();
      answerStatus(stream, GRPC_UNAVAILABLE, 'the CRI chaos proxy closed');
    });
    stream.once('close', unpark);
    // The call's body stays buffered in the stream until it is relayed (a CRI request fits in the stream's window).
    if (delayMs === undefined) {
      this.hungCalls.set(stream, () => {
        unpark();
        if (!stream.closed && !stream.destroyed) onRelease();
      });
    }
    const timer: TimerHandle | undefined =
      delayMs === undefined
        ? undefined
        : this.clock.setTimeout(() => {
            unpark();
            if (!stream.closed && !stream.destroyed) onRelease();
          }, delayMs);
  }

  private upstreamSession(): ClientHttp2Session {
    const current = this.upstream;
    if (current && !current.closed && !current.destroyed) return current;
    const session = http2.connect('http://localhost', {
      createConnection: () => netConnect(this.upstreamPath),
      maxSessionMemory: MAX_SESSION_MEMORY_MB,
    });
    const forget = (): void => {
      if (this.upstream === session) this.upstream = undefined;
    };
    session.on('error', (error: Error) => {
      this.upstreamError = error;
      forget();
    });
    session.on('close', forget);
    // A runtime shutting down sends GOAWAY: its calls in flight finish, new ones dial again.
    session.on('goaway', forget);
    this.upstream = session;
    return session;
  }

  private unavailableMessage(cause: Error | undefined): string {
    const why = cause?.cause instanceof Error ? cause.cause.message : cause?.message;
    return `connection error: upstream unix://${this.upstreamPath} unavailable${why ? `: ${why}` : ''}`;
  }

  /** Relays one call upstream; answers it UNAVAILABLE (and returns undefined) if that cannot even start. */
  private forward(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, started: number): ClientHttp2Stream | undefined {
    if (stream.closed || stream.destroyed) return undefined;
    const out = relayableHeaders(headers);
    const timeout = headers['grpc-timeout'];
    if (typeof timeout === 'string') out['grpc-timeout'] = remainingGrpcTimeout(timeout, this.clock.now() - started);
    let session: ClientHttp2Session;
    let request: ClientHttp2Stream;
    try {
      session = this.upstreamSession();
      request = session.request(out, { endStream: false });
    } catch (error) {
      this.upstream?.destroy();
      this.upstream = undefined;
      answerStatus(stream, GRPC_UNAVAILABLE, this.unavailableMessage(error as Error));
      return undefined;
    }
    let trailers: IncomingHttpHeaders | undefined;
    let failure: Error | undefined;
    let trailersOnly = false;
    request.on('error', (error: Error) => {
      failure = error;
    });
    request.on('response', (responseHeaders: IncomingHttpHeaders, flags: number) => {
      if (stream.closed || stream.destroyed) return;
      if (flags & NGHTTP2_FLAG_END_STREAM) {
        trailersOnly = true;
        stream.respond(relayableHeaders(responseHeaders), { endStream: true });
        return;
      }
      stream.respond(relayableHeaders(responseHeaders), { waitForTrailers: true });
      request.pipe(stream);
    });
    request.on('trailers', (received: IncomingHttpHeaders) => {
      trailers = received;
    });
    stream.on('wantTrailers', () => {
      if (failure || !trailers) stream.sendTrailers(statusHeaders(GRPC_UNAVAILABLE, this.unavailableMessage(failure ?? this.upstreamError)));
      else stream.sendTrailers(relayableHeaders(trailers));
    });
    request.on('close', () => {
      if (trailersOnly || stream.closed || stream.destroyed) return;
      if (trailers && !failure && request.rstCode === NGHTTP2_NO_ERROR) return; // the pipe ends the stream
      const sessionGone = failure !== undefined || session.destroyed || session.closed;
      if (!sessionGone && request.rstCode !== undefined && request.rstCode !== NGHTTP2_NO_ERROR) {
        stream.close(request.rstCode); // the runtime reset the stream: so does the proxy
        return;
      }
      failure ??= this.upstreamError ?? new Error('the upstream stream closed');
      if (!stream.headersSent) {
        answerStatus(stream, GRPC_UNAVAILABLE, this.unavailableMessage(failure));
        return;
      }
      request.unpipe(stream);
      if (!stream.writableEnded) stream.end(); // wantTrailers sends UNAVAILABLE
    });
    // The client's cancel (RST_STREAM) or disappearance resets the upstream stream too.
    stream.once('close', () => {
      if (!request.closed && !request.destroyed) request.close(stream.rstCode && stream.rstCode !== NGHTTP2_NO_ERROR ? stream.rstCode : NGHTTP2_CANCEL);
    });
    stream.pipe(request);
    return request;
  }
}


/** The CRI chaos proxy CLI's options (src/cri-proxy-cli.ts). */
export interface CriProxyCliOptions {
  listen: string;
  upstream: string;
  /** Undefined when no fault flag was given. */
  fault: CriFault | undefined;
}

/** The CLI's usage line. */
export const CRI_PROXY_USAGE =
  'usage: cri-proxy-cli --listen <socket> --upstream unix:///<runtime socket> [--delay 200ms] [--jitter 100ms] [--drop 0.1] [--hang] [--methods A,B]';

/** Parses the CLI's arguments; throws an error naming the bad flag. */
export function parseCriProxyArgs(args: string[]): CriProxyCliOptions {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      listen: { type: 'string' },
      upstream: { type: 'string' },
      delay: { type: 'string' },
      jitter: { type: 'string' },
      drop: { type: 'string' },
      hang: { type: 'boolean' },
      methods: { type: 'string' },
    },
  });
  if (!values.listen || !values.upstream) throw new Error(CRI_PROXY_USAGE);
  const duration = (flag: string, text: string | undefined): number | undefined => {
    if (text === undefined) return undefined;
    const ms = parseDuration(text);
    if (ms < 0) throw new Error(`--${flag} must not be negative: ${text}`);
    return ms;
  };
  const fault: CriFault = {};
  const delayMs = duration('delay', values.delay);
  const jitterMs = duration('jitter', values.jitter);
  if (delayMs !== undefined) fault.delayMs = delayMs;
  if (jitterMs !== undefined) fault.jitterMs = jitterMs;
  if (values.drop !== undefined) {
    const rate = Number(values.drop);
    if (values.drop.trim() === '' || !Number.isFinite(rate) || rate < 0 || rate > 1) throw new Error(`--drop must be a fraction 0..1: ${values.drop}`);
    fault.dropRate = rate;
  }
  if (values.hang) fault.hang = true;
  const methods = values.methods?.split(',').map((m) => m.trim()).filter((m) => m !== '');
  if (methods?.length) fault.methods = methods;
  const hasFault = fault.delayMs !== undefined || fault.jitterMs !== undefined || fault.dropRate !== undefined || fault.hang;
  if (!hasFault && fault.methods) throw new Error('--methods needs a fault (--delay, --jitter, --drop or --hang)');
  return { listen: values.listen, upstream: values.upstream, fault: hasFault ? fault : undefined };
}
