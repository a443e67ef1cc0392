import { createServer as createHttpServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Writable, type Duplex } from 'node:stream';
import type { SecureVersion } from 'node:tls';
import type { V1Pod } from '@kubernetes/client-node';
import { errorText, realClock, type Clock, type Logger } from '@kubelet-ts/core';
import { isNotFound } from '@kubelet-ts/cri-client';
import { LogOptionsError, parseLogOptions, type LogOptions } from '@kubelet-ts/container-logs';
import { serveHealthz, type HealthzCheck } from './healthz.js';
import { serveNodeLogs } from './node-logs.js';
import { ProfilingHandler } from './pprof.js';
import { cleanPath, requestPath } from './auth/attributes.js';
import { muxRedirect } from './auth/filter.js';
import { isUpgradeRequest, parsePortForwardPorts, parseStreamOptions, proxyUpgradedConnection, StreamRequestError, type StreamOptions } from './streaming.js';

/**
 * What the server needs of the kubelet (Go: server.HostInterface). Pod lookups are by namespace and name; the
 * streaming calls return the runtime's streaming URL, which the server proxies.
 */
export interface ServerHost {
  healthChecks: HealthzCheck[];
  /** The pods bound to this kubelet, in their API JSON form, with the kubelet's latest status. */
  getPods(): object[];
  /** The pods the runtime runs, in their API JSON form (Go: GetRunningPods). */
  getRunningPods(): Promise<object[]>;
  getPodByName(namespace: string, name: string): V1Pod | undefined;
  /** The kubelet's configuration, served under `kubeletconfig` at /configz. */
  getConfigz(): unknown;
  /** The machine facts served at /spec (cadvisor's MachineInfo). */
  getMachineInfo(): Promise<unknown>;
  /** Writes the container's log; errors (a container with no logs yet, no previous container) become 400s. */
  getContainerLogs(pod: V1Pod, containerName: string, options: LogOptions, out: Writable, signal: AbortSignal): Promise<void>;
  getExec(pod: V1Pod, podUid: string, containerName: string, cmd: string[], streams: StreamOptions): Promise<string>;
  getAttach(pod: V1Pod, podUid: string, containerName: string, streams: StreamOptions): Promise<string>;
  getPortForward(pod: V1Pod, podUid: string, ports: number[]): Promise<string>;
  /** Runs a command and returns its combined output (Go: RunInContainer). */
  runInContainer(pod: V1Pod, podUid: string, containerName: string, cmd: string[]): Promise<Buffer>;
  /** The Summary API (stats/v1alpha1). */
  getStatsSummary?(onlyCpuAndMemory: boolean): Promise<unknown>;
  /** The text of /metrics/resource and /metrics/cadvisor. */
  resourceMetrics?(): Promise<string>;
  cadvisorMetrics?(): Promise<string>;
}

/** Thrown by a ServerHost for a pod or container it does not have: the server answers 404 with the message. */
export class HostNotFoundError extends Error {
  override name = 'HostNotFoundError';
}

/** Authentication and authorization in front of every route; false when it answered the request itself. */
export interface RequestGate {
  checkRequest(request: IncomingMessage, response: ServerResponse): Promise<boolean>;
}

/** A prom-client Registry, or anything that renders the exposition format. */
export interface MetricsSource {
  contentType: string;
  metrics(): Promise<string>;
}

/** Labels of the kubelet's HTTP request metrics (Go: kubelet_http_requests_total and friends). */
export interface HttpRequestLabels {
  method: string;
  path: string;
  serverType: 'readonly' | 'readwrite';
  longRunning: boolean;
}

export interface ServerTLSOptions {
  /**
   * The serving certificate and key. Absent while a serving certificate is still to be issued (serverTLSBootstrap):
   * handshakes fail until setCertificate() hands one over, as Go's "no serving certificate available for the kubelet".
   */
  certPem?: string;
  keyPem?: string;
  /** clientCAFile's contents: client certificates chaining to it authenticate (verified by the authenticator). */
  clientCAPem?: string;
  minVersion?: SecureVersion;
  /** OpenSSL cipher names, joined with ':'. */
  ciphers?: string;
}

export interface KubeletServerOptions {
  host: ServerHost;
  address: string;
  port: number;
  /** HTTPS with these; plain HTTP (the read-only port) without. */
  tls?: ServerTLSOptions;
  /** Required on the secure port; the read-only port has none (Go: s.auth == nil). */
  gate?: RequestGate;
  /** The read-only port serves only Go's default handlers (healthz, pods, stats, metrics, spec). */
  readOnly?: boolean;
  /** Go: enableDebuggingHandlers (default true): run, exec, attach, portForward, containerLogs, runningpods, configz. */
  enableDebuggingHandlers?: boolean;
  /** Go: enableSystemLogHandler (default true): /logs/. */
  enableSystemLogHandler?: boolean;
  /** The directory /logs/ serves. Default /var/log. */
  nodeLogDir?: string;
  /**
   * Go 1.20: enableCAdvisorJSONEndpoints (default false, deprecated): /spec/, cadvisor's MachineInfo. Off, /spec is
   * not a path of the server at all (404 before authentication), as in Go 1.20 and in Go since 1.21.
   */
  enableCAdvisorJSONEndpoints?: boolean;
  /**
   * Go: enableProfilingHandler (default true; served only with the debugging handlers): /debug/pprof/cmdline and
   * /debug/pprof/profile (a V8 CPU profile over `seconds`, default 30). Off, /debug/pprof/ answers Go's 405.
   */
  enableProfilingHandler?: boolean;
  /**
   * Go: enableDebugFlagsHandler with klog's verbosity setter: PUT /debug/flags/v sets the logger's verbosity.
   * Absent, /debug/flags/v answers Go's 405 "flags endpoint is disabled.".
   */
  setLogVerbosity?: (level: number) => void;
  /** Times the CPU profile. Default the real clock. */
  clock?: Clock;
  metrics?: MetricsSource;
  probeMetrics?: MetricsSource;
  /** Called as each request starts; the returned function when it ends. */
  onHttpRequest?: (labels: HttpRequestLabels) => () => void;
  logger: Logger;
}

const METRIC_BUCKETS = new Set([
  'healthz', 'pods', 'stats', 'metrics', 'metrics/cadvisor', 'metrics/probes', 'metrics/resource', 'spec',
  'run', 'exec', 'attach', 'portForward', 'containerLogs', 'configz', 'debug', 'runningpods', 'logs',
]);
const METRIC_METHODS = new Set(['OPTIONS', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'TRACE', 'CONNECT']);
const LONG_RUNNING = new Set(['exec', 'attach', 'portforward', 'debug']);

/** Go's getURLRootPath: "metrics/xxx" for metrics paths, the first segment otherwise. */
export function metricsPathBucket(path: string): string {
  const parts = path.replace(/^\//, '').split('/');
  const root = parts[0] === 'metrics' && parts.length > 1 ? `metrics/${parts[1]}` : parts[0]!;
  return METRIC_BUCKETS.has(root) ? root : 'other';
}

/** A request answered with an HTTP status and a plain-text message (Go: response.WriteError). */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Handler = (context: RequestContext) => Promise<void> | void;

interface RequestContext {
  request: IncomingMessage;
  response: ServerResponse;
  url: URL;
  params: string[];
  /** Set for requests that arrived as protocol upgrades: the raw connection and what was read past the head. */
  upgrade?: { socket: Duplex; head: Buffer };
}

interface Route {
  methods: string[];
  pattern: RegExp;
  handler: Handler;
}

/** Every method: Go's mux.Handle'd handlers (healthz, metrics, configz, flags) do not look at the method. */
const ANY_METHOD = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'CONNECT', 'TRACE'];

type MuxDecision = { redirect: string } | { found: boolean };

/**
 * The kubelet's server (Go: pkg/kubelet/server): the secure port (10250, TLS, every request authenticated and
 * authorized) or the read-only port (10255, plain HTTP, no authentication, Go's default handlers only).
 */
export class KubeletServer {
  private server?: Server;
  private readonly routes: Route[] = [];
  /**
   * Go's http.ServeMux patterns the kubelet registers (Go: restful.Container.Add and Handle): exact paths, and
   * subtrees ending in '/'. A path none matches is a 404 before authentication; one that matches is authenticated
   * and authorized before its route is looked up, so 404 and 405 below a registered path are answered only to a
   * client allowed to ask.
   */
  private readonly patterns = new Set<string>();
  /** Upgraded connections leave the HTTP server's bookkeeping: closed here when the server stops. */
  private readonly upgradedSockets = new Set<Duplex>();
  private readonly serverType: 'readonly' | 'readwrite';

  constructor(private readonly options: KubeletServerOptions) {
    if (!options.readOnly && !options.gate) throw new Error('the kubelet server needs authentication and authorization unless it is the read-only server');
    this.serverType = options.gate ? 'readwrite' : 'readonly';
    this.installDefaultHandlers();
    if (!options.readOnly) {
      if (options.enableDebuggingHandlers ?? true) {
        this.installDebuggingHandlers();
        // Go serves logs, pprof and the flags only with the debugging handlers (kubernetes#87273).
        this.installSystemLogHandler(options.enableSystemLogHandler ?? true);
        this.installProfilingHandler(options.enableProfilingHandler ?? true);
        this.installDebugFlagsHandler();
      } else {
        this.installDebuggingDisabledHandlers();
      }
    }
  }

  /** Listens; resolves with the bound port (useful with port 0). */
  async start(): Promise<number> {
    const handle = (request: IncomingMessage, response: ServerResponse) => void this.serve(request, response);
    const tls = this.options.tls;
    const server = tls
      ? createHttpsServer(
          {
            ...this.secureContextOptions(tls),
            // Client certificates are optional and checked by the x509 authenticator; unverified ones fall through.
            requestCert: tls.clientCAPem !== undefined,
            rejectUnauthorized: false,
          },
          handle,
        )
      : createHttpServer(handle);
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.upgradedSockets.add(socket);
      socket.once('close', () => this.upgradedSockets.delete(socket));
      const response = new ServerResponse(request);
      response.assignSocket(socket as never);
      response.shouldKeepAlive = false;
      // A request answered here rather than proxied ends its connection once the answer is out.
      response.once('finish', () => socket.end());
      void this.serve(request, response, { socket, head });
    });
    server.on('clientError', (_error, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      else socket.destroy();
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.address, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) => this.options.logger.error('Kubelet server error', error));
    return (server.address() as AddressInfo).port;
  }

  /** Serves a new certificate (a rotated one) to new connections; established ones keep theirs. */
  setCertificate(certPem: string, keyPem: string): void {
    const tls = this.options.tls;
    if (!tls) throw new Error('the read-only server has no certificate');
    tls.certPem = certPem;
    tls.keyPem = keyPem;
    const server = this.server as (Server & { setSecureContext?: (options: object) => void }) | undefined;
    server?.setSecureContext?.(this.secureContextOptions(tls));
  }

  /**
   * Verifies client certificates of new connections against this CA bundle (a reloaded --client-ca-file);
   * established connections keep the bundle they were verified with.
   */
  setClientCA(clientCAPem: string): void {
    const tls = this.options.tls;
    if (!tls) throw new Error('the read-only server has no client CA');
    if (tls.clientCAPem === undefined) throw new Error('the server was started without a client CA: it does not ask for client certificates');
    tls.clientCAPem = clientCAPem;
    const server = this.server as (Server & { setSecureContext?: (options: object) => void }) | undefined;
    server?.setSecureContext?.(this.secureContextOptions(tls));
  }

  private secureContextOptions(tls: ServerTLSOptions) {
    return {
      cert: tls.certPem,
      key: tls.keyPem,
      ca: tls.clientCAPem,
      minVersion: tls.minVersion,
      ciphers: tls.ciphers,
    };
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const socket of this.upgradedSockets) socket.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Routes one request (Go: Server.ServeHTTP with its metrics, then the restful container). */
  async serve(request: IncomingMessage, response: ServerResponse, upgrade?: { socket: Duplex; head: Buffer }): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://kubelet');
    const bucket = metricsPathBucket(url.pathname);
    const done = this.options.onHttpRequest?.({
      method: METRIC_METHODS.has(request.method ?? '') ? request.method! : 'other',
      path: bucket,
      serverType: this.serverType,
      longRunning: LONG_RUNNING.has(bucket),
    });
    try {
      // Go's ServeMux first: an unclean path or a subtree root without its slash is redirected and a path it does not
      // know is a 404, before authentication. Below a registered path the request is authorized as itself, and only
      // then is its route looked up (go-restful runs the container's filters before it answers 404 or 405).
      const path = requestPath(request);
      if (path === undefined) throw new HttpError(400, '400 Bad Request');
      const mux = this.muxLookup(request.method ?? 'GET', path);
      if ('redirect' in mux) {
        const redirect = muxRedirect(request, mux.redirect);
        response.writeHead(redirect.statusCode, redirect.headers).end(redirect.body);
        return;
      }
      if (!mux.found) throw new HttpError(404, '404 page not found');
      if (this.options.gate && !(await this.options.gate.checkRequest(request, response))) return;
      const route = this.match(request.method ?? 'GET', url.pathname);
      await route.handler({ request, response, url, params: route.params, upgrade });
    } catch (error) {
      this.writeError(response, error);
    } finally {
      done?.();
      if (upgrade && !response.headersSent && !response.writableEnded) upgrade.socket.destroy();
    }
  }

  /** Go's ServeMux.Handler (Go 1.19/1.20) over the registered patterns. */
  private muxLookup(method: string, path: string): MuxDecision {
    // CONNECT requests are not canonicalized.
    if (method === 'CONNECT') return this.shouldRedirect(path) ? { redirect: `${path}/` } : { found: this.muxMatches(path) };
    const clean = cleanPath(path);
    if (this.shouldRedirect(clean)) return { redirect: `${clean}/` };
    if (clean !== path) return { redirect: clean };
    return { found: this.muxMatches(path) };
  }

  private isExactPattern(path: string): boolean {
    if (this.patterns.has(path)) return true;
    // Go: healthz.InstallHandler registers /healthz/<name> for each check.
    return path.startsWith('/healthz/') && this.options.host.healthChecks.some((check) => `/healthz/${check.name}` === path);
  }

  private muxMatches(path: string): boolean {
    if (this.isExactPattern(path)) return true;
    for (const pattern of this.patterns) if (pattern.endsWith('/') && path.startsWith(pattern)) return true;
    return false;
  }

  /** Go: redirectToPathSlash, for /tree when only /tree/ is registered. */
  private shouldRedirect(path: string): boolean {
    if (path.endsWith('/') || this.isExactPattern(path)) return false;
    return this.patterns.has(`${path}/`);
  }

  /** Registers Go's mux patterns: a restful WebService at `root` (Go: Container.Add), or exact paths (Handle). */
  private mux(...patterns: string[]): void {
    for (const pattern of patterns) this.patterns.add(pattern);
  }

  private webService(root: string): void {
    this.mux(root, ...(root.endsWith('/') ? [] : [`${root}/`]));
  }

  private match(method: string, path: string): { handler: Handler; params: string[] } {
    let methodNotAllowed = false;
    for (const route of this.routes) {
      const match = route.pattern.exec(path);
      if (!match) continue;
      if (!route.methods.includes(method)) {
        methodNotAllowed = true;
        continue;
      }
      return { handler: route.handler, params: match.slice(1).map((p) => (p === undefined ? '' : safeDecode(p))) };
    }
    if (methodNotAllowed) throw new HttpError(405, '405: Method Not Allowed');
    // go-restful's answer for a path under a web service with no route for it.
    throw new HttpError(404, '404: Page Not Found');
  }

  private route(methods: string[], pattern: RegExp, handler: Handler): void {
    this.routes.push({ methods, pattern, handler });
  }

  private installDefaultHandlers(): void {
    const host = this.options.host;
    this.mux('/healthz');
    this.route(ANY_METHOD, /^\/healthz(\/[^/]*)?$/, ({ request, response }) => {
      if (!serveHealthz(host.healthChecks, request, response)) throw new HttpError(404, '404 page not found');
    });
    this.webService('/pods');
    this.route(['GET'], /^\/pods\/?$/, ({ response }) => writeJson(response, podList(host.getPods())));
    // Go 1.20 without enableCAdvisorJSONEndpoints: /stats/summary is the only route below /stats/.
    this.webService('/stats/');
    this.route(['GET', 'POST'], /^\/stats\/summary\/?$/, async ({ request, response, url }) => {
      if (!host.getStatsSummary) throw new HttpError(404, '404 page not found');
      // Go: only_cpu_and_memory as a query parameter or in a POST body.
      let onlyCpuAndMemory = url.searchParams.get('only_cpu_and_memory') === 'true';
      if (request.method === 'POST') {
        const body = await readBody(request);
        if (body.length > 0) {
          try {
            onlyCpuAndMemory = (JSON.parse(body.toString('utf8')) as { only_cpu_and_memory?: boolean }).only_cpu_and_memory === true || onlyCpuAndMemory;
          } catch (error) {
            throw new HttpError(400, `failed to parse request body: ${(error as Error).message}`);
          }
        }
      }
      writeJson(response, await host.getStatsSummary(onlyCpuAndMemory));
    });
    this.mux('/metrics', '/metrics/cadvisor', '/metrics/resource', '/metrics/probes');
    this.route(ANY_METHOD, /^\/metrics$/, ({ response }) => this.writeMetrics(response, this.options.metrics));
    this.route(ANY_METHOD, /^\/metrics\/probes$/, ({ response }) => this.writeMetrics(response, this.options.probeMetrics));
    this.route(ANY_METHOD, /^\/metrics\/resource$/, async ({ response }) => {
      if (!host.resourceMetrics) throw new HttpError(404, '404 page not found');
      writeText(response, 200, await host.resourceMetrics(), PROMETHEUS_TEXT);
    });
    this.route(ANY_METHOD, /^\/metrics\/cadvisor$/, async ({ response }) => {
      if (!host.cadvisorMetrics) throw new HttpError(404, '404 page not found');
      writeText(response, 200, await host.cadvisorMetrics(), PROMETHEUS_TEXT);
    });
    if (this.options.enableCAdvisorJSONEndpoints) {
      this.webService('/spec/');
      this.route(['GET'], /^\/spec\/$/, async ({ response }) => writeJson(response, await host.getMachineInfo()));
    }
  }

  private installDebuggingHandlers(): void {
    const host = this.options.host;
    // /{verb}/{podNamespace}/{podID}[/{uid}]/{containerName}
    const withContainer = (verb: string) => new RegExp(`^/${verb}/([^/]+)/([^/]+)(?:/([^/]+))?/([^/]+)$`);
    for (const root of ['/run', '/exec', '/attach', '/portForward', '/containerLogs', '/runningpods/']) this.webService(root);
    this.mux('/configz');
    this.route(['POST'], withContainer('run'), async ({ response, url, params }) => {
      const [namespace, name, uid, container] = params as [string, string, string, string];
      const pod = this.podOrNotFound(namespace, name, 'pod does not exist');
      // For legacy reasons, run uses a different query parameter than exec.
      const cmd = (url.searchParams.get('cmd') ?? '').split(' ');
      let output: Buffer;
      try {
        output = await host.runInContainer(pod, uid, container, cmd);
      } catch (error) {
        throw new HttpError(500, errorText(error));
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(output);
    });
    const stream = (kind: 'exec' | 'attach') => async (context: RequestContext) => {
      const [namespace, name, uid, container] = context.params as [string, string, string, string];
      const streams = this.streamOptions(context.url.searchParams);
      const pod = this.podOrNotFound(namespace, name, 'pod does not exist');
      const target = await this.streamingUrl(() =>
        kind === 'exec' ? host.getExec(pod, uid, container, context.url.searchParams.getAll('command'), streams) : host.getAttach(pod, uid, container, streams),
      );
      await this.proxy(context, target);
    };
    this.route(['GET', 'POST'], withContainer('exec'), stream('exec'));
    this.route(['GET', 'POST'], withContainer('attach'), stream('attach'));
    this.route(['GET', 'POST'], /^\/portForward\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/, async (context) => {
      const [namespace, name, uid] = context.params as [string, string, string];
      let ports: number[];
      try {
        ports = parsePortForwardPorts(context.request, context.url.searchParams);
      } catch (error) {
        throw new HttpError(400, (error as Error).message);
      }
      const pod = this.podOrNotFound(namespace, name, 'pod does not exist');
      if (uid && pod.metadata?.uid !== uid) throw new HttpError(404, 'pod not found');
      const target = await this.streamingUrl(() => host.getPortForward(pod, uid, ports));
      await this.proxy(context, target);
    });
    this.route(['GET'], /^\/containerLogs\/([^/]*)\/([^/]*)\/([^/]*)$/, (context) => this.containerLogs(context));
    this.route(ANY_METHOD, /^\/configz$/, ({ response }) => writeJson(response, { kubeletconfig: host.getConfigz() }));
    this.route(['GET'], /^\/runningpods\/?$/, async ({ response }) => {
      let pods: object[];
      try {
        pods = await host.getRunningPods();
      } catch (error) {
        throw new HttpError(500, errorText(error));
      }
      writeJson(response, podList(pods));
    });
  }

  private installDebuggingDisabledHandlers(): void {
    for (const prefix of ['run', 'exec', 'attach', 'portForward', 'containerLogs', 'runningpods', 'debug/pprof', 'logs']) {
      this.mux(`/${prefix}/`);
      this.route(ANY_METHOD, new RegExp(`^/${prefix}/`), () => {
        throw new HttpError(405, 'Debug endpoints are disabled.');
      });
    }
  }

  private installSystemLogHandler(enabled: boolean): void {
    this.mux('/logs/');
    if (!enabled) {
      this.route(ANY_METHOD, /^\/logs\//, () => {
        throw new HttpError(405, 'logs endpoint is disabled.');
      });
      return;
    }
    this.route(['GET'], /^\/logs\/.*$/, async ({ request, response, url }) => {
      await serveNodeLogs(this.options.nodeLogDir ?? '/var/log', url.pathname.slice('/logs'.length), request, response);
    });
  }

  /** Go: InstallProfilingHandler: GET /debug/pprof/{subpath:*} (an empty subpath has no route). */
  private installProfilingHandler(enabled: boolean): void {
    this.mux('/debug/pprof/');
    if (!enabled) {
      this.route(ANY_METHOD, /^\/debug\/pprof\//, () => {
        throw new HttpError(405, 'profiling endpoint is disabled.');
      });
      return;
    }
    const profiling = new ProfilingHandler(this.options.clock ?? realClock);
    this.route(['GET'], /^\/debug\/pprof\/(.+)$/, ({ response, url, params }) => profiling.serve(params[0]!, response, url.searchParams));
  }

  /** Go: InstallDebugFlagsHandler with routes.StringFlagPutHandler(logs.GlogSetter). */
  private installDebugFlagsHandler(): void {
    const setLogVerbosity = this.options.setLogVerbosity;
    this.mux('/debug/flags/v');
    this.route(ANY_METHOD, /^\/debug\/flags\/v$/, async ({ request, response }) => {
      if (!setLogVerbosity) throw new HttpError(405, 'flags endpoint is disabled.');
      const plain = (status: number, text: string) => response.writeHead(status, { 'content-type': 'text/plain', 'x-content-type-options': 'nosniff' }).end(text);
      if (request.method !== 'PUT') return void plain(406, 'unsupported http method');
      const value = (await readBody(request)).toString('utf8');
      // klog's Level.Set: strconv.ParseInt(value, 10, 32).
      const level = /^[+-]?\d+$/.test(value) ? Number(value) : Number.NaN;
      if (!Number.isSafeInteger(level) || level < -(2 ** 31) || level >= 2 ** 31) {
        const reason = Number.isNaN(level) ? 'invalid syntax' : 'value out of range';
        return void plain(400, `failed set klog.logging.verbosity ${value}: strconv.ParseInt: parsing ${JSON.stringify(value)}: ${reason}`);
      }
      setLogVerbosity(level);
      plain(200, `successfully set klog.logging.verbosity to ${value}`);
    });
  }

  private async containerLogs({ request, response, url, params }: RequestContext): Promise<void> {
    const [namespace, name, container] = params as [string, string, string];
    if (name === '') throw new HttpError(400, '{"message": "Missing podID."}');
    if (container === '') throw new HttpError(400, '{"message": "Missing container name."}');
    if (namespace === '') throw new HttpError(400, '{"message": "Missing podNamespace."}');
    const query = new URLSearchParams(url.searchParams);
    // Backwards compatibility for the "tail" query parameter; "all" is the same as omitting it.
    const tail = query.get('tail');
    if (tail) {
      query.delete('tail');
      if (tail === 'all') query.delete('tailLines');
      else query.set('tailLines', tail);
    }
    let options: LogOptions;
    try {
      options = parseLogOptions(query);
    } catch (error) {
      if (error instanceof LogOptionsError) throw new HttpError(400, error.message);
      throw error;
    }
    const pod = this.podOrNotFound(namespace, name, `pod ${JSON.stringify(name)} does not exist`);
    const specs = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []), ...(pod.spec?.ephemeralContainers ?? [])];
    if (!specs.some((c) => c.name === container)) throw new HttpError(404, `container ${JSON.stringify(container)} not found in pod ${JSON.stringify(name)}`);

    // The client going away ends a follow at once and releases the file.
    const aborted = new AbortController();
    const abort = () => aborted.abort();
    request.once('close', abort);
    response.once('close', abort);
    const body = new ResponseBody(response);
    try {
      await this.options.host.getContainerLogs(pod, container, options, body, aborted.signal);
    } catch (error) {
      if (aborted.signal.aborted) return;
      if (!response.headersSent) throw new HttpError(400, errorText(error));
      this.options.logger.v(2).info('Container log stream ended with an error', { pod: `${namespace}/${name}`, container, error: errorText(error) });
    } finally {
      request.off('close', abort);
      response.off('close', abort);
    }
    await new Promise<void>((resolve) => body.end(resolve));
    if (!response.writableEnded) {
      body.writeHeadNow();
      response.end();
    }
  }

  private podOrNotFound(namespace: string, name: string, message: string): V1Pod {
    const pod = this.options.host.getPodByName(namespace, name);
    if (!pod) throw new HttpError(404, message);
    return pod;
  }

  private streamOptions(query: URLSearchParams): StreamOptions {
    try {
      return parseStreamOptions(query);
    } catch (error) {
      throw new HttpError((error as StreamRequestError).status ?? 400, (error as Error).message);
    }
  }

  /** Go's streaming.WriteError: the runtime's NotFound (and the host's) is a 404, any other failure a 500. */
  private async streamingUrl(get: () => Promise<string>): Promise<string> {
    try {
      return await get();
    } catch (error) {
      throw new HttpError(isNotFound(error) || error instanceof HostNotFoundError ? 404 : 500, errorText(error));
    }
  }

  private async proxy({ request, response, upgrade }: RequestContext, target: string): Promise<void> {
    if (!upgrade || !isUpgradeRequest(request)) throw new HttpError(500, 'Upgrade request required');
    response.detachSocket(upgrade.socket as never);
    await proxyUpgradedConnection(request, upgrade.socket, upgrade.head, target);
  }

  private async writeMetrics(response: ServerResponse, source: MetricsSource | undefined): Promise<void> {
    if (!source) throw new HttpError(404, '404 page not found');
    writeText(response, 200, await source.metrics(), source.contentType);
  }

  private writeError(response: ServerResponse, error: unknown): void {
    const status = error instanceof HttpError ? error.status : 500;
    if (!(error instanceof HttpError)) this.options.logger.error('Kubelet server request failed', error);
    if (response.headersSent) {
      response.destroy();
      return;
    }
    writeText(response, status, error instanceof HttpError ? error.message : errorText(error));
  }
}

const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, `invalid URL escape ${JSON.stringify(segment)}`);
  }
}

function writeText(response: ServerResponse, status: number, text: string, contentType = 'text/plain; charset=utf-8'): void {
  response.writeHead(status, { 'content-type': contentType, 'x-content-type-options': 'nosniff' }).end(text);
}

function writeJson(response: ServerResponse, value: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

function podList(items: object[]): object {
  return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items };
}

function readBody(request: IncomingMessage, limit = 1 << 20): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new HttpError(413, 'request body too large'));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.once('end', () => resolve(Buffer.concat(chunks)));
    request.once('error', reject);
  });
}

/**
 * The log response's body: the 200 head goes out with the first byte, so an error before any output (no such
 * container, no previous container) can still be a 400, as Go's flushwriter gives. Writes wait for the
 * response to drain, so a slow reader holds back the log reader instead of filling memory.
 */
class ResponseBody extends Writable {
  constructor(private readonly response: ServerResponse) {
    super();
  }

  writeHeadNow(): void {
    if (!this.response.headersSent) this.response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.writeHeadNow();
    if (this.response.destroyed) {
      callback(new Error('the client went away'));
      return;
    }
    if (this.response.write(chunk)) callback();
    else this.response.once('drain', () => callback());
  }
}
