import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** The streams of an exec or attach (Go: remotecommandserver.Options). */
export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** A request the streaming endpoints refuse, with the status Go answers it with. */
export class StreamRequestError extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
    this.name = 'StreamRequestError';
  }
}

/**
 * Go's remotecommandserver.NewOptions: the API server passes `input`, `output`, `error` and `tty` as "1";
 * stderr is dropped with a tty, and at least one stream is required.
 */
export function parseStreamOptions(query: URLSearchParams): StreamOptions {
  const tty = query.get('tty') === '1';
  const stdin = query.get('input') === '1';
  const stdout = query.get('output') === '1';
  const stderr = query.get('error') === '1' && !tty;
  if (!stdin && !stdout && !stderr) throw new StreamRequestError('you must specify at least 1 of stdin, stdout, stderr');
  return { stdin, stdout, stderr, tty };
}

/** Go's portforward.NewV4Options: WebSocket clients name their ports in `port`; SPDY clients in stream headers. */
export function parsePortForwardPorts(request: IncomingMessage, query: URLSearchParams): number[] {
  if (!isWebSocketRequest(request)) return [];
  const values = query.getAll('port');
  if (values.length === 0) throw new StreamRequestError('query parameter "port" is required');
  const ports: number[] = [];
  for (const value of values) {
    if (value === '') throw new StreamRequestError('query parameter "port" cannot be empty');
    for (const part of value.split(',')) {
      if (!/^\d+$/.test(part) || Number(part) > 65535) {
        throw new StreamRequestError(`unable to parse ${JSON.stringify(value)} as a port: strconv.ParseUint: parsing ${JSON.stringify(part)}: invalid syntax`);
      }
      if (Number(part) < 1) throw new StreamRequestError(`port ${JSON.stringify(value)} must be > 0`);
      ports.push(Number(part));
    }
  }
  return ports;
}

/** Go's httpstream.IsUpgradeRequest: a Connection header naming upgrade. */
export function isUpgradeRequest(request: IncomingMessage): boolean {
  const connection = request.headers.connection;
  const values = Array.isArray(connection) ? connection : [connection ?? ''];
  return values.some((value) => (value ?? '').toLowerCase().split(',').some((token: string) => token.trim() === 'upgrade'));
}

function isWebSocketRequest(request: IncomingMessage): boolean {
  return isUpgradeRequest(request) && (request.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/** Headers not passed to the runtime: the hop's own host and the client's credentials. */
const DROPPED_HEADERS = new Set(['host', 'authorization']);
const MAX_RESPONSE_HEAD_BYTES = 64 * 1024;

/**
 * Go's UpgradeAwareHandler with upgradeRequired, as the kubelet's proxyStream uses it: replays the client's
 * upgrade request to the runtime's streaming URL, and once the runtime switches protocols (SPDY/3.1 or
 * WebSocket, whichever the client asked for) copies bytes both ways until either side closes. A runtime that
 * answers an error status has that response passed to the client. Resolves when both connections are closed.
 */
export function proxyUpgradedConnection(request: IncomingMessage, client: Duplex, head: Buffer, target: string): Promise<void> {
  const location = new URL(target);
  return new Promise<void>((resolve) => {
    const backend: Socket = connect({ host: location.hostname.replace(/^\[|\]$/g, ''), port: Number(location.port || (location.protocol === 'https:' ? 443 : 80)) });
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      client.destroy();
      backend.destroy();
      resolve();
    };
    client.once('close', finish);
    client.once('error', finish);
    backend.once('close', finish);
    backend.once('error', (error) => {
      if (!switched) writeProxyError(client, `error dialing backend: ${error.message}`);
      finish();
    });

    let switched = false;
    let received = Buffer.alloc(0);
    const onHead = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) {
        if (received.length > MAX_RESPONSE_HEAD_BYTES) {
          writeProxyError(client, 'invalid upgrade response: header too large');
          finish();
        }
        return;
      }
      backend.off('data', onHead);
      const status = Number(/^HTTP\/\d\.\d (\d{3})/.exec(received.subarray(0, end).toString('latin1'))?.[1] ?? 0);
      if (status !== 101 && status < 400) {
        writeProxyError(client, `invalid upgrade response: status code ${status}`);
        finish();
        return;
      }
      switched = status === 101;
      client.write(received);
      if (!switched) {
        // The runtime's own error (e.g. an expired token): passed through, then the connection ends.
        backend.pipe(client);
        return;
      }
      backend.pipe(client);
      client.pipe(backend);
    };
    backend.on('data', onHead);
    backend.once('connect', () => {
      const lines = [`${request.method ?? 'GET'} ${location.pathname}${location.search} HTTP/1.1`, `Host: ${location.host}`];
      for (let i = 0; i < request.rawHeaders.length; i += 2) {
        const name = request.rawHeaders[i]!;
        if (!DROPPED_HEADERS.has(name.toLowerCase())) lines.push(`${name}: ${request.rawHeaders[i + 1]}`);
      }
      const remote = request.socket.remoteAddress;
      if (remote) lines.push(`X-Forwarded-For: ${remote}`);
      backend.write(lines.join('\r\n') + '\r\n\r\n');
      if (head.length > 0) backend.write(head);
    });
  });
}

/** The kubelet's responder: proxy failures are 500s with the error text (Go: http.Error). */
function writeProxyError(client: Duplex, message: string): void {
  if (client.destroyed) return;
  const body = `${message}\n`;
  client.write(
    `HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
