import { isJsonObject, jsonEqual, type Json, type JsonObject } from '@kubelet-ts/core';
// The status patch the kubelet sends (Go: statusutil.PatchPodStatus, i.e. strategicpatch
// CreateTwoWayMergePatch of {status: old} -> {metadata: {uid}, status: new}), limited to the pod
// status schema: conditions merge by type, podIPs/hostIPs by ip, every other list is atomic
// (containerStatuses included, so changed lists are always sent whole).

/** Lists of the pod status that merge by a key (k8s.io/api patchMergeKey tags); the rest are replaced whole. */
export const POD_STATUS_MERGE_KEYS: Readonly<Record<string, string>> = { conditions: 'type', podIPs: 'ip', hostIPs: 'ip' };

/** The strategic merge patch turning old into new for one object level; undefined when they are equal. */
function diffObject(oldObj: JsonObject, newObj: JsonObject, mergeKeys: Readonly<Record<string, string>>): JsonObject | undefined {
  const patch: JsonObject = {};
  for (const [key, value] of Object.entries(newObj)) {
    const before = oldObj[key];
    if (jsonEqual(before, value)) continue;
    const mergeKey = mergeKeys[key];
    if (mergeKey && Array.isArray(value) && Array.isArray(before)) {
      const listPatch = diffMergeList(before, value, mergeKey);
      if (listPatch) {
        patch[`$setElementOrder/${key}`] = value.map((el) => (isJsonObject(el) ? { [mergeKey]: el[mergeKey] } : el));
        patch[key] = listPatch;
      }
    } else if (isJsonObject(value) && isJsonObject(before)) {
      const sub = diffObject(before, value, {});
      if (sub) patch[key] = sub;
    } else {
      patch[key] = value;
    }
  }
  for (const key of Object.keys(oldObj)) if (!(key in newObj)) patch[key] = null;
  return Object.keys(patch).length > 0 ? patch : undefined;
}

function diffMergeList(before: Json[], after: Json[], mergeKey: string): Json[] | undefined {
  const out: Json[] = [];
  const keyOf = (el: Json): Json | undefined => (isJsonObject(el) ? el[mergeKey] : undefined);
  for (const el of after) {
    const old = before.find((o) => keyOf(o) === keyOf(el));
    if (!old || !isJsonObject(old) || !isJsonObject(el)) {
      if (!old || !jsonEqual(old, el)) out.push(el);
      continue;
    }
    const sub = diffObject(old, el, {});
    if (sub) out.push({ [mergeKey]: el[mergeKey], ...sub });
  }
  for (const old of before) {
    const k = keyOf(old);
    if (k !== undefined && !after.some((el) => keyOf(el) === k)) out.push({ [mergeKey]: k, $patch: 'delete' });
  }
  return out.length > 0 ? out : undefined;
}

/** The status part of the patch (undefined when nothing changed). */
export function diffPodStatus(oldStatus: JsonObject, newStatus: JsonObject): JsonObject | undefined {
  return diffObject(oldStatus, newStatus, POD_STATUS_MERGE_KEYS);
}

export interface PodStatusPatch {
  /** The patch body, ready for `application/strategic-merge-patch+json`. */
  body: JsonObject;
  /** No status field changed (Go's `unchanged`): the patch need not be sent. */
  unchanged: boolean;
}

/**
 * `{"metadata":{"uid":U[,"resourceVersion":RV]},"status":{...}}`. The uid makes the API server
 * refuse a patch of a different pod with the same name (422 there, as the uid is immutable); the
 * optional resourceVersion makes it refuse one computed against a stale copy (409).
 */
export function preparePodStatusPatch(uid: string, oldStatus: JsonObject, newStatus: JsonObject, resourceVersion?: string): PodStatusPatch {
  const status = diffPodStatus(oldStatus, newStatus);
  const metadata: JsonObject = { uid };
  if (resourceVersion) metadata.resourceVersion = resourceVersion;
  const body: JsonObject = { metadata };
  if (status) body.status = status;
  return { body, unchanged: status === undefined };
}

/**
 * Applies a patch made by diffPodStatus to a status (the subset of strategic merge it uses:
 * nulls delete, maps merge, keyed lists merge with `$patch: delete` and `$setElementOrder`).
 */
export function applyPodStatusPatch(status: JsonObject, patch: JsonObject): JsonObject {
  return applyObject(status, patch, POD_STATUS_MERGE_KEYS);
}

function applyObject(target: JsonObject, patch: JsonObject, mergeKeys: Readonly<Record<string, string>>): JsonObject {
  const out: JsonObject = structuredClone(target);
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$setElementOrder/')) continue;
    if (value === null) {
      delete out[key];
      continue;
    }
    const mergeKey = mergeKeys[key];
    if (mergeKey && Array.isArray(value)) {
      out[key] = applyMergeList(Array.isArray(out[key]) ? (out[key] as Json[]) : [], value, mergeKey, patch[`$setElementOrder/${key}`]);
    } else if (isJsonObject(value) && isJsonObject(out[key])) {
      out[key] = applyObject(out[key] as JsonObject, value, {});
    } else {
      out[key] = structuredClone(value);
    }
  }
  return out;
}

function applyMergeList(before: Json[], patch: Json[], mergeKey: string, order: Json | undefined): Json[] {
  let list = structuredClone(before);
  for (const el of patch) {
    if (!isJsonObject(el)) continue;
    const k = el[mergeKey];
    const i = list.findIndex((o) => isJsonObject(o) && o[mergeKey] === k);
    if (el.$patch === 'delete') {
      if (i >= 0) list.splice(i, 1);
    } else if (i >= 0) {
      list[i] = applyObject(list[i] as JsonObject, el, {});
    } else {
      list.push(structuredClone(el));
    }
  }
  if (Array.isArray(order)) {
    const rank = new Map(order.map((o, idx) => [isJsonObject(o) ? o[mergeKey] : o, idx]));
    list = [...list].sort((a, b) => (rank.get(isJsonObject(a) ? a[mergeKey] : a) ?? Infinity) - (rank.get(isJsonObject(b) ? b[mergeKey] : b) ?? Infinity));
  }
  return list;
}
