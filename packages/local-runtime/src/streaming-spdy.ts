import { EventEmitter } from 'node:events';
import { PassThrough, type Duplex } from 'node:stream';
import { constants as zlibConstants, createDeflate, createInflate, type Deflate, type Inflate } from 'node:zlib';

/**
 * SPDY/3.1 framing, as far as Kubernetes' streaming protocols use it (Go: github.com/moby/spdystream): streams
 * opened with SYN_STREAM and accepted with SYN_REPLY, data frames, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS and
 * WINDOW_UPDATE. Name/value header blocks are compressed with zlib and the SPDY/3 dictionary, one zlib context per
 * direction for the connection's life. Flow control is not enforced (as spdystream, which never sends WINDOW_UPDATE).
 */

const VERSION = 3;
const SYN_STREAM = 1;
const SYN_REPLY = 2;
const RST_STREAM = 3;
const SETTINGS = 4;
const PING = 6;
const GOAWAY = 7;
const HEADERS = 8;
const WINDOW_UPDATE = 9;
const FLAG_FIN = 0x01;
/** Largest data frame payload written (the frame length field allows 16 MiB). */
const MAX_DATA_FRAME = 32 * 1024;
/** After close(), how long the peer has to close the connection. */
const CLOSE_TIMEOUT_MS = 10_000;
/** Largest frame accepted. */
const MAX_FRAME = 16 * 1024 * 1024 - 1;

/** RST_STREAM status codes. */
export const RstStatus = { PROTOCOL_ERROR: 1, INVALID_STREAM: 2, REFUSED_STREAM: 3, CANCEL: 5, INTERNAL_ERROR: 6 } as const;

/**
 * The SPDY/3 header compression dictionary (draft-mbelshe-httpbis-spdy-00 section 2.6.10.1): length-prefixed
 * header names and values, then text. 1423 bytes.
 */
export const SPDY3_DICTIONARY: Buffer = (() => {
  const words = [
    'options', 'head', 'post', 'put', 'delete', 'trace', 'accept', 'accept-charset', 'accept-encoding',
    'accept-language', 'accept-ranges', 'age', 'allow', 'authorization', 'cache-control', 'connection',
    'content-base', 'content-encoding', 'content-language', 'content-length', 'content-location', 'content-md5',
    'content-range', 'content-type', 'date', 'etag', 'expect', 'expires', 'from', 'host', 'if-match',
    'if-modified-since', 'if-none-match', 'if-range', 'if-unmodified-since', 'last-modified', 'location',
    'max-forwards', 'pragma', 'proxy-authenticate', 'proxy-authorization', 'range', 'referer', 'retry-after',
    'server', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'user-agent', 'vary', 'via', 'warning',
    'www-authenticate', 'method', 'get', 'status', '200 OK', 'version', 'HTTP/1.1', 'url', 'public', 'set-cookie',
    'keep-alive', 'origin',
  ];
  const tail =
    '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505' +
    '203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized' +
    '403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable' +
    'Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT' +
    'chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,' +
    'text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';
  const parts: Buffer[] = [];
  for (const word of words) {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(word.length);
    parts.push(length, Buffer.from(word, 'latin1'));
  }
  parts.push(Buffer.from(tail, 'latin1'));
  return Buffer.concat(parts);
})();

/** Header names (lower case, as on the wire) to their values. */
export type SpdyHeaders = Record<string, string[]>;

/** Encodes an uncompressed SPDY/3 name/value block: names lower-cased, several values joined by NUL. */
export function encodeHeaderBlock(headers: SpdyHeaders): Buffer {
  const entries = Object.entries(headers);
  const parts: Buffer[] = [u32(entries.length)];
  for (const [name, values] of entries) {
    const key = Buffer.from(name.toLowerCase(), 'utf8');
    const value = Buffer.from(values.join('\0'), 'utf8');
    parts.push(u32(key.length), key, u32(value.length), value);
  }
  return Buffer.concat(parts);
}

/** Decodes an uncompressed SPDY/3 name/value block. */
export function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  const headers: SpdyHeaders = {};
  let offset = 0;
  const read = (): Buffer => {
    if (offset + 4 > block.length) throw new Error('truncated SPDY header block');
    const length = block.readUInt32BE(offset);
    offset += 4;
    if (offset + length > block.length) throw new Error('truncated SPDY header block');
    const value = block.subarray(offset, offset + length);
    offset += length;
    return value;
  };
  if (block.length < 4) throw new Error('truncated SPDY header block');
  const count = block.readUInt32BE(0);
  offset = 4;
  for (let i = 0; i < count; i++) {
    const name = read().toString('utf8').toLowerCase();
    const values = read().toString('utf8').split('\0');
    (headers[name] ??= []).push(...values);
  }
  return headers;
}

function u32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32BE(value >>> 0);
  return buffer;
}

function controlFrame(type: number, flags: number, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | VERSION, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(((flags & 0xff) << 24) | body.length, 4);
  return Buffer.concat([head, body]);
}

function dataFrame(streamId: number, flags: number, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE(((flags & 0xff) << 24) | data.length, 4);
  return Buffer.concat([head, data]);
}

/**
 * One direction's zlib context. Node's zlib is asynchronous: each block is written then flushed (Z_SYNC_FLUSH, as
 * Go's compressor and decompressor do per block) and the output collected up to the flush's callback. Calls must be
 * serialized by the caller (the connection's frame queues are).
 */
class ZlibContext {
  private readonly engine: Deflate | Inflate;
  private output: Buffer[] = [];
  private failure: Error | undefined;

  constructor(kind: 'deflate' | 'inflate') {
    this.engine = kind === 'deflate' ? createDeflate({ dictionary: SPDY3_DICTIONARY }) : createInflate({ dictionary: SPDY3_DICTIONARY });
    this.engine.on('data', (chunk: Buffer) => this.output.push(chunk));
    this.engine.on('error', (error: Error) => (this.failure = error));
  }

  process(input: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      if (this.failure) {
        reject(this.failure);
        return;
      }
      if (input.length > 0) this.engine.write(input);
      this.engine.flush(zlibConstants.Z_SYNC_FLUSH, () => {
        if (this.failure) {
          reject(this.failure);
          return;
        }
        const out = Buffer.concat(this.output);
        this.output = [];
        resolve(out);
      });
    });
  }

  close(): void {
    this.engine.destroy();
  }
}

/** One SPDY stream: its headers, the data the peer sends (`input`, ended by the peer's FIN or a reset) and writes. */
export class SpdyStream {
  /** The peer's data; ends at its FIN, RST_STREAM or the connection's end. */
  readonly input = new PassThrough();
  private localClosed = false;
  private remoteClosed = false;
  /** @internal Resolves when the peer's SYN_REPLY arrives (streams this side opened). */
  readonly replied: Promise<void>;
  /** @internal */
  resolveReply!: () => void;
  /** @internal */
  rejectReply!: (error: Error) => void;

  constructor(
    private readonly connection: SpdyConnection,
    readonly id: number,
    readonly headers: SpdyHeaders,
  ) {
    this.replied = new Promise<void>((resolve, reject) => {
      this.resolveReply = resolve;
      this.rejectReply = reject;
    });
    this.replied.catch(() => undefined);
  }

  /** The first value of a header (names are case-insensitive). */
  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()]?.[0];
  }

  /** Sends SYN_REPLY (accepting a stream the peer opened). */
  reply(headers: SpdyHeaders = {}): Promise<void> {
    return this.connection.sendReply(this.id, headers);
  }

  /** Sends data; no-op after end() or a reset. Resolves once handed to the socket. */
  write(data: Buffer | string): Promise<void> {
    if (this.localClosed) return Promise.resolve();
    return this.connection.sendData(this.id, Buffer.isBuffer(data) ? data : Buffer.from(data), false);
  }

  /** Half-closes this side (an empty data frame with FIN). */
  end(): Promise<void> {
    if (this.localClosed) return Promise.resolve();
    this.localClosed = true;
    return this.connection.sendData(this.id, Buffer.alloc(0), true);
  }

  /** Sends RST_STREAM and ends both directions. */
  reset(status: number = RstStatus.CANCEL): void {
    if (!this.localClosed || !this.remoteClosed) this.connection.sendReset(this.id, status);
    this.localClosed = true;
    this.remoteEnded();
  }

  /** @internal the peer sent FIN, a reset, or the connection ended. */
  remoteEnded(): void {
    if (this.remoteClosed) return;
    this.remoteClosed = true;
    this.input.end();
  }

  /** @internal the peer reset the stream. */
  peerReset(): void {
    this.localClosed = true;
    this.rejectReply(new Error(`stream ${this.id} reset by peer`));
    this.remoteEnded();
  }
}

export interface SpdyConnectionEvents {
  stream: [SpdyStream];
  /** The peer sent GOAWAY: it accepts no new stream. */
  goaway: [];
  close: [];
}

/**
 * A SPDY/3.1 connection over an upgraded socket. The server side accepts the peer's streams ('stream' events; the
 * handler replies); the client side opens streams with createStream(). 'close' is emitted once, when the socket
 * closes.
 */
export class SpdyConnection extends EventEmitter<SpdyConnectionEvents> {
  private readonly streams = new Map<number, SpdyStream>();
  private readonly deflate = new ZlibContext('deflate');
  private readonly inflate = new ZlibContext('inflate');
  private received: Buffer = Buffer.alloc(0);
  /** Frames are handled, and written, strictly in order (header blocks go through async zlib). */
  private incoming: Promise<void> = Promise.resolve();
  private outgoing: Promise<void> = Promise.resolve();
  private nextStreamId: number;
  private lastPeerStreamId = 0;
  private goneAway = false;
  private closing = false;
  private nextPingId: number;
  private readonly pings = new Map<number, () => void>();
  private isClosed = false;
  /** Resolves when the socket is closed. */
  readonly closed: Promise<void>;

  constructor(
    private readonly socket: Duplex,
    readonly role: 'server' | 'client',
    head: Buffer = Buffer.alloc(0),
  ) {
    super();
    this.nextStreamId = role === 'client' ? 1 : 2;
    this.nextPingId = role === 'client' ? 1 : 2;
    this.closed = new Promise<void>((resolve) => {
      const finish = (): void => {
        if (this.isClosed) return;
        this.isClosed = true;
        for (const stream of this.streams.values()) stream.peerReset();
        for (const answered of this.pings.values()) answered();
        this.pings.clear();
        this.streams.clear();
        this.deflate.close();
        this.inflate.close();
        resolve();
        this.emit('close');
      };
      // Frames already received are handled first (a SYN_REPLY may still be in the inflater).
      socket.once('close', () => void this.incoming.then(finish));
      socket.once('end', () => socket.destroy());
      socket.on('error', () => socket.destroy());
    });
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    if (head.length > 0) this.onData(head);
  }

  get isOpen(): boolean {
    return !this.isClosed;
  }

  /** Opens a stream (client side): SYN_STREAM with these headers; resolves once the peer replied. */
  async createStream(headers: SpdyHeaders): Promise<SpdyStream> {
    if (this.goneAway || this.isClosed) throw new Error('SPDY connection is closed');
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    const stream = new SpdyStream(this, id, headers);
    this.streams.set(id, stream);
    this.enqueueOut(async () => {
      const block = await this.deflate.process(encodeHeaderBlock(headers));
      const body = Buffer.concat([u32(id), u32(0), Buffer.from([0, 0]), block]);
      return controlFrame(SYN_STREAM, 0, body);
    });
    await stream.replied;
    return stream;
  }

  /**
   * Closes the connection. By default: GOAWAY, then the socket is ended once everything queued is written (a client
   * done with the connection). With `waitForPeer` (a server whose session is over): no GOAWAY, and the socket stays
   * open until the peer closes it, so that the peer's last writes (stdin, terminal resizes) do not fail (kubectl's
   * spdystream fails them with EOF, and logs it, once it got a GOAWAY). A peer that never closes is cut off after a
   * few seconds. Resolves when the socket is closed.
   */
  async close(options: { waitForPeer?: boolean } = {}): Promise<void> {
    if (!this.closing && !this.isClosed) {
      this.closing = true;
      if (!options.waitForPeer) {
        this.goneAway = true;
        const body = Buffer.concat([u32(this.lastPeerStreamId), u32(0)]);
        this.enqueueOut(() => controlFrame(GOAWAY, 0, body));
      }
      await this.outgoing;
      if (!options.waitForPeer) this.socket.end();
      setTimeout(() => this.socket.destroy(), CLOSE_TIMEOUT_MS).unref();
    }
    await this.closed;
  }

  /** Sends a PING; resolves when the peer answers it (or the connection closes). */
  ping(): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    const id = this.nextPingId;
    this.nextPingId += 2;
    return new Promise<void>((resolve) => {
      this.pings.set(id, resolve);
      this.enqueueOut(() => controlFrame(PING, 0, u32(id)));
    });
  }

  /** Closes the socket at once. */
  destroy(): void {
    this.socket.destroy();
  }

  /** @internal */
  sendReply(id: number, headers: SpdyHeaders): Promise<void> {
    return this.enqueueOut(async () => {
      const block = await this.deflate.process(encodeHeaderBlock(headers));
      return controlFrame(SYN_REPLY, 0, Buffer.concat([u32(id), block]));
    });
  }

  /** @internal */
  sendData(id: number, data: Buffer, fin: boolean): Promise<void> {
    if (data.length === 0) return this.enqueueOut(() => dataFrame(id, fin ? FLAG_FIN : 0, data));
    let last: Promise<void> = Promise.resolve();
    for (let offset = 0; offset < data.length; offset += MAX_DATA_FRAME) {
      const chunk = data.subarray(offset, offset + MAX_DATA_FRAME);
      const flags = fin && offset + MAX_DATA_FRAME >= data.length ? FLAG_FIN : 0;
      last = this.enqueueOut(() => dataFrame(id, flags, chunk));
    }
    return last;
  }

  /** @internal */
  sendReset(id: number, status: number): void {
    this.enqueueOut(() => controlFrame(RST_STREAM, 0, Buffer.concat([u32(id), u32(status)])));
    this.streams.delete(id);
  }

  private enqueueOut(make: () => Buffer | Promise<Buffer>): Promise<void> {
    const next = this.outgoing.then(async () => {
      if (this.isClosed) return;
      const frame = await make();
      if (!this.isClosed && !this.socket.destroyed) this.socket.write(frame);
    });
    this.outgoing = next.catch(() => {
      this.socket.destroy();
    });
    return this.outgoing;
  }

  private onData(chunk: Buffer): void {
    this.received = this.received.length === 0 ? chunk : Buffer.concat([this.received, chunk]);
    while (this.received.length >= 8) {
      const length = this.received.readUInt32BE(4) & 0xffffff;
      if (length > MAX_FRAME) {
        this.socket.destroy();
        return;
      }
      if (this.received.length < 8 + length) return;
      const frame = this.received.subarray(0, 8 + length);
      this.received = this.received.subarray(8 + length);
      this.incoming = this.incoming.then(() => this.handleFrame(frame)).catch(() => {
        this.socket.destroy();
      });
    }
  }

  private async handleFrame(frame: Buffer): Promise<void> {
    if (this.isClosed) return;
    const flags = frame[4]!;
    const body = frame.subarray(8);
    if ((frame[0]! & 0x80) === 0) {
      const id = frame.readUInt32BE(0) & 0x7fffffff;
      const stream = this.streams.get(id);
      if (!stream) {
        this.sendReset(id, RstStatus.INVALID_STREAM);
        return;
      }
      if (body.length > 0) stream.input.write(Buffer.from(body));
      if (flags & FLAG_FIN) stream.remoteEnded();
      return;
    }
    const type = frame.readUInt16BE(2);
    switch (type) {
      case SYN_STREAM: {
        const id = body.readUInt32BE(0) & 0x7fffffff;
        const headers = decodeHeaderBlock(await this.inflate.process(body.subarray(10)));
        const fromPeer = this.role === 'server' ? id % 2 === 1 : id % 2 === 0;
        if (!fromPeer || id <= this.lastPeerStreamId || this.goneAway) {
          this.sendReset(id, RstStatus.PROTOCOL_ERROR);
          return;
        }
        this.lastPeerStreamId = id;
        const stream = new SpdyStream(this, id, headers);
        this.streams.set(id, stream);
        if (flags & FLAG_FIN) stream.remoteEnded();
        this.emit('stream', stream);
        return;
      }
      case SYN_REPLY: {
        const id = body.readUInt32BE(0) & 0x7fffffff;
        await this.inflate.process(body.subarray(4));
        const stream = this.streams.get(id);
        stream?.resolveReply();
        if (stream && flags & FLAG_FIN) stream.remoteEnded();
        return;
      }
      case HEADERS:
        // Keeps the decompression context in step; the headers themselves are not used.
        await this.inflate.process(body.subarray(4));
        return;
      case RST_STREAM: {
        const id = body.readUInt32BE(0) & 0x7fffffff;
        const stream = this.streams.get(id);
        this.streams.delete(id);
        stream?.peerReset();
        return;
      }
      case PING: {
        const id = body.readUInt32BE(0);
        const answered = this.pings.get(id);
        if (answered) {
          this.pings.delete(id);
          answered();
        } else {
          this.enqueueOut(() => controlFrame(PING, 0, Buffer.from(body.subarray(0, 4))));
        }
        return;
      }
      case GOAWAY:
        this.goneAway = true;
        this.emit('goaway');
        return;
      case SETTINGS:
      case WINDOW_UPDATE:
      default:
        return;
    }
  }
}
