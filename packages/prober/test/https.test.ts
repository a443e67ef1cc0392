// HTTPS probes do not verify the server certificate (Go: InsecureSkipVerify), here a self-signed one.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Prober } from '../src/index.js';
import { makePod } from './helpers.js';

t.test('an httpGet probe with scheme HTTPS against a self-signed certificate succeeds', async (t) => {
  const fixtures = new URL('./fixtures/', import.meta.url);
  const server = createServer({ key: readFileSync(new URL('tls.key', fixtures)), cert: readFileSync(new URL('tls.crt', fixtures)) }, (req, res) => {
    res.end(`secure ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  const prober = new Prober();
  t.teardown(() => prober.close());
  const container = { name: 'app', readinessProbe: { httpGet: { scheme: 'HTTPS', port, path: '/tls' }, timeoutSeconds: 1 } };
  const response = await prober.runProbe(container.readinessProbe, { podIP: '127.0.0.1' }, container, 'containerd://x', makePod([container]));
  t.same(response, { result: 'success', output: 'secure /tls' });
});
