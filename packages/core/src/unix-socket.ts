import { lstatSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';

/**
 * Removes a unix socket file left by a dead server, so a new server can listen on the path. Refuses a path that is not
 * a socket, or one a live server still answers on (two servers must not take each other's socket). A missing path is
 * fine.
 */
export async function removeStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (!isSocket) throw new Error(`${path} exists and is not a socket; refusing to replace it`);
  const live = await new Promise<boolean>((resolvePromise) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolvePromise(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolvePromise(false);
    });
  });
  if (live) throw new Error(`${path} is in use by another server`);
  unlinkSync(path);
}
