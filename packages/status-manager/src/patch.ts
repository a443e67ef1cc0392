// The status patch the kubelet sends (Go: statusutil.PatchPodStatus, i.e. strategicpatch
// CreateTwoWayMergePatch of {status: old} -> {metadata: {uid}, status: new}), limited to the pod
// status schema: conditions merge by type, podIPs/hostIPs by ip, every other list is atomic
// (containerStatuses included, so changed lists are always sent whole).
import { createTwoWayMergePatch, type JsonObject, type PatchSchema } from '@kubelet-ts/core';

/**
 * The strategic merge schema of v1.PodStatus (k8s.io/api patchMergeKey tags): the lists that merge
 * by a key; the rest are replaced whole. With @kubelet-ts/core's createTwoWayMergePatch and
 * applyStrategicMergePatch, for a pod's `status`.
 */
export const podStatusPatchSchema: PatchSchema = { conditions: { mergeKey: 'type' }, podIPs: { mergeKey: 'ip' }, hostIPs: { mergeKey: 'ip' } };

/** What preparePodStatusPatch gives. */
export interface PodStatusPatch {
  /** The patch body, ready for `application/strategic-merge-patch+json`. */
  body: JsonObject;
  /** No status field changed (Go's `unchanged`): the patch need not be sent. */
  unchanged: boolean;
}

/**
 * `{"metadata":{"uid":U[,"resourceVersion":RV]},"status":{...}}` (Go: preparePatchBytesForPodStatus).
 * The uid makes the API server refuse a patch of a different pod with the same name (422 there, as
 * the uid is immutable); the optional resourceVersion makes it refuse one computed against a stale
 * copy (409).
 */
export function preparePodStatusPatch(uid: string, oldStatus: JsonObject, newStatus: JsonObject, resourceVersion?: string): PodStatusPatch {
  const status = createTwoWayMergePatch(oldStatus, newStatus, podStatusPatchSchema);
  const unchanged = Object.keys(status).length === 0;
  const metadata: JsonObject = { uid };
  if (resourceVersion) metadata.resourceVersion = resourceVersion;
  const body: JsonObject = { metadata };
  if (!unchanged) body.status = status;
  return { body, unchanged };
}
