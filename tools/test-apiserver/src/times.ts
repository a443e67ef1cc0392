/**
 * metav1.Time and metav1.MicroTime as kube-apiserver decodes them. Time fields accept any RFC 3339
 * timestamp and are stored (and served) in UTC with whole seconds; MicroTime fields (lease
 * renewTime/acquireTime, event eventTime, series lastObservedTime) must have exactly six fractional
 * digits, so a JavaScript `Date#toISOString()` value (three digits) is rejected with 400 BadRequest,
 * exactly as a real API server does.
 */
import { ApiError } from './errors.js';
import { isObject, type Json, type JsonObject } from './patch.js';

const TIME_FIELDS = new Set([
  'creationTimestamp',
  'deletionTimestamp',
  'startTime',
  'lastProbeTime',
  'lastTransitionTime',
  'lastHeartbeatTime',
  'lastUpdateTime',
  'startedAt',
  'finishedAt',
  'firstTimestamp',
  'lastTimestamp',
  'deprecatedFirstTimestamp',
  'deprecatedLastTimestamp',
  'time',
]);

const MICRO_TIME_FIELDS = new Set(['renewTime', 'acquireTime', 'eventTime', 'lastObservedTime']);

/** Maps whose keys are user data, never API fields. */
const OPAQUE = new Set(['data', 'binaryData', 'stringData', 'labels', 'annotations', 'nodeSelector', 'capacity', 'allocatable']);

const RFC3339 = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(\.\d+)?([Zz]|[+-]\d\d:\d\d)$/;
const RFC3339_MICRO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/;

/** A time field that does not decode: 400 on create and update, where the body is decoded into the Go type. */
export class TimeDecodeError extends ApiError {
  constructor(
    kind: string,
    version: string,
    /** Go's time.Parse error, e.g. `parsing time "x" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ...`. */
    readonly parseError: string,
  ) {
    super(400, 'BadRequest', `${kind} in version "${version}" cannot be handled as a ${kind}: ${parseError}`);
  }
}

function cannotHandle(kind: string, version: string, value: string, layout: string, detail: string): Error {
  return new TimeDecodeError(kind, version, `parsing time "${value}" as "${layout}": ${detail}`);
}

function toUtcSeconds(m: RegExpMatchArray): string {
  const ms = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${m[8].toUpperCase() === 'Z' ? 'Z' : m[8]}`);
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function toUtcMicro(value: string): string {
  const frac = value.slice(20, 26);
  const zone = value.slice(26);
  const ms = Date.parse(`${value.slice(0, 19)}${zone}`);
  return `${new Date(ms).toISOString().slice(0, 19)}.${frac}Z`;
}

/** Validates and normalizes the Time and MicroTime fields of `obj` in place. */
export function normalizeTimes(obj: JsonObject, kind: string, version: string): void {
  const walk = (node: Json): void => {
    if (Array.isArray(node)) {
      node.forEach(walk);
      return;
    }
    if (!isObject(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (OPAQUE.has(key)) continue;
      if (typeof value === 'string' && TIME_FIELDS.has(key)) {
        const m = value.match(RFC3339);
        if (!m) throw cannotHandle(kind, version, value, '2006-01-02T15:04:05Z07:00', `cannot parse "${value}" as "2006"`);
        node[key] = toUtcSeconds(m);
      } else if (typeof value === 'string' && MICRO_TIME_FIELDS.has(key)) {
        if (!RFC3339_MICRO.test(value)) {
          const rest = value.slice(19);
          throw cannotHandle(kind, version, value, '2006-01-02T15:04:05.000000Z07:00', `cannot parse "${rest}" as ".000000"`);
        }
        node[key] = toUtcMicro(value);
      } else if (typeof value === 'object' && value !== null) {
        walk(value);
      }
    }
  };
  walk(obj);
}
