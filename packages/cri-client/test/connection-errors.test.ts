// What a caller sees when the runtime is not there: one sentence naming the endpoint and saying why, not grpc-js's
// "No connection established. Last error: ... Resolution note: " with its empty note.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RemoteImageService, RemoteRuntimeService, UnavailableError, isUnavailable } from '../src/index.js';
import { describeConnectionFailure } from '../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'cri-client-connect-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

async function versionError(endpoint: string): Promise<Error> {
  const client = new RemoteRuntimeService({ endpoint, timeoutMs: 10_000 });
  try {
    await client.version('v1');
    throw new Error(`Version on ${endpoint} succeeded`);
  } catch (error) {
    return error as Error;
  } finally {
    client.close();
  }
}

t.test('a socket that does not exist', async (t) => {
  const socket = join(dir, 'missing.sock');
  const error = await versionError(`unix://${socket}`);
  t.ok(error instanceof UnavailableError && isUnavailable(error), `Unavailable: ${error.message}`);
  t.equal(
    error.message,
    `RuntimeService/Version failed: rpc error: code = Unavailable desc = cannot connect to the CRI runtime at unix://${socket}: ` +
      `the socket ${socket} does not exist (connect ENOENT); is the runtime running?`,
  );
  t.notMatch(error.message, /Resolution note/, 'no empty resolution note');
  t.match((error as UnavailableError).details, /^cannot connect to the CRI runtime at unix:\/\//, 'details say the same');
  t.match((error.cause as { details?: string }).details, /No connection established/, "grpc-js's own error stays the cause");
});

t.test('a bare socket path names the endpoint as given', async (t) => {
  const socket = join(dir, 'bare.sock');
  const client = new RemoteImageService({ endpoint: socket, timeoutMs: 10_000 });
  t.teardown(() => client.close());
  const error = (await client.listImages().catch((e: unknown) => e)) as Error;
  t.equal(
    error.message,
    `ImageService/ListImages failed: rpc error: code = Unavailable desc = cannot connect to the CRI runtime at ${socket}: ` +
      `the socket ${socket} does not exist (connect ENOENT); is the runtime running?`,
  );
});

t.test('a file that nothing listens on: connection refused', async (t) => {
  const file = join(dir, 'stale.sock');
  writeFileSync(file, '');
  const error = await versionError(`unix://${file}`);
  t.match(error.message, `cannot connect to the CRI runtime at unix://${file}: connection refused: nothing is listening on ${file} (connect ECONNREFUSED); is the runtime running?`);
  t.notMatch(error.message, /Resolution note/);
});

t.test('a TCP port nothing listens on: connection refused', async (t) => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const error = await versionError(`tcp://127.0.0.1:${port}`);
  t.match(error.message, `cannot connect to the CRI runtime at tcp://127.0.0.1:${port}: connection refused: nothing is listening on 127.0.0.1:${port} (connect ECONNREFUSED)`);
});

t.test('describeConnectionFailure', async (t) => {
  t.equal(
    describeConnectionFailure('No connection established. Last error: Error: connect EACCES /run/cri.sock. Resolution note: ', 'unix:///run/cri.sock'),
    'cannot connect to the CRI runtime at unix:///run/cri.sock: permission denied on /run/cri.sock (connect EACCES)',
  );
  t.equal(
    describeConnectionFailure('No connection established. Last error: Error: getaddrinfo ENOTFOUND cri.invalid. Resolution note: DNS lookup failed', 'tcp://cri.invalid:1'),
    'cannot connect to the CRI runtime at tcp://cri.invalid:1: getaddrinfo ENOTFOUND cri.invalid; DNS lookup failed',
    'an unknown error is kept as grpc-js said it, and a non-empty note is kept',
  );
  t.equal(
    describeConnectionFailure('No connection established. Last error: null. Resolution note: ', 'unix:///x.sock'),
    'cannot connect to the CRI runtime at unix:///x.sock: no connection could be established',
  );
  t.equal(describeConnectionFailure('Connection dropped', 'unix:///x.sock'), 'Connection dropped', 'the runtime\'s own Unavailable is unchanged');
});
