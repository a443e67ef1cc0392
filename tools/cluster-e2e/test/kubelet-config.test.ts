// Configuration hardening end to end (issue 29): our kubelet on containerd, joined to the real v1.20.2 control
// plane, with --tls-min-version=VersionTLS13, a config file with unknown fields, a feature gate the Go kubelet
// knows but kubelet-ts does not implement, and a client CA file that is replaced on disk while it runs. A gate
// nobody knows stops the start with Go's text.
import t from 'tap';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readContainerdEnv } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { ensureCluster, Kubectl, KubeletProcess, nodeKubeconfig, ourCgroupRoot, unmountAndRemove, waitFor } from '../src/index.js';

const NODE = 'kts-cfg-node';
const PORT = 10260;
const repoRoot = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const kubeletBin = join(repoRoot, 'apps/kubelet/dist/kubelet.mjs');

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const dir = mkdtempSync(join(containerd.root, 'kubelet-config-e2e-'));

// Two client CAs and a client certificate from each: the user is in system:masters, so the API server's
// SubjectAccessReview (the kubelet's default Webhook authorization) allows it.
const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
for (const ca of ['ca-a', 'ca-b']) {
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${ca}.key`, '-out', `${ca}.crt`, '-days', '2', '-subj', `/CN=${ca}`]);
  openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${ca}-client.key`, '-out', `${ca}-client.csr`, '-subj', `/O=system:masters/CN=kts-cfg-${ca}-admin`]);
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  openssl(['x509', '-req', '-in', `${ca}-client.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${ca}-client.crt`, '-days', '1', '-extfile', 'client.ext']);
}
const clientCert = (ca: string) => ({ cert: readFileSync(join(dir, `${ca}-client.crt`)), key: readFileSync(join(dir, `${ca}-client.key`)) });
const clientCAFile = join(dir, 'client-ca.crt');
writeFileSync(clientCAFile, readFileSync(join(dir, 'ca-a.crt')));

const configFile = join(dir, 'kubelet-config.yaml');
writeFileSync(
  configFile,
  [
    'apiVersion: kubelet.config.k8s.io/v1beta1',
    'kind: KubeletConfiguration',
    'syncFrequency: 10s',
    'fooBar: 1',
    'authentication:',
    '  x509:',
    `    clientCAFile: ${clientCAFile}`,
    '    bogus: x',
    'featureGates:',
    '  CPUManager: true',
    '',
  ].join('\n'),
);

const kubeconfig = await nodeKubeconfig(NODE);
const kubelet = await KubeletProcess.startOurs({
  node: NODE,
  kubeconfig,
  runtimeEndpoint: containerd.endpoint,
  dir,
  extraArgs: [`--config=${configFile}`, `--port=${PORT}`, '--healthz-port=0', '--tls-min-version=VersionTLS13'],
});
const kubeletLog = () => kubelet.logTail(60);

t.teardown(async () => {
  await kubelet.stop();
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeHostCgroup(ourCgroupRoot(NODE)).catch(() => undefined);
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

/** A TLS handshake with the kubelet's port limited to these versions: the negotiated version, or the error. */
function handshake(minVersion: 'TLSv1.2' | 'TLSv1.3', maxVersion: 'TLSv1.2' | 'TLSv1.3'): Promise<{ protocol?: string | null; error?: string }> {
  return new Promise((done) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: PORT, minVersion, maxVersion, rejectUnauthorized: false }, () => {
      const protocol = socket.getProtocol();
      socket.end();
      done({ protocol });
    });
    socket.on('error', (error) => done({ error: error.message }));
  });
}

/** GET /pods on the kubelet's port with a client certificate: the status code. */
function getPods(cert: { cert: Buffer; key: Buffer }): Promise<number> {
  return new Promise((done, fail) => {
    const req = httpsRequest({ host: '127.0.0.1', port: PORT, path: '/pods', rejectUnauthorized: false, agent: false, ...cert }, (res) => {
      res.resume();
      done(res.statusCode ?? 0);
    });
    req.on('error', fail);
    req.end();
  });
}

await waitFor('the kubelet serving on its port', async () => (await handshake('TLSv1.3', 'TLSv1.3')).protocol === 'TLSv1.3', 60_000, kubeletLog);

t.test('--tls-min-version=VersionTLS13: a TLS 1.2 client is refused, TLS 1.3 served', async (t) => {
  const tls12 = await handshake('TLSv1.2', 'TLSv1.2');
  t.notOk(tls12.protocol, 'no TLS 1.2 session');
  t.match(tls12.error ?? '', /protocol version|unsupported protocol|handshake failure/i, `refused: ${tls12.error}`);
  t.equal((await handshake('TLSv1.2', 'TLSv1.3')).protocol, 'TLSv1.3', 'a client that can do 1.3 gets 1.3');
});

t.test('unknown config fields and a gate kubelet-ts does not implement are warned about in the log', async (t) => {
  const log = kubelet.output();
  t.match(log, /^W.*"Using lenient decoding as strict decoding failed".*unknown field \\"fooBar\\", unknown field \\"authentication\.x509\.bogus\\"/m, kubeletLog());
  t.match(log, /^W.*Feature gate CPUManager is known to the Go kubelet v1\.20 but not implemented by kubelet-ts: setting it has no effect/m);
  // The container manager checks the kernel tunables as it starts, a moment after the server: as Go's, without
  // --protect-kernel-defaults it sets each that differs from Go's value (logging "Updating kernel flag").
  const expected: Record<string, number> = { 'vm/overcommit_memory': 1, 'vm/panic_on_oom': 0, 'kernel/panic': 10, 'kernel/panic_on_oops': 1, 'kernel/keys/root_maxkeys': 1000000, 'kernel/keys/root_maxbytes': 25000000 };
  await waitFor('the container manager started', async () => /Container manager verified user specified cgroup-root exists/.test(kubelet.output()), 30_000, kubeletLog);
  const now = Object.fromEntries(Object.keys(expected).map((name) => [name, Number(readFileSync(`/proc/sys/${name}`, 'utf8').trim())]));
  t.same(now, expected, 'every kernel tunable has Go\'s value');
  const updated = [...kubelet.output().matchAll(/^I.*"Updating kernel flag" component="container-manager" flag="([^"]+)"/gm)].map((m) => m[1]);
  t.ok(updated.every((name) => name in expected), `what it changed is logged: ${updated.join(', ') || 'nothing differed on this machine'}`);
});

t.test('the client CA file replaced on disk: a certificate from the new CA is accepted without a restart', async (t) => {
  const pid = kubelet.pid;
  t.equal(await getPods(clientCert('ca-a')), 200, 'the first CA authenticates');
  t.equal(await getPods(clientCert('ca-b')), 401, 'the other one does not');
  // As an operator (or a Secret volume) replaces it: a new file renamed over the old one.
  writeFileSync(`${clientCAFile}.new`, readFileSync(join(dir, 'ca-b.crt')));
  renameSync(`${clientCAFile}.new`, clientCAFile);
  await waitFor('a certificate from the new CA accepted', async () => (await getPods(clientCert('ca-b'))) === 200, 30_000, kubeletLog);
  t.pass('accepted');
  t.equal(await getPods(clientCert('ca-a')), 401, 'the replaced CA no longer authenticates');
  t.equal(kubelet.pid, pid, 'the same kubelet process');
  t.match(kubelet.output(), /Loaded a new CA Bundle and Verifier/);

  writeFileSync(clientCAFile, 'not a certificate\n');
  await waitFor('the bad file reported', async () => /Failed to reload the CA bundle: keeping the last good one/.test(kubelet.output()), 30_000, kubeletLog);
  t.equal(await getPods(clientCert('ca-b')), 200, 'an invalid file keeps the last good CA');
});

/** Runs our kubelet binary to its exit, as an operator starting it would. */
function runKubelet(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done) => {
    const child = execFile(process.execPath, [kubeletBin, ...args], { timeout: 60_000 }, (error, _stdout, stderr) => done({ code: child.exitCode ?? (error ? 1 : 0), stderr }));
  });
}

t.test("an unknown feature gate stops the start with Go's text, from the flag and from the config file", async (t) => {
  const common = [`--kubeconfig=${kubeconfig}`, `--root-dir=${join(dir, 'refused-root')}`, '--hostname-override=kts-cfg-refused'];
  const flag = await runKubelet([...common, '--feature-gates=NoSuchGate=true']);
  t.equal(flag.code, 2);
  t.match(flag.stderr, 'Error: invalid argument "NoSuchGate=true" for "--feature-gates" flag: unrecognized feature gate: NoSuchGate');
  const locked = await runKubelet([...common, '--feature-gates=RuntimeClass=false']);
  t.match(locked.stderr, 'cannot set feature gate RuntimeClass to false, feature is locked to true');
  const file = join(dir, 'unknown-gate.yaml');
  writeFileSync(file, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  NoSuchGate: true\n');
  const fromFile = await runKubelet([...common, `--config=${file}`]);
  t.equal(fromFile.code, 2);
  t.match(fromFile.stderr, 'Error: featureGates: unrecognized feature gate: NoSuchGate');
  t.notOk(await kubectl.getOrUndefined(['node', 'kts-cfg-refused']), 'no node was registered');
});
