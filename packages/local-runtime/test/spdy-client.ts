// The tests' remotecommand client: the package's ./testing client over a plain TCP connection to a streaming URL.
import { connect } from 'node:net';
import { upgradeToSpdy, type SpdyStream, type SpdyUpgradeResult } from '../src/testing.js';

export { remoteCommandSession as session } from '../src/testing.js';

/** Sends the upgrade request kubectl's SPDY executor sends to a streaming URL. */
export function upgrade(url: string, options: { protocols?: string[]; noUpgradeHeaders?: boolean } = {}): Promise<SpdyUpgradeResult> {
  const target = new URL(url);
  const socket = connect({ host: target.hostname, port: Number(target.port) });
  return upgradeToSpdy(socket, { path: target.pathname, host: target.host, ...options });
}


/** Reads a stream's data to its end. */
export function readAll(stream: SpdyStream): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    stream.input.on('data', (chunk: Buffer) => (text += chunk.toString()));
    stream.input.once('end', () => resolve(text));
  });
}
