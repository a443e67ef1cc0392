// TLS bootstrap and certificate rotation end to end, as a node joins a kubeadm-style cluster: the real control plane
// (v1.20.2 from tools/kube: bootstrap token authentication, the controller-manager's csrapproving and csrsigning
// controllers, client certificates signed for --cluster-signing-duration, 2m here) and our kubelet on containerd,
// given only a bootstrap kubeconfig. The cases run in order on one node: a wrong token is refused and retried, the
// right one gets the node its client certificate, a serving certificate is requested and served once approved, and
// the client certificate is renewed before it expires with the node staying Ready past the old one's expiry.
import t from 'tap';
import { X509Certificate } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { createBootstrapToken, ensureCluster, Kubectl, KubeletProcess, ourCgroupRoot, unmountAndRemove, waitFor, writeBootstrapKubeconfig } from '../src/index.js';
import { condition, sleepForever } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-tls-node';
const NS = 'kts-tls';
const PORT = 10261;

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const dir = mkdtempSync(join(containerd.root, 'tls-e2e-'));
const certDir = join(dir, 'pki');
const kubeconfig = join(dir, 'kubelet.kubeconfig');
const bootstrapKubeconfig = join(dir, 'bootstrap-kubelet.conf');
const token = await createBootstrapToken(kubectl, { expiresInMs: 3_600_000 });
// First a token that does not exist: the API server refuses it.
writeBootstrapKubeconfig(bootstrapKubeconfig, cluster, `${token.slice(0, 7)}${'x'.repeat(16)}`);

const kubelet = await KubeletProcess.startOurs({
  node: NODE,
  kubeconfig,
  runtimeEndpoint: containerd.endpoint,
  dir,
  extraArgs: [
    `--bootstrap-kubeconfig=${bootstrapKubeconfig}`,
    `--cert-dir=${certDir}`,
    '--rotate-certificates',
    '--rotate-server-certificates',
    `--client-ca-file=${cluster.caFile}`,
    `--port=${PORT}`,
    '--healthz-port=0',
    '--sync-frequency=10s',
  ],
});
const kubeletLog = () => kubelet.logTail(60);

t.teardown(async () => {
  await kubelet.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await kubectl.run(['delete', 'secret', '-n', 'kube-system', `bootstrap-token-${token.split('.')[0]}`, '--ignore-not-found']).catch(() => undefined);
  const csrs = (await kubectl.json(['get', 'csr']).catch(() => ({ items: [] }))).items as Json[];
  const ours = csrs.filter((csr) => [`system:node:${NODE}`, `system:bootstrap:${token.split('.')[0]}`].includes(csr.spec?.username)).map((csr) => csr.metadata.name);
  if (ours.length > 0) await kubectl.run(['delete', 'csr', ...ours]).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS);
  await removeHostCgroup(ourCgroupRoot(NODE)).catch(() => undefined);
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

const csrsOf = async (signer: string): Promise<Json[]> =>
  ((await kubectl.json(['get', 'csr'])).items as Json[]).filter(
    (csr) => csr.spec.signerName === signer && [`system:node:${NODE}`, `system:bootstrap:${token.split('.')[0]}`].includes(csr.spec.username),
  );
const currentClientPem = join(certDir, 'kubelet-client-current.pem');
const leafOf = (pem: string) => new X509Certificate(pem.slice(0, pem.indexOf('-----END CERTIFICATE-----') + 25));
const nodeReady = async () => condition(await kubectl.getOrUndefined(['node', NODE]), 'Ready')?.status === 'True';

t.test('a bootstrap token the API server refuses is reported and retried; nothing is written', async (t) => {
  await waitFor('the refused bootstrap in the kubelet log', async () => /Failed to bootstrap the client certificate.*(HTTP 401|Unauthorized)/s.test(kubelet.logTail(200)), 30_000, kubeletLog);
  t.ok(kubelet.running, 'the kubelet keeps running');
  t.notOk(existsSync(kubeconfig), 'no kubeconfig');
  t.notOk(existsSync(currentClientPem), 'no client certificate');
  t.same(await csrsOf('kubernetes.io/kube-apiserver-client-kubelet'), [], 'no request made');
});

let firstClient: X509Certificate;
let firstLink: string;
t.test('with the right bootstrap token the node gets a client certificate approved by the controller-manager and joins', async (t) => {
  writeBootstrapKubeconfig(bootstrapKubeconfig, cluster, token);
  const [csr] = await waitFor('an issued client CSR', async () => {
    const issued = (await csrsOf('kubernetes.io/kube-apiserver-client-kubelet')).filter((c) => c.status?.certificate);
    return issued.length > 0 && issued;
  }, 60_000, kubeletLog);
  t.match(csr!.metadata.name, /^node-csr-/, "Go's digested request name");
  t.equal(csr!.spec.username, `system:bootstrap:${token.split('.')[0]}`, 'requested with the bootstrap token');
  t.ok(csr!.spec.groups.includes('system:bootstrappers:kubeadm:default-node-token'));
  t.same(csr!.spec.usages, ['digital signature', 'key encipherment', 'client auth']);
  t.match(condition(csr, 'Approved'), { status: 'True', reason: 'AutoApproved' }, 'approved by the csrapproving controller');

  await waitFor('node Ready', nodeReady, 90_000, kubeletLog);
  t.ok(lstatSync(currentClientPem).isSymbolicLink());
  t.equal(statSync(currentClientPem).mode & 0o777, 0o600, 'the pair is readable by root only');
  t.notOk(existsSync(join(certDir, 'kubelet-client.key.tmp')), 'the waiting key is gone');
  firstClient = leafOf(readFileSync(currentClientPem, 'utf8'));
  firstLink = readlinkSync(currentClientPem);
  t.match(firstClient.subject, /O=system:nodes/);
  t.match(firstClient.subject, /CN=system:node:kts-tls-node/);
  t.ok(firstClient.verify(new X509Certificate(readFileSync(cluster.caFile)).publicKey), 'signed by the cluster CA');
  const written = readFileSync(kubeconfig, 'utf8');
  t.match(written, new RegExp(`client-certificate: ${currentClientPem}`));
  t.notMatch(written, new RegExp(token.split('.')[1]!), 'the bootstrap token is not in the node kubeconfig');
});

t.test('the serving certificate is requested from kubelet-serving and served once a cluster admin approves it', async (t) => {
  const [csr] = await waitFor('a serving CSR', async () => {
    const found = await csrsOf('kubernetes.io/kubelet-serving');
    return found.length > 0 && found;
  }, 60_000, kubeletLog);
  t.equal(csr!.spec.username, `system:node:${NODE}`, 'requested with the node credentials');
  t.same(csr!.spec.usages, ['digital signature', 'key encipherment', 'server auth']);
  t.notOk(condition(csr, 'Approved'), 'csrapproving does not approve serving certificates');
  await kubectl.run(['certificate', 'approve', csr!.metadata.name]);

  const served = await waitFor('the approved serving certificate on the kubelet port', async () => {
    const peer = await peerCertificate(PORT).catch(() => undefined);
    return peer && /CN=system:node:kts-tls-node/.test(peer.subject) && peer;
  }, 60_000, kubeletLog);
  t.ok(served.verify(new X509Certificate(readFileSync(cluster.caFile)).publicKey), 'signed by the cluster CA');
  const node = await kubectl.json(['get', 'node', NODE]);
  for (const address of node.status.addresses as Json[]) {
    const san = address.type === 'Hostname' ? `DNS:${address.address}` : `IP Address:${address.address}`;
    t.ok(served.subjectAltName?.includes(san), `${san} is in the certificate`);
  }
  t.ok(lstatSync(join(certDir, 'kubelet-server-current.pem')).isSymbolicLink());

  // kubectl logs goes through the API server to the port serving the new certificate.
  await kubectl.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  await kubectl.apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'hello', namespace: NS },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: containerd.busyboxImage, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', `echo hello from tls; ${sleepForever}`] }],
    },
  });
  const logs = await waitFor('kubectl logs', async () => (await kubectl.run(['logs', '-n', NS, 'hello']).catch(() => '')).includes('hello from tls') || undefined, 60_000, kubeletLog);
  t.ok(logs);
  const metrics = await kubectl.run(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics`]);
  const ttl = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
  t.ok(ttl('kubelet_certificate_manager_client_ttl_seconds') > 0 && ttl('kubelet_certificate_manager_client_ttl_seconds') < 180, 'the client certificate TTL metric');
  t.ok(ttl('kubelet_certificate_manager_server_ttl_seconds') > 0, 'the serving certificate TTL metric');
  t.match(metrics, /^kubelet_certificate_manager_client_expiration_renew_errors 0$/m);
});

t.test('the client certificate is renewed before it expires, and the node stays Ready past the old one', async (t) => {
  const rotated = await waitFor('a renewed client certificate', async () => {
    const leaf = leafOf(readFileSync(currentClientPem, 'utf8'));
    return leaf.serialNumber !== firstClient.serialNumber && leaf;
  }, 180_000, kubeletLog);
  const renewal = (await csrsOf('kubernetes.io/kube-apiserver-client-kubelet')).find((csr) => csr.spec.username === `system:node:${NODE}`);
  t.ok(renewal, 'the renewal is requested with the node client certificate');
  t.match(renewal?.metadata.name, /^csr-/);
  t.match(condition(renewal, 'Approved'), { status: 'True', reason: 'AutoApproved' }, 'approved by the csrapproving controller (selfnodeclient)');
  t.match(rotated.subject, /CN=system:node:kts-tls-node/);
  t.ok(Date.parse(rotated.validTo) > Date.parse(firstClient.validTo));
  t.not(readlinkSync(currentClientPem), firstLink, 'the -current.pem link points at the new pair');

  // Past the first certificate's expiry, only the renewed one can authenticate the node's lease renewals.
  const expiry = Date.parse(firstClient.validTo);
  await waitFor('the first client certificate expired', async () => Date.now() > expiry + 2_000, 200_000);
  const renewedAt = async () => Date.parse((await kubectl.json(['get', 'lease', '-n', 'kube-node-lease', NODE])).spec.renewTime);
  const before = await renewedAt();
  await waitFor('a lease renewal after the old certificate expired', async () => (await renewedAt()) > Math.max(before, expiry), 30_000, kubeletLog);
  t.ok(await nodeReady(), 'the node is Ready');
  t.ok(kubelet.running, 'without a restart');
});

function peerCertificate(port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const peer = socket.getPeerX509Certificate();
      socket.end();
      if (peer) resolve(peer);
      else reject(new Error('no peer certificate'));
    });
    socket.once('error', reject);
  });
}
