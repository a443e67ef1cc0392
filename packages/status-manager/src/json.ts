// Pod statuses as the API's JSON: client-node's ObjectSerializer for field names, with metav1.Time
// values written the way the API server writes them (RFC 3339, whole seconds, UTC).
import type { V1PodStatus } from '@kubernetes/client-node';
// The package index does not re-export the serializer; this is the one its loadYaml()/dumpYaml() use.
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';

export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** metav1.Time on the wire: 2026-01-01T00:00:00Z (fractions dropped, as Go's Rfc3339Copy). */
export function formatTime(t: Date | string | number): string {
  const ms = t instanceof Date ? t.getTime() : typeof t === 'number' ? t : Date.parse(t);
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** Drops undefined/null members and empty arrays, recursively, so equal statuses compare equal (Go's Semantic.DeepEqual). */
function prune(v: unknown): Json | undefined {
  if (v === undefined || v === null) return undefined;
  if (v instanceof Date) return formatTime(v);
  if (Array.isArray(v)) {
    const out = v.map((x) => prune(x)).filter((x): x is Json => x !== undefined);
    return out.length > 0 ? out : undefined;
  }
  if (typeof v === 'object') {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const p = prune(x);
      if (p !== undefined) out[k] = p;
    }
    return out;
  }
  return v as Json;
}

const TIME_KEYS = new Set(['startTime', 'lastTransitionTime', 'lastProbeTime', 'startedAt', 'finishedAt']);

/** Rewrites the metav1.Time members (by name, under a status) to whole-second RFC 3339. */
function normalizeTimes(v: Json | undefined): void {
  if (Array.isArray(v)) for (const x of v) normalizeTimes(x);
  else if (isJsonObject(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (TIME_KEYS.has(k) && typeof x === 'string') v[k] = formatTime(x);
      else normalizeTimes(x);
    }
  }
}

/** A V1PodStatus (Dates and all) as the JSON the API server stores. */
export function podStatusToJson(status: V1PodStatus | undefined): JsonObject {
  if (!status) return {};
  const json = prune(ObjectSerializer.serialize(status, 'V1PodStatus', '')) ?? {};
  normalizeTimes(json);
  return json as JsonObject;
}

/** Structural equality of two JSON values (key order ignored). */
export function jsonEqual(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => k in b && jsonEqual(a[k], b[k]));
  }
  return false;
}
