import t from 'tap';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeStaleSocket } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'kts-socket-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const listen = (path: string) =>
  new Promise<ReturnType<typeof createServer>>((resolve) => {
    const server = createServer();
    server.listen(path, () => resolve(server));
  });

t.test('a missing path is fine', async (t) => {
  await removeStaleSocket(join(dir, 'none.sock'));
  t.pass();
});

t.test('a path that is not a socket is refused, and kept', async (t) => {
  const file = join(dir, 'file');
  writeFileSync(file, 'data');
  await t.rejects(removeStaleSocket(file), /exists and is not a socket; refusing to replace it/);
  t.ok(existsSync(file));
});

t.test('a socket a live server answers on is refused, and kept', async (t) => {
  const path = join(dir, 'live.sock');
  const server = await listen(path);
  await t.rejects(removeStaleSocket(path), /is in use by another server/);
  t.ok(existsSync(path));
  await new Promise((resolve) => server.close(resolve));
});

t.test("a dead server's socket is removed", async (t) => {
  const path = join(dir, 'dead.sock');
  const server = await listen(path);
  // Closing unlinks the socket; a crashed server leaves it: keep a copy of the inode as a crash would.
  const { linkSync } = await import('node:fs');
  const stale = join(dir, 'stale.sock');
  linkSync(path, stale);
  await new Promise((resolve) => server.close(resolve));
  t.ok(existsSync(stale), 'the stale socket file is there');
  await removeStaleSocket(stale);
  t.notOk(existsSync(stale), 'removed');
});
