import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import {
  BOOTSTRAP_PRIVATE_KEY_FILE,
  CLIENT_USAGES,
  CertificateManager,
  FileCertificateStore,
  KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
  KUBELET_SERVING_SIGNER,
  NoCertKeyError,
  SERVING_USAGES,
  generatePrivateKeyPem,
  isClientConfigStillValid,
  loadClientCert,
  makeCertificateRequest,
  nodeClientTemplate,
  parseCertificateRequest,
  rotationDeadline,
  subjectAltNamesOf,
  subjectOf,
  type CertificateTemplate,
} from '../src/index.js';
import { FakeApiError, FakeCertificateSigner, MemoryCertificateStore, publicKeyOf } from '../src/testing.js';

const tempDir = (t: Test) => {
  const dir = mkdtempSync(join(tmpdir(), 'kts-cert-'));
  t.teardown(() => execFileSync('rm', ['-rf', dir]));
  return dir;
};

t.test('certificate requests: openssl reads what makeCertificateRequest writes, and parseCertificateRequest reads it back', async (t) => {
  const keyPem = generatePrivateKeyPem();
  t.match(keyPem, /^-----BEGIN EC PRIVATE KEY-----/);
  const template: CertificateTemplate = { commonName: 'system:node:n1', organization: ['system:nodes'], dnsNames: ['n1.example'], ipAddresses: ['10.0.0.7', 'fd00::7'] };
  const csrPem = makeCertificateRequest(keyPem, template);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'req.pem'), csrPem);
  const text = execFileSync('openssl', ['req', '-in', join(dir, 'req.pem'), '-noout', '-verify', '-text'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  t.match(text, /Subject: O\s*=\s*system:nodes, CN\s*=\s*system:node:n1/);
  t.match(text, /DNS:n1\.example, IP Address:10\.0\.0\.7, IP Address:FD00:0:0:0:0:0:0:7/);
  const parsed = parseCertificateRequest(csrPem);
  t.equal(parsed.commonName, 'system:node:n1');
  t.same(parsed.organization, ['system:nodes']);
  t.ok(parsed.publicKey.export({ type: 'spki', format: 'der' }).equals(publicKeyOf(keyPem)));
  t.equal(parsed.extensions.length, 1, 'the subjectAltName extension is requested');

  const plain = makeCertificateRequest(keyPem, nodeClientTemplate('n2'));
  t.equal(parseCertificateRequest(plain).extensions.length, 0, 'no SANs, no extension request');
  const tampered = plain.replace(/\n(.{10})/, (_m, chars: string) => `\n${chars.split('').reverse().join('')}`);
  t.throws(() => parseCertificateRequest(tampered));
  t.throws(() => parseCertificateRequest('nothing'), /no CERTIFICATE REQUEST PEM block/);
});

t.test('the file store writes a 0600 pair file, swaps the -current.pem symlink, and falls back to given files', async (t) => {
  const dir = tempDir(t);
  const clock = new FakeClock(Date.parse('2026-11-27T10:20:30Z'));
  const signer = new FakeCertificateSigner({ clock });
  const store = new FileCertificateStore({ pairNamePrefix: 'kubelet-client', certDirectory: dir, clock });
  t.throws(() => store.current(), NoCertKeyError);

  const first = signer.issue(nodeClientTemplate('n1'));
  store.update(first.certPem, first.keyPem);
  const firstFile = join(dir, 'kubelet-client-2026-11-27-10-20-30.pem');
  t.equal(statSync(firstFile).mode & 0o777, 0o600);
  t.ok(lstatSync(store.currentPath()).isSymbolicLink());
  t.equal(readlinkSync(store.currentPath()), firstFile);
  t.equal(store.current().leaf.serialNumber, first.leaf.serialNumber);

  clock.step(60_000);
  const second = signer.issue(nodeClientTemplate('n1'));
  store.update(second.certPem, second.keyPem);
  t.equal(readlinkSync(store.currentPath()), join(dir, 'kubelet-client-2026-11-27-10-21-30.pem'));
  t.equal(store.current().leaf.serialNumber, second.leaf.serialNumber);
  t.ok(existsSync(firstFile), 'the old pair stays, as Go keeps it');

  t.throws(() => store.update(first.certPem, second.keyPem), /does not match/, 'a key that does not match is refused before anything is written');
  t.equal(store.current().leaf.serialNumber, second.leaf.serialNumber);

  const other = tempDir(t);
  writeFileSync(join(other, 'c.crt'), first.certPem);
  writeFileSync(join(other, 'c.key'), first.keyPem);
  const fallback = new FileCertificateStore({ pairNamePrefix: 'kubelet-server', certDirectory: other, certFile: join(other, 'c.crt'), keyFile: join(other, 'c.key') });
  t.equal(fallback.current().leaf.serialNumber, first.leaf.serialNumber);
});

t.test('the rotation deadline is 70-90% through the validity', async (t) => {
  const pair = { notBefore: 1_000_000, notAfter: 2_000_000 };
  t.equal(rotationDeadline(pair, () => 0), 1_700_000);
  t.equal(rotationDeadline(pair, () => 0.5), 1_800_000);
  t.equal(Math.round(rotationDeadline(pair, () => 0.999999)), 1_900_000);
});

const writeBootstrapKubeconfig = (dir: string) => {
  const path = join(dir, 'bootstrap.kubeconfig');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority: /etc/ca.crt}}]',
      'users: [{name: b, user: {token: abcdef.0123456789abcdef}}]',
      'contexts: [{name: x, context: {cluster: c, user: b}}]',
      'current-context: x',
    ].join('\n'),
  );
  return path;
};

t.test('bootstrap: requests a client certificate with the bootstrap credentials and writes the pair and the kubeconfig', async (t) => {
  const dir = tempDir(t);
  const certDir = join(dir, 'pki');
  const kubeconfigPath = join(dir, 'kubelet.kubeconfig');
  const signer = new FakeCertificateSigner();
  const seen: KubeConfig[] = [];
  const logger = new RecordingLogger({ verbosity: 2 });
  const bootstrapped = await loadClientCert({
    kubeconfigPath,
    bootstrapKubeconfigPath: writeBootstrapKubeconfig(dir),
    certDir,
    nodeName: 'node-a',
    logger,
    pollIntervalMs: 1,
    csrClientFor: (kubeConfig) => {
      seen.push(kubeConfig);
      return signer;
    },
  });
  t.equal(bootstrapped, true);
  t.equal(seen[0]?.getCurrentUser()?.token, 'abcdef.0123456789abcdef', 'the request is made with the bootstrap token');
  const [csr] = [...signer.requests.values()];
  t.match(csr?.metadata?.name, /^node-csr-[A-Za-z0-9_-]{43}$/);
  t.equal(csr?.spec.signerName, KUBE_APISERVER_CLIENT_KUBELET_SIGNER);
  t.same(csr?.spec.usages, CLIENT_USAGES);
  const request = parseCertificateRequest(Buffer.from(csr!.spec.request, 'base64').toString());
  t.equal(request.commonName, 'system:node:node-a');
  t.same(request.organization, ['system:nodes']);

  const current = join(certDir, 'kubelet-client-current.pem');
  t.equal(statSync(current).mode & 0o777, 0o600);
  t.notOk(existsSync(join(certDir, BOOTSTRAP_PRIVATE_KEY_FILE)), 'the waiting key is gone once the pair is stored');
  const kubeconfig = new KubeConfig();
  kubeconfig.loadFromFile(kubeconfigPath);
  t.equal(kubeconfig.getCurrentCluster()?.server, 'https://127.0.0.1:6443');
  t.equal(kubeconfig.getCurrentCluster()?.caFile, '/etc/ca.crt');
  t.equal(kubeconfig.getCurrentUser()?.certFile, current);
  t.equal(kubeconfig.getCurrentUser()?.keyFile, current);
  t.equal(subjectOf(new FileCertificateStore({ pairNamePrefix: 'kubelet-client', certDirectory: certDir }).current().leaf).commonName, 'system:node:node-a');

  t.equal(await isClientConfigStillValid(kubeconfigPath, Date.now()), true);
  const again = await loadClientCert({ kubeconfigPath, bootstrapKubeconfigPath: join(dir, 'missing'), certDir, nodeName: 'node-a', csrClientFor: () => signer });
  t.equal(again, false, 'a valid kubeconfig skips bootstrap (the bootstrap kubeconfig is not even read)');
  t.equal(await isClientConfigStillValid(kubeconfigPath, Date.now() + 2 * 365 * 86_400_000), false, 'an expired certificate needs a new bootstrap');
});

t.test('bootstrap failures are clear and leave no credential but the waiting key, which the retry reuses', async (t) => {
  const dir = tempDir(t);
  const certDir = join(dir, 'pki');
  const kubeconfigPath = join(dir, 'kubelet.kubeconfig');
  const bootstrapKubeconfigPath = writeBootstrapKubeconfig(dir);
  const signer = new FakeCertificateSigner({ autoApprove: false });
  const options = { kubeconfigPath, bootstrapKubeconfigPath, certDir, nodeName: 'node-b', pollIntervalMs: 1, csrClientFor: () => signer };

  signer.failNext.push(new FakeApiError(401, 'Unauthorized', 'Unauthorized'));
  await t.rejects(loadClientCert(options), /cannot create certificate signing request: Unauthorized/);
  t.notOk(existsSync(kubeconfigPath));
  const keyFile = join(certDir, BOOTSTRAP_PRIVATE_KEY_FILE);
  t.equal(statSync(keyFile).mode & 0o777, 0o600);
  const key = readFileSync(keyFile, 'utf8');

  // The request is made, then denied while the kubelet waits.
  const waiting = loadClientCert(options);
  await new Promise((resolve) => setTimeout(resolve, 5));
  const [name] = [...signer.requests.keys()];
  signer.deny(name!, 'NotAllowed', 'not this node');
  await t.rejects(waiting, /certificate signing request is denied, reason: NotAllowed, message: not this node/);
  t.notOk(existsSync(kubeconfigPath));
  t.notOk(existsSync(join(certDir, 'kubelet-client-current.pem')));
  t.equal(readFileSync(keyFile, 'utf8'), key, 'the same key waits for the next try');

  // The denied request is deleted by an admin; the retry sends the same request (same key, same name) and it is approved.
  signer.requests.delete(name!);
  const retry = loadClientCert(options);
  await new Promise((resolve) => setTimeout(resolve, 5));
  t.same([...signer.requests.keys()], [name], 'the retry names the same request');
  signer.approve(name!);
  t.equal(await retry, true);
  t.ok(new FileCertificateStore({ pairNamePrefix: 'kubelet-client', certDirectory: certDir }).current().leaf.checkPrivateKey(createPrivateKey(key)));

  await t.rejects(loadClientCert({ ...options, kubeconfigPath: join(dir, 'other.kubeconfig'), bootstrapKubeconfigPath: join(dir, 'nope') }), /unable to load bootstrap kubeconfig/);
});

t.test('the certificate manager rotates at the deadline with a new key, and hands the new pair on', async (t) => {
  const clock = new FakeClock();
  const signer = new FakeCertificateSigner({ clock, durationMs: 1_000_000 });
  const initial = signer.issue(nodeClientTemplate('n1'));
  const store = new MemoryCertificateStore(initial);
  const rotated: string[] = [];
  const manager = new CertificateManager({
    name: 'client',
    store,
    client: () => signer,
    template: () => nodeClientTemplate('n1'),
    signerName: KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
    usages: CLIENT_USAGES,
    clock,
    random: () => 0.5,
    pollIntervalMs: 100,
    onRotated: (pair) => rotated.push(pair.leaf.serialNumber),
  });
  t.equal(manager.current(), initial);
  manager.start();
  t.teardown(() => manager.stop());
  await clock.advance(799_000);
  t.same(rotated, [], 'nothing before 80% (random 0.5) of the validity');
  await clock.advance(2_000);
  t.equal(rotated.length, 1);
  t.equal(manager.current()?.leaf.serialNumber, rotated[0]);
  t.notSame(publicKeyOf(manager.current()!.keyPem), publicKeyOf(initial.keyPem), 'a new key');
  const [csr] = [...signer.requests.values()];
  t.match(csr?.metadata?.name, /^csr-/, 'rotation requests use generateName');
  // The next rotation is 80% into the new certificate.
  await clock.advance(790_000);
  t.equal(rotated.length, 1);
  await clock.advance(20_000);
  t.equal(rotated.length, 2);
});

t.test('a failed rotation backs off (2 s doubling, then every 32 s) and keeps the old pair', async (t) => {
  const clock = new FakeClock();
  const signer = new FakeCertificateSigner({ clock, durationMs: 1_000_000 });
  const initial = signer.issue(nodeClientTemplate('n1'));
  const attempts: number[] = [];
  const failing = {
    create: async () => {
      attempts.push(clock.now());
      throw new FakeApiError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
    },
    read: (name: string) => signer.read(name),
  };
  const logger = new RecordingLogger();
  const manager = new CertificateManager({
    name: 'client',
    store: new MemoryCertificateStore(initial),
    client: () => failing,
    template: () => nodeClientTemplate('n1'),
    signerName: KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
    usages: CLIENT_USAGES,
    clock,
    logger,
    random: () => 0,
  });
  manager.start();
  t.teardown(() => manager.stop());
  await clock.advance(700_000 + 2_000 + 4_000 + 8_000 + 16_000 + 32_000 + 32_000 + 10);
  const gaps = attempts.slice(1).map((at, i) => at - attempts[i]!);
  t.same(gaps, [2_000, 4_000, 8_000, 16_000, 32_000, 32_000]);
  t.equal(manager.current(), initial);
  t.ok(logger.find(/Failed while requesting a signed certificate/));
  t.ok(logger.find(/Reached backoff limit/));
});

t.test('a serving certificate is requested once the template is known, and again when it changes', async (t) => {
  const clock = new FakeClock();
  const signer = new FakeCertificateSigner({ clock, durationMs: 10_000_000 });
  let addresses: string[] | undefined;
  const rotated: string[][] = [];
  const manager = new CertificateManager({
    name: 'server',
    store: new MemoryCertificateStore(),
    client: () => signer,
    template: () => (addresses ? { commonName: 'system:node:n1', organization: ['system:nodes'], dnsNames: ['n1'], ipAddresses: addresses } : undefined),
    signerName: KUBELET_SERVING_SIGNER,
    usages: SERVING_USAGES,
    clock,
    pollIntervalMs: 100,
    onRotated: (pair) => rotated.push(subjectAltNamesOf(pair.leaf).ipAddresses),
  });
  t.equal(manager.current(), undefined);
  manager.start();
  t.teardown(() => manager.stop());
  await clock.advance(5_000);
  t.same(rotated, [], 'no addresses, no request');
  addresses = ['10.0.0.1'];
  await clock.advance(2_000);
  t.same(rotated, [['10.0.0.1']]);
  const [csr] = [...signer.requests.values()];
  t.equal(csr?.spec.signerName, KUBELET_SERVING_SIGNER);
  t.same(csr?.spec.usages, SERVING_USAGES);
  addresses = ['10.0.0.1', '10.0.0.2'];
  await clock.advance(3_000);
  t.same(rotated, [['10.0.0.1'], ['10.0.0.1', '10.0.0.2']], 'new node addresses, new certificate');
});
