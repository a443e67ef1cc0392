// Object keys in sorted order, as Go's json.Marshal writes map keys. Internal to core: canonicalJson
// and the strategic merge patch builder share it.

/** A copy of value with every object's keys sorted and undefined (and, with omitNull, null) members left out. */
export function sortKeys(value: unknown, omitNull = false): unknown {
  if (Array.isArray(value)) return value.map((v) => sortKeys(v, omitNull));
  if (value === null || typeof value !== 'object' || value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined || (omitNull && v === null)) continue;
    out[key] = sortKeys(v, omitNull);
  }
  return out;
}
