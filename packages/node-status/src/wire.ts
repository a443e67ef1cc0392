// Node and Lease objects on the wire: client-node models <-> JSON, metav1.Time and MicroTime text,
// and the strategic merge schema of v1.Node (for @kubelet-ts/core's createTwoWayMergePatch).
import type { V1Node } from '@kubernetes/client-node';
import { deserializeApiObject, formatTime, isJsonObject, Quantity, type Json, type JsonObject, type PatchSchema } from '@kubelet-ts/core';

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
  return deserializeApiObject(obj, 'V1Node');
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

/** The patchStrategy/patchMergeKey tags of k8s.io/api's v1.Node that matter to the kubelet. */
export const nodePatchSchema: PatchSchema = {
  metadata: { fields: { ownerReferences: { mergeKey: 'uid' } } },
  status: { fields: { conditions: { mergeKey: 'type' }, addresses: { mergeKey: 'type' } } },
};

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
