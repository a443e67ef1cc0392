/**
 * The three patch formats kube-apiserver accepts for non-apply PATCH requests:
 * JSON merge patch (RFC 7386), strategic merge patch (k8s.io/apimachinery/pkg/util/strategicpatch)
 * and JSON patch (RFC 6902). All functions are pure: they never mutate their inputs.
 */
import { ApiError, badRequest } from './errors.js';
import type { SmpField, SmpSchema } from './smp-schema.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => deepEqual(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

function invalidPatch(message: string): ApiError {
  return new ApiError(422, 'Invalid', message);
}

// ---------------------------------------------------------------------------------------------
// RFC 7386 JSON merge patch

export function jsonMergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const result: JsonObject = isObject(target) ? clone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = jsonMergePatch(result[key], value);
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const SET_ORDER_PREFIX = '$setElementOrder/';
const DELETE_PRIMITIVE_PREFIX = '$deleteFromPrimitiveList/';

/**
 * Applies a strategic merge patch to `original` using `schema` for merge keys. Implements the
 * parts of the algorithm clients send: maps merge recursively, `null` deletes a key, lists with a
 * merge key merge element-wise, `$patch: replace|delete|merge` on maps and list elements,
 * `$retainKeys`, `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`.
 */
export function strategicMergePatch(original: JsonObject, patch: JsonObject, schema: SmpSchema): JsonObject {
  const out = mergeMap(original, patch, schema);
  return out ?? {};
}

function mergeMap(original: JsonObject | undefined, patch: JsonObject, schema: SmpSchema | undefined): JsonObject | undefined {
  const directive = patch[DIRECTIVE];
  if (directive !== undefined) {
    if (directive === 'delete') return undefined;
    if (directive === 'replace') return stripDirectives(patch, schema) as JsonObject;
    if (directive !== 'merge') throw badRequest(`unknown patch type: ${String(directive)}`);
  }
  const result: JsonObject = isObject(original) ? clone(original) : {};
  const orders: Record<string, Json[]> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (key === DIRECTIVE || key === RETAIN_KEYS) continue;
    if (key.startsWith(SET_ORDER_PREFIX)) {
      if (!Array.isArray(value)) throw badRequest('invalid patch: $setElementOrder must be a list');
      orders[key.slice(SET_ORDER_PREFIX.length)] = value;
      continue;
    }
    if (key.startsWith(DELETE_PRIMITIVE_PREFIX)) {
      const field = key.slice(DELETE_PRIMITIVE_PREFIX.length);
      if (!Array.isArray(value)) throw badRequest('invalid patch: $deleteFromPrimitiveList must be a list');
      const current = result[field];
      if (Array.isArray(current)) {
        const remaining = current.filter((item) => !value.some((v) => deepEqual(v, item)));
        if (remaining.length > 0) result[field] = remaining;
        else delete result[field];
      }
      continue;
    }
    const field = schema?.[key];
    if (value === null) {
      delete result[key];
    } else if (isObject(value)) {
      const merged = mergeMap(isObject(result[key]) ? (result[key] as JsonObject) : undefined, value, field?.fields);
      if (merged === undefined) delete result[key];
      else result[key] = merged;
    } else if (Array.isArray(value)) {
      result[key] = mergeList(Array.isArray(result[key]) ? (result[key] as Json[]) : [], value, field, key);
    } else {
      result[key] = value;
    }
  }
  for (const [field, order] of Object.entries(orders)) {
    const list = result[field];
    if (Array.isArray(list)) result[field] = applyElementOrder(list, order, schema?.[field]);
  }
  const retain = patch[RETAIN_KEYS];
  if (retain !== undefined) {
    if (!Array.isArray(retain)) throw badRequest('invalid patch: $retainKeys must be a list');
    for (const k of Object.keys(result)) {
      if (!retain.includes(k) && !(k in patch)) delete result[k];
    }
  }
  return result;
}

function stripDirectives(v: Json, schema: SmpSchema | undefined): Json {
  if (Array.isArray(v)) return v.filter((e) => !(isObject(e) && e[DIRECTIVE] !== undefined && Object.keys(e).length === 1)).map((e) => stripDirectives(e, schema));
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, val] of Object.entries(v)) {
    if (k === DIRECTIVE || k === RETAIN_KEYS || k.startsWith(SET_ORDER_PREFIX) || k.startsWith(DELETE_PRIMITIVE_PREFIX)) continue;
    // nulls stay: kube round-trips through typed structs, where e.g. a zero metav1.Time serializes as null.
    out[k] = val === null ? null : stripDirectives(val, schema?.[k]?.fields);
  }
  return out;
}

function mergeList(original: Json[], patch: Json[], field: SmpField | undefined, name: string): Json[] {
  // A `{"$patch": "replace"}` element replaces the whole list with the other elements.
  const replace = patch.some((e) => isObject(e) && e[DIRECTIVE] === 'replace');
  if (replace) return stripDirectives(patch.filter((e) => !(isObject(e) && e[DIRECTIVE] === 'replace')), field?.fields) as Json[];
  if (field?.primitiveMerge) {
    const out = clone(original);
    for (const item of patch) {
      if (isObject(item) || Array.isArray(item)) throw badRequest(`invalid patch: ${name} expects a list of primitives`);
      if (!out.some((e) => deepEqual(e, item))) out.push(item);
    }
    return out;
  }
  const mergeKey = field?.mergeKey;
  if (!mergeKey) return stripDirectives(patch, field?.fields) as Json[];
  const out = clone(original);
  for (const item of patch) {
    if (!isObject(item)) throw badRequest(`invalid patch: ${name} expects a list of maps`);
    const key = item[mergeKey];
    if (key === undefined) {
      throw invalidPatch(`map: ${JSON.stringify(item)} does not contain declared merge key: ${mergeKey}`);
    }
    const idx = out.findIndex((e) => isObject(e) && deepEqual(e[mergeKey], key));
    if (item[DIRECTIVE] === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) {
      const merged = mergeMap(out[idx] as JsonObject, item, field.fields);
      if (merged === undefined) out.splice(idx, 1);
      else out[idx] = merged;
    } else {
      out.push(stripDirectives(item, field.fields));
    }
  }
  return out;
}

/** `$setElementOrder/<field>`: items named in the order list come in that order; the rest keep their relative order after them. */
function applyElementOrder(list: Json[], order: Json[], field: SmpField | undefined): Json[] {
  const mergeKey = field?.mergeKey;
  const keyOf = (e: Json): Json | undefined => (mergeKey ? (isObject(e) ? e[mergeKey] : undefined) : e);
  const orderKeys = order.map((o) => (mergeKey && isObject(o) ? o[mergeKey] : o));
  const rank = (e: Json): number => {
    const k = keyOf(e);
    const i = orderKeys.findIndex((o) => deepEqual(o, k));
    return i < 0 ? Number.MAX_SAFE_INTEGER : i;
  };
  return list
    .map((e, i) => ({ e, i, r: rank(e) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.e);
}

// ---------------------------------------------------------------------------------------------
// RFC 6902 JSON patch

interface JsonPatchOp {
  op: string;
  path: string;
  from?: string;
  value?: Json;
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw invalidPatch(`invalid JSON pointer: ${JSON.stringify(pointer)}`);
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function getAt(doc: Json, tokens: string[]): Json | undefined {
  let cur: Json | undefined = doc;
  for (const t of tokens) {
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(t)) return undefined;
      cur = cur[Number(t)];
    } else if (isObject(cur)) {
      cur = Object.prototype.hasOwnProperty.call(cur, t) ? cur[t] : undefined;
    } else {
      return undefined;
    }
  }
  return cur;
}

function parentOf(doc: Json, tokens: string[], pointer: string): { parent: Json; last: string } {
  if (tokens.length === 0) throw invalidPatch(`cannot operate on the document root: ${pointer}`);
  const parent = getAt(doc, tokens.slice(0, -1));
  if (parent === undefined || (typeof parent !== 'object') || parent === null) {
    throw invalidPatch(`doc is missing path: "${pointer}": missing value`);
  }
  return { parent, last: tokens[tokens.length - 1] };
}

function arrayIndex(arr: Json[], token: string, pointer: string, forInsert: boolean): number {
  if (forInsert && token === '-') return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw invalidPatch(`invalid array index ${JSON.stringify(token)} in ${pointer}`);
  const i = Number(token);
  if (i > arr.length || (!forInsert && i === arr.length)) throw invalidPatch(`Unable to access invalid index: ${i}: invalid index referenced`);
  return i;
}

function addAt(doc: Json, pointer: string, value: Json): Json {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return clone(value);
  const { parent, last } = parentOf(doc, tokens, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, pointer, true), 0, clone(value));
  else (parent as JsonObject)[last] = clone(value);
  return doc;
}

function removeAt(doc: Json, pointer: string): Json {
  const tokens = parsePointer(pointer);
  const { parent, last } = parentOf(doc, tokens, pointer);
  if (Array.isArray(parent)) {
    parent.splice(arrayIndex(parent, last, pointer, false), 1);
  } else {
    if (!Object.prototype.hasOwnProperty.call(parent, last)) throw invalidPatch(`Unable to remove nonexistent key: ${last}: missing value`);
    delete (parent as JsonObject)[last];
  }
  return doc;
}

/** Applies an RFC 6902 patch document; errors are 422 Invalid like kube's jsonPatcher. */
export function jsonPatch(doc: Json, ops: unknown): Json {
  if (!Array.isArray(ops)) throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let out = clone(doc);
  for (const raw of ops) {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string') {
      throw badRequest(`invalid JSON patch operation: ${JSON.stringify(raw)}`);
    }
    const op = raw as unknown as JsonPatchOp;
    switch (op.op) {
      case 'add':
        if (!('value' in raw)) throw invalidPatch('add operation does not apply: missing value');
        out = addAt(out, op.path, op.value as Json);
        break;
      case 'remove':
        out = removeAt(out, op.path);
        break;
      case 'replace': {
        if (!('value' in raw)) throw invalidPatch('replace operation does not apply: missing value');
        const tokens = parsePointer(op.path);
        if (tokens.length === 0) {
          out = clone(op.value as Json);
          break;
        }
        if (getAt(out, tokens) === undefined) throw invalidPatch(`replace operation does not apply: doc is missing key: ${op.path}: missing value`);
        out = removeAt(out, op.path);
        out = addAt(out, op.path, op.value as Json);
        break;
      }
      case 'move': {
        if (typeof op.from !== 'string') throw invalidPatch('move operation requires from');
        const v = getAt(out, parsePointer(op.from));
        if (v === undefined) throw invalidPatch(`move operation does not apply: doc is missing from path: ${op.from}: missing value`);
        out = removeAt(out, op.from);
        out = addAt(out, op.path, v);
        break;
      }
      case 'copy': {
        if (typeof op.from !== 'string') throw invalidPatch('copy operation requires from');
        const v = getAt(out, parsePointer(op.from));
        if (v === undefined) throw invalidPatch(`copy operation does not apply: doc is missing from path: ${op.from}: missing value`);
        out = addAt(out, op.path, v);
        break;
      }
      case 'test': {
        const v = getAt(out, parsePointer(op.path));
        if (!deepEqual(v ?? null, op.value ?? null) || (v === undefined && !('value' in raw))) {
          throw invalidPatch(`testing value ${op.path} failed: test failed`);
        }
        break;
      }
      default:
        throw badRequest(`Unexpected kind: ${op.op}`);
    }
  }
  return out;
}
