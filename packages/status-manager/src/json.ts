// Pod statuses as the API's JSON: core's API serializer (client-node's field names), with metav1.Time
// values written the way the API server writes them (RFC 3339, whole seconds, UTC).
import type { V1PodStatus } from '@kubernetes/client-node';
import { formatTime, isJsonObject, serializeApiObject, type Json, type JsonObject } from '@kubelet-ts/core';

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
  const json = prune(serializeApiObject(status, 'V1PodStatus')) ?? {};
  normalizeTimes(json);
  return json as JsonObject;
}

