/**
 * The HTTP front end: kube-apiserver's REST paths, verbs, discovery, watch streaming, and the test
 * controls (request log, injected failures, outages, bookmarks, history compaction, kubeconfig).
 */
import type { AdmissionConfig } from './admission.js';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import {
  ApiError,
  badRequest,
  internalError,
  methodNotAllowed,
  routeNotFound,
  serviceUnavailable,
  statusForCode,
  unauthorized,
  unsupportedMediaType,
  type KubeStatus,
} from './errors.js';
import { isObject, type JsonObject } from './patch.js';
import { builtinResources, type ResourceDef } from './resources.js';
import { PATCH_CONTENT_TYPES, Store, type DeleteOptions, type PatchType, type WatchEventType } from './store.js';
import type { ServiceAccountTokenIssuer, TokenIssuerOptions } from './tokens.js';

/** A cancellable timer, as returned by `@kubelet-ts/core`'s Clock (which satisfies ServerClock). */
export interface TimerHandle {
  cancel(): void;
}

/** The time source: `@kubelet-ts/core`'s RealClock/FakeClock fit this shape. */
export interface ServerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  setInterval(fn: () => void, ms: number): TimerHandle;
}

const realClock: ServerClock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(t) };
  },
  setInterval(fn, ms) {
    const t = setInterval(fn, Math.max(1, ms));
    return { cancel: () => clearInterval(t) };
  },
};

export interface TestApiServerOptions {
  /** Port to listen on; 0 (the default) picks an ephemeral port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** When set, every API request needs `Authorization: Bearer <token>` (health and version endpoints excepted). */
  token?: string;
  /** Time source for timestamps, bookmark intervals and watch timeouts. */
  clock?: ServerClock;
  /** Period of BOOKMARK events to watches that allow them; 0 disables periodic bookmarks. Default 1000 ms. */
  bookmarkIntervalMs?: number;
  /** Change events kept for watches resuming from an older resourceVersion. Default 1000. */
  maxHistory?: number;
  /** Creating a namespaced object requires its namespace to exist (kube's NamespaceLifecycle). Default true. */
  enforceNamespaces?: boolean;
  /**
   * The mutating admission plugins of kube-apiserver that run on create: ServiceAccount (the default service account
   * and its token secret volume), DefaultTolerationSeconds, TaintNodesByCondition. All on by default, as in kube.
   */
  admission?: AdmissionConfig;
  /** See StoreOptions.patchUidMismatch. Default 'invalid' (422), what kube answers. */
  patchUidMismatch?: 'invalid' | 'conflict';
  /** Additional resources to serve (same shape as the built-in ones). */
  extraResources?: ResourceDef[];
  /** What GET /version answers. */
  version?: { major: string; minor: string; gitVersion: string };
  /** Keep at most this many request records (oldest dropped). Default 100000. */
  maxRequestLog?: number;
  /**
   * Service account tokens (TokenRequest, TokenReview): kube-apiserver's --service-account-issuer (default
   * https://kubernetes.default.svc.cluster.local), --api-audiences (default [issuer]),
   * --service-account-extend-token-expiration (default true) and --service-account-max-token-expiration.
   */
  serviceAccountTokens?: TokenIssuerOptions;
  /** The `ca.crt` of service account token secrets (kube-controller-manager's --root-ca-file). Default ''. */
  serviceAccountRootCA?: string;
}

/** One request as the log records it (benchmarks count requests and bytes from these). */
export interface RequestRecord {
  time: number;
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string;
  requestBytes: number;
  /** Bytes of response body written so far (grows while a watch streams). */
  responseBytes: number;
  status: number;
  /** kube's verb: get, list, watch, create, update, patch, delete, deletecollection; '' for non-resource paths. */
  verb: string;
  group?: string;
  resource?: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

export interface FailureRule {
  /** HTTP status to answer with (a kube Status body of the matching reason). Default 503. */
  code?: number;
  message?: string;
  /** Only requests this accepts are failed (and counted). Default: every API request. */
  match?: (req: RequestRecord) => boolean;
}

interface RequestInfo {
  def: ResourceDef;
  namespace?: string;
  name?: string;
  subresource?: string;
  legacyWatch: boolean;
}

interface Watcher {
  def: ResourceDef;
  res: ServerResponse;
  record: RequestRecord;
  bookmarks: boolean;
  /** The resourceVersion the watch started from (for one from "now": the current one). */
  rv: number;
  stop: () => void;
}

/** Helpers over the store for tests: resources are named by plural, kind, or `group/version/plural`. */
export interface StoreAccess {
  /** The object, or undefined when it does not exist. */
  get(resource: string, namespace: string | undefined, name: string): JsonObject | undefined;
  /** All objects of a resource (optionally in one namespace), sorted by namespace/name. */
  list(resource: string, namespace?: string): JsonObject[];
  /** Creates through the same path as POST (defaults, validation, watch event). */
  create(resource: string, obj: JsonObject): JsonObject;
  /** Updates through the same path as PUT. */
  update(resource: string, obj: JsonObject): JsonObject;
  /** Updates through the same path as PUT .../status. */
  updateStatus(resource: string, obj: JsonObject): JsonObject;
  patch(resource: string, namespace: string | undefined, name: string, patch: unknown, type?: PatchType, subresource?: string): JsonObject;
  delete(resource: string, namespace: string | undefined, name: string, options?: DeleteOptions): JsonObject | KubeStatus;
  /** Writes an object verbatim (no defaulting or strategy), e.g. to seed a pod with a status. */
  put(resource: string, obj: JsonObject): JsonObject;
  /** The current resourceVersion. */
  readonly resourceVersion: number;
  /** The underlying store. */
  readonly raw: Store;
}

export interface KubeconfigOptions {
  /** Defaults to the server's token (if any). */
  token?: string;
  namespace?: string;
  contextName?: string;
}

const MAX_BODY = 3 * 1024 * 1024;

function firstHeader(v: string | string[] | undefined): string {
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

function mediaType(contentType: string): string {
  return contentType.split(';')[0].trim().toLowerCase();
}

function truthy(v: string | null): boolean {
  return v === 'true' || v === '1';
}

export class TestApiServer {
  readonly store: StoreAccess;
  readonly requests: RequestRecord[] = [];
  private readonly raw: Store;
  private readonly options: TestApiServerOptions;
  private readonly clock: ServerClock;
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly watchers = new Set<Watcher>();
  private readonly watchWaiters = new Set<() => void>();
  private failures: Array<FailureRule & { remaining: number }> = [];
  private unavailable = false;
  private bookmarkTimer: TimerHandle | undefined;
  private listenPort: number;
  private readonly host: string;
  private closed = false;

  private constructor(options: TestApiServerOptions) {
    this.options = options;
    this.clock = options.clock ?? realClock;
    this.host = options.host ?? '127.0.0.1';
    this.listenPort = options.port ?? 0;
    this.raw = new Store({
      clock: this.clock,
      maxHistory: options.maxHistory,
      enforceNamespaces: options.enforceNamespaces,
      patchUidMismatch: options.patchUidMismatch,
      admission: options.admission,
      resources: [...builtinResources(), ...(options.extraResources ?? [])],
      serviceAccountTokens: options.serviceAccountTokens,
      serviceAccountRootCA: options.serviceAccountRootCA,
    });
    const raw = this.raw;
    const ns = (obj: JsonObject): string | undefined => (isObject(obj.metadata) && typeof obj.metadata.namespace === 'string' ? obj.metadata.namespace : undefined);
    const name = (obj: JsonObject): string => (isObject(obj.metadata) && typeof obj.metadata.name === 'string' ? obj.metadata.name : '');
    this.store = {
      get: (resource, namespace, n) => raw.peek(raw.resolve(resource), namespace, n),
      list: (resource, namespace) => raw.all(raw.resolve(resource), namespace),
      create: (resource, obj) => raw.create(raw.resolve(resource), ns(obj), obj),
      update: (resource, obj) => raw.update(raw.resolve(resource), ns(obj), name(obj), obj),
      updateStatus: (resource, obj) => raw.update(raw.resolve(resource), ns(obj), name(obj), obj, { subresource: 'status' }),
      patch: (resource, namespace, n, patch, type = 'merge', subresource) => raw.patch(raw.resolve(resource), namespace, n, type, patch, { subresource }),
      delete: (resource, namespace, n, options) => raw.delete(raw.resolve(resource), namespace, n, options),
      put: (resource, obj) => raw.put(raw.resolve(resource), obj),
      get resourceVersion() {
        return raw.resourceVersion;
      },
      raw,
    };
  }

  /** Starts a server and resolves once it listens. */
  static async start(options: TestApiServerOptions = {}): Promise<TestApiServer> {
    const s = new TestApiServer(options);
    await s.listen();
    const interval = options.bookmarkIntervalMs ?? 1000;
    if (interval > 0) s.bookmarkTimer = s.clock.setInterval(() => s.sendBookmarks(), interval);
    return s;
  }

  get port(): number {
    return this.listenPort;
  }

  get url(): string {
    return `http://${this.host}:${this.listenPort}`;
  }

  /** The service account token issuer: its public key, and authenticate() as TokenReview does. */
  get tokens(): ServiceAccountTokenIssuer {
    return this.raw.tokens;
  }

  /** True while the server accepts connections (false between stop() and restart()). */
  get running(): boolean {
    return this.server !== undefined;
  }

  /** Number of open watch streams (of one resource, when given). */
  activeWatches(resource?: string): number {
    if (!resource) return this.watchers.size;
    const def = this.raw.resolve(resource);
    return [...this.watchers].filter((w) => w.def === def).length;
  }

  /** Resolves once at least `count` watches of `resource` (any, when omitted) are open. */
  async waitForWatch(resource?: string, count = 1, timeoutMs = 5000): Promise<void> {
    if (this.activeWatches(resource) >= count) return;
    await new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (this.activeWatches(resource) >= count) {
          this.watchWaiters.delete(check);
          timer.cancel();
          resolve();
        }
      };
      const timer = realClock.setTimeout(() => {
        this.watchWaiters.delete(check);
        reject(new Error(`test-apiserver: no ${count} watch(es) of ${resource ?? 'any resource'} within ${timeoutMs} ms (have ${this.activeWatches(resource)})`));
      }, timeoutMs);
      this.watchWaiters.add(check);
    });
  }

  /** Empties the request log. */
  clearRequests(): void {
    this.requests.length = 0;
  }

  /** The next `n` API requests (that `rule.match` accepts) fail with `rule.code` (default 503). */
  failNext(n: number, rule: number | FailureRule = 503): void {
    const r = typeof rule === 'number' ? { code: rule } : rule;
    this.failures.push({ ...r, remaining: n });
  }

  /** While true every request gets 503 and open watches are ended. */
  setUnavailable(unavailable: boolean): void {
    this.unavailable = unavailable;
    if (unavailable) this.endWatches();
  }

  /** Drops the watch history: watches from earlier resourceVersions get 410 Expired. */
  compact(): void {
    this.raw.compact();
  }

  /**
   * Sends a BOOKMARK to every watch that allows bookmarks, at its resource's latest resourceVersion (the version of
   * its watch cache in kube-apiserver: the latest change of that resource, not of any), or at the version the watch
   * started from when that is later.
   */
  sendBookmarks(): void {
    for (const w of this.watchers) {
      if (w.bookmarks) this.writeEvent(w, 'BOOKMARK', this.raw.bookmarkObject(w.def, String(Math.max(this.raw.cacheResourceVersion(w.def), w.rv))));
    }
  }

  /**
   * A kubeconfig for this server: plain http with `insecure-skip-tls-verify: true` (which
   * `@kubernetes/client-node` requires before it talks http), a bearer token when one is configured.
   */
  kubeconfig(options: KubeconfigOptions = {}): JsonObject {
    const token = options.token ?? this.options.token;
    const context = options.contextName ?? 'test-apiserver';
    const contextBody: JsonObject = { cluster: 'test-apiserver', user: 'test-apiserver-user' };
    if (options.namespace) contextBody.namespace = options.namespace;
    return {
      apiVersion: 'v1',
      kind: 'Config',
      // client-node refuses plain http unless the cluster is marked insecure-skip-tls-verify.
      clusters: [{ name: 'test-apiserver', cluster: { server: this.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'test-apiserver-user', user: token ? { token } : {} }],
      contexts: [{ name: context, context: contextBody }],
      'current-context': context,
      preferences: {},
    };
  }

  /** Writes kubeconfig() to `path` (JSON, which is YAML) and returns the path. */
  async writeKubeconfig(path: string, options: KubeconfigOptions = {}): Promise<string> {
    await writeFile(path, JSON.stringify(this.kubeconfig(options), null, 2) + '\n', { mode: 0o600 });
    return path;
  }

  /** Closes the listener and every connection (watches end) but keeps the store and the port. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.endWatches();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await closed;
  }

  /** Listens again on the same port after stop(). */
  async restart(): Promise<void> {
    if (this.closed) throw new Error('test-apiserver: restart after close');
    if (this.server) return;
    await this.listen();
  }

  /** Stops everything: watches, sockets, timers. */
  async close(): Promise<void> {
    this.closed = true;
    this.bookmarkTimer?.cancel();
    this.bookmarkTimer = undefined;
    await this.stop();
  }

  // -------------------------------------------------------------------------------------------

  private async listen(): Promise<void> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.sendError(res, undefined, internalError(String(err)));
        else res.destroy();
      });
    });
    server.keepAliveTimeout = 5000;
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    server.listen(this.listenPort, this.host);
    await once(server, 'listening');
    const addr = server.address();
    if (addr && typeof addr === 'object') this.listenPort = addr.port;
    this.server = server;
  }

  private endWatches(): void {
    for (const w of [...this.watchers]) this.endWatch(w);
  }

  private endWatch(w: Watcher): void {
    if (!this.watchers.delete(w)) return;
    w.stop();
    if (!w.res.writableEnded) w.res.end();
  }

  private log(record: RequestRecord): void {
    this.requests.push(record);
    const max = this.options.maxRequestLog ?? 100000;
    if (this.requests.length > max) this.requests.splice(0, this.requests.length - max);
  }

  private send(res: ServerResponse, record: RequestRecord | undefined, code: number, body: unknown): void {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const bytes = Buffer.byteLength(text);
    res.writeHead(code, {
      'Content-Type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
      'Content-Length': bytes,
      'Cache-Control': 'no-cache, private',
    });
    res.end(text);
    if (record) {
      record.status = code;
      record.responseBytes += bytes;
    }
  }

  private sendError(res: ServerResponse, record: RequestRecord | undefined, err: ApiError): void {
    this.send(res, record, err.code, err.status);
  }

  private async readBody(req: IncomingMessage, record: RequestRecord): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      const b = chunk as Buffer;
      size += b.length;
      if (size > MAX_BODY) throw new ApiError(413, '', 'Request entity too large: limit is 3145728');
      chunks.push(b);
    }
    record.requestBytes = size;
    return Buffer.concat(chunks);
  }

  private parseJson(body: Buffer, what: 'object' | 'patch'): unknown {
    const text = body.toString('utf8');
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      throw badRequest(what === 'object' ? `couldn't get version/kind; json parse error: ${msg}` : `error decoding patch: ${msg}`);
    }
  }

  private parsePath(segments: string[]): { group: string; version: string; rest: string[] } | undefined {
    if (segments[0] === 'api' && segments.length >= 2) return { group: '', version: segments[1], rest: segments.slice(2) };
    if (segments[0] === 'apis' && segments.length >= 3) return { group: segments[1], version: segments[2], rest: segments.slice(3) };
    return undefined;
  }

  /** k8s.io/apiserver RequestInfoFactory: namespaces/{ns}/{resource}/... except namespaces/{name}/status|finalize. */
  private requestInfo(group: string, version: string, rest: string[]): RequestInfo | undefined {
    let parts = rest;
    let legacyWatch = false;
    if (parts[0] === 'watch') {
      legacyWatch = true;
      parts = parts.slice(1);
    }
    let namespace: string | undefined;
    if (parts[0] === 'namespaces' && parts.length > 2 && parts[2] !== 'status' && parts[2] !== 'finalize') {
      namespace = parts[1];
      parts = parts.slice(2);
    }
    const [resource, name, subresource, ...extra] = parts;
    if (!resource || extra.length > 0) return undefined;
    const def = this.raw.findDef(group, version, resource);
    if (!def) return undefined;
    if (namespace !== undefined && !def.namespaced) return undefined;
    return { def, namespace, name, subresource, legacyWatch };
  }

  private discovery(path: string): unknown {
    const defs = this.raw.defs;
    if (path === '/api') {
      return {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `${this.host}:${this.listenPort}` }],
      };
    }
    const groups = [...new Set(defs.filter((d) => d.group).map((d) => d.group))];
    const groupBody = (g: string): JsonObject => {
      const versions = [...new Set(defs.filter((d) => d.group === g).map((d) => d.version))];
      const gv = versions.map((v) => ({ groupVersion: `${g}/${v}`, version: v }));
      return { name: g, versions: gv, preferredVersion: gv[0] };
    };
    if (path === '/apis') return { kind: 'APIGroupList', apiVersion: 'v1', groups: groups.map(groupBody) };
    const segs = path.split('/').filter(Boolean);
    if (segs[0] === 'apis' && segs.length === 2 && groups.includes(segs[1])) return { kind: 'APIGroup', apiVersion: 'v1', ...groupBody(segs[1]) };
    const gv = segs[0] === 'api' && segs.length === 2 ? { group: '', version: segs[1] } : segs[0] === 'apis' && segs.length === 3 ? { group: segs[1], version: segs[2] } : undefined;
    if (!gv) return undefined;
    const inGv = defs.filter((d) => d.group === gv.group && d.version === gv.version);
    if (inGv.length === 0) return undefined;
    const resources: JsonObject[] = [];
    for (const d of inGv) {
      const entry: JsonObject = {
        name: d.resource,
        singularName: d.singular,
        namespaced: d.namespaced,
        kind: d.kind,
        verbs: d.verbs ?? ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
      };
      if (d.shortNames) entry.shortNames = d.shortNames;
      resources.push(entry);
      for (const sub of d.subresources ?? []) {
        if (sub === 'binding') resources.push({ name: `${d.resource}/binding`, singularName: '', namespaced: d.namespaced, kind: 'Binding', verbs: ['create'] });
        else if (sub === 'token') {
          resources.push({ name: `${d.resource}/token`, singularName: '', namespaced: d.namespaced, group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', verbs: ['create'] });
        } else resources.push({ name: `${d.resource}/${sub}`, singularName: '', namespaced: d.namespaced, kind: d.kind, verbs: ['get', 'patch', 'update'] });
      }
    }
    return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv.group ? `${gv.group}/${gv.version}` : gv.version, resources };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = (req.method ?? 'GET').toUpperCase();
    const query: Record<string, string> = {};
    for (const [k, v] of url.searchParams) query[k] = v;
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const record: RequestRecord = {
      time: this.clock.now(),
      method,
      path,
      query,
      contentType: firstHeader(req.headers['content-type']),
      requestBytes: 0,
      responseBytes: 0,
      status: 0,
      verb: '',
    };
    this.log(record);
    const segments = path.split('/').filter(Boolean);
    const parsed = this.parsePath(segments);
    const info = parsed && parsed.rest.length > 0 ? this.requestInfo(parsed.group, parsed.version, parsed.rest) : undefined;
    if (info) {
      record.group = info.def.group;
      record.resource = info.def.resource;
      if (info.subresource) record.subresource = info.subresource;
      if (info.namespace !== undefined) record.namespace = info.namespace;
      if (info.name !== undefined) record.name = info.name;
      record.verb = this.verbOf(method, info, url.searchParams);
    }

    try {
      // Drain the body before answering so keep-alive connections stay usable.
      const body = method === 'GET' || method === 'HEAD' ? Buffer.alloc(0) : await this.readBody(req, record);
      if (this.unavailable) throw serviceUnavailable();
      const isPublic = path === '/healthz' || path === '/livez' || path === '/readyz' || path === '/version' || path.startsWith('/healthz/') || path.startsWith('/livez/') || path.startsWith('/readyz/');
      if (!isPublic) {
        const rule = this.failures.find((f) => f.remaining > 0 && (!f.match || f.match(record)));
        if (rule) {
          rule.remaining--;
          this.failures = this.failures.filter((f) => f.remaining > 0);
          throw statusForCode(rule.code ?? 503, rule.message);
        }
        if (this.options.token && firstHeader(req.headers.authorization) !== `Bearer ${this.options.token}`) throw unauthorized();
      }
      if (isPublic) {
        if (path === '/version') {
          this.send(res, record, 200, {
            major: '1',
            minor: '31',
            gitVersion: 'v1.31.0-test-apiserver',
            gitCommit: '0000000000000000000000000000000000000000',
            gitTreeState: 'clean',
            buildDate: '2024-01-01T00:00:00Z',
            goVersion: 'go1.22.0',
            compiler: 'gc',
            platform: 'linux/amd64',
            ...this.options.version,
          });
        } else {
          this.send(res, record, 200, 'ok');
        }
        return;
      }
      if (!info) {
        const d = method === 'GET' ? this.discovery(path) : undefined;
        if (d === undefined) throw routeNotFound();
        this.send(res, record, 200, d);
        return;
      }
      await this.serveResource(res, record, info, method, url.searchParams, body);
    } catch (err) {
      if (err instanceof ApiError) this.sendError(res, record, err);
      else this.sendError(res, record, internalError(err instanceof Error ? err.message : String(err)));
    }
  }

  private verbOf(method: string, info: RequestInfo, q: URLSearchParams): string {
    const watch = info.legacyWatch || truthy(q.get('watch'));
    switch (method) {
      case 'GET':
      case 'HEAD':
        if (watch) return 'watch';
        return info.name ? 'get' : 'list';
      case 'POST':
        return 'create';
      case 'PUT':
        return 'update';
      case 'PATCH':
        return 'patch';
      case 'DELETE':
        return info.name ? 'delete' : 'deletecollection';
      default:
        return method.toLowerCase();
    }
  }

  private async serveResource(res: ServerResponse, record: RequestRecord, info: RequestInfo, method: string, q: URLSearchParams, body: Buffer): Promise<void> {
    const { def, name, subresource } = info;
    const namespace = info.namespace;
    if (subresource && !(def.subresources ?? []).includes(subresource)) throw routeNotFound();
    if (def.namespaced && name !== undefined && namespace === undefined) throw routeNotFound();
    if (def.virtual) {
      // tokenreviews: create only, nothing stored.
      if (method !== 'POST' || name !== undefined) throw methodNotAllowed();
      this.requireJson(record);
      this.send(res, record, 201, this.raw.tokens.review(this.parseJson(body, 'object')));
      return;
    }
    if (subresource === 'token' && name !== undefined) {
      // serviceaccounts/{name}/token: a TokenRequest, create only; NamespaceLifecycle admission first.
      if (method !== 'POST') throw methodNotAllowed();
      this.requireJson(record);
      const request = this.parseJson(body, 'object');
      this.raw.requireNamespace(namespace);
      this.send(res, record, 201, this.raw.tokens.request(namespace ?? '', name, request));
      return;
    }
    const dryRun = q.getAll('dryRun').includes('All');
    const listOpts = {
      namespace,
      labelSelector: q.get('labelSelector') ?? undefined,
      fieldSelector: q.get('fieldSelector') ?? undefined,
    };

    if (record.verb === 'watch') {
      const fieldSelector = name ? [listOpts.fieldSelector, `metadata.name=${name}`].filter(Boolean).join(',') : listOpts.fieldSelector;
      this.serveWatch(res, record, def, { ...listOpts, fieldSelector }, q);
      return;
    }
    switch (method) {
      case 'GET':
      case 'HEAD': {
        if (subresource === 'binding') throw methodNotAllowed();
        if (name) {
          this.send(res, record, 200, this.raw.get(def, namespace, name));
          return;
        }
        const limit = q.get('limit');
        this.send(
          res,
          record,
          200,
          this.raw.list(def, {
            ...listOpts,
            resourceVersion: q.get('resourceVersion') ?? undefined,
            resourceVersionMatch: q.get('resourceVersionMatch') ?? undefined,
            limit: limit ? Number(limit) : undefined,
            continue: q.get('continue') ?? undefined,
          }),
        );
        return;
      }
      case 'POST': {
        if (name && subresource === 'binding') {
          this.requireJson(record);
          this.send(res, record, 201, this.raw.bind(def, namespace, name, this.parseJson(body, 'object'), { dryRun }));
          return;
        }
        if (name) throw methodNotAllowed();
        this.requireJson(record);
        this.send(res, record, 201, this.raw.create(def, namespace, this.parseJson(body, 'object'), { dryRun }));
        return;
      }
      case 'PUT': {
        if (!name || subresource === 'binding') throw methodNotAllowed();
        this.requireJson(record);
        this.send(res, record, 200, this.raw.update(def, namespace, name, this.parseJson(body, 'object'), { subresource, dryRun }));
        return;
      }
      case 'PATCH': {
        if (!name || subresource === 'binding') throw methodNotAllowed();
        const type: PatchType | undefined = PATCH_CONTENT_TYPES[mediaType(record.contentType)];
        if (!type) throw unsupportedMediaType(Object.keys(PATCH_CONTENT_TYPES));
        this.send(res, record, 200, this.raw.patch(def, namespace, name, type, this.parseJson(body, 'patch'), { subresource, dryRun }));
        return;
      }
      case 'DELETE': {
        if (subresource) throw methodNotAllowed();
        const options = this.deleteOptions(body, q);
        if (!name) {
          this.send(res, record, 200, this.raw.deleteCollection(def, listOpts, options));
          return;
        }
        this.send(res, record, 200, this.raw.delete(def, namespace, name, options));
        return;
      }
      default:
        throw methodNotAllowed();
    }
  }

  private requireJson(record: RequestRecord): void {
    const mt = mediaType(record.contentType);
    if (mt && mt !== 'application/json' && mt !== '*/*') {
      throw unsupportedMediaType(['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf']);
    }
  }

  /** DeleteOptions from the body when there is one, else from query parameters (as kube does). */
  private deleteOptions(body: Buffer, q: URLSearchParams): DeleteOptions {
    if (body.length > 0) {
      const parsed = this.parseJson(body, 'object');
      if (!isObject(parsed)) throw badRequest('DeleteOptions must be an object');
      const out: DeleteOptions = {};
      if (parsed.gracePeriodSeconds !== undefined && parsed.gracePeriodSeconds !== null) out.gracePeriodSeconds = Number(parsed.gracePeriodSeconds);
      if (isObject(parsed.preconditions)) {
        out.preconditions = {};
        if (typeof parsed.preconditions.uid === 'string') out.preconditions.uid = parsed.preconditions.uid;
        if (typeof parsed.preconditions.resourceVersion === 'string') out.preconditions.resourceVersion = parsed.preconditions.resourceVersion;
      }
      if (typeof parsed.propagationPolicy === 'string') out.propagationPolicy = parsed.propagationPolicy;
      if (Array.isArray(parsed.dryRun)) out.dryRun = parsed.dryRun.map(String);
      return out;
    }
    const out: DeleteOptions = {};
    const grace = q.get('gracePeriodSeconds');
    if (grace !== null && grace !== '') {
      const n = Number(grace);
      if (!Number.isInteger(n)) throw badRequest(`invalid gracePeriodSeconds: ${grace}`);
      out.gracePeriodSeconds = n;
    }
    const pp = q.get('propagationPolicy');
    if (pp) out.propagationPolicy = pp;
    const dry = q.getAll('dryRun');
    if (dry.length > 0) out.dryRun = dry;
    return out;
  }

  private writeEvent(w: Watcher, type: WatchEventType | 'BOOKMARK' | 'ERROR', object: unknown): void {
    if (w.res.writableEnded || w.res.destroyed) return;
    const line = JSON.stringify({ type, object }) + '\n';
    w.record.responseBytes += Buffer.byteLength(line);
    w.res.write(line);
  }

  private serveWatch(res: ServerResponse, record: RequestRecord, def: ResourceDef, opts: { namespace?: string; labelSelector?: string; fieldSelector?: string }, q: URLSearchParams): void {
    // Selector errors are answered as plain HTTP errors before the stream starts.
    this.raw.selectors(def, opts.labelSelector, opts.fieldSelector);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    record.status = 200;
    let stopStore: () => void = () => undefined;
    let timeout: TimerHandle | undefined;
    const w: Watcher = {
      def,
      res,
      record,
      bookmarks: truthy(q.get('allowWatchBookmarks')),
      rv: Number(q.get('resourceVersion') || 0) || this.raw.resourceVersion,
      stop: () => {
        stopStore();
        timeout?.cancel();
      },
    };
    this.watchers.add(w);
    res.on('close', () => this.endWatch(w));
    try {
      stopStore = this.raw.watch(
        def,
        {
          ...opts,
          resourceVersion: q.get('resourceVersion') ?? undefined,
          sendInitialEvents: truthy(q.get('sendInitialEvents')),
        },
        {
          event: (type, object) => this.writeEvent(w, type, object),
          initialEventsEnd: (rv) => {
            if (w.bookmarks) {
              this.writeEvent(w, 'BOOKMARK', this.raw.bookmarkObject(def, String(rv), { 'k8s.io/initial-events-end': 'true' }));
            }
          },
        },
      );
    } catch (err) {
      // kube answers 200 and one ERROR event carrying the Status (e.g. 410 Expired), then ends.
      const status = err instanceof ApiError ? err.status : internalError(String(err)).status;
      this.writeEvent(w, 'ERROR', status);
      this.endWatch(w);
      return;
    }
    const timeoutSeconds = Number(q.get('timeoutSeconds') ?? '0');
    if (timeoutSeconds > 0) {
      // kube's watch cache sends a watch that allows them a bookmark two seconds before its timeout, when the
      // resourceVersion has moved past the one the watch started from.
      const bookmarkAt = (timeoutSeconds - 2) * 1000;
      const preTimeoutBookmark = () => {
        const cacheRv = this.raw.cacheResourceVersion(def);
        if (cacheRv > w.rv) this.writeEvent(w, 'BOOKMARK', this.raw.bookmarkObject(def, String(cacheRv)));
      };
      const bookmark = w.bookmarks && bookmarkAt > 0 ? this.clock.setTimeout(preTimeoutBookmark, bookmarkAt) : undefined;
      const end = this.clock.setTimeout(() => this.endWatch(w), timeoutSeconds * 1000);
      timeout = {
        cancel: () => {
          bookmark?.cancel();
          end.cancel();
        },
      };
    }
    for (const waiter of [...this.watchWaiters]) waiter();
  }
}

/** Starts a test API server; see TestApiServerOptions. */
export function startTestApiServer(options: TestApiServerOptions = {}): Promise<TestApiServer> {
  return TestApiServer.start(options);
}
