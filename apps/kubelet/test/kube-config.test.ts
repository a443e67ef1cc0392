import t from 'tap';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { generateSelfSignedCertKey } from '@kubelet-ts/server';
import { loadClientNode } from '@kubelet-ts/core';
import { newKeepAliveKubeConfig } from '../src/kube-config.js';

await loadClientNode();

/** An HTTPS "API server" answering every GET with an empty namespace, counting the TLS connections it accepts. */
async function countingServer(t: { teardown(fn: () => Promise<void>): void }) {
  const { certPem: cert, keyPem: key } = generateSelfSignedCertKey('127.0.0.1', ['127.0.0.1']);
  const server = createServer({ cert, key, keepAliveTimeout: 30_000 }, (req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } }));
  });
  let connections = 0;
  server.on('secureConnection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  const port = (server.address() as AddressInfo).port;
  return { cert, port, connections: () => connections };
}

function load<T extends KubeConfig>(config: T, caPem: string, port: number, clientCert = 'client-a'): T {
  config.loadFromOptions({
    clusters: [{ name: 'c', server: `https://127.0.0.1:${port}`, caData: Buffer.from(caPem).toString('base64') }],
    users: [{ name: 'u', token: clientCert }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  return config;
}

t.test('API calls through KeepAliveKubeConfig share one TLS connection; client-node alone opens one per call', async (t) => {
  const server = await countingServer(t);
  const plain = load(new KubeConfig(), server.cert, server.port).makeApiClient(CoreV1Api);
  for (let i = 0; i < 5; i++) await plain.readNamespace({ name: 'default' });
  t.equal(server.connections(), 5, 'client-node: a new connection for every request');

  const keepAlive = load(newKeepAliveKubeConfig(), server.cert, server.port).makeApiClient(CoreV1Api);
  for (let i = 0; i < 5; i++) t.equal((await keepAlive.readNamespace({ name: 'default' })).metadata?.name, 'default');
  t.equal(server.connections(), 6, 'KeepAliveKubeConfig: one connection for five requests');
});

t.test('new TLS settings get a new agent; the same settings keep theirs', async (t) => {
  const server = await countingServer(t);
  const config = load(newKeepAliveKubeConfig(), server.cert, server.port);
  const api = config.makeApiClient(CoreV1Api);
  await api.readNamespace({ name: 'default' });
  await api.readNamespace({ name: 'default' });
  t.equal(server.connections(), 1);
  // A changed CA (as after a rotation of the cluster's credentials): the old connections are not reused.
  const other = generateSelfSignedCertKey('127.0.0.2', ['127.0.0.2']);
  load(config, `${server.cert}${other.certPem}`, server.port);
  await config.makeApiClient(CoreV1Api).readNamespace({ name: 'default' });
  t.equal(server.connections(), 2, 'a new connection under the new settings');
});

t.test('a rotated client certificate is presented on a new connection, without a new KubeConfig', async (t) => {
  const { FakeCertificateSigner } = await import('@kubelet-ts/certificate/testing');
  const signer = new FakeCertificateSigner();
  const { certPem: cert, keyPem: key } = generateSelfSignedCertKey('127.0.0.1', ['127.0.0.1']);
  const seen: string[] = [];
  const server = createServer({ cert, key, ca: signer.caPem, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    seen.push((req.socket as import('node:tls').TLSSocket).getPeerX509Certificate()?.subject.split('\n').find((line) => line.startsWith('CN=')) ?? '');
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  const config = load(newKeepAliveKubeConfig(), cert, (server.address() as AddressInfo).port);
  let current = signer.issue({ commonName: 'system:node:first', organization: ['system:nodes'] });
  config.clientCertificate = () => current;
  const api = config.makeApiClient(CoreV1Api);
  await api.readNamespace({ name: 'default' });
  current = signer.issue({ commonName: 'system:node:second', organization: ['system:nodes'] });
  await api.readNamespace({ name: 'default' });
  t.same(seen, ['CN=system:node:first', 'CN=system:node:second']);
});
