// One HTTP/1.1 GET on a fresh connection, as Go's prober puts it on the wire (DisableKeepAlives: one
// request, `Connection: close`, the body read up to a limit, then the connection closed), over
// node:net / node:tls. A probe is a request, a status line, three framing headers and at most 10 KiB:
// a general-purpose client (undici's Agent/Client, node:http's streams) costs several times the
// socket work in objects, streams and error objects built per probe.
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** Go: Transport.MaxResponseHeaderBytes' default (10 MiB), the response head's limit. */
export const MAX_RESPONSE_HEADER_BYTES = 10 << 20;

/** The outcome of one exchange. Failures are values, not thrown errors (no stack trace per probe). */
export type WireResult =
  | { kind: 'response'; statusCode: number; location: string | undefined; body: Buffer | undefined }
  /** A socket error (dial, reset, TLS), before (`headers`) or after the response head. */
  | { kind: 'error'; phase: 'headers' | 'body'; error: Error }
  /** The connection ended before the response (or its body) was complete (Go: EOF). */
  | { kind: 'eof'; phase: 'headers' | 'body' }
  /** A response Go's transport rejects; `text` is Go's error (`malformed HTTP status code`). */
  | { kind: 'protocol'; text: string }
  /** Cancelled by the caller (the probe's timeout or signal). */
  | { kind: 'cancelled'; phase: 'headers' | 'body' };

export interface WireRequest {
  url: URL;
  /** The request head, as requestHead() builds it. */
  head: string;
  /** Body bytes kept; reading stops (and the connection closes) once this many are in. */
  bodyLimit: number;
  /** Whether the body of a response with this status and Location is wanted; otherwise the connection closes after the head. */
  wantBody(statusCode: number, location: string | undefined): boolean;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Go's httpguts.ValidHeaderFieldValue: no control characters but horizontal tab.
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;

/** Go's textproto.CanonicalMIMEHeaderKey for a valid token: `x-custom` -> `X-Custom`. */
function canonicalKey(name: string): string {
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

/**
 * The request head of a GET (Go: Request.write with DisableKeepAlives): the request line, `Host`
 * (the first non-empty `Host` header, else the URL's host), the headers in order and
 * `Connection: close`. Returns Go's transport error for an invalid header name or value.
 */
export function requestHead(url: URL, headers: ReadonlyArray<readonly [string, string]>): { head: string } | { error: string } {
  let host = '';
  let lines = '';
  for (const [name, value] of headers) {
    if (!TOKEN.test(name)) return { error: `net/http: invalid header field name ${JSON.stringify(name)}` };
    if (BAD_VALUE.test(value)) return { error: `net/http: invalid header field value for ${JSON.stringify(canonicalKey(name))}` };
    const lower = name.toLowerCase();
    if (lower === 'host') {
      if (!host) host = value;
      continue;
    }
    if (lower === 'connection') continue; // Go's transport sets it (close)
    lines += `${name}: ${value}\r\n`;
  }
  return { head: `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${host || url.host}\r\n${lines}Connection: close\r\n\r\n` };
}

const enum State {
  Head,
  Length,
  Chunked,
  UntilClose,
  Done,
}
const enum Chunk {
  Size,
  Data,
  DataEnd,
  Trailer,
}

/**
 * Runs one exchange. `cancel()` ends it at once with `cancelled` (the probe's timeout); the promise
 * never rejects.
 */
export class WireExchange {
  readonly result: Promise<WireResult>;
  private resolve!: (r: WireResult) => void;
  private readonly socket: Socket;
  private state = State.Head;
  private head: Buffer | undefined;
  private scanned = 0;
  private statusCode = 0;
  private location: string | undefined;
  private remaining = 0;
  private chunk = Chunk.Size;
  private pending: Buffer | undefined;
  private body: Buffer[] = [];
  private bodySize = 0;

  constructor(private readonly req: WireRequest) {
    this.result = new Promise<WireResult>((resolve) => (this.resolve = resolve));
    const { url } = req;
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    // Go's prober: TLS without verification; SNI only for a host name (as Go and undici).
    const socket =
      url.protocol === 'https:'
        ? tlsConnect({ host, port, rejectUnauthorized: false, ...(isIP(host) ? {} : { servername: host }) })
        : netConnect({ host, port });
    this.socket = socket;
    socket.on('data', (data: Buffer) => this.onData(data));
    socket.on('end', () => this.onEnd());
    socket.on('error', (error) => this.finish({ kind: 'error', phase: this.phase(), error }));
    socket.on('close', () => this.onEnd());
    socket.write(req.head); // queued until connected (and, for TLS, the handshake is done)
  }

  cancel(): void {
    this.finish({ kind: 'cancelled', phase: this.phase() });
  }

  private phase(): 'headers' | 'body' {
    return this.state === State.Head ? 'headers' : 'body';
  }

  private finish(result: WireResult): void {
    if (this.state === State.Done) return; // already settled; a late socket event
    this.state = State.Done;
    this.socket.destroy();
    this.resolve(result);
  }

  private onEnd(): void {
    if (this.state === State.Done) return;
    if (this.state === State.UntilClose) this.complete();
    else this.finish({ kind: 'eof', phase: this.phase() });
  }

  private complete(): void {
    const body = this.body.length === 1 ? this.body[0] : Buffer.concat(this.body);
    this.finish({ kind: 'response', statusCode: this.statusCode, location: this.location, body: body.subarray(0, this.req.bodyLimit) });
  }

  private onData(data: Buffer): void {
    if (this.state === State.Done) return;
    if (this.state === State.Head) {
      const rest = this.onHead(data);
      if (rest === undefined || rest.length === 0) return;
      data = rest;
    }
    if (this.state === State.Length) {
      const take = Math.min(this.remaining, data.length);
      this.remaining -= take;
      if (this.push(take === data.length ? data : data.subarray(0, take))) return;
      if (this.remaining === 0) this.complete();
    } else if (this.state === State.UntilClose) {
      this.push(data);
    } else if (this.state === State.Chunked) {
      this.onChunked(data);
    }
  }

  /** Keeps body bytes; true (and the exchange complete) once the limit is reached. */
  private push(data: Buffer): boolean {
    if (data.length > 0) {
      this.body.push(data);
      this.bodySize += data.length;
    }
    if (this.bodySize >= this.req.bodyLimit) {
      this.complete(); // Go: non-fatal truncation
      return true;
    }
    return false;
  }

  /** Gathers the response head; returns the bytes after it once it is parsed. */
  private onHead(data: Buffer): Buffer | undefined {
    let buf = this.head ? Buffer.concat([this.head, data]) : data;
    for (;;) {
      // The head ends at an empty line (CRLF CRLF, or bare LFs as Go's textproto accepts).
      let end = -1;
      let i = this.scanned;
      for (;;) {
        const nl = buf.indexOf(10, i);
        if (nl < 0) break;
        const next = buf[nl + 1];
        if (next === 10) {
          end = nl + 2;
          break;
        }
        if (next === 13 && buf[nl + 2] === 10) {
          end = nl + 3;
          break;
        }
        if (next === undefined || (next === 13 && nl + 2 >= buf.length)) break;
        i = nl + 1;
      }
      if (end < 0) {
        if (buf.length > MAX_RESPONSE_HEADER_BYTES) {
          this.finish({ kind: 'protocol', text: `net/http: server response headers exceeded ${MAX_RESPONSE_HEADER_BYTES} bytes; aborted` });
          return undefined;
        }
        this.head = buf;
        this.scanned = Math.max(0, buf.length - 3);
        return undefined;
      }
      const text = buf.toString('latin1', 0, end);
      const rest = buf.subarray(end);
      this.head = undefined;
      this.scanned = 0;
      const error = this.parseHead(text);
      if (error) {
        this.finish({ kind: 'protocol', text: `net/http: HTTP/1.x transport connection broken: ${error}` });
        return undefined;
      }
      if (this.statusCode >= 100 && this.statusCode < 200 && this.statusCode !== 101) {
        // Go skips 1xx informational responses (but 101) and reads the next head.
        if (rest.length === 0) return undefined;
        buf = rest;
        continue;
      }
      if (!this.req.wantBody(this.statusCode, this.location)) {
        this.finish({ kind: 'response', statusCode: this.statusCode, location: this.location, body: undefined });
        return undefined;
      }
      if (this.state === State.Length && this.remaining === 0) {
        this.complete();
        return undefined;
      }
      return rest;
    }
  }

  /** Parses a response head (Go: http.ReadResponse); returns Go's error text for a malformed one. */
  private parseHead(text: string): string | undefined {
    const lines = text.split('\n');
    lines.length -= 2; // the empty line and what follows the last LF
    const statusLine = stripCR(lines[0] ?? '');
    const sp = statusLine.indexOf(' ');
    if (sp < 0) return `malformed HTTP response ${JSON.stringify(statusLine)}`;
    const proto = statusLine.slice(0, sp);
    const status = statusLine.slice(sp + 1).replace(/^ +/, '');
    const codeText = status.split(' ', 1)[0];
    if (codeText.length !== 3 || !/^[0-9]{3}$/.test(codeText)) return 'malformed HTTP status code';
    if (!/^HTTP\/[0-9]+\.[0-9]+$/.test(proto)) return `malformed HTTP version ${JSON.stringify(proto)}`;
    this.statusCode = Number(codeText);
    this.location = undefined;
    let contentLength: string | undefined;
    let transferEncoding: string | undefined;
    for (let n = 1; n < lines.length; n++) {
      const line = stripCR(lines[n]);
      const colon = line.indexOf(':');
      if (colon <= 0 || !TOKEN.test(line.slice(0, colon))) return `malformed MIME header line: ${line}`;
      const name = line.slice(0, colon).toLowerCase();
      if (name !== 'content-length' && name !== 'transfer-encoding' && name !== 'location') continue;
      const value = line.slice(colon + 1).trim();
      if (name === 'location') this.location ??= value;
      else if (name === 'transfer-encoding') transferEncoding = transferEncoding === undefined ? value : `${transferEncoding}, ${value}`;
      else if (contentLength !== undefined && contentLength !== value) {
        return `http: message cannot contain multiple Content-Length headers; got ${JSON.stringify([contentLength, value])}`;
      } else contentLength = value;
    }
    const code = this.statusCode;
    if (code === 204 || code === 304 || (code >= 100 && code < 200)) {
      // No body (a 101 hands the connection over: nothing the probe reads).
      this.state = State.Length;
      this.remaining = 0;
      return undefined;
    }
    if (transferEncoding !== undefined) {
      // Go: only "chunked" is supported, and as the only coding.
      if (transferEncoding.toLowerCase() !== 'chunked') return `unsupported transfer encoding: ${JSON.stringify(transferEncoding)}`;
      this.state = State.Chunked;
      this.chunk = Chunk.Size;
      return undefined;
    }
    if (contentLength !== undefined) {
      if (!/^[0-9]+$/.test(contentLength)) return `bad Content-Length ${JSON.stringify(contentLength)}`;
      this.state = State.Length;
      this.remaining = Number(contentLength);
      return undefined;
    }
    this.state = State.UntilClose;
    return undefined;
  }

  /** Decodes a chunked body (Go: internal.chunkedReader). */
  private onChunked(data: Buffer): void {
    let buf = this.pending ? Buffer.concat([this.pending, data]) : data;
    this.pending = undefined;
    let i = 0;
    while (i < buf.length) {
      if (this.chunk === Chunk.Data) {
        const take = Math.min(this.remaining, buf.length - i);
        this.remaining -= take;
        if (this.push(buf.subarray(i, i + take))) return;
        i += take;
        if (this.remaining === 0) this.chunk = Chunk.DataEnd;
        continue;
      }
      const nl = buf.indexOf(10, i);
      if (nl < 0) {
        buf = buf.subarray(i);
        if (buf.length > 4096) this.finish({ kind: 'protocol', text: 'net/http: HTTP/1.x transport connection broken: malformed chunked encoding' });
        else this.pending = buf;
        return;
      }
      const line = stripCR(buf.toString('latin1', i, nl));
      i = nl + 1;
      if (this.chunk === Chunk.DataEnd) {
        if (line !== '') return this.finish({ kind: 'protocol', text: 'net/http: HTTP/1.x transport connection broken: malformed chunked encoding' });
        this.chunk = Chunk.Size;
      } else if (this.chunk === Chunk.Trailer) {
        if (line === '') return this.complete();
      } else {
        const sizeText = line.split(';', 1)[0].trim();
        if (!/^[0-9a-fA-F]{1,16}$/.test(sizeText)) {
          return this.finish({ kind: 'protocol', text: 'net/http: HTTP/1.x transport connection broken: malformed chunked encoding' });
        }
        const size = parseInt(sizeText, 16);
        if (size === 0) this.chunk = Chunk.Trailer;
        else {
          this.chunk = Chunk.Data;
          this.remaining = size;
        }
      }
    }
  }
}

function stripCR(line: string): string {
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
