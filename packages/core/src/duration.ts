// Go's time.Duration text form, as kubelet flags and KubeletConfiguration use it ("1m30s", "100ms").

const unitMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3,
  'μs': 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a Go duration string into ms; throws an error naming the bad input. The micro signs are escaped in the
 * patterns: a non-ASCII regex literal would make the bundled kubelet's whole source text two bytes per character.
 */
export function parseDuration(text: string): number {
  const input = text.trim();
  if (input === '0') return 0;
  const match = /^([-+]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+$/.exec(input);
  if (!match) throw new Error(`time: invalid duration ${JSON.stringify(text)}`);
  let total = 0;
  for (const part of input.replace(/^[-+]/, '').matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/g)) {
    total += Number(part[1]) * unitMs[part[2]];
  }
  return match[1] === '-' ? -total : total;
}

/** Formats ms the way Go prints a Duration: "1m30s", "500ms", "0s". */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1000) {
    if (rest >= 1) return `${sign}${+rest.toFixed(3)}ms`;
    if (rest >= 1e-3) return `${sign}${+(rest * 1000).toFixed(3)}µs`;
    return `${sign}${Math.round(rest * 1e6)}ns`;
  }
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = +(rest / 1000).toFixed(9);
  let out = sign;
  if (hours) out += `${hours}h`;
  if (hours || minutes) out += `${minutes}m`;
  return `${out}${seconds}s`;
}
