// Timestamps as Go writes them on the wire: metav1.Time, metav1.MicroTime and time.RFC3339Nano.

/** metav1.Time: RFC 3339 in UTC, whole seconds (fractions dropped, as Go's Rfc3339Copy), e.g. 2026-01-01T00:00:00Z. */
export function formatTime(t: Date | string | number): string {
  const ms = t instanceof Date ? t.getTime() : typeof t === 'number' ? t : Date.parse(t);
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** metav1.MicroTime: RFC 3339 with exactly six fractional digits, e.g. 2026-01-01T00:00:00.123456Z. */
export function formatMicroTime(t: number | Date): string {
  const ms = typeof t === 'number' ? t : t.getTime();
  const whole = Math.floor(ms);
  const micros = Math.round((ms - whole) * 1000);
  return `${new Date(whole).toISOString().slice(0, 23)}${String(Math.min(micros, 999)).padStart(3, '0')}Z`;
}

/**
 * time.RFC3339Nano: the fraction to nanoseconds with trailing zeros trimmed (none when zero).
 * `ms` may carry sub-millisecond digits; `extraNanos` adds nanoseconds on top.
 */
export function formatRFC3339Nano(ms: number, extraNanos = 0): string {
  const whole = Math.floor(ms);
  const iso = new Date(whole).toISOString();
  const nanos = (whole % 1000) * 1_000_000 + Math.round((ms - whole) * 1_000_000) + extraNanos;
  if (nanos === 0) return iso.slice(0, 19) + 'Z';
  const fraction = String(nanos).padStart(9, '0').replace(/0+$/, '');
  return `${iso.slice(0, 19)}.${fraction}Z`;
}
