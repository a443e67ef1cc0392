import type { V1Pod } from '@kubernetes/client-node';
import { deserializeApiObject, serializeApiObject } from '@kubelet-ts/core';

/** A decoded JSON/YAML object to a V1Pod, field names as in the API (unknown fields dropped, as Go's decoder does). */
export function deserializePod(obj: unknown): V1Pod {
  return deserializeApiObject(obj, 'V1Pod');
}

/** A V1Pod to its API JSON form. */
export function serializePod(pod: V1Pod): Record<string, unknown> {
  return serializeApiObject(pod, 'V1Pod');
}
