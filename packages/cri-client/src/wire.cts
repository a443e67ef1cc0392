// The protobuf wire format for the generated CRI codec (src/generated/codec.cts): a writer and a reader that give
// the bytes and values @grpc/proto-loader (protobufjs 7) gives with criProtoLoaderOptions, without the
// fromObject/toObject pass. Each method says which protobufjs step it stands for; the differential test
// (test/codec.test.ts) holds the two to the same bytes and objects. CommonJS (.cts) so that the client loads it
// synchronously on first use (createRequire), not with the package.
import { createRequire } from 'node:module';

/** protobufjs, for the rare inputs only its own conversion handles (int64 as string/Long/bigint, bytes as base64). */
let protobufUtil: { Long: { fromValue(value: unknown, unsigned?: boolean): { low: number; high: number } }; base64: { length(s: string): number; decode(s: string, buffer: Uint8Array, offset: number): number } } | undefined;
function pbUtil() {
  protobufUtil ??= (createRequire(__filename)('protobufjs/minimal') as { util: NonNullable<typeof protobufUtil> }).util;
  return protobufUtil;
}

const TWO_PWR_32 = 4294967296;
const TWO_PWR_63 = TWO_PWR_32 * TWO_PWR_32 / 2;
const TWO_PWR_64 = TWO_PWR_32 * TWO_PWR_32;
const INITIAL_SIZE = 16 * 1024;
/** A scratch buffer grown past this for one large message is dropped after it, not kept for the process's life. */
const KEEP_SIZE = 1024 * 1024;

function indexOutOfRange(reader: Reader, length = 1): RangeError {
  return new RangeError(`index out of range: ${reader.pos} + ${length} > ${reader.len}`);
}

/** True for what protobufjs's util.isObject accepts (non-null objects, arrays included). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object';
}

/** protobufjs's util.makeProp: an own, enumerable `__proto__` property, so that assigning it sets a key. */
export function makeProp(target: object, key: string): void {
  Object.defineProperty(target, key, { enumerable: true, configurable: true, writable: true });
}

/**
 * Encodes into one scratch buffer, writing each nested message's length in a byte reserved before it (moved when
 * the length needs more than one byte), and copies the result out. Not re-entrant: one message at a time.
 */
export class Writer {
  buf: Buffer = Buffer.allocUnsafe(INITIAL_SIZE);
  pos = 0;

  reserve(n: number): void {
    if (this.pos + n > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
      this.buf.copy(grown, 0, 0, this.pos);
      this.buf = grown;
    }
  }

  /** Writer.uint32 of a value already made unsigned 32-bit (`>>> 0`). */
  uint32(value: number): void {
    this.reserve(5);
    const buf = this.buf;
    let pos = this.pos;
    while (value > 127) {
      buf[pos++] = (value & 127) | 128;
      value >>>= 7;
    }
    buf[pos++] = value;
    this.pos = pos;
  }

  /** Writer.int32 of a value already made signed 32-bit (`| 0`): negative values take the 10-byte form. */
  int32(value: number): void {
    if (value < 0) this.varint64(value >>> 0, 4294967295);
    else this.uint32(value);
  }

  /** fromObject's `Long.fromValue(value, unsigned)` and Writer.int64/uint64. */
  int64(value: unknown, unsigned: boolean): void {
    if (typeof value !== 'number') {
      const long = pbUtil().Long.fromValue(value, unsigned);
      this.varint64(long.low >>> 0, long.high >>> 0);
      return;
    }
    // Long.fromNumber: NaN is 0, out-of-range values saturate, the rest are truncated towards zero.
    if (value !== value) return this.varint64(0, 0);
    if (unsigned) {
      if (value < 0) return this.varint64(0, 0);
      if (value >= TWO_PWR_64) return this.varint64(4294967295, 4294967295);
    } else {
      if (value <= -TWO_PWR_63) return this.varint64(0, 2147483648);
      if (value + 1 >= TWO_PWR_63) return this.varint64(4294967295, 2147483647);
    }
    const negative = value < 0;
    if (negative) value = -value;
    let lo = ((value as number) % TWO_PWR_32 | 0) >>> 0;
    let hi = (((value as number) / TWO_PWR_32) | 0) >>> 0;
    if (negative) {
      // Long.neg: the two's complement.
      hi = ~hi >>> 0;
      lo = ~lo >>> 0;
      if (++lo > 4294967295) {
        lo = 0;
        hi = (hi + 1) >>> 0;
      }
    }
    this.varint64(lo, hi);
  }

  varint64(lo: number, hi: number): void {
    this.reserve(10);
    const buf = this.buf;
    let pos = this.pos;
    while (hi) {
      buf[pos++] = (lo & 127) | 128;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    while (lo > 127) {
      buf[pos++] = (lo & 127) | 128;
      lo = lo >>> 7;
    }
    buf[pos++] = lo;
    this.pos = pos;
  }

  bool(value: boolean): void {
    this.reserve(1);
    this.buf[this.pos++] = value ? 1 : 0;
  }

  /**
   * BufferWriter.string: the length from Buffer.byteLength; strings under 40 code units written by protobufjs's
   * own UTF-8 loop (which writes a lone surrogate as its 3-byte form), longer ones by Buffer.
   */
  string(value: string): void {
    const n = value.length;
    if (n < 40) {
      // At most 3 bytes per code unit: under 120 bytes, so the length is one byte.
      this.reserve(1 + n * 3);
      const buf = this.buf;
      const start = this.pos + 1;
      let pos = start;
      for (let i = 0; i < n; ++i) {
        let c1 = value.charCodeAt(i);
        let c2: number;
        if (c1 < 128) {
          buf[pos++] = c1;
        } else if (c1 < 2048) {
          buf[pos++] = (c1 >> 6) | 192;
          buf[pos++] = (c1 & 63) | 128;
        } else if ((c1 & 0xfc00) === 0xd800 && ((c2 = value.charCodeAt(i + 1)) & 0xfc00) === 0xdc00) {
          c1 = 0x10000 + ((c1 & 0x03ff) << 10) + (c2 & 0x03ff);
          ++i;
          buf[pos++] = (c1 >> 18) | 240;
          buf[pos++] = ((c1 >> 12) & 63) | 128;
          buf[pos++] = ((c1 >> 6) & 63) | 128;
          buf[pos++] = (c1 & 63) | 128;
        } else {
          buf[pos++] = (c1 >> 12) | 224;
          buf[pos++] = ((c1 >> 6) & 63) | 128;
          buf[pos++] = (c1 & 63) | 128;
        }
      }
      buf[start - 1] = pos - start;
      this.pos = pos;
      return;
    }
    const len = Buffer.byteLength(value);
    this.uint32(len);
    this.reserve(len);
    this.buf.write(value, this.pos, len, 'utf8');
    this.pos += len;
  }

  /**
   * fromObject's bytes conversion and BufferWriter.bytes: a string is base64 (decoded by protobufjs), anything with
   * a length is copied. Returns false when fromObject would have left the field unset.
   */
  bytes(value: unknown): boolean {
    let bytes: ArrayLike<number>;
    if (typeof value === 'string') {
      const util = pbUtil();
      const decoded = Buffer.allocUnsafe(util.base64.length(value));
      util.base64.decode(value, decoded, 0);
      bytes = decoded;
    } else if ((value as { length?: number }).length! >= 0) {
      bytes = value as ArrayLike<number>;
    } else {
      return false;
    }
    const len = bytes.length >>> 0;
    this.uint32(len);
    if (len) {
      this.reserve(len);
      this.buf.set(bytes, this.pos);
      this.pos += len;
    }
    return true;
  }

  /** Reserves one byte for a nested message's length; returns where the message starts. */
  fork(): number {
    this.reserve(1);
    return ++this.pos;
  }

  /** Writes the length of the message begun at `start` (from fork()) before it. */
  ldelim(start: number): void {
    const len = this.pos - start;
    if (len < 128) {
      this.buf[start - 1] = len;
      return;
    }
    const size = len < 0x4000 ? 2 : len < 0x200000 ? 3 : len < 0x10000000 ? 4 : 5;
    this.reserve(size - 1);
    this.buf.copyWithin(start - 1 + size, start, this.pos);
    const end = this.pos + size - 1;
    this.pos = start - 1;
    this.uint32(len);
    this.pos = end;
  }

  /** A copy of what was written; the writer is then empty again. */
  finish(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    this.pos = 0;
    if (this.buf.length > KEEP_SIZE) this.buf = Buffer.allocUnsafe(INITIAL_SIZE);
    return out;
  }
}

/** protobufjs's BufferReader, reading plain values (int64 straight to a number, as toObject's longs: Number). */
export class Reader {
  pos = 0;
  len: number;

  constructor(readonly buf: Buffer) {
    this.len = buf.length;
  }

  uint32(): number {
    const buf = this.buf;
    if (this.len - this.pos < 5) return this.uint32NearEnd();
    let value = (buf[this.pos] & 127) >>> 0;
    if (buf[this.pos++] < 128) return value;
    value = (value | ((buf[this.pos] & 127) << 7)) >>> 0;
    if (buf[this.pos++] < 128) return value;
    value = (value | ((buf[this.pos] & 127) << 14)) >>> 0;
    if (buf[this.pos++] < 128) return value;
    value = (value | ((buf[this.pos] & 127) << 21)) >>> 0;
    if (buf[this.pos++] < 128) return value;
    value = (value | ((buf[this.pos] & 15) << 28)) >>> 0;
    if (buf[this.pos++] < 128) return value;
    // A 64-bit varint read as 32 bits: the rest is skipped (Reader.uint32).
    if ((this.pos += 5) > this.len) {
      this.pos = this.len;
      throw indexOutOfRange(this, 10);
    }
    return value;
  }

  private uint32NearEnd(): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.pos >= this.len) throw indexOutOfRange(this);
      const byte = this.buf[this.pos++];
      value = (value | ((byte & 127) << shift)) >>> 0;
      if (byte < 128) return value;
    }
    // More than 5 bytes left no room for the 10-byte form.
    this.pos = this.len;
    throw indexOutOfRange(this, 10);
  }

  int32(): number {
    return this.uint32() | 0;
  }

  /** readLongVarint, then LongBits.toNumber(unsigned). */
  int64(unsigned: boolean): number {
    const buf = this.buf;
    let lo = 0;
    let hi = 0;
    let i = 0;
    let done = false;
    for (; i < 4; ++i) {
      if (this.pos >= this.len) throw indexOutOfRange(this);
      const byte = buf[this.pos++];
      lo = (lo | ((byte & 127) << (i * 7))) >>> 0;
      if (byte < 128) {
        done = true;
        break;
      }
    }
    if (!done) {
      if (this.pos >= this.len) throw indexOutOfRange(this);
      const byte = buf[this.pos++];
      lo = (lo | ((byte & 127) << 28)) >>> 0;
      hi = (hi | ((byte & 127) >> 4)) >>> 0;
      if (byte >= 128) {
        for (i = 0; ; ++i) {
          if (i === 5) throw Error('invalid varint encoding');
          if (this.pos >= this.len) throw indexOutOfRange(this);
          const next = buf[this.pos++];
          hi = (hi | ((next & 127) << (i * 7 + 3))) >>> 0;
          if (next < 128) break;
        }
      }
    }
    if (!unsigned && hi >>> 31) {
      lo = (~lo + 1) >>> 0;
      hi = ~hi >>> 0;
      if (!lo) hi = (hi + 1) >>> 0;
      return -(lo + hi * 4294967296);
    }
    return lo + hi * 4294967296;
  }

  bool(): boolean {
    return this.uint32() !== 0;
  }

  /** BufferReader.string (a length past the end is cut at the end, as there). */
  string(): string {
    const len = this.uint32();
    const start = this.pos;
    this.pos = Math.min(start + len, this.len);
    return this.buf.toString('utf8', start, this.pos);
  }

  /** Reader.bytes: a view into the received buffer (an empty one when the field is empty). */
  bytes(): Buffer {
    const length = this.uint32();
    const start = this.pos;
    const end = start + length;
    if (end > this.len) throw indexOutOfRange(this, length);
    this.pos = end;
    return start === end ? Buffer.alloc(0) : this.buf.subarray(start, end);
  }

  /** Enters a length-delimited field: returns the enclosing end, to be given to leave(). */
  enter(): number {
    const length = this.uint32();
    const end = this.pos + length;
    if (end > this.len) throw new RangeError('index out of range');
    const outer = this.len;
    this.len = end;
    return outer;
  }

  leave(outer: number): void {
    if (this.pos !== this.len) throw new RangeError('index out of range');
    this.len = outer;
  }

  skip(length?: number): void {
    if (length === undefined) {
      do {
        if (this.pos >= this.len) throw indexOutOfRange(this);
      } while (this.buf[this.pos++] & 128);
      return;
    }
    if (this.pos + length > this.len) throw indexOutOfRange(this, length);
    this.pos += length;
  }

  /** Skips a field we do not know (a newer runtime's), as Reader.skipType. */
  skipType(wireType: number, depth = 0): void {
    if (depth > 100) throw Error('maximum nesting depth exceeded');
    switch (wireType) {
      case 0:
        this.skip();
        break;
      case 1:
        this.skip(8);
        break;
      case 2:
        this.skip(this.uint32());
        break;
      case 3:
        while ((wireType = this.uint32() & 7) !== 4) this.skipType(wireType, depth + 1);
        break;
      case 5:
        this.skip(4);
        break;
      default:
        throw Error(`invalid wire type ${wireType} at offset ${this.pos}`);
    }
  }
}
