/**
 * Test tooling: a SPDY/3.1 remotecommand client, as kubectl's SPDY executor speaks it, to exec and attach through the
 * local runtime's streaming server or a kubelet's /exec and /attach.
 */
import type { Duplex } from 'node:stream';
import { SpdyConnection, type SpdyStream } from './streaming-spdy.js';

export { SpdyConnection, SpdyStream, RstStatus, type SpdyHeaders, type SpdyConnectionEvents } from './streaming-spdy.js';

export interface SpdyUpgradeRequest {
  /** Default POST, as kubectl. */
  method?: string;
  /** Path and query, e.g. `/exec/<token>` or `/exec/default/pod/app?command=ls&output=1`. */
  path: string;
  /** The Host header. */
  host: string;
  /** Offered remotecommand protocols, in preference order. Default v4, v3, v2 and v1 (channel.k8s.io). */
  protocols?: string[];
  /** Extra header lines (e.g. `Authorization: Bearer ...`). */
  headers?: string[];
  /** Leave out `Connection: Upgrade` and `Upgrade: SPDY/3.1` (to test a refusal). */
  noUpgradeHeaders?: boolean;
}

export interface SpdyUpgradeResult {
  /** The response status: 101 when upgraded. */
  status: number;
  /** The response head (status line and headers). */
  head: string;
  /** A refusal's body (read until the server closes). */
  body: string;
  /** The SPDY connection, when upgraded. */
  spdy?: SpdyConnection;
}

/**
 * Sends the upgrade request on `socket` (net or tls, connected or connecting) and resolves with the 101 and a client
 * SPDY connection, or with the refusal and its body.
 */
export function upgradeToSpdy(socket: Duplex, request: SpdyUpgradeRequest): Promise<SpdyUpgradeResult> {
  const protocols = request.protocols ?? ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];
  const lines = [
    `${request.method ?? 'POST'} ${request.path} HTTP/1.1`,
    `Host: ${request.host}`,
    ...(request.noUpgradeHeaders ? [] : ['Connection: Upgrade', 'Upgrade: SPDY/3.1']),
    ...protocols.map((p) => `X-Stream-Protocol-Version: ${p}`),
    ...(request.headers ?? []),
  ];
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.off('error', reject);
      const head = received.subarray(0, end).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      const rest = received.subarray(end + 4);
      if (status === 101) {
        resolve({ status, head, body: '', spdy: new SpdyConnection(socket, 'client', rest) });
        return;
      }
      let body = rest.toString();
      socket.on('data', (more: Buffer) => (body += more.toString()));
      socket.on('error', () => undefined);
      socket.once('close', () => resolve({ status, head, body }));
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

export interface RemoteCommandOptions {
  /** Written to the command's stdin, which is then closed. Absent: no stdin stream. */
  stdin?: string | Buffer;
  /** Default true. */
  stdout?: boolean;
  /** Default true (never with tty). */
  stderr?: boolean;
  tty?: boolean;
  /** Receives stdout as it arrives. */
  onStdout?: (text: string) => void;
  /** Called once every stream was accepted (the server has started the command). */
  onReady?: () => void;
}

export interface RemoteCommandResult {
  stdout: string;
  stderr: string;
  /** What the error stream carried: with v4 the metav1.Status JSON; with v2/v3 a failure's message. */
  error: string;
}

/** Reads a stream's data to its end. */
function readAll(stream: SpdyStream | undefined): Promise<string> {
  if (!stream) return Promise.resolve('');
  return new Promise((resolve) => {
    let text = '';
    stream.input.on('data', (chunk: Buffer) => (text += chunk.toString()));
    stream.input.once('end', () => resolve(text));
  });
}

/**
 * A remotecommand session as client-go runs it: opens the error stream, then stdin, stdout, stderr (and resize with
 * tty) in that order; writes and closes stdin; resolves when the error and output streams ended, and closes the
 * connection.
 */
export async function remoteCommandSession(spdy: SpdyConnection, options: RemoteCommandOptions = {}): Promise<RemoteCommandResult> {
  const error = await spdy.createStream({ streamtype: ['error'] });
  const stdin = options.stdin !== undefined ? await spdy.createStream({ streamtype: ['stdin'] }) : undefined;
  const stdout = options.stdout !== false ? await spdy.createStream({ streamtype: ['stdout'] }) : undefined;
  const stderr = options.stderr !== false && !options.tty ? await spdy.createStream({ streamtype: ['stderr'] }) : undefined;
  if (options.tty) await spdy.createStream({ streamtype: ['resize'] });
  options.onReady?.();
  if (stdin) {
    await stdin.write(options.stdin!);
    await stdin.end();
  }
  if (options.onStdout) stdout?.input.on('data', (chunk: Buffer) => options.onStdout!(chunk.toString()));
  const [out, err, status] = await Promise.all([readAll(stdout), readAll(stderr), readAll(error)]);
  await spdy.close();
  return { stdout: out, stderr: err, error: status };
}
