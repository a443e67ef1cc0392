// The client CA file re-read when it changes (Go: dynamiccertificates.DynamicFileCAContent): the watch and the
// periodic refresh are driven by hand (a fake directory watch and a FakeClock), and the kubelet server verifies
// new connections against the bundle it is handed.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock } from '@kubelet-ts/core/testing';
import { createLogger } from '@kubelet-ts/core';
import { DynamicFileCAContent, authFilter, createAuthenticator, AlwaysAllowAuthorizer, type DirectoryWatch } from '../src/auth/index.js';
import { KubeletServer } from '../src/server.js';
import { FakeServerHost } from '../src/testing.js';
import { makeAuthPki } from './fixtures/auth-pki.js';
import https from 'node:https';

const pki = makeAuthPki();
t.teardown(() => pki.cleanup());
const otherCA = readFileSync(join(pki.dir, 'other-ca.crt'));

/** A directory watch the test fires by hand; records what it watches and whether it was closed. */
class FakeWatch {
  directories: string[] = [];
  closed = 0;
  private handlers: Array<(filename: string | null) => void> = [];
  readonly watch: DirectoryWatch = (directory, onEvent) => {
    this.directories.push(directory);
    this.handlers.push(onEvent);
    return { close: () => void this.closed++ };
  };
  fire(filename: string | null): void {
    for (const handler of this.handlers) handler(filename);
  }
}

function capturingLogger() {
  const lines: string[] = [];
  const logger = createLogger({ sink: (line) => void lines.push(line) });
  return { lines, logger };
}

t.test('a changed CA file is loaded on the watch event; an invalid one keeps the last good bundle and logs why', async (t) => {
  const file = join(pki.dir, 'reload-ca.crt');
  writeFileSync(file, pki.ca);
  const clock = new FakeClock();
  const fake = new FakeWatch();
  const { lines, logger } = capturingLogger();
  const content = new DynamicFileCAContent({ file, clock, logger, watch: fake.watch });
  t.equal(content.name, `client-ca-bundle::${file}`, "Go's name");
  t.same(content.currentCABundleContent(), pki.ca);
  const seen: string[] = [];
  content.addListener((bundle) => seen.push(bundle.toString('utf8')));
  const stop = new AbortController();
  content.run(stop.signal);
  t.same(fake.directories, [pki.dir], 'the directory is watched, so a file replaced by rename is seen');

  writeFileSync(file, otherCA);
  fake.fire('some-other-file');
  t.same(seen, [], 'an event for another file is not a change of this one');
  fake.fire('reload-ca.crt');
  t.same(seen, [otherCA.toString('utf8')], 'the new bundle is handed to the listeners');
  t.same(content.currentCABundleContent(), otherCA);
  fake.fire('reload-ca.crt');
  t.equal(seen.length, 1, 'the same content again is no change');

  for (const [bad, why] of [
    ['', /missing content for CA bundle/],
    ['not a certificate\n', /data does not contain any valid RSA or ECDSA certificates/],
    ['-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n', /unable to load CA bundle/],
  ] as const) {
    writeFileSync(file, bad);
    fake.fire('reload-ca.crt');
    t.same(content.currentCABundleContent(), otherCA, `kept the last good bundle: ${JSON.stringify(bad.slice(0, 20))}`);
    const error = lines.at(-1) ?? '';
    t.match(error, /^E.*Failed to reload the CA bundle: keeping the last good one/, 'an error line');
    t.match(error, why);
    t.match(error, file, 'naming the file');
  }
  t.equal(seen.length, 1, 'no listener heard of a bad bundle');

  // A Kubernetes-style atomic update swaps the ..data symlink: hidden entries count too.
  writeFileSync(file, pki.ca);
  fake.fire('..data');
  t.same(content.currentCABundleContent(), pki.ca);
  t.equal(seen.length, 2);
  stop.abort();
  t.equal(fake.closed, 1, 'the watch is closed when the signal aborts');
});

t.test('without a watch event the file is re-read every minute, as Go does', async (t) => {
  const file = join(pki.dir, 'refresh-ca.crt');
  writeFileSync(file, pki.ca);
  const clock = new FakeClock();
  const fake = new FakeWatch();
  const content = new DynamicFileCAContent({ file, clock, logger: capturingLogger().logger, watch: fake.watch });
  const stop = new AbortController();
  content.run(stop.signal);
  writeFileSync(file, otherCA);
  clock.step(59_999);
  t.same(content.currentCABundleContent(), pki.ca, 'not yet');
  clock.step(1);
  t.same(content.currentCABundleContent(), otherCA, 'picked up by the refresh');
  stop.abort();
  writeFileSync(file, pki.ca);
  clock.step(120_000);
  t.same(content.currentCABundleContent(), otherCA, 'stopped: no more re-reads');
});

t.test('an unreadable or invalid file at start is an error naming it, as at the Go kubelet start', async (t) => {
  const clock = new FakeClock();
  t.throws(() => new DynamicFileCAContent({ file: join(pki.dir, 'missing.crt'), clock }), { message: /unable to load CA bundle "client-ca-bundle::.*missing\.crt": ENOENT/ });
  const empty = join(pki.dir, 'empty.crt');
  writeFileSync(empty, '');
  t.throws(() => new DynamicFileCAContent({ file: empty, clock }), { message: `missing content for CA bundle "client-ca-bundle::${empty}"` });
  t.throws(() => new DynamicFileCAContent({ file: '', clock }), { message: 'missing filename for ca bundle' });
});

t.test('the kubelet server verifies new connections against a reloaded client CA', async (t) => {
  const authenticator = createAuthenticator({ x509ClientCAFile: pki.caFile, webhookEnabled: false, anonymousEnabled: false, clock: new FakeClock() });
  const gate = authFilter(authenticator, new AlwaysAllowAuthorizer(), 'node-1');
  const server = new KubeletServer({
    host: new FakeServerHost(),
    address: '127.0.0.1',
    port: 0,
    logger: capturingLogger().logger,
    gate,
    tls: { certPem: pki.server.cert.toString(), keyPem: pki.server.key.toString(), clientCAPem: pki.ca.toString() },
  });
  const port = await server.start();
  t.teardown(() => server.stop());
  const foreign = pki.foreignClient('/O=system:masters/CN=from-the-other-ca');
  const status = (cert: { cert: Buffer; key: Buffer }) =>
    new Promise<number>((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port, path: '/healthz', ca: pki.ca, cert: cert.cert, key: cert.key, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  t.equal(await status(foreign), 401, 'a certificate from the other CA is refused');
  server.setClientCA(otherCA.toString());
  t.equal(await status(foreign), 200, 'accepted once that CA is the client CA, without a restart');
  const old = pki.client('old', '/CN=signed-by-the-old-ca');
  t.equal(await status(old), 401, 'the replaced CA no longer authenticates new connections');
  const readOnly = new KubeletServer({ host: new FakeServerHost(), address: '127.0.0.1', port: 0, logger: capturingLogger().logger, readOnly: true });
  t.throws(() => readOnly.setClientCA(otherCA.toString()), { message: 'the read-only server has no client CA' });
});
