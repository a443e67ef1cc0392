// JSON values as the API server sends and stores them (client-node models turned into wire JSON),
// and the comparisons and canonical text the kubelet needs of them and of the models themselves.
import { sortKeys } from './sort-keys.js';

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | JsonObject;
/** A JSON object. */
export interface JsonObject {
  [key: string]: Json;
}

/** Whether v is a JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * reflect.DeepEqual for API objects, either as client-node models (as ObjectSerializer gives them)
 * or as wire JSON: plain objects, arrays, Dates and primitives, object key order ignored. A key whose
 * value is undefined counts as absent: Go has no such distinction to make, an omitted JSON field and
 * a nil pointer are the same thing. Unlike node:util's isDeepStrictEqual, prototypes do not count,
 * so a model instance equals the same fields in a plain object.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || a === undefined || b === undefined) return false;
  if (typeof a !== 'object' || typeof b !== 'object') {
    // NaN is never equal to itself in Go either.
    return false;
  }
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  }
  const aIsArray = Array.isArray(a);
  if (aIsArray !== Array.isArray(b)) return false;
  if (aIsArray) {
    const bArr = b as unknown[];
    if (a.length !== bArr.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], bArr[i])) return false;
    return true;
  }
  const aObj = a as Record<string, unknown>;
  const bObj = b as Record<string, unknown>;
  let aCount = 0;
  for (const key in aObj) {
    if (!Object.prototype.hasOwnProperty.call(aObj, key)) continue;
    const av = aObj[key];
    if (av === undefined) continue;
    aCount++;
    if (!deepEqual(av, bObj[key])) return false;
  }
  let bCount = 0;
  for (const key in bObj) {
    if (Object.prototype.hasOwnProperty.call(bObj, key) && bObj[key] !== undefined) bCount++;
  }
  return aCount === bCount;
}

/** Options of canonicalJson. */
export interface CanonicalJsonOptions {
  /** Leave out object members whose value is null, as undefined ones always are. Default false. */
  omitNull?: boolean;
}

/**
 * JSON with object keys sorted and undefined members left out, so two semantically equal objects
 * give the same text whatever order their fields were written in; Dates as RFC 3339 (their toJSON).
 * For content hashes: a changed output changes every hash made from it, so the rules stay as they are.
 */
export function canonicalJson(value: unknown, options: CanonicalJsonOptions = {}): string {
  return JSON.stringify(sortKeys(value, options.omitNull ?? false)) ?? 'null';
}
