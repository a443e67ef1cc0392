// Resource quantities as plain numbers, for the places that only need a quantity's value (QoS,
// cgroup settings, the downward API): resource.Quantity's Value() and MilliValue(). Exact
// arithmetic and Go's canonical printing live where status is reported (node-status's Quantity).

const binarySuffixes: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const decimalSuffixes: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/** Parses a Kubernetes resource quantity ('100m', '1.5', '128Mi', '1G', '1e3'); throws on malformed input. */
export function parseQuantity(value: string | number | undefined): number {
  if (value === undefined || value === '') return 0;
  if (typeof value === 'number') return value;
  const match = /^([+-]?[0-9.]+)([eE][+-]?[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/.exec(value.trim());
  if (!match || match[1] === '.' || (match[1].match(/\./g) ?? []).length > 1) throw new Error(`quantities must match the regular expression: ${JSON.stringify(value)}`);
  const base = Number(match[1] + (match[2] ?? ''));
  const suffix = match[3] ?? '';
  const factor = binarySuffixes[suffix] ?? decimalSuffixes[suffix] ?? 1;
  return base * factor;
}

/** Quantity.MilliValue(): rounded up to whole milli-units. */
export function quantityMilliValue(value: string | number | undefined): number {
  // Rounding to 1e-6 first keeps float noise (0.1 * 1000 = 100.00000000000001) from rounding up.
  return Math.ceil(Math.round(parseQuantity(value) * 1000 * 1e6) / 1e6);
}

/** Quantity.Value(): rounded up to whole units. */
export function quantityValue(value: string | number | undefined): number {
  return Math.ceil(Math.round(parseQuantity(value) * 1e6) / 1e6);
}
