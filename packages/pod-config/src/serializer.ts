import type { V1Pod } from '@kubernetes/client-node';
// The package has no exports map and its index does not re-export the serializer; this is the
// same ObjectSerializer its loadYaml()/dumpYaml() use.
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';

/** A decoded JSON/YAML object to a V1Pod, field names as in the API (unknown fields dropped, as Go's decoder does). */
export function deserializePod(obj: unknown): V1Pod {
  return ObjectSerializer.deserialize(obj, 'V1Pod') as V1Pod;
}

/** A V1Pod to its API JSON form. */
export function serializePod(pod: V1Pod): Record<string, unknown> {
  return ObjectSerializer.serialize(pod, 'V1Pod') as Record<string, unknown>;
}
