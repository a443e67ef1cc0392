/**
 * Kubernetes `Status` objects and the error type the handlers throw. Messages and reasons follow
 * k8s.io/apimachinery/pkg/api/errors so clients that match on reason/code (or even on the message)
 * behave as they would against kube-apiserver.
 */

export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'BadRequest'
  | 'Expired'
  | 'Gone'
  | 'MethodNotAllowed'
  | 'Unauthorized'
  | 'ServiceUnavailable'
  | 'UnsupportedMediaType'
  | 'InternalError'
  | 'Timeout'
  | 'ServerTimeout'
  | 'TooManyRequests'
  | 'Forbidden'
  | 'NotAcceptable'
  | '';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never> | { resourceVersion?: string };
  status: 'Failure' | 'Success';
  message?: string;
  reason?: StatusReason;
  details?: StatusDetails;
  code?: number;
}

/** An error carrying the Status object the server answers with. */
export class ApiError extends Error {
  readonly status: KubeStatus;

  constructor(code: number, reason: StatusReason, message: string, details?: StatusDetails) {
    super(message);
    this.name = 'ApiError';
    this.status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message };
    if (reason) this.status.reason = reason;
    if (details) this.status.details = details;
    this.status.code = code;
  }

  get code(): number {
    return this.status.code ?? 500;
  }
}

/** `pods`, or `leases.coordination.k8s.io` for a named group: the qualified resource kube prints. */
export function qualifiedResource(resource: string, group: string): string {
  return group ? `${resource}.${group}` : resource;
}

function details(name: string, resource: string, group: string): StatusDetails {
  const d: StatusDetails = { name };
  if (group) d.group = group;
  d.kind = resource;
  return d;
}

export function notFound(resource: string, group: string, name: string): ApiError {
  return new ApiError(404, 'NotFound', `${qualifiedResource(resource, group)} "${name}" not found`, details(name, resource, group));
}

export function alreadyExists(resource: string, group: string, name: string): ApiError {
  return new ApiError(409, 'AlreadyExists', `${qualifiedResource(resource, group)} "${name}" already exists`, details(name, resource, group));
}

export const OptimisticLockErrorMsg = 'the object has been modified; please apply your changes to the latest version and try again';

export function conflict(resource: string, group: string, name: string, why: string = OptimisticLockErrorMsg): ApiError {
  return new ApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualifiedResource(resource, group)} "${name}": ${why}`,
    details(name, resource, group),
  );
}

/**
 * A failed storage precondition (DeleteOptions.preconditions, or a uid in a PUT body): kube's etcd3
 * store returns an InvalidObjError that the registry turns into a Conflict with this message.
 */
export function preconditionFailed(
  resource: string,
  group: string,
  name: string,
  key: string,
  what: 'UID' | 'ResourceVersion',
  wanted: string,
  actual: string,
): ApiError {
  return conflict(
    resource,
    group,
    name,
    `StorageError: invalid object, Code: 4, Key: ${key}, ResourceVersion: 0, AdditionalErrorMsg: ` +
      `Precondition failed: ${what} in precondition: ${wanted}, ${what} in object meta: ${actual}`,
  );
}

export interface FieldError {
  /** FieldValueRequired, FieldValueInvalid, FieldValueForbidden, ... */
  type: 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueNotSupported' | 'FieldValueDuplicate';
  field: string;
  /** For Invalid: the offending value. */
  value?: unknown;
  detail?: string;
}

function fieldErrorText(e: FieldError): string {
  switch (e.type) {
    case 'FieldValueRequired':
      return `Required value${e.detail ? `: ${e.detail}` : ''}`;
    case 'FieldValueForbidden':
      return `Forbidden${e.detail ? `: ${e.detail}` : ''}`;
    case 'FieldValueDuplicate':
      return `Duplicate value: ${JSON.stringify(e.value)}`;
    case 'FieldValueNotSupported':
      return `Unsupported value: ${JSON.stringify(e.value)}${e.detail ? `: ${e.detail}` : ''}`;
    default:
      return `Invalid value: ${JSON.stringify(e.value)}${e.detail ? `: ${e.detail}` : ''}`;
  }
}

/**
 * 422 Invalid, formatted like apierrors.NewInvalid: `Pod "x" is invalid: metadata.name: Required value: ...`. Every
 * error is a cause; the message lists each distinct one once (ErrorList.ToAggregate drops repeats).
 */
export function invalid(kind: string, group: string, name: string, errs: FieldError[]): ApiError {
  const texts = [...new Set(errs.map((e) => `${e.field}: ${fieldErrorText(e)}`))];
  const joined = texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
  const qualifiedKind = group ? `${kind}.${group}` : kind;
  // metav1.StatusDetails.Name is omitempty: an object without a name (a TokenRequest, a create with neither name nor
  // generateName) has none in the details.
  const d: StatusDetails = name ? { name } : {};
  if (group) d.group = group;
  d.kind = kind;
  d.causes = errs.map((e) => ({ reason: e.type, message: fieldErrorText(e), field: e.field }));
  return new ApiError(422, 'Invalid', `${qualifiedKind} "${name}" is invalid: ${joined}`, d);
}

export function badRequest(message: string): ApiError {
  return new ApiError(400, 'BadRequest', message);
}

export function methodNotAllowed(): ApiError {
  return new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});
}

export function routeNotFound(): ApiError {
  return new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
}

/** The watch ERROR object for a resourceVersion older than the kept history (HTTP 410 Gone, reason Expired). */
export function tooOldResourceVersion(requested: number, oldest: number): ApiError {
  return new ApiError(410, 'Expired', `too old resource version: ${requested} (${oldest})`);
}

export function unsupportedMediaType(accepted: string[]): ApiError {
  return new ApiError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
  );
}

export function unauthorized(): ApiError {
  return new ApiError(401, 'Unauthorized', 'Unauthorized');
}

export function serviceUnavailable(message = 'the server is currently unable to handle the request'): ApiError {
  return new ApiError(503, 'ServiceUnavailable', message);
}

export function internalError(message: string): ApiError {
  return new ApiError(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] });
}

/** A ready-made Status for an arbitrary HTTP code (used by failNext). */
export function statusForCode(code: number, message?: string): ApiError {
  const reasons: Record<number, StatusReason> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    409: 'Conflict',
    410: 'Expired',
    415: 'UnsupportedMediaType',
    422: 'Invalid',
    429: 'TooManyRequests',
    500: 'InternalError',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  const err = new ApiError(code, reasons[code] ?? '', message ?? `injected failure (HTTP ${code})`);
  if (code === 429 || code === 503) err.status.details = { retryAfterSeconds: 1 };
  return err;
}

export function successStatus(details: StatusDetails): KubeStatus {
  // Like metav1.Status{Status: Success, Details: ...}: code is 0 and omitted on the wire.
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details };
}
