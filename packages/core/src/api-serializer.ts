// Kubernetes objects between wire JSON and client-node's model shape (Dates for metav1.Time, field names as the
// models name them), the way client-node's ObjectSerializer converts them, without loading client-node: its
// index costs ~0.7 s and ~75 MiB at import, and it exports no serializer, so a package that only decodes a pod
// (a static manifest, a watch event) would pay for all of it. The attribute maps come from client-node's own
// models (src/api-models.generated.ts, checked against the installed client-node by the tests).
//
// Models come back as plain objects, not model class instances: every consumer reads fields, none uses
// instanceof, and core's deepEqual ignores prototypes.
import type { CoreV1Event, V1ConfigMap, V1Lease, V1Node, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import { API_MODELS } from './api-models.generated.js';

/** The kinds the core serializer knows, and the client-node model each decodes to. */
export interface ApiModelKinds {
  V1Pod: V1Pod;
  V1Node: V1Node;
  V1Service: V1Service;
  CoreV1Event: CoreV1Event;
  V1ConfigMap: V1ConfigMap;
  V1Secret: V1Secret;
  V1Lease: V1Lease;
}

/** A model type name of the table: a root kind or any type it references (e.g. `V1PodStatus`, `V1ObjectMeta`). */
export type ApiModelName = keyof ApiModelKinds | (string & {});

const ARRAY = 'Array<';
const MAP = '{ [key: string]: ';
const MAP_END = '; }';

function convert(data: unknown, type: string, toWire: boolean): unknown {
  if (data === undefined || data === null) return data;
  if (type.endsWith(' | null')) return convert(data, type.slice(0, -' | null'.length), toWire);
  if (type.startsWith(ARRAY)) {
    const element = type.slice(ARRAY.length, -1);
    return (data as unknown[]).map((x) => convert(x, element, toWire));
  }
  if (type.startsWith(MAP)) {
    const element = type.slice(MAP.length, -MAP_END.length);
    const out: Record<string, unknown> = {};
    for (const key in data as Record<string, unknown>) out[key] = convert((data as Record<string, unknown>)[key], element, toWire);
    return out;
  }
  if (type === 'Date') {
    if (!toWire) return new Date(data as string);
    return data instanceof Date ? data.toISOString() : data;
  }
  const attributes = API_MODELS[type];
  // Primitives, IntOrString, MicroTime and 'any' pass through, as in client-node.
  if (!attributes) return data;
  const source = data as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [name, attrType = 'string', wireName = name] of attributes) {
    const value = convert(source[toWire ? name : wireName], attrType, toWire);
    if (value !== undefined) out[toWire ? wireName : name] = value;
  }
  return out;
}

/**
 * Wire JSON (a decoded manifest or API response) to the client-node model of `type`: metav1.Time fields become
 * Dates and fields the model does not have are dropped, as client-node's ObjectSerializer.deserialize (and Go's
 * decoder) do.
 */
export function deserializeApiObject<K extends keyof ApiModelKinds>(data: unknown, type: K): ApiModelKinds[K];
export function deserializeApiObject(data: unknown, type: ApiModelName): unknown;
export function deserializeApiObject(data: unknown, type: ApiModelName): unknown {
  assertKnownModel(type);
  return convert(data, type, false);
}

/**
 * A client-node model (or the same fields in a plain object) of `type` to wire JSON: Dates as RFC 3339 text,
 * undefined fields left out, as client-node's ObjectSerializer.serialize does.
 */
export function serializeApiObject(data: unknown, type: ApiModelName): Record<string, unknown> {
  assertKnownModel(type);
  return convert(data, type, true) as Record<string, unknown>;
}

function assertKnownModel(type: string): void {
  if (!API_MODELS[type]) throw new Error(`the API serializer has no model ${JSON.stringify(type)} (it knows ${Object.keys(API_MODELS).length} models; add the kind to API_MODEL_ROOTS in packages/core/scripts/api-models.ts)`);
}
