import { existsSync, unlinkSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';

// The Go kubelet v1.20.2 speaks only CRI runtime.v1alpha2; our runtimes serve runtime.v1, which was copied from
// v1alpha2 with the same messages and field numbers. This relay sits between the two at the HTTP/2 frame level: in
// the request headers it rewrites `:path` /runtime.v1alpha2.<Service>/<Method> to /runtime.v1.<Service>/<Method>, and
// `:authority`, which Go's gRPC sets to the socket path and Node's HTTP/2 server refuses (a '/' is not valid there:
// the stream is reset with PROTOCOL_ERROR), to "localhost". Every other frame, and everything the runtime sends
// back, passes unchanged: the messages are never decoded. The client's header blocks are HPACK-decoded (RFC 7541)
// and re-encoded as literals without indexing, so the runtime's decoder table stays empty.

/** RFC 7541 Appendix A: the static table (index 1..61). */
const STATIC_TABLE: Array<[string, string]> = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''], ['etag', ''],
  ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''], ['if-modified-since', ''],
  ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''], ['last-modified', ''], ['link', ''],
  ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''], ['proxy-authorization', ''], ['range', ''],
  ['referer', ''], ['refresh', ''], ['retry-after', ''], ['server', ''], ['set-cookie', ''],
  ['strict-transport-security', ''], ['transfer-encoding', ''], ['user-agent', ''], ['vary', ''], ['via', ''],
  ['www-authenticate', ''],
];
/** RFC 7541 Appendix B: the Huffman code of each byte value, and its length in bits. */
const HUFFMAN_CODES = [
  0x1ff8, 0x7fffd8, 0xfffffe2, 0xfffffe3, 0xfffffe4, 0xfffffe5, 0xfffffe6, 0xfffffe7, 0xfffffe8, 0xffffea, 0x3ffffffc,
  0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb, 0xfffffec, 0xfffffed, 0xfffffee, 0xfffffef, 0xffffff0, 0xffffff1,
  0xffffff2, 0x3ffffffe, 0xffffff3, 0xffffff4, 0xffffff5, 0xffffff6, 0xffffff7, 0xffffff8, 0xffffff9, 0xffffffa,
  0xffffffb, 0x14, 0x3f8, 0x3f9, 0xffa, 0x1ff9, 0x15, 0xf8, 0x7fa, 0x3fa, 0x3fb, 0xf9, 0x7fb, 0xfa, 0x16, 0x17, 0x18,
  0x0, 0x1, 0x2, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x5c, 0xfb, 0x7ffc, 0x20, 0xffb, 0x3fc, 0x1ffa, 0x21, 0x5d,
  0x5e, 0x5f, 0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70,
  0x71, 0x72, 0xfc, 0x73, 0xfd, 0x1ffb, 0x7fff0, 0x1ffc, 0x3ffc, 0x22, 0x7ffd, 0x3, 0x23, 0x4, 0x24, 0x5, 0x25, 0x26,
  0x27, 0x6, 0x74, 0x75, 0x28, 0x29, 0x2a, 0x7, 0x2b, 0x76, 0x2c, 0x8, 0x9, 0x2d, 0x77, 0x78, 0x79, 0x7a, 0x7b, 0x7ffe,
  0x7fc, 0x3ffd, 0x1ffd, 0xffffffc, 0xfffe6, 0x3fffd2, 0xfffe7, 0xfffe8, 0x3fffd3, 0x3fffd4, 0x3fffd5, 0x7fffd9,
  0x3fffd6, 0x7fffda, 0x7fffdb, 0x7fffdc, 0x7fffdd, 0x7fffde, 0xffffeb, 0x7fffdf, 0xffffec, 0xffffed, 0x3fffd7,
  0x7fffe0, 0xffffee, 0x7fffe1, 0x7fffe2, 0x7fffe3, 0x7fffe4, 0x1fffdc, 0x3fffd8, 0x7fffe5, 0x3fffd9, 0x7fffe6,
  0x7fffe7, 0xffffef, 0x3fffda, 0x1fffdd, 0xfffe9, 0x3fffdb, 0x3fffdc, 0x7fffe8, 0x7fffe9, 0x1fffde, 0x7fffea,
  0x3fffdd, 0x3fffde, 0xfffff0, 0x1fffdf, 0x3fffdf, 0x7fffeb, 0x7fffec, 0x1fffe0, 0x1fffe1, 0x3fffe0, 0x1fffe2,
  0x7fffed, 0x3fffe1, 0x7fffee, 0x7fffef, 0xfffea, 0x3fffe2, 0x3fffe3, 0x3fffe4, 0x7ffff0, 0x3fffe5, 0x3fffe6,
  0x7ffff1, 0x3ffffe0, 0x3ffffe1, 0xfffeb, 0x7fff1, 0x3fffe7, 0x7ffff2, 0x3fffe8, 0x1ffffec, 0x3ffffe2, 0x3ffffe3,
  0x3ffffe4, 0x7ffffde, 0x7ffffdf, 0x3ffffe5, 0xfffff1, 0x1ffffed, 0x7fff2, 0x1fffe3, 0x3ffffe6, 0x7ffffe0, 0x7ffffe1,
  0x3ffffe7, 0x7ffffe2, 0xfffff2, 0x1fffe4, 0x1fffe5, 0x3ffffe8, 0x3ffffe9, 0xffffffd, 0x7ffffe3, 0x7ffffe4, 0x7ffffe5,
  0xfffec, 0xfffff3, 0xfffed, 0x1fffe6, 0x3fffe9, 0x1fffe7, 0x1fffe8, 0x7ffff3, 0x3fffea, 0x3fffeb, 0x1ffffee,
  0x1ffffef, 0xfffff4, 0xfffff5, 0x3ffffea, 0x7ffff4, 0x3ffffeb, 0x7ffffe6, 0x3ffffec, 0x3ffffed, 0x7ffffe7, 0x7ffffe8,
  0x7ffffe9, 0x7ffffea, 0x7ffffeb, 0xffffffe, 0x7ffffec, 0x7ffffed, 0x7ffffee, 0x7ffffef, 0x7fffff0, 0x3ffffee,
];
const HUFFMAN_LENGTHS = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28,
  28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12,
  10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5,
  6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22,
  23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22, 21, 20, 22,
  22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26,
  26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27,
  27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27,
  27, 27, 27, 27, 26,
];

const huffmanSymbols = new Map<number, number>(HUFFMAN_CODES.map((code, symbol) => [HUFFMAN_LENGTHS[symbol] * 2 ** 32 + code, symbol]));

function huffmanDecode(bytes: Uint8Array): string {
  const out: number[] = [];
  let code = 0;
  let length = 0;
  for (const byte of bytes) {
    for (let bit = 7; bit >= 0; bit--) {
      code = code * 2 + ((byte >> bit) & 1);
      length++;
      const symbol = huffmanSymbols.get(length * 2 ** 32 + code);
      if (symbol !== undefined) {
        out.push(symbol);
        code = 0;
        length = 0;
      } else if (length > 30) {
        throw new Error('HPACK: invalid Huffman code');
      }
    }
  }
  // what is left is the EOS prefix (all ones, at most 7 bits)
  return Buffer.from(out).toString('latin1');
}

/** The HPACK decoder state of one connection's client -> server direction. */
class HpackDecoder {
  private dynamic: Array<[string, string]> = [];
  private size = 0;
  private maxSize = 4096;
  private block: Uint8Array = new Uint8Array(0);
  private at = 0;

  decode(block: Uint8Array): Array<[string, string]> {
    this.block = block;
    this.at = 0;
    const headers: Array<[string, string]> = [];
    while (this.at < block.length) {
      const first = block[this.at];
      if (first & 0x80) {
        headers.push(this.entry(this.integer(7)));
      } else if ((first & 0xc0) === 0x40) {
        const field = this.literal(6);
        this.add(field);
        headers.push(field);
      } else if ((first & 0xe0) === 0x20) {
        this.maxSize = this.integer(5);
        this.evict();
      } else {
        headers.push(this.literal(4));
      }
    }
    return headers;
  }

  private integer(prefixBits: number): number {
    const max = (1 << prefixBits) - 1;
    let value = this.block[this.at++] & max;
    if (value < max) return value;
    let shift = 0;
    let byte: number;
    do {
      byte = this.block[this.at++];
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return value;
  }

  private string(): string {
    const huffman = (this.block[this.at] & 0x80) !== 0;
    const length = this.integer(7);
    const bytes = this.block.subarray(this.at, this.at + length);
    this.at += length;
    return huffman ? huffmanDecode(bytes) : Buffer.from(bytes).toString('latin1');
  }

  private literal(prefixBits: number): [string, string] {
    const index = this.integer(prefixBits);
    const name = index === 0 ? this.string() : this.entry(index)[0];
    return [name, this.string()];
  }

  private entry(index: number): [string, string] {
    const field = index <= STATIC_TABLE.length ? STATIC_TABLE[index - 1] : this.dynamic[index - STATIC_TABLE.length - 1];
    if (!field || index === 0) throw new Error(`HPACK: no table entry ${index}`);
    return field;
  }

  private add(field: [string, string]): void {
    this.dynamic.unshift(field);
    this.size += 32 + field[0].length + field[1].length;
    this.evict();
  }

  private evict(): void {
    while (this.size > this.maxSize && this.dynamic.length > 0) {
      const [name, value] = this.dynamic.pop()!;
      this.size -= 32 + name.length + value.length;
    }
  }
}

function encodeInteger(out: number[], first: number, prefixBits: number, value: number): void {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out.push(first | value);
    return;
  }
  out.push(first | max);
  value -= max;
  while (value >= 0x80) {
    out.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  out.push(value);
}

/** Literal header fields without indexing, new names, no Huffman coding. */
function encodeHeaders(headers: Array<[string, string]>): Buffer {
  const out: number[] = [];
  for (const [name, value] of headers) {
    out.push(0);
    for (const text of [name, value]) {
      const bytes = Buffer.from(text, 'latin1');
      encodeInteger(out, 0, 7, bytes.length);
      for (const byte of bytes) out.push(byte);
    }
  }
  return Buffer.from(out);
}

const PREFACE_LENGTH = 24;
const MAX_FRAME = 16_384;
const HEADERS = 0x1;
const CONTINUATION = 0x9;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY = 0x20;

function frame(type: number, flags: number, stream: number, payload: Uint8Array): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(stream, 5);
  return Buffer.concat([header, payload]);
}

/** One client connection: frames from the client are parsed, header blocks rewritten, the rest passed on. */
class ClientStream {
  private pending: Buffer = Buffer.alloc(0);
  private prefaceLeft = PREFACE_LENGTH;
  private readonly decoder = new HpackDecoder();
  private block: { stream: number; endStream: boolean; fragments: Buffer[] } | undefined;

  constructor(
    private readonly onPath: (path: string) => void,
    private readonly rewrite: (headers: Array<[string, string]>) => Array<[string, string]>,
  ) {}

  /** The bytes to send to the server for `chunk` of the client's. */
  push(chunk: Buffer): Buffer {
    const out: Buffer[] = [];
    if (this.prefaceLeft > 0) {
      const take = Math.min(this.prefaceLeft, chunk.length);
      out.push(chunk.subarray(0, take));
      this.prefaceLeft -= take;
      chunk = chunk.subarray(take);
    }
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 9) {
      const length = this.pending.readUIntBE(0, 3);
      if (this.pending.length < 9 + length) break;
      const type = this.pending[3];
      const flags = this.pending[4];
      const stream = this.pending.readUInt32BE(5) & 0x7fffffff;
      const payload = this.pending.subarray(9, 9 + length);
      if (type === HEADERS) {
        let start = 0;
        let end = payload.length;
        if (flags & PADDED) {
          start = 1;
          end -= payload[0];
        }
        if (flags & PRIORITY) start += 5;
        this.block = { stream, endStream: (flags & END_STREAM) !== 0, fragments: [Buffer.from(payload.subarray(start, end))] };
      } else if (type === CONTINUATION && this.block) {
        this.block.fragments.push(Buffer.from(payload));
      } else {
        out.push(this.pending.subarray(0, 9 + length));
      }
      if ((type === HEADERS || type === CONTINUATION) && flags & END_HEADERS && this.block) {
        out.push(this.headerFrames(this.block));
        this.block = undefined;
      }
      this.pending = this.pending.subarray(9 + length);
    }
    return Buffer.concat(out);
  }

  private headerFrames(block: { stream: number; endStream: boolean; fragments: Buffer[] }): Buffer {
    const headers = this.rewrite(this.decoder.decode(Buffer.concat(block.fragments)));
    const path = headers.find(([name]) => name === ':path');
    if (path) this.onPath(path[1]);
    const encoded = encodeHeaders(headers);
    const frames: Buffer[] = [];
    for (let at = 0; at === 0 || at < encoded.length; at += MAX_FRAME) {
      const last = at + MAX_FRAME >= encoded.length;
      const flags = (last ? END_HEADERS : 0) | (at === 0 && block.endStream ? END_STREAM : 0);
      frames.push(frame(at === 0 ? HEADERS : CONTINUATION, flags, block.stream, encoded.subarray(at, at + MAX_FRAME)));
    }
    return Buffer.concat(frames);
  }
}

/** A running relay; close() stops it. */
export interface CriAlphaRelay {
  /** unix://<socket> for the Go kubelet's --container-runtime-endpoint. */
  endpoint: string;
  /** Calls relayed so far, by method (`RuntimeService/Version`). */
  calls: Map<string, number>;
  close(): Promise<void>;
}

/** Serves CRI v1alpha2 on `socket`, relaying every call to the runtime.v1 server listening on `targetSocket`. */
export async function startCriAlphaRelay(socket: string, targetSocket: string): Promise<CriAlphaRelay> {
  const calls = new Map<string, number>();
  const sockets = new Set<Socket>();
  const rewrite = (headers: Array<[string, string]>): Array<[string, string]> =>
    headers.map(([name, value]): [string, string] => {
      if (name === ':authority') return [name, 'localhost'];
      if (name === ':path') return [name, value.replace(/^\/runtime\.v1alpha2\./, '/runtime.v1.')];
      return [name, value];
    });
  const onPath = (path: string) => {
    const method = path.replace(/^\/runtime\.v1\./, '');
    calls.set(method, (calls.get(method) ?? 0) + 1);
  };
  const server: Server = createServer((client) => {
    const upstream = connect(targetSocket);
    sockets.add(client).add(upstream);
    const parser = new ClientStream(onPath, rewrite);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('data', (chunk: Buffer) => {
      try {
        const out = parser.push(chunk);
        if (out.length > 0) upstream.write(out);
      } catch {
        end();
      }
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    for (const side of [client, upstream]) {
      side.on('error', end);
      side.on('close', end);
    }
  });
  if (existsSync(socket)) unlinkSync(socket);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
  return {
    endpoint: `unix://${socket}`,
    calls,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
