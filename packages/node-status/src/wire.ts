// Node and Lease objects on the wire: client-node models <-> JSON, metav1.Time and MicroTime text,
// and Go's two-way strategic merge patch (strategicpatch.CreateTwoWayMergePatch) for v1.Node.
import type { V1Node } from '@kubernetes/client-node';
// The package has no exports map and its index does not re-export the serializer (same import as pod-config).
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import { Quantity } from './quantity.js';
import { formatTime, isJsonObject, jsonEqual, type Json, type JsonObject } from '@kubelet-ts/core';

/** A metav1.Time value: a Date truncated to whole seconds (what the API server stores). */
export function metaTime(ms: number): Date {
  return new Date(Math.floor(ms / 1000) * 1000);
}

/**
 * A client-node V1Node as the JSON Go's json.Marshal gives: Dates as metav1.Time text, undefined
 * and null fields and empty lists and maps left out (every such Node field is omitempty). The
 * client-node models use the wire field names (V1DaemonEndpoint has `Port`), so no renaming is needed.
 */
export function nodeToWire(node: V1Node): JsonObject {
  const text = JSON.stringify(node, function (this: Record<string, unknown>, key: string, value: unknown) {
    const orig = this[key];
    if (orig instanceof Date) return formatTime(orig);
    return value;
  });
  return prune(JSON.parse(text) as Json) as JsonObject;
}

/** Wire JSON to a client-node V1Node (time fields become Dates). */
export function nodeFromWire(obj: JsonObject): V1Node {
  return ObjectSerializer.deserialize(obj, 'V1Node') as V1Node;
}

/** Drops null, empty lists and empty maps, recursively (Go's omitempty for the fields a Node has). */
export function prune(v: Json): Json | undefined {
  if (v === null) return undefined;
  if (Array.isArray(v)) {
    if (v.length === 0) return undefined;
    return v.map((x) => prune(x) ?? null);
  }
  if (isJsonObject(v)) {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) {
      const p = prune(x);
      if (p !== undefined) out[k] = p;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return v;
}

/** Strategic merge metadata: lists merged by a key; any other list is replaced whole. */
export interface PatchSchema {
  [field: string]: { mergeKey?: string; fields?: PatchSchema };
}

/** The patchStrategy/patchMergeKey tags of k8s.io/api's v1.Node that matter to the kubelet. */
export const nodePatchSchema: PatchSchema = {
  metadata: { fields: { ownerReferences: { mergeKey: 'uid' } } },
  status: { fields: { conditions: { mergeKey: 'type' }, addresses: { mergeKey: 'type' } } },
};

function sortKeys(v: Json): Json {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (!isJsonObject(v)) return v;
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
  return out;
}

/**
 * strategicpatch.CreateTwoWayMergePatch(original, modified) for the given schema: changed map keys,
 * null for removed keys, merge-keyed lists as changed/added elements (plus `$patch: delete` for
 * removed ones) with a `$setElementOrder/<list>` directive, other lists whole. Keys are sorted as
 * Go's json.Marshal sorts map keys. An empty object means no change.
 */
export function createTwoWayMergePatch(original: JsonObject, modified: JsonObject, schema: PatchSchema = {}): JsonObject {
  return sortKeys(diffMaps(original, modified, schema)) as JsonObject;
}

function diffMaps(original: JsonObject, modified: JsonObject, schema: PatchSchema): JsonObject {
  const patch: JsonObject = {};
  for (const [k, mv] of Object.entries(modified)) {
    const ov = original[k];
    const meta = schema[k];
    if (ov === undefined) {
      patch[k] = mv;
      continue;
    }
    if (isJsonObject(ov) && isJsonObject(mv)) {
      const sub = diffMaps(ov, mv, meta?.fields ?? {});
      if (Object.keys(sub).length > 0) patch[k] = sub;
      continue;
    }
    if (Array.isArray(ov) && Array.isArray(mv) && meta?.mergeKey) {
      diffMergingList(k, ov, mv, meta.mergeKey, meta.fields ?? {}, patch);
      continue;
    }
    if (!jsonEqual(ov, mv)) patch[k] = mv;
  }
  for (const k of Object.keys(original)) {
    if (!(k in modified)) patch[k] = null;
  }
  return patch;
}

function diffMergingList(key: string, original: Json[], modified: Json[], mergeKey: string, schema: PatchSchema, patch: JsonObject): void {
  const keyOf = (x: Json): Json | undefined => (isJsonObject(x) ? x[mergeKey] : undefined);
  const originalByKey = new Map<string, JsonObject>();
  for (const x of original) if (isJsonObject(x)) originalByKey.set(JSON.stringify(keyOf(x)), x);
  const modifiedKeys = new Set(modified.map((x) => JSON.stringify(keyOf(x))));
  const changes: Json[] = [];
  for (const x of modified) {
    if (!isJsonObject(x)) continue;
    const o = originalByKey.get(JSON.stringify(keyOf(x)));
    if (!o) {
      changes.push(x);
      continue;
    }
    const sub = diffMaps(o, x, schema);
    if (Object.keys(sub).length > 0) changes.push({ ...sub, [mergeKey]: x[mergeKey] });
  }
  for (const x of original) {
    if (isJsonObject(x) && !modifiedKeys.has(JSON.stringify(keyOf(x)))) changes.push({ [mergeKey]: x[mergeKey], $patch: 'delete' });
  }
  const orderSame =
    original.length === modified.length && original.every((x, i) => JSON.stringify(keyOf(x)) === JSON.stringify(keyOf(modified[i])));
  if (changes.length > 0) patch[key] = changes;
  if (changes.length > 0 || !orderSame) {
    patch[`$setElementOrder/${key}`] = modified.filter(isJsonObject).map((x) => ({ [mergeKey]: x[mergeKey] }));
  }
}

/**
 * Applies a strategic merge patch as kube-apiserver does for the subset createTwoWayMergePatch
 * emits (plus a `{"$patch": "replace"}` list element). Used by the fakes; the real server applies
 * the full semantics.
 */
export function applyStrategicMergePatch(original: JsonObject, patch: JsonObject, schema: PatchSchema = {}): JsonObject {
  const out: JsonObject = { ...original };
  for (const [k, pv] of Object.entries(patch)) {
    if (k.startsWith('$setElementOrder/') || k === '$patch') continue;
    const meta = schema[k];
    if (pv === null) {
      delete out[k];
    } else if (isJsonObject(pv) && isJsonObject(out[k])) {
      out[k] = applyStrategicMergePatch(out[k] as JsonObject, pv, meta?.fields ?? {});
    } else if (Array.isArray(pv) && meta?.mergeKey && !pv.some((x) => isJsonObject(x) && x.$patch === 'replace')) {
      out[k] = mergeList(Array.isArray(out[k]) ? (out[k] as Json[]) : [], pv, meta.mergeKey, meta.fields ?? {}, patch[`$setElementOrder/${k}`]);
    } else if (Array.isArray(pv)) {
      out[k] = pv.filter((x) => !(isJsonObject(x) && x.$patch === 'replace'));
    } else {
      out[k] = pv;
    }
  }
  return out;
}

function mergeList(original: Json[], patch: Json[], mergeKey: string, schema: PatchSchema, order: Json | undefined): Json[] {
  const result = original.filter(isJsonObject).map((x) => ({ ...x }));
  for (const p of patch) {
    if (!isJsonObject(p)) continue;
    const idx = result.findIndex((x) => jsonEqual(x[mergeKey], p[mergeKey]));
    if (p.$patch === 'delete') {
      if (idx >= 0) result.splice(idx, 1);
    } else if (idx >= 0) {
      result[idx] = applyStrategicMergePatch(result[idx], p, schema);
    } else {
      result.push(p);
    }
  }
  if (!Array.isArray(order)) return result;
  const rank = (x: JsonObject): number => {
    const i = order.findIndex((o) => isJsonObject(o) && jsonEqual(o[mergeKey], x[mergeKey]));
    return i < 0 ? order.length : i;
  };
  return result.map((x, i) => ({ x, i })).sort((a, b) => rank(a.x) - rank(b.x) || a.i - b.i).map((e) => e.x);
}

/**
 * apiequality.Semantic.DeepEqual over wire JSON: quantities (under capacity/allocatable) compare
 * by value, everything else exactly.
 */
export function semanticEqual(a: Json | undefined, b: Json | undefined, quantityMap = false): boolean {
  if (quantityMap && typeof a === 'string' && typeof b === 'string') {
    try {
      return Quantity.parse(a).equals(Quantity.parse(b));
    } catch {
      return a === b;
    }
  }
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => semanticEqual(x, b[i]));
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => k in b && semanticEqual(a[k], b[k], quantityMap || k === 'capacity' || k === 'allocatable'));
  }
  return a === b;
}
