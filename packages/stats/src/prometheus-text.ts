// The Prometheus text exposition format (0.0.4) as Go's client_golang writes it (expfmt.MetricFamilyToText),
// so our /metrics/* bodies read byte for byte like the Go kubelet's: families sorted by name, label pairs
// sorted by name, samples sorted by label values, floats in Go's shortest 'g' form, timestamps in ms.

export type MetricType = 'counter' | 'gauge';

export interface Sample {
  /** Label names to values; written sorted by name. */
  labels: Record<string, string>;
  value: number;
  /** Milliseconds since the epoch; omitted when undefined (the scrape time is implied). */
  timestampMs?: number;
}

export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  samples: Sample[];
}

/**
 * A float as Go's strconv.FormatFloat(v, 'g', -1, 64): shortest round-trip digits, exponent form
 * when the decimal exponent is < -4 or >= 6 (shortest mode decides at precision 6: 1e+06,
 * 1.23456789e+08, 123456.5), with expfmt's special cases for 0, NaN and ±Inf.
 */
export function formatGoFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  if (value === 0) return '0';
  const sign = value < 0 ? '-' : '';
  // toExponential() without an argument gives the shortest digits that round-trip, as Go's shortest mode.
  const [mantissa, exponentText] = Math.abs(value).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 6) {
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : '';
    const expDigits = String(Math.abs(exponent)).padStart(2, '0');
    return `${sign}${digits[0]}${fraction}e${exponent < 0 ? '-' : '+'}${expDigits}`;
  }
  const pointAt = exponent + 1; // digits before the decimal point
  if (pointAt <= 0) return `${sign}0.${'0'.repeat(-pointAt)}${digits}`;
  if (pointAt >= digits.length) return `${sign}${digits}${'0'.repeat(pointAt - digits.length)}`;
  return `${sign}${digits.slice(0, pointAt)}.${digits.slice(pointAt)}`;
}

/** A label value escaped as the exposition format requires: backslash, double quote and newline. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** HELP text escapes only backslash and newline. */
export function escapeHelp(help: string): string {
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** Go compares strings bytewise (UTF-8), which differs from JS's UTF-16 order above the BMP. */
function compareGoStrings(a: string, b: string): number {
  if (a === b) return 0;
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** client_golang's metricSorter: by label values in label-name order, then by timestamp (missing last). */
function compareSamples(a: [string, string][], b: [string, string][], ta?: number, tb?: number): number {
  if (a.length !== b.length) return a.length - b.length;
  for (let i = 0; i < a.length; i++) {
    const byValue = compareGoStrings(a[i][1], b[i][1]);
    if (byValue !== 0) return byValue;
  }
  if (ta === undefined) return tb === undefined ? 0 : 1;
  if (tb === undefined) return -1;
  return ta - tb;
}

/**
 * Renders families as a Go registry's Gather + expfmt would: empty families left out, families sorted
 * by name, a repeated label set within a family kept once (the first collected; Go reports the repeat
 * as a gather error and serves the rest).
 */
export function renderFamilies(families: MetricFamily[]): string {
  const sortedFamilies = families.filter((f) => f.samples.length > 0).sort((a, b) => compareGoStrings(a.name, b.name));
  let out = '';
  for (const family of sortedFamilies) {
    const seen = new Set<string>();
    const samples: { pairs: [string, string][]; sample: Sample }[] = [];
    for (const sample of family.samples) {
      const pairs = Object.entries(sample.labels).sort((x, y) => compareGoStrings(x[0], y[0]));
      const key = JSON.stringify(pairs);
      if (seen.has(key)) continue;
      seen.add(key);
      samples.push({ pairs, sample });
    }
    samples.sort((x, y) => compareSamples(x.pairs, y.pairs, x.sample.timestampMs, y.sample.timestampMs));
    out += `# HELP ${family.name} ${escapeHelp(family.help)}\n# TYPE ${family.name} ${family.type}\n`;
    for (const { pairs, sample } of samples) {
      const labels = pairs.length > 0 ? `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}` : '';
      const timestamp = sample.timestampMs === undefined ? '' : ` ${Math.trunc(sample.timestampMs)}`;
      out += `${family.name}${labels} ${formatGoFloat(sample.value)}${timestamp}\n`;
    }
  }
  return out;
}

/** Go's metav1.Time on the wire (RFC 3339) back to ms; undefined for a missing or unparsable time. */
export function timeToMs(time: string | undefined): number | undefined {
  if (!time) return undefined;
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? undefined : ms;
}
