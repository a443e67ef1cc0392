// Authorization of kubelet API requests (Go: k8s.io/apiserver's authorizerfactory AlwaysAllow and
// the webhook authorizer the kubelet uses with authorization.mode=Webhook, which asks the API server
// with SubjectAccessReviews and caches the answers).
import type { KubeConfig, V1SubjectAccessReview } from '@kubernetes/client-node';
import { defaultLogger, lazyApiClient, type Clock, type Logger } from '@kubelet-ts/core';
import { withSignal } from './client.js';
import { ExpiringLRUCache } from './expiring-cache.js';
import type { AuthorizationResult, Authorizer, RequestAttributes } from './types.js';
import { defaultShouldRetry, defaultWebhookRetryBackoff, withExponentialBackoff, withTimeout, WEBHOOK_TIMEOUT_MS, type RetryBackoff } from './webhook.js';

/** Go's AlwaysAllow authorizer (the kubelet's default authorization.mode). */
export class AlwaysAllowAuthorizer implements Authorizer {
  async authorize(_attrs: RequestAttributes): Promise<AuthorizationResult> {
    return { decision: 'allow' };
  }
}

/** The spec of a SubjectAccessReview (Go: authorizationv1.SubjectAccessReviewSpec). */
export interface SubjectAccessReviewSpec {
  user: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
  resourceAttributes?: {
    namespace: string;
    verb: string;
    group: string;
    version: string;
    resource: string;
    subresource: string;
    name: string;
  };
  nonResourceAttributes?: { path: string; verb: string };
}

/** The status of a SubjectAccessReview (Go: authorizationv1.SubjectAccessReviewStatus). */
export interface SubjectAccessReviewStatus {
  allowed: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

/** Creates SubjectAccessReviews. A rejection is a failed call. */
export interface SubjectAccessReviewer {
  review(spec: SubjectAccessReviewSpec, signal?: AbortSignal): Promise<SubjectAccessReviewStatus>;
}

/** The kubelet's defaults for authorization.webhook.cacheAuthorizedTTL and cacheUnauthorizedTTL. */
export const DEFAULT_CACHE_AUTHORIZED_TTL_MS = 5 * 60_000;
export const DEFAULT_CACHE_UNAUTHORIZED_TTL_MS = 30_000;

// Go: cache.NewLRUExpireCache(8192), and no caching of requests whose requester-controlled
// attributes add up to 10000 bytes or more (they would let a client flood the cache).
const RESPONSE_CACHE_SIZE = 8192;
const MAX_CONTROLLED_ATTR_CACHE_SIZE = 10_000;

/** Go's SubjectAccessReview spec for the attributes: resourceAttributes or nonResourceAttributes. */
export function subjectAccessReviewSpec(attrs: RequestAttributes): SubjectAccessReviewSpec {
  const spec: SubjectAccessReviewSpec = { user: attrs.user.name, groups: [...attrs.user.groups] };
  if (attrs.user.uid) spec.uid = attrs.user.uid;
  if (attrs.user.extra) spec.extra = Object.fromEntries(Object.entries(attrs.user.extra).map(([k, v]) => [k, [...v]]));
  if (attrs.resourceRequest) {
    spec.resourceAttributes = {
      namespace: attrs.namespace,
      verb: attrs.verb,
      group: attrs.apiGroup,
      version: attrs.apiVersion,
      resource: attrs.resource,
      subresource: attrs.subresource,
      name: attrs.name,
    };
  } else {
    spec.nonResourceAttributes = { path: attrs.path, verb: attrs.verb };
  }
  return spec;
}

/** A stable cache key for a spec (Go marshals the spec to JSON; map keys sorted as Go does). */
function specKey(spec: SubjectAccessReviewSpec): string {
  const extra = spec.extra ? Object.keys(spec.extra).sort().map((k) => [k, spec.extra?.[k]]) : null;
  return JSON.stringify([spec.resourceAttributes ?? null, spec.nonResourceAttributes ?? null, spec.user, spec.groups, extra, spec.uid ?? '']);
}

/** Go's shouldCache. */
function shouldCache(attrs: RequestAttributes): boolean {
  const size =
    attrs.namespace.length +
    attrs.verb.length +
    attrs.apiGroup.length +
    attrs.apiVersion.length +
    attrs.resource.length +
    attrs.subresource.length +
    attrs.name.length +
    attrs.path.length;
  return size < MAX_CONTROLLED_ATTR_CACHE_SIZE;
}

export interface SubjectAccessReviewAuthorizerOptions {
  reviewer: SubjectAccessReviewer;
  clock: Clock;
  /** How long an allowed answer is reused. Default 5 min; 0 disables. */
  cacheAuthorizedTTLMs?: number;
  /** How long a not-allowed answer is reused. Default 30 s; 0 disables. */
  cacheUnauthorizedTTLMs?: number;
  /** Retries of a failed call. Default Go's: 500 ms x1.5, 20% jitter, 5 attempts. */
  retryBackoff?: RetryBackoff;
  /** Bound on one review, retries included. Default 30 s. */
  timeoutMs?: number;
  logger?: Logger;
}

/**
 * Go's WebhookAuthorizer: asks the API server whether the user may do the action on the node,
 * caches allowed answers for cacheAuthorizedTTLMs and the others for cacheUnauthorizedTTLMs, keyed
 * by the whole review (user, groups, uid, extra and attributes). A failed call is an error (the
 * kubelet answers 500) and is never cached.
 */
export class SubjectAccessReviewAuthorizer implements Authorizer {
  private readonly reviewer: SubjectAccessReviewer;
  private readonly clock: Clock;
  private readonly authorizedTTLMs: number;
  private readonly unauthorizedTTLMs: number;
  private readonly retryBackoff: RetryBackoff;
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private readonly cache: ExpiringLRUCache<SubjectAccessReviewStatus>;

  constructor(opts: SubjectAccessReviewAuthorizerOptions) {
    this.reviewer = opts.reviewer;
    this.clock = opts.clock;
    this.authorizedTTLMs = opts.cacheAuthorizedTTLMs ?? DEFAULT_CACHE_AUTHORIZED_TTL_MS;
    this.unauthorizedTTLMs = opts.cacheUnauthorizedTTLMs ?? DEFAULT_CACHE_UNAUTHORIZED_TTL_MS;
    this.retryBackoff = opts.retryBackoff ?? defaultWebhookRetryBackoff();
    this.timeoutMs = opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
    this.logger = opts.logger ?? defaultLogger;
    this.cache = new ExpiringLRUCache(opts.clock, RESPONSE_CACHE_SIZE);
  }

  async authorize(attrs: RequestAttributes): Promise<AuthorizationResult> {
    const spec = subjectAccessReviewSpec(attrs);
    const key = specKey(spec);
    let status = this.cache.get(key);
    if (!status) {
      try {
        status = await withTimeout(this.clock, this.timeoutMs, 'SubjectAccessReview', (signal) =>
          withExponentialBackoff(this.clock, this.retryBackoff, () => this.reviewer.review(spec, signal), defaultShouldRetry, signal),
        );
      } catch (err) {
        this.logger.error('Failed to make webhook authorizer request', err);
        throw err;
      }
      if (shouldCache(attrs)) {
        const ttl = status.allowed ? this.authorizedTTLMs : this.unauthorizedTTLMs;
        if (ttl > 0) this.cache.set(key, { ...status }, ttl);
      }
    }
    const reason = status.reason ?? '';
    if (status.denied && status.allowed) throw new Error('webhook subject access review returned both allow and deny response');
    if (status.denied) return { decision: 'deny', reason };
    if (status.allowed) return { decision: 'allow', reason };
    return { decision: 'no-opinion', reason };
  }

  /** Number of cached answers (for tests and metrics). */
  cacheSize(): number {
    return this.cache.size;
  }
}

/** Copies of strings with Go's omitempty: empty fields stay off the wire. */
function omitEmpty<T extends Record<string, string>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== '')) as Partial<T>;
}

export interface ClientSubjectAccessReviewerOptions {
  /** Per-call HTTP timeout. Default 30 s. */
  timeoutMs?: number;
}

/** A SubjectAccessReviewer over client-node's AuthorizationV1Api (POST /apis/authorization.k8s.io/v1/subjectaccessreviews). */
export function createSubjectAccessReviewer(kubeConfig: KubeConfig, opts: ClientSubjectAccessReviewerOptions = {}): SubjectAccessReviewer {
  const api = lazyApiClient(kubeConfig, (k) => k.AuthorizationV1Api);
  const timeoutMs = opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  return {
    async review(spec, signal) {
      const body: V1SubjectAccessReview = {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          ...(spec.user ? { user: spec.user } : {}),
          ...(spec.uid ? { uid: spec.uid } : {}),
          ...(spec.groups.length > 0 ? { groups: spec.groups } : {}),
          ...(spec.extra ? { extra: spec.extra } : {}),
          ...(spec.resourceAttributes ? { resourceAttributes: omitEmpty(spec.resourceAttributes) } : {}),
          ...(spec.nonResourceAttributes ? { nonResourceAttributes: omitEmpty(spec.nonResourceAttributes) } : {}),
        },
      };
      const result = await (await api()).createSubjectAccessReview({ body }, withSignal(signal, timeoutMs));
      const status = result.status;
      return {
        allowed: status?.allowed === true,
        ...(status?.denied ? { denied: true } : {}),
        ...(status?.reason ? { reason: status.reason } : {}),
        ...(status?.evaluationError ? { evaluationError: status.evaluationError } : {}),
      };
    },
  };
}
