// @kubernetes/client-node on first use instead of at import: its index costs ~0.7 s and ~75 MiB, which a user of
// only the file, CRI or volume parts of a package (or a standalone kubelet) should not pay. Only types are
// imported statically; the module itself is loaded by the first API call that needs it.
import type { ApiConstructor, ApiType, ConfigurationOptions, KubeConfig, ObservableMiddleware, RequestContext, ResponseContext, Watch } from '@kubernetes/client-node';

/** The @kubernetes/client-node module. */
export type ClientNodeModule = typeof import('@kubernetes/client-node');

let loading: Promise<ClientNodeModule> | undefined;
let loaded: ClientNodeModule | undefined;

/** Imports @kubernetes/client-node once; later calls share the same promise (a failed import is retried). */
export function loadClientNode(): Promise<ClientNodeModule> {
  loading ??= import('@kubernetes/client-node').then(
    (module) => (loaded = module),
    (err: unknown) => {
      loading = undefined;
      throw err;
    },
  );
  return loading;
}

/**
 * The client-node module once loadClientNode() has loaded it, for synchronous code (a DI factory) that runs after
 * an async start-up step awaited the load. Throws, naming the caller's step, when it has not been loaded.
 */
export function loadedClientNode(): ClientNodeModule {
  if (!loaded) throw new Error('@kubernetes/client-node is not loaded yet: await loadClientNode() before making API clients synchronously');
  return loaded;
}

/**
 * An API client of kubeConfig (`kubeConfig.makeApiClient(CoreV1Api)`) made on the first call, with client-node
 * loaded then: `const core = lazyApiClient(kc, (k) => k.CoreV1Api); (await core()).readNode(...)`.
 */
export function lazyApiClient<T extends ApiType>(kubeConfig: KubeConfig, api: (clientNode: ClientNodeModule) => ApiConstructor<T>): () => Promise<T> {
  let client: Promise<T> | undefined;
  return () => {
    client ??= loadClientNode().then((k) => kubeConfig.makeApiClient(api(k)));
    return client;
  };
}

/**
 * An API client of kubeConfig usable at once, as the client-node class it stands for: every method call waits for
 * client-node to load and the client to be made (on the first call), then calls it. For code that takes a
 * `CoreV1Api` (or a slice of it) and must not load client-node before its first request.
 */
export function deferredApiClient<T extends ApiType>(kubeConfig: KubeConfig, api: (clientNode: ClientNodeModule) => ApiConstructor<T>): T {
  const client = lazyApiClient(kubeConfig, api);
  return new Proxy({} as T, {
    get: (_target, method) =>
      typeof method === 'string' && method !== 'then'
        ? async (...args: unknown[]) => {
            const resolved = (await client()) as unknown as Record<string, (...a: unknown[]) => unknown>;
            return resolved[method](...args);
          }
        : undefined,
  });
}

/** A client-node Watch on kubeConfig, made on the first watch (for core's clientNodeWatch). */
export function lazyWatch(kubeConfig: KubeConfig): Pick<Watch, 'watch'> {
  let watcher: Promise<Watch> | undefined;
  return {
    watch: async (...args: Parameters<Watch['watch']>) => {
      watcher ??= loadClientNode().then((k) => new k.Watch(kubeConfig));
      return (await watcher).watch(...args);
    },
  };
}

/** The Content-Type of the three patch kinds the API server takes (client-node's PatchStrategy, without loading it). */
export const PatchContentType = {
  JsonPatch: 'application/json-patch+json',
  MergePatch: 'application/merge-patch+json',
  StrategicMergePatch: 'application/strategic-merge-patch+json',
} as const;

/** Per-call options of a client-node API call. */
export interface ApiCallOptions {
  /** Aborts the call (with the caller's reason). */
  signal?: AbortSignal;
  /** Aborts the call after this long; 0 or absent: no timeout. */
  timeoutMs?: number;
  /** GET from the API server's watch cache: resourceVersion "0" (Go's util.FromApiserverCache). */
  fromCache?: boolean;
  /** The request's Content-Type, e.g. PatchContentType.StrategicMergePatch for a PATCH. */
  contentType?: string;
}

/**
 * What client-node's generated calls do with a middleware's result (its rxjs stand-in: `toPromise`, `pipe`), so the
 * options need no client-node at hand; the core test runs them through a real client-node API call.
 */
class MiddlewareResult<T> {
  constructor(private readonly promise: Promise<T>) {}
  toPromise(): Promise<T> {
    return this.promise;
  }
  pipe<S>(callback: (value: T) => S | Promise<S>): MiddlewareResult<S> {
    return new MiddlewareResult(this.promise.then(callback));
  }
}

/**
 * client-node 1.x ConfigurationOptions for one call: its only hook for an abort signal, a query parameter or a
 * header is a request middleware. Synchronous and without client-node: a caller handed a CoreV1Api (or a fake of
 * it) does not wait for a module load between deciding to call and calling.
 */
export function apiCallOptions(opts: ApiCallOptions = {}): ConfigurationOptions {
  const pre = (edit: (ctx: RequestContext) => void): ObservableMiddleware => ({
    pre: (ctx: RequestContext) => {
      edit(ctx);
      return new MiddlewareResult(Promise.resolve(ctx)) as unknown as ReturnType<ObservableMiddleware['pre']>;
    },
    post: (res: ResponseContext) => new MiddlewareResult(Promise.resolve(res)) as unknown as ReturnType<ObservableMiddleware['post']>,
  });
  const middleware: ObservableMiddleware[] = [];
  const signals: AbortSignal[] = [];
  if (opts.signal) signals.push(opts.signal);
  if (opts.timeoutMs && opts.timeoutMs > 0) signals.push(AbortSignal.timeout(opts.timeoutMs));
  if (signals.length > 0) {
    const signal = signals.length === 1 ? (signals[0] as AbortSignal) : AbortSignal.any(signals);
    middleware.push(pre((ctx) => ctx.setSignal(signal)));
  }
  if (opts.fromCache) middleware.push(pre((ctx) => ctx.setQueryParam('resourceVersion', '0')));
  const contentType = opts.contentType;
  if (contentType) middleware.push(pre((ctx) => ctx.setHeaderParam('Content-Type', contentType)));
  return middleware.length > 0 ? { middleware, middlewareMergeStrategy: 'append' } : {};
}
