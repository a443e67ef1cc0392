// The slice of client-node's CoreV1Api this package calls, and how it reads API errors.
import type { CoreV1Api } from '@kubernetes/client-node';

/** What the status manager, mirror client and event sink call; a CoreV1Api satisfies it. */
export type KubeClient = Pick<
  CoreV1Api,
  'readNamespacedPod' | 'patchNamespacedPodStatus' | 'deleteNamespacedPod' | 'createNamespacedPod' | 'createNamespacedEvent' | 'patchNamespacedEvent'
>;

/** The HTTP status of a failed API call (client-node's ApiException.code), undefined for transport errors. */
export function apiErrorCode(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === 'number' && e.code >= 100 && e.code < 600) return e.code;
  if (typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
}

/** The kube Status reason of a failed call (AlreadyExists, Conflict, ...), when the body carries one. */
export function apiErrorReason(err: unknown): string | undefined {
  const body = (err as { body?: unknown } | null)?.body;
  try {
    const parsed = typeof body === 'string' ? JSON.parse(body) : body;
    return typeof parsed?.reason === 'string' ? parsed.reason : undefined;
  } catch {
    return undefined;
  }
}

export const isNotFound = (err: unknown): boolean => apiErrorCode(err) === 404;
export const isConflict = (err: unknown): boolean => apiErrorCode(err) === 409;
export const isAlreadyExists = (err: unknown): boolean => apiErrorCode(err) === 409 && apiErrorReason(err) === 'AlreadyExists';
export const isInvalid = (err: unknown): boolean => apiErrorCode(err) === 422;
