// Retry and timeout around a webhook call (Go: k8s.io/apiserver/pkg/util/webhook
// WithExponentialBackoff and DefaultShouldRetry, with the kubelet's DefaultAuthWebhookRetryBackoff).
import { apiErrorCode, apiErrorReason, errorCode, jitter, type Clock } from '@kubelet-ts/core';

/** Go's wait.Backoff, in milliseconds. */
export interface RetryBackoff {
  durationMs: number;
  factor: number;
  jitter: number;
  /** Attempts in all; 1 disables retrying. */
  steps: number;
}

/** Go's DefaultAuthWebhookRetryBackoff: 500 ms, x1.5, 20% jitter, 5 attempts. */
export const defaultWebhookRetryBackoff = (): RetryBackoff => ({ durationMs: 500, factor: 1.5, jitter: 0.2, steps: 5 });

/** How long one TokenReview or SubjectAccessReview may take, retries included (Go's sharedLookupTimeout). */
export const WEBHOOK_TIMEOUT_MS = 30_000;

const knownReasons = new Set([
  'Unauthorized',
  'Forbidden',
  'NotFound',
  'AlreadyExists',
  'Conflict',
  'Gone',
  'Invalid',
  'ServerTimeout',
  'Timeout',
  'TooManyRequests',
  'BadRequest',
  'MethodNotAllowed',
  'NotAcceptable',
  'RequestEntityTooLarge',
  'UnsupportedMediaType',
  'InternalError',
  'Expired',
  'ServiceUnavailable',
]);

/** The details of a Status error body, when the error carries one. */
function statusDetails(err: unknown): { retryAfterSeconds?: unknown } | undefined {
  let body = (err as { body?: unknown } | null)?.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const details = (body as { details?: unknown } | null)?.details;
  return typeof details === 'object' && details !== null ? details : undefined;
}

/**
 * Go's webhook.DefaultShouldRetry: a reset connection, an InternalError, a Timeout, TooManyRequests,
 * or a Status that asks the client to come back later.
 */
export function defaultShouldRetry(err: unknown): boolean {
  if (err === undefined || err === null) return false;
  if (errorCode(err) === 'ECONNRESET') return true;
  const code = apiErrorCode(err);
  const reason = apiErrorReason(err) ?? '';
  const unknownReason = !knownReasons.has(reason);
  if (reason === 'InternalError' || (unknownReason && code === 500)) return true;
  if (reason === 'Timeout' || (unknownReason && code === 504)) return true;
  if (reason === 'TooManyRequests' || code === 429) return true;
  // Go's SuggestsClientDelay: a Status with details that is a ServerTimeout or names a Retry-After.
  const details = code === undefined ? undefined : statusDetails(err);
  if (details) {
    if (reason === 'ServerTimeout') return true;
    if (typeof details.retryAfterSeconds === 'number' && details.retryAfterSeconds > 0) return true;
  }
  return false;
}

/**
 * Go's webhook.WithExponentialBackoff over wait.ExponentialBackoffWithContext: calls fn until it
 * succeeds, fails with an error shouldRetry rejects, or the attempts run out (the last error is
 * thrown). An aborted signal stops the waiting between attempts.
 */
export async function withExponentialBackoff<T>(
  clock: Clock,
  backoff: RetryBackoff,
  fn: () => Promise<T>,
  shouldRetry: (err: unknown) => boolean = defaultShouldRetry,
  signal?: AbortSignal,
  random: () => number = Math.random,
): Promise<T> {
  let steps = Math.max(1, backoff.steps);
  let durationMs = backoff.durationMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!shouldRetry(err) || steps <= 1 || signal?.aborted) throw err;
      steps--;
      const wait = backoff.jitter > 0 ? jitter(durationMs, backoff.jitter, random) : durationMs;
      if (backoff.factor !== 0) durationMs *= backoff.factor;
      try {
        await clock.sleep(wait, signal);
      } catch {
        // Go returns the webhook's own error rather than the context's when a call had failed.
        throw err;
      }
    }
  }
}

/**
 * Runs fn with a signal that aborts after timeoutMs on the clock, and stops waiting for fn at that
 * point even if fn ignores the signal (a test double, a hung socket).
 */
export async function withTimeout<T>(clock: Clock, timeoutMs: number, what: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timer: { cancel(): void } | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = clock.setTimeout(() => {
      const err = new Error(`${what}: timed out after ${timeoutMs}ms`);
      err.name = 'TimeoutError';
      controller.abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    return await Promise.race([fn(controller.signal), timedOut]);
  } finally {
    timer?.cancel();
  }
}
