/**
 * reflect.DeepEqual for API objects as they come out of ObjectSerializer: plain objects, arrays,
 * Dates and primitives. A key whose value is undefined counts as absent (Go has no such
 * distinction to make: an omitted JSON field and a nil pointer are the same thing).
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

/**
 * A deep copy (Go's DeepCopy) that keeps Dates as Dates. Class instances come back as plain
 * objects with the same fields, which is all the @kubernetes/client-node models are.
 */
export function deepCopy<T>(value: T): T {
  return structuredClone(value);
}

/**
 * JSON with object keys sorted, so two semantically equal objects give the same text whatever
 * order their fields were written in (used for content hashes).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) out[key] = sortKeys(v);
  }
  return out;
}
