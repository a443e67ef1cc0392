// Bearer token authentication through the API server's TokenReview API, as the kubelet does with
// authentication.webhook.enabled (Go: k8s.io/apiserver's webhook token authenticator, wrapped in
// the cached token authenticator, read from the Authorization header by bearertoken and from the
// WebSocket subprotocol by the websocket protocol authenticator).
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { KubeConfig, V1TokenReview } from '@kubernetes/client-node';
import { defaultLogger, lazyApiClient, type Clock, type Logger } from '@kubelet-ts/core';
import { ExpiringLRUCache } from './expiring-cache.js';
import type { Authenticator, AuthenticationResult, UserInfo } from './types.js';
import { defaultShouldRetry, defaultWebhookRetryBackoff, withExponentialBackoff, withTimeout, WEBHOOK_TIMEOUT_MS, type RetryBackoff } from './webhook.js';
import { withSignal } from './client.js';

/** The status of a TokenReview (Go: authenticationv1.TokenReviewStatus). */
export interface TokenReviewResult {
  authenticated: boolean;
  user?: UserInfo;
  /** Set when the token could not be checked; Go turns it into an error and never caches it. */
  error?: string;
  audiences?: string[];
}

/** Creates TokenReviews. A rejection is a failed call (an outage, bad configuration). */
export interface TokenReviewer {
  review(token: string, audiences?: string[], signal?: AbortSignal): Promise<TokenReviewResult>;
}

/**
 * Go's authenticator.Token: resolves to the user, or undefined for a token that is not valid;
 * rejects when the token could not be checked.
 */
export interface TokenAuthenticator {
  authenticateToken(token: string): Promise<UserInfo | undefined>;
}

/** Go's bearertoken and websocket invalidToken error. */
export const INVALID_BEARER_TOKEN = 'invalid bearer token';

/** The kubelet's default authentication.webhook.cacheTTL. */
export const DEFAULT_TOKEN_CACHE_TTL_MS = 2 * 60_000;

// Go's cache comment: 32k entries cover 5k nodes and 10k namespaces with a 2x margin.
const DEFAULT_TOKEN_CACHE_SIZE = 32 * 1024;

export interface TokenReviewAuthenticatorOptions {
  reviewer: TokenReviewer;
  clock: Clock;
  /** How long a review's answer (valid or not) is reused. 0 disables the cache. Default 2 min. */
  cacheTTLMs?: number;
  /** Audiences the token must be valid for; the kubelet sets none (the API server's own). */
  audiences?: string[];
  /** Retries of a failed TokenReview call. Default Go's: 500 ms x1.5, 20% jitter, 5 attempts. */
  retryBackoff?: RetryBackoff;
  /** Bound on one review, retries included. Default 30 s (Go's sharedLookupTimeout). */
  timeoutMs?: number;
  maxCacheSize?: number;
  logger?: Logger;
}

/**
 * Authenticates `Authorization: Bearer <token>` with TokenReviews, caching each answer by an HMAC
 * of the token (raw tokens never become keys or stay in memory past the call). Answers are cached
 * for cacheTTLMs whether the token is valid or not; errors, including a review that reports
 * status.error, are not. Concurrent requests with the same token share one review.
 */
export class TokenReviewAuthenticator implements Authenticator, TokenAuthenticator {
  private readonly reviewer: TokenReviewer;
  private readonly clock: Clock;
  private readonly ttlMs: number;
  private readonly audiences: string[] | undefined;
  private readonly retryBackoff: RetryBackoff;
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private readonly cache: ExpiringLRUCache<UserInfo | null>;
  private readonly inflight = new Map<string, Promise<UserInfo | undefined>>();
  // HMAC with a per-process random key: keys cannot be precomputed from known tokens.
  private readonly hmacKey = randomBytes(32);

  constructor(opts: TokenReviewAuthenticatorOptions) {
    this.reviewer = opts.reviewer;
    this.clock = opts.clock;
    this.ttlMs = opts.cacheTTLMs ?? DEFAULT_TOKEN_CACHE_TTL_MS;
    this.audiences = opts.audiences && opts.audiences.length > 0 ? [...opts.audiences] : undefined;
    this.retryBackoff = opts.retryBackoff ?? defaultWebhookRetryBackoff();
    this.timeoutMs = opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
    this.logger = opts.logger ?? defaultLogger;
    this.cache = new ExpiringLRUCache(opts.clock, opts.maxCacheSize ?? DEFAULT_TOKEN_CACHE_SIZE);
  }

  /** Go's bearertoken.Authenticator over the cached token authenticator. */
  async authenticate(request: IncomingMessage): Promise<AuthenticationResult> {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) return { user: undefined };
    let user: UserInfo | undefined;
    try {
      user = await this.authenticateToken(token);
    } catch (err) {
      return { user: undefined, error: err instanceof Error ? err : new Error(String(err)) };
    }
    if (!user) return { user: undefined, error: new Error(INVALID_BEARER_TOKEN) };
    // Go removes a token that worked, so nothing behind the filter is tempted to reuse it.
    delete request.headers.authorization;
    return { user };
  }

  /** Go's cached token authenticator. Each caller gets its own copy of the user. */
  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const key = this.keyFor(token);
    if (this.ttlMs > 0) {
      const cached = this.cache.get(key);
      if (cached !== undefined) return cached ? copyUser(cached) : undefined;
    }
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.lookup(key, token).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    const user = await pending;
    return user ? copyUser(user) : undefined;
  }

  /** Number of cached answers (for tests and metrics). */
  cacheSize(): number {
    return this.cache.size;
  }

  private async lookup(key: string, token: string): Promise<UserInfo | undefined> {
    let result: TokenReviewResult;
    try {
      result = await withTimeout(this.clock, this.timeoutMs, 'TokenReview', (signal) =>
        withExponentialBackoff(this.clock, this.retryBackoff, () => this.reviewer.review(token, this.audiences, signal), defaultShouldRetry, signal),
      );
    } catch (err) {
      // An outage or bad configuration: logged, refused, and asked again next time.
      this.logger.error('Failed to make webhook authenticator request', err);
      throw err;
    }
    if (!result.authenticated) {
      if (result.error) throw new Error(result.error);
      if (this.ttlMs > 0) this.cache.set(key, null, this.ttlMs);
      return undefined;
    }
    if (this.audiences && result.audiences && result.audiences.length > 0 && !result.audiences.some((a) => this.audiences?.includes(a))) {
      // Valid, but not for us (Go: no intersection with the wanted audiences is not-ok, no error).
      if (this.ttlMs > 0) this.cache.set(key, null, this.ttlMs);
      return undefined;
    }
    const user = copyUser(result.user ?? { name: '', groups: [] });
    if (this.ttlMs > 0) this.cache.set(key, user, this.ttlMs);
    return user;
  }

  /** Go's keyFunc: HMAC-SHA256 of the length-prefixed token and audiences. */
  private keyFor(token: string): string {
    const mac = createHmac('sha256', this.hmacKey);
    const writeString = (s: string): void => {
      const bytes = Buffer.from(s, 'utf8');
      writeLength(bytes.length);
      mac.update(bytes);
    };
    const writeLength = (n: number): void => {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(n >>> 0);
      mac.update(b);
    };
    writeString(token);
    const auds = this.audiences ?? [];
    writeLength(auds.length);
    for (const aud of auds) writeString(aud);
    return mac.digest('base64');
  }
}

function copyUser(user: UserInfo): UserInfo {
  const copy: UserInfo = { name: user.name ?? '', groups: [...(user.groups ?? [])] };
  if (user.uid) copy.uid = user.uid;
  if (user.extra) copy.extra = Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]]));
  return copy;
}

/**
 * Go's bearertoken parsing: the trimmed header split on spaces (at most 3 parts), scheme compared
 * case-insensitively, second part the token. Undefined when there is no usable bearer token.
 */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim() ?? '';
  if (value === '') return undefined;
  const parts = value.split(' ', 3);
  if (parts.length < 2 || (parts[0] as string).toLowerCase() !== 'bearer') return undefined;
  const token = parts[1] as string;
  return token === '' ? undefined : token;
}

const BEARER_PROTOCOL_PREFIX = 'base64url.bearer.authorization.k8s.io.';
const CONNECTION_UPGRADE = /(^|.*,\s*)upgrade($|\s*,)/;

/** Go's wsstream.IsWebSocketRequest. */
export function isWebSocketRequest(request: Pick<IncomingMessage, 'headers'>): boolean {
  const upgrade = request.headers.upgrade;
  if (typeof upgrade !== 'string' || upgrade.toLowerCase() !== 'websocket') return false;
  return CONNECTION_UPGRADE.test(String(request.headers.connection ?? '').toLowerCase());
}

/**
 * Go's websocket.ProtocolAuthenticator: browsers cannot set headers on a WebSocket, so a token may
 * come as the subprotocol `base64url.bearer.authorization.k8s.io.<base64url token>` next to the
 * real subprotocol. On success the token's subprotocol is removed from the request.
 */
export class WebSocketProtocolAuthenticator implements Authenticator {
  constructor(private readonly tokens: TokenAuthenticator) {}

  async authenticate(request: IncomingMessage): Promise<AuthenticationResult> {
    if (!isWebSocketRequest(request)) return { user: undefined };
    const header = request.headers['sec-websocket-protocol'];
    const headers = header === undefined ? [] : Array.isArray(header) ? header : [header];
    let token = '';
    let sawToken = false;
    const filtered: string[] = [];
    for (const value of headers) {
      for (const raw of value.split(',')) {
        const protocol = raw.trim();
        if (!protocol.startsWith(BEARER_PROTOCOL_PREFIX)) {
          filtered.push(protocol);
          continue;
        }
        if (sawToken) return { user: undefined, error: new Error('multiple base64.bearer.authorization tokens specified') };
        sawToken = true;
        const encoded = protocol.slice(BEARER_PROTOCOL_PREFIX.length);
        if (!/^[A-Za-z0-9_-]*$/.test(encoded) || encoded.length % 4 === 1) {
          return { user: undefined, error: new Error('invalid base64.bearer.authorization token encoding') };
        }
        const decoded = Buffer.from(encoded, 'base64url');
        const text = decoded.toString('utf8');
        if (!Buffer.from(text, 'utf8').equals(decoded)) {
          return { user: undefined, error: new Error('invalid base64.bearer.authorization token') };
        }
        token = text;
      }
    }
    // One other subprotocol must remain, to echo back once the token's is removed.
    if (token.length > 0 && filtered.length === 0) return { user: undefined, error: new Error('missing additional subprotocol') };
    if (token.length === 0) return { user: undefined };
    let user: UserInfo | undefined;
    try {
      user = await this.tokens.authenticateToken(token);
    } catch (err) {
      return { user: undefined, error: err instanceof Error ? err : new Error(String(err)) };
    }
    if (!user) return { user: undefined, error: new Error(INVALID_BEARER_TOKEN) };
    request.headers['sec-websocket-protocol'] = filtered.join(',');
    return { user };
  }
}

export interface ClientTokenReviewerOptions {
  /** Per-call HTTP timeout. Default 30 s. */
  timeoutMs?: number;
}

/** A TokenReviewer over client-node's AuthenticationV1Api (POST /apis/authentication.k8s.io/v1/tokenreviews). */
export function createTokenReviewer(kubeConfig: KubeConfig, opts: ClientTokenReviewerOptions = {}): TokenReviewer {
  const api = lazyApiClient(kubeConfig, (k) => k.AuthenticationV1Api);
  const timeoutMs = opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  return {
    async review(token, audiences, signal) {
      const body: V1TokenReview = {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, ...(audiences && audiences.length > 0 ? { audiences } : {}) },
      };
      const result = await (await api()).createTokenReview({ body }, withSignal(signal, timeoutMs));
      const status = result.status ?? {};
      const user = status.user;
      return {
        authenticated: status.authenticated === true,
        ...(status.error ? { error: status.error } : {}),
        ...(status.audiences ? { audiences: status.audiences } : {}),
        ...(user
          ? {
              user: {
                name: user.username ?? '',
                groups: user.groups ?? [],
                ...(user.uid ? { uid: user.uid } : {}),
                ...(user.extra ? { extra: user.extra } : {}),
              },
            }
          : {}),
      };
    },
  };
}
