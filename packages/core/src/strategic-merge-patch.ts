// Go's two-way strategic merge patch (k8s.io/apimachinery/pkg/util/strategicpatch
// CreateTwoWayMergePatch) over wire JSON, for the kubelet's status patches of nodes and pods. Which
// lists merge by which key comes from the struct tags of k8s.io/api in Go; here each caller passes
// it as a PatchSchema. Apply covers the subset that create emits, for fake API servers.
import { deepEqual, isJsonObject, type Json, type JsonObject } from './json.js';
import { sortKeys } from './sort-keys.js';

/**
 * Strategic merge metadata of an object's fields (Go: the patchStrategy/patchMergeKey tags): a list
 * with a `mergeKey` merges element by element on that key, any other list is replaced whole;
 * `fields` describes a nested object, or the elements of a merged list.
 */
export interface PatchSchema {
  [field: string]: { mergeKey?: string; fields?: PatchSchema };
}

/**
 * strategicpatch.CreateTwoWayMergePatch(original, modified) for the given schema: changed map keys,
 * null for removed keys, merge-keyed lists as changed/added elements (plus `$patch: delete` for
 * removed ones) with a `$setElementOrder/<list>` directive when the list changed in content or
 * order, other lists whole. Keys are sorted as Go's json.Marshal sorts map keys, so the patch text
 * is Go's byte for byte. An empty object means no change.
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
    if (!deepEqual(ov, mv)) patch[k] = mv;
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
 * Applies a strategic merge patch as kube-apiserver does, for the subset createTwoWayMergePatch
 * emits plus a `{"$patch": "replace"}` list element: null deletes a key, objects merge, merge-keyed
 * lists merge element by element (`$patch: delete` removes one) in `$setElementOrder`, other values
 * replace. For fake API servers; the real one applies the full semantics. The inputs are not changed
 * and the result shares nothing with them.
 */
export function applyStrategicMergePatch(original: JsonObject, patch: JsonObject, schema: PatchSchema = {}): JsonObject {
  return applyPatch(structuredClone(original), structuredClone(patch), schema);
}

/** Applies patch to original in place; both are the caller's own copies. */
function applyPatch(original: JsonObject, patch: JsonObject, schema: PatchSchema): JsonObject {
  for (const [k, pv] of Object.entries(patch)) {
    if (k.startsWith('$setElementOrder/') || k === '$patch') continue;
    const meta = schema[k];
    const ov = original[k];
    if (pv === null) {
      delete original[k];
    } else if (isJsonObject(pv) && isJsonObject(ov)) {
      original[k] = applyPatch(ov, pv, meta?.fields ?? {});
    } else if (Array.isArray(pv) && meta?.mergeKey && !pv.some((x) => isJsonObject(x) && x.$patch === 'replace')) {
      original[k] = mergeList(Array.isArray(ov) ? ov : [], pv, meta.mergeKey, meta.fields ?? {}, patch[`$setElementOrder/${k}`]);
    } else if (Array.isArray(pv)) {
      original[k] = pv.filter((x) => !(isJsonObject(x) && x.$patch === 'replace'));
    } else {
      original[k] = pv;
    }
  }
  return original;
}

function mergeList(original: Json[], patch: Json[], mergeKey: string, schema: PatchSchema, order: Json | undefined): Json[] {
  const result = original.filter(isJsonObject);
  for (const p of patch) {
    if (!isJsonObject(p)) continue;
    const idx = result.findIndex((x) => deepEqual(x[mergeKey], p[mergeKey]));
    if (p.$patch === 'delete') {
      if (idx >= 0) result.splice(idx, 1);
    } else if (idx >= 0) {
      result[idx] = applyPatch(result[idx], p, schema);
    } else {
      result.push(p);
    }
  }
  if (!Array.isArray(order)) return result;
  const rank = (x: JsonObject): number => {
    const i = order.findIndex((o) => isJsonObject(o) && deepEqual(o[mergeKey], x[mergeKey]));
    return i < 0 ? order.length : i;
  };
  return result
    .map((x, i) => ({ x, i }))
    .sort((a, b) => rank(a.x) - rank(b.x) || a.i - b.i)
    .map((e) => e.x);
}
