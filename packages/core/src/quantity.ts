// resource.Quantity (k8s.io/apimachinery/pkg/api/resource): parsing of every suffix, exact
// arithmetic at nano precision, and Go's canonical string form ("16364424Ki", "3900m", "110",
// "91083486413"). Exact, because floating point gets Go's rounded-up Value() and MilliValue() wrong
// (0.1 * 1000 is 100.00000000000001, and large byte counts lose their low digits).

/** Go's resource.Format: how a quantity prints. */
export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

/** Go's resource.ErrFormatWrong. */
export const ERR_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/** Go's resource.ErrSuffix. */
export const ERR_SUFFIX = "unable to parse quantity's suffix";

const NANO = 1_000_000_000n;

const binarySuffixes: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const decimalSuffixes: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const decimalByExponent = new Map(Object.entries(decimalSuffixes).map(([s, e]) => [e, s]));
const binaryByExponent = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

function abs(v: bigint): bigint {
  return v < 0n ? -v : v;
}

/** Divides rounding up (toward +infinity), as Go rounds values finer than nano. */
function divCeil(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n ? q + 1n : q;
}

/** A fixed-point quantity in units of 10^-9 with the format Go keeps for printing. */
export class Quantity {
  private constructor(
    /** The value times 10^9. */
    readonly nano: bigint,
    readonly format: QuantityFormat,
  ) {}

  /** resource.ParseQuantity: throws an Error with Go's message on bad input. */
  static parse(text: string): Quantity {
    if (text.length === 0) throw new Error(ERR_FORMAT_WRONG);
    const m = /^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$/.exec(text);
    if (!m || (m[2] === '' && (m[3] ?? '') === '')) throw new Error(ERR_FORMAT_WRONG);
    const [, sign, whole, frac = '', suffix] = m;
    let format: QuantityFormat;
    let exp10 = 0;
    let binaryExp = 0;
    if (Object.hasOwn(binarySuffixes, suffix)) {
      format = 'BinarySI';
      binaryExp = binarySuffixes[suffix] * 10;
    } else if (Object.hasOwn(decimalSuffixes, suffix)) {
      format = 'DecimalSI';
      exp10 = decimalSuffixes[suffix];
    } else if (/^[eE][+-]?[0-9]+$/.test(suffix)) {
      format = 'DecimalExponent';
      exp10 = Number(suffix.slice(1));
      if (Math.abs(exp10) > 1000) throw new Error(ERR_FORMAT_WRONG);
    } else if (/^[eEinumkKMGTP]*[-+]?[0-9]*$/.test(suffix)) {
      throw new Error(ERR_SUFFIX);
    } else {
      throw new Error(ERR_FORMAT_WRONG);
    }
    const mantissa = BigInt(`${whole}${frac}` || '0') * (1n << BigInt(binaryExp));
    const shift = 9 + exp10 - frac.length;
    let nano = shift >= 0 ? mantissa * pow10(shift) : divCeil(mantissa, pow10(-shift));
    if (sign === '-') nano = -nano;
    return new Quantity(nano, format);
  }

  /**
   * A quantity as an API object holds it (Go: Quantity.UnmarshalJSON): a string with surrounding
   * spaces ignored, or a number, as a YAML manifest may give (`cpu: 1`); null and undefined are zero.
   * Throws an Error with Go's message on bad input.
   */
  static fromJSON(value: string | number | null | undefined): Quantity {
    if (value === undefined || value === null) return Quantity.zero();
    return Quantity.parse(typeof value === 'number' ? String(value) : value.trim());
  }

  /** resource.NewQuantity(value, format). */
  static fromValue(value: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(BigInt(value) * NANO, format);
  }

  /** resource.NewMilliQuantity(milli, format). */
  static fromMilli(milli: number | bigint, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(BigInt(milli) * 1_000_000n, format);
  }

  /** A zero quantity that prints in `format` once something is added to it. */
  static zero(format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity(0n, format);
  }

  /** Value(): the integer value, rounded up as Go does. */
  value(): number {
    return Number(divCeil(this.nano, NANO));
  }

  /** MilliValue(): the value in thousandths, rounded up. */
  milliValue(): number {
    return Number(divCeil(this.nano, 1_000_000n));
  }

  /** Keeps this quantity's format, or takes other's when this is zero, as Go's Add does. */
  add(other: Quantity): Quantity {
    return new Quantity(this.nano + other.nano, this.nano === 0n ? other.format : this.format);
  }

  /** Keeps this quantity's format, or takes other's when this is zero, as Go's Sub does. */
  sub(other: Quantity): Quantity {
    return new Quantity(this.nano - other.nano, this.nano === 0n ? other.format : this.format);
  }

  /** -1, 0 or 1 as this is less than, equal to or greater than other (Go: Cmp). */
  cmp(other: Quantity): number {
    return this.nano === other.nano ? 0 : this.nano < other.nano ? -1 : 1;
  }

  /** Equal in value, whatever the format (Go: Equal). */
  equals(other: Quantity): boolean {
    return this.nano === other.nano;
  }

  /** -1, 0 or 1 (Go: Sign). */
  sign(): number {
    return this.nano === 0n ? 0 : this.nano < 0n ? -1 : 1;
  }

  /** Go: IsZero. */
  isZero(): boolean {
    return this.nano === 0n;
  }

  /** The same value in another format (e.g. Set(0) keeps the format; this changes it). */
  withFormat(format: QuantityFormat): Quantity {
    return new Quantity(this.nano, format);
  }

  /** Go's canonical String(). */
  toString(): string {
    if (this.nano === 0n) return '0';
    let format = this.format;
    if (format === 'BinarySI') {
      // Small or fractional binary quantities print in decimal rather than lose precision.
      if (abs(this.nano) < 1024n * NANO || this.nano % NANO !== 0n) format = 'DecimalSI';
    }
    if (format === 'BinarySI') {
      let v = this.nano / NANO;
      let e = 0;
      while (e < binaryByExponent.length - 1 && v % 1024n === 0n) {
        v /= 1024n;
        e++;
      }
      return `${v}${binaryByExponent[e]}`;
    }
    // Largest exponent that is a multiple of 3 with an integer mantissa.
    let v = this.nano;
    let e = -9;
    while (v % 1000n === 0n) {
      v /= 1000n;
      e += 3;
    }
    if (format === 'DecimalSI') {
      const suffix = decimalByExponent.get(e);
      if (suffix !== undefined) return `${v}${suffix}`;
    }
    return e === 0 ? `${v}` : `${v}e${e}`;
  }

  /** The canonical string, as Go's MarshalJSON writes it. */
  toJSON(): string {
    return this.toString();
  }
}

/**
 * Go's Quantity.MilliValue() of an API object's quantity (see Quantity.fromJSON): the value in
 * thousandths, rounded up; undefined is 0. Throws with Go's message on bad input.
 */
export function quantityMilliValue(value: string | number | null | undefined): number {
  return Quantity.fromJSON(value).milliValue();
}

/**
 * Go's Quantity.Value() of an API object's quantity (see Quantity.fromJSON): the integer value,
 * rounded up; undefined is 0. Throws with Go's message on bad input.
 */
export function quantityValue(value: string | number | null | undefined): number {
  return Quantity.fromJSON(value).value();
}
