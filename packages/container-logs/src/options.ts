/**
 * The query of the kubelet's `GET /containerLogs/{namespace}/{pod}/{container}` (Go: the kubelet
 * server's getContainerLogs decoding a v1.PodLogOptions from the URL, then
 * validation.ValidatePodLogOptions).
 */

/** v1.PodLogOptions as the kubelet uses it. Times are ms since the Unix epoch. */
export interface LogOptions {
  follow: boolean;
  /** Read the previous instance of the container; the caller resolves which container that is. */
  previous: boolean;
  timestamps: boolean;
  /** Only the last N lines (records) of the log; absent means all. */
  tailLines?: number;
  /** Stop after this many bytes written; absent means no limit. */
  limitBytes?: number;
  /** Only records newer than now minus this many seconds. */
  sinceSeconds?: number;
  /** Only records at or after this time (ms since the epoch). */
  sinceTime?: number;
}

/**
 * A query value that does not decode or does not validate. `field` is the query parameter ('' for
 * the sinceTime/sinceSeconds conflict, which names both, as Go's field path does). The message
 * follows Go's field.Error text: `<field>: Invalid value: <value>: <detail>`.
 */
export class LogOptionsError extends Error {
  override readonly name = 'LogOptionsError';
  constructor(
    readonly field: string,
    readonly detail: string,
    readonly value?: string | number,
  ) {
    super(value === undefined ? (field ? `${field}: ${detail}` : detail) : `${field}: Invalid value: ${typeof value === 'string' ? JSON.stringify(value) : value}: ${detail}`);
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * strconv.ParseInt(s, 10, 64). Values beyond 2^53 (valid in Go) clamp to the nearest safe integer:
 * as a line or byte count they mean "everything" either way.
 */
function parseInt64(field: string, s: string): number {
  if (!/^[+-]?\d+$/.test(s)) throw new LogOptionsError(field, `strconv.ParseInt: parsing ${JSON.stringify(s)}: invalid syntax`, s);
  const big = BigInt(s);
  if (big < INT64_MIN || big > INT64_MAX) {
    throw new LogOptionsError(field, `strconv.ParseInt: parsing ${JSON.stringify(s)}: value out of range`, s);
  }
  if (big > BigInt(Number.MAX_SAFE_INTEGER)) return Number.MAX_SAFE_INTEGER;
  if (big < BigInt(Number.MIN_SAFE_INTEGER)) return Number.MIN_SAFE_INTEGER;
  return Number(big);
}

/**
 * runtime.Convert_Slice_string_To_bool: query booleans never fail to decode. Only "0" and "false"
 * (any case) are false; any other value, the empty one too (`?follow`), is true.
 */
function parseQueryBool(s: string): boolean {
  return !(s === '0' || s.toLowerCase() === 'false');
}

const RFC3339_LAYOUT = '2006-01-02T15:04:05Z07:00';
const rfc3339Pattern = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * Go's time.Parse(time.RFC3339, s) in ms since the epoch: fractional seconds are accepted (and
 * truncated to ms), fields are range-checked. Throws a plain Error with Go's wording on failure.
 */
export function parseRFC3339(s: string): number {
  const fail = (why: string): never => {
    throw new Error(`parsing time ${JSON.stringify(s)} as ${JSON.stringify(RFC3339_LAYOUT)}: ${why}`);
  };
  const m = rfc3339Pattern.exec(s);
  if (!m) return fail('cannot parse as RFC3339');
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  if (month < 1 || month > 12) fail('month out of range');
  if (day < 1 || day > daysIn(year, month)) fail('day out of range');
  if (hour > 23) fail('hour out of range');
  if (minute > 59) fail('minute out of range');
  if (second > 59) fail('second out of range');
  let offsetMinutes = 0;
  if (!m[8]) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) fail('time zone offset out of range');
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0;
  // Date.UTC maps years 0-99 to 1900+; setUTCFullYear does not.
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, ms));
  date.setUTCFullYear(year);
  return date.getTime() - offsetMinutes * 60_000;
}

/**
 * Decodes and validates the log query as Go's kubelet does. Also honours the legacy `tail`
 * parameter (`tail=all` means no tailLines). Throws LogOptionsError naming the bad parameter.
 */
export function parseLogOptions(query: URLSearchParams): LogOptions {
  const opts: LogOptions = { follow: false, previous: false, timestamps: false };
  const first = (name: string): string | undefined => (query.has(name) ? (query.get(name) as string) : undefined);

  for (const name of ['follow', 'previous', 'timestamps'] as const) {
    const value = first(name);
    if (value !== undefined) opts[name] = parseQueryBool(value);
  }

  // Backwards compatibility: "tail" overrides tailLines; "all" is the same as omitting it.
  let tailLines = first('tailLines');
  const tail = first('tail');
  if (tail) tailLines = tail === 'all' ? undefined : tail;
  if (tailLines !== undefined) opts.tailLines = parseInt64('tailLines', tailLines);

  const limitBytes = first('limitBytes');
  if (limitBytes !== undefined) opts.limitBytes = parseInt64('limitBytes', limitBytes);
  const sinceSeconds = first('sinceSeconds');
  if (sinceSeconds !== undefined) opts.sinceSeconds = parseInt64('sinceSeconds', sinceSeconds);

  // metav1.Time's UnmarshalQueryParameter: "" and "null" are the zero time (present, but no bound).
  const sinceTime = first('sinceTime');
  if (sinceTime !== undefined && sinceTime !== '' && sinceTime !== 'null') {
    try {
      opts.sinceTime = parseRFC3339(sinceTime);
    } catch (err) {
      throw new LogOptionsError('sinceTime', (err as Error).message, sinceTime);
    }
  }

  // validation.ValidatePodLogOptions, in its order.
  if (opts.tailLines !== undefined && opts.tailLines < 0) {
    throw new LogOptionsError('tailLines', 'must be greater than or equal to 0', opts.tailLines);
  }
  if (opts.limitBytes !== undefined && opts.limitBytes < 1) {
    throw new LogOptionsError('limitBytes', 'must be greater than 0', opts.limitBytes);
  }
  if (opts.sinceSeconds !== undefined && sinceTime !== undefined) {
    throw new LogOptionsError('', 'at most one of `sinceTime` or `sinceSeconds` may be specified');
  }
  if (opts.sinceSeconds !== undefined && opts.sinceSeconds < 1) {
    throw new LogOptionsError('sinceSeconds', 'must be greater than 0', opts.sinceSeconds);
  }
  return opts;
}
