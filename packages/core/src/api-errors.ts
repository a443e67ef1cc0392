// How a failed Kubernetes API call is read, whichever client made it: @kubernetes/client-node's
// ApiException (HTTP status in `code`, the Status object as a JSON `body`), an error carrying
// `statusCode`, or a test double's. Go: k8s.io/apimachinery/pkg/api/errors.

/** The HTTP status of a failed API call, or undefined (a transport error, an abort...). */
export function apiErrorCode(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === 'number' && e.code >= 100 && e.code < 600) return e.code;
  if (typeof e.statusCode === 'number' && e.statusCode >= 100 && e.statusCode < 600) return e.statusCode;
  return undefined;
}

function statusBody(err: unknown): { reason?: unknown; message?: unknown } | string | undefined {
  const body = (err as { body?: unknown } | null)?.body;
  if (typeof body !== 'string') return typeof body === 'object' && body !== null ? (body as { reason?: unknown; message?: unknown }) : undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null ? (parsed as { reason?: unknown; message?: unknown }) : body;
  } catch {
    return body;
  }
}

/** The Status reason of a failed call (NotFound, AlreadyExists, Conflict, Invalid...), when known. */
export function apiErrorReason(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  if (typeof (err as { reason?: unknown }).reason === 'string') return (err as { reason: string }).reason;
  const body = statusBody(err);
  return typeof body === 'object' && typeof body.reason === 'string' ? body.reason : undefined;
}

/**
 * A one-line text for logs and events: the Status message (as Go prints a StatusError), never the
 * whole response with headers that client-node puts in its ApiException message.
 */
export function apiErrorMessage(err: unknown): string {
  const code = apiErrorCode(err);
  if (code !== undefined && typeof err === 'object' && err !== null && 'body' in err) {
    const body = statusBody(err);
    if (typeof body === 'object' && typeof body.message === 'string') return body.message;
    if (typeof body === 'string' && body !== '') return `HTTP ${code}: ${body}`;
    return `HTTP ${code}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** True when err is an API error (carries an HTTP status and a response body). */
export function isApiError(err: unknown): boolean {
  return apiErrorCode(err) !== undefined && typeof err === 'object' && err !== null && 'body' in err;
}

export const isNotFound = (err: unknown): boolean => apiErrorCode(err) === 404;
/** 409 from an update with a stale resourceVersion or UID precondition (not a create of an existing object). */
export const isConflict = (err: unknown): boolean => apiErrorCode(err) === 409 && apiErrorReason(err) !== 'AlreadyExists';
/** 409 from a create of an object that exists. */
export const isAlreadyExists = (err: unknown): boolean => apiErrorCode(err) === 409 && apiErrorReason(err) === 'AlreadyExists';
export const isInvalid = (err: unknown): boolean => apiErrorCode(err) === 422;
export const isGone = (err: unknown): boolean => apiErrorCode(err) === 410;
