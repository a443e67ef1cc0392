// Go's service account token manager (pkg/kubelet/token/token_manager.go): TokenRequests for projected
// serviceAccountToken volumes, cached per (service account, audiences, lifetime, bound object) and
// refreshed before they expire, so that a pod's periodic volume refresh does not mint a token each time.
import type { AuthenticationV1TokenRequest, KubeConfig } from '@kubernetes/client-node';
import { apiErrorMessage, defaultLogger, lazyApiClient, realClock, type Clock, type Logger, type TimerHandle } from '@kubelet-ts/core';
import type { ServiceAccountTokenGetter } from './types.js';

/** Creates a TokenRequest for `serviceaccounts/<name>/token` in namespace (Go: ServiceAccounts(ns).CreateToken). */
export type TokenRequester = (namespace: string, name: string, request: AuthenticationV1TokenRequest) => Promise<AuthenticationV1TokenRequest>;

export interface TokenManagerOptions {
  requestToken: TokenRequester;
  clock?: Clock;
  logger?: Logger;
  /** Source of the refresh jitter, injectable for tests. Default Math.random. */
  random?: () => number;
}

/** A token is refreshed once older than this, whatever its lifetime. */
const MAX_TTL_MS = 24 * 60 * 60 * 1000;
/** How often expired tokens are dropped. */
const GC_PERIOD_MS = 60_000;
/** Refreshes are spread by up to this many whole seconds, so pods started together do not refresh together. */
const MAX_JITTER_SECONDS = 10;

interface CacheEntry {
  token: AuthenticationV1TokenRequest;
  /** The pod the token is bound to, from the request (the response need not echo it). */
  podUid: string | undefined;
  /** The requested lifetime, for a response without spec.expirationSeconds. */
  requestedSeconds: number | undefined;
}

/**
 * Go's keyFunc: `"name"/"namespace"/<audiences>/<expirationSeconds>/<boundObjectRef>` with the last
 * three as Go's %#v prints them. Nothing secret is in it, so it is safe to log.
 */
export function tokenCacheKey(name: string, namespace: string, request: AuthenticationV1TokenRequest): string {
  const audiences = request.spec?.audiences;
  const audiencesText = audiences ? `[]string{${audiences.map((a) => JSON.stringify(a)).join(', ')}}` : '[]string(nil)';
  const ref = request.spec?.boundObjectRef;
  const refText =
    `v1.BoundObjectReference{Kind:${JSON.stringify(ref?.kind ?? '')}, APIVersion:${JSON.stringify(ref?.apiVersion ?? '')}, ` +
    `Name:${JSON.stringify(ref?.name ?? '')}, UID:${JSON.stringify(ref?.uid ?? '')}}`;
  return `${JSON.stringify(name)}/${JSON.stringify(namespace)}/${audiencesText}/${request.spec?.expirationSeconds ?? 0}/${refText}`;
}

/** When the token expires, in ms since the epoch; 0 (long expired, as Go's zero time) when the status has none. */
function expiresAt(token: AuthenticationV1TokenRequest): number {
  const ts = token.status?.expirationTimestamp as Date | string | undefined;
  if (ts === undefined || ts === null) return 0;
  const ms = ts instanceof Date ? ts.getTime() : Date.parse(ts);
  return Number.isNaN(ms) ? 0 : ms;
}

/**
 * Service account tokens for the node's pods: from the cache while fresh, else from the TokenRequest
 * API. Call start() to have expired tokens dropped every minute.
 */
export class TokenManager implements ServiceAccountTokenGetter {
  private readonly requestToken: TokenRequester;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly random: () => number;
  private readonly cache = new Map<string, CacheEntry>();
  /** Requests in flight by cache key: volumes of one pod set up together share one request. */
  private readonly inflight = new Map<string, Promise<AuthenticationV1TokenRequest>>();
  private gcTimer: TimerHandle | undefined;
  private stopOnAbort: (() => void) | undefined;
  private stopSignal: AbortSignal | undefined;

  constructor(opts: TokenManagerOptions) {
    this.requestToken = opts.requestToken;
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? defaultLogger).with({ manager: 'token' });
    this.random = opts.random ?? Math.random;
  }

  /** Starts dropping expired tokens every minute until stop() or signal aborts. */
  start(signal?: AbortSignal): void {
    if (this.gcTimer || signal?.aborted) return;
    this.gcTimer = this.clock.setInterval(() => this.cleanup(), GC_PERIOD_MS);
    if (signal) {
      this.stopSignal = signal;
      this.stopOnAbort = () => this.stop();
      signal.addEventListener('abort', this.stopOnAbort, { once: true });
    }
  }

  stop(): void {
    this.gcTimer?.cancel();
    this.gcTimer = undefined;
    if (this.stopSignal && this.stopOnAbort) this.stopSignal.removeEventListener('abort', this.stopOnAbort);
    this.stopSignal = undefined;
    this.stopOnAbort = undefined;
  }

  /**
   * The cached token when it needs no refresh; else a new one. When the refresh fails, a cached token
   * that has not expired is returned (the error is logged); otherwise it rejects with Go's messages:
   * `failed to fetch token: <err>`, or `token <key> expired and refresh failed: <err>`.
   */
  async getServiceAccountToken(namespace: string, name: string, request: AuthenticationV1TokenRequest): Promise<AuthenticationV1TokenRequest> {
    const key = tokenCacheKey(name, namespace, request);
    const cached = this.cache.get(key);
    if (cached && !this.requiresRefresh(cached)) return cached.token;
    try {
      return await this.fetch(key, namespace, name, request);
    } catch (err) {
      if (!cached) throw new Error(`failed to fetch token: ${apiErrorMessage(err)}`, { cause: err });
      if (this.expired(cached.token)) throw new Error(`token ${key} expired and refresh failed: ${apiErrorMessage(err)}`, { cause: err });
      this.logger.error("Couldn't update token", err, { cacheKey: key });
      return cached.token;
    }
  }

  /** Forgets the tokens bound to a pod that is gone (Go: DeleteServiceAccountToken). */
  deleteServiceAccountToken(podUid: string): void {
    for (const [key, entry] of this.cache) if (entry.podUid === podUid) this.cache.delete(key);
  }

  /** Number of cached tokens. */
  size(): number {
    return this.cache.size;
  }

  private fetch(key: string, namespace: string, name: string, request: AuthenticationV1TokenRequest): Promise<AuthenticationV1TokenRequest> {
    const pending = this.inflight.get(key);
    if (pending) return pending;
    const p = this.requestToken(namespace, name, request)
      .then((token) => {
        this.cache.set(key, {
          token,
          podUid: request.spec?.boundObjectRef?.uid ?? token.spec?.boundObjectRef?.uid,
          requestedSeconds: request.spec?.expirationSeconds,
        });
        return token;
      })
      .finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }

  private cleanup(): void {
    for (const [key, entry] of this.cache) if (this.expired(entry.token)) this.cache.delete(key);
  }

  private expired(token: AuthenticationV1TokenRequest): boolean {
    return this.clock.now() > expiresAt(token);
  }

  /**
   * Go's requiresRefresh: the token is older than 24 h less a jitter, or within 20% of its lifetime
   * plus a jitter of expiring, or issued in the future (the clock jumped back).
   */
  private requiresRefresh(entry: CacheEntry): boolean {
    const seconds = entry.token.spec?.expirationSeconds ?? entry.requestedSeconds;
    if (seconds === undefined || seconds === null) {
      const { status: _status, ...withoutToken } = entry.token;
      this.logger.error('Expiration seconds was nil for token request', undefined, { tokenRequest: withoutToken });
      return false;
    }
    const now = this.clock.now();
    const exp = expiresAt(entry.token);
    const iat = exp - seconds * 1000;
    // Go truncates the jitter to whole seconds.
    const jitterMs = Math.floor(this.random() * MAX_JITTER_SECONDS) * 1000;
    if (now > iat + MAX_TTL_MS - jitterMs) return true;
    if (now > exp - Math.floor((seconds * 20) / 100) * 1000 - jitterMs) return true;
    return now < iat;
  }
}

/** A TokenRequester over @kubernetes/client-node's CoreV1Api.createNamespacedServiceAccountToken. */
export function createTokenRequester(kubeConfig: KubeConfig): TokenRequester {
  const api = lazyApiClient(kubeConfig, (k) => k.CoreV1Api);
  return async (namespace, name, body) => (await api()).createNamespacedServiceAccountToken({ namespace, name, body });
}

/** The requester of a kubelet without an API server (Go's nil client). */
export const standaloneTokenRequester: TokenRequester = () => Promise.reject(new Error('cannot use TokenManager when kubelet is in standalone mode'));
