// The 10250 authorization matrix, ours next to the Go kubelet v1.20.2's (issue 29). Both kubelets run at the same
// time against the real v1.20.2 control plane, each a node of its own with Webhook authentication and authorization,
// the cluster CA as --client-ca-file and anonymous requests disabled (as kubeadm sets them up), each with one busybox
// pod. Every path the Go kubelet's server registers (and a few it does not, and wrong methods) is requested as three
// identities: anonymous (no credential), a ServiceAccount token without any RBAC rights on nodes/*, and the API
// server's kubelet client certificate (group system:masters). Then both kubelets restart with --anonymous-auth=true
// and the anonymous column is taken again. The status codes of both are printed as a markdown table (and written to
// $TMPDIR/authz-matrix.md), and every cell of ours must equal Go's.
//
// Our kubelet runs on the shared containerd; the Go kubelet on a private containerd of this test (same tools, its own
// root, bridge and pod CIDR). A kubelet kills every runtime pod it does not know (Go's HandlePodCleanups, and ours),
// so two kubelets on one containerd kill each other's pods, and a Go kubelet on the shared containerd would kill the
// pods of every other suite running beside this one.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { ensureHostCgroup, removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { ensureCluster, Kubectl, KubeletProcess, nodeKubeconfig, ourCgroupRoot, repoRoot, unmountAndRemove, waitFor } from '../src/index.js';
import { sleepForever } from '../src/workloads.js';

type Kind = 'ours' | 'go';
type Identity = 'anonymous' | 'serviceaccount' | 'authorized';

const NS = 'kts-authz';
const NODES: Record<Kind, string> = { ours: 'kts-authz-ours', go: 'kts-authz-go' };
const PORTS: Record<Kind, number> = { ours: 10264, go: 10265 };
const HEALTHZ_PORTS: Record<Kind, number> = { ours: 10266, go: 10267 };
const GO_CGROUP_ROOT = '/kts-authz-go';
const keep = Boolean(process.env.KUBELET_E2E_KEEP);

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const pki = join(cluster.root, 'pki');
/** The API server's own client certificate for kubelets (O=system:masters), as `kubectl exec` reaches a kubelet. */
const adminCert = { cert: readFileSync(join(pki, 'apiserver-kubelet-client.crt')), key: readFileSync(join(pki, 'apiserver-kubelet-client.key')) };

// The Go kubelet's containerd: tools/containerd/start.sh under a root of this test, reusing the shared images.
const privateContainerd = {
  KUBELET_TS_CONTAINERD_ROOT: join(tmpdir(), 'kts-authz-ctd'),
  KUBELET_TS_CNI_BRIDGE: 'kts-authz0',
  KUBELET_TS_POD_CIDR: '10.89.0.0/16',
  KUBELET_TS_IMAGES_DIR: join(containerd.root, 'images'),
};
const containerdTool = (script: 'start.sh' | 'stop.sh') =>
  promisify(execFile)('bash', [join(repoRoot, 'tools/containerd', script)], { env: { ...process.env, ...privateContainerd }, maxBuffer: 16 << 20 });
await containerdTool('start.sh');
const goEndpoint = `unix://${privateContainerd.KUBELET_TS_CONTAINERD_ROOT}/containerd.sock`;

const dirs: Record<Kind, string> = { ours: mkdtempSync(join(containerd.root, 'authz-ours-')), go: mkdtempSync(join(containerd.root, 'authz-go-')) };
const kubeconfigs: Record<Kind, string> = { ours: await nodeKubeconfig(NODES.ours), go: await nodeKubeconfig(NODES.go) };
await ensureHostCgroup(GO_CGROUP_ROOT);

async function start(kind: Kind, anonymous: boolean): Promise<KubeletProcess> {
  const common = { node: NODES[kind], kubeconfig: kubeconfigs[kind], dir: dirs[kind] };
  const serverArgs = [`--port=${PORTS[kind]}`, '--read-only-port=0', `--healthz-port=${HEALTHZ_PORTS[kind]}`, `--anonymous-auth=${anonymous}`];
  if (kind === 'go') return KubeletProcess.startGo({ ...common, runtimeEndpoint: goEndpoint, extraArgs: [...serverArgs, `--cgroup-root=${GO_CGROUP_ROOT}`] }, cluster);
  return KubeletProcess.startOurs({
    ...common,
    runtimeEndpoint: containerd.endpoint,
    extraArgs: [...serverArgs, `--client-ca-file=${cluster.caFile}`, '--authentication-token-webhook=true', '--authorization-mode=Webhook'],
  });
}

const kubelets: Partial<Record<Kind, KubeletProcess>> = {};
t.teardown(async () => {
  await Promise.all(Object.values(kubelets).map((k) => k.stop()));
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODES.ours, NODES.go, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS);
  if (!keep) await containerdTool('stop.sh').catch((error) => console.error(`stopping the private containerd: ${error}`));
  await removeHostCgroup(ourCgroupRoot(NODES.ours)).catch(() => undefined);
  await removeHostCgroup(GO_CGROUP_ROOT).catch(() => undefined);
  for (const dir of Object.values(dirs)) {
    if (keep) console.error(`kept ${dir}`);
    else unmountAndRemove(dir);
  }
});

const describe = () => Object.values(kubelets).map((k) => k.logTail(30)).join('\n\n');
const podName = (kind: Kind) => `authz-${kind}`;

kubelets.ours = await start('ours', false);
kubelets.go = await start('go', false);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);
// A token the API server authenticates (TokenReview) that RBAC grants nothing on nodes/* (`kubectl create token`
// does not exist in 1.20: the token controller writes it into the service account's secret).
await kubectl.run(['create', 'serviceaccount', '-n', NS, 'nobody']);
const secretName = await waitFor('the nobody service account token secret', async () => (await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'nobody']))?.secrets?.[0]?.name as string | undefined);
const secret = await kubectl.json(['get', 'secret', '-n', NS, secretName]);
const saToken = Buffer.from(secret.data.token, 'base64').toString('utf8');

await kubectl.apply(
  ...(['ours', 'go'] as Kind[]).map((kind) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName(kind), namespace: NS },
    spec: {
      nodeName: NODES[kind],
      terminationGracePeriodSeconds: 2,
      automountServiceAccountToken: false,
      containers: [{ name: 'app', image: containerd.busyboxImage, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever] }],
    },
  })),
);
const uids = {} as Record<Kind, string>;
for (const kind of ['ours', 'go'] as Kind[]) {
  const pod = await waitFor(`pod ${podName(kind)} Running`, async () => {
    const pod = await kubectl.getOrUndefined(['pod', '-n', NS, podName(kind)]);
    return pod?.status?.phase === 'Running' && pod;
  }, 120_000, describe);
  uids[kind] = pod.metadata.uid as string;
}

/** One row of the matrix: a request as a client sends it; {ns}, {pod} and {uid} name the kubelet's own pod. */
interface Row {
  method: string;
  path: string;
  /** SPDY (as kubectl exec/attach/port-forward send it through the API server) or WebSocket upgrade headers. */
  upgrade?: 'spdy-remotecommand' | 'spdy-portforward' | 'websocket';
  body?: string;
  note?: string;
}

const pod = '{ns}/{pod}';
const rows: Row[] = [
  { method: 'GET', path: '/pods' },
  { method: 'GET', path: '/pods/' },
  { method: 'GET', path: '/pods/extra', note: 'under a registered path, no route' },
  { method: 'POST', path: '/pods', note: 'wrong method' },
  { method: 'GET', path: '/runningpods/' },
  { method: 'GET', path: '/runningpods', note: 'mux redirect' },
  { method: 'POST', path: `/run/${pod}/app?cmd=true` },
  { method: 'POST', path: `/run/${pod}/{uid}/app?cmd=true` },
  { method: 'GET', path: `/run/${pod}/app?cmd=true`, note: 'wrong method' },
  { method: 'POST', path: `/exec/${pod}/app?command=true&output=1`, upgrade: 'spdy-remotecommand' },
  { method: 'GET', path: `/exec/${pod}/app?command=true&output=1`, upgrade: 'websocket' },
  { method: 'POST', path: `/exec/${pod}/{uid}/app?command=true&output=1`, upgrade: 'spdy-remotecommand' },
  { method: 'POST', path: `/exec/${pod}/app?command=true&output=1`, note: 'no upgrade' },
  { method: 'POST', path: `/exec/${pod}/app?command=true`, upgrade: 'spdy-remotecommand', note: 'no stream' },
  { method: 'POST', path: `/exec/{ns}/missing/app?command=true&output=1`, upgrade: 'spdy-remotecommand', note: 'no such pod' },
  { method: 'POST', path: `/attach/${pod}/app?output=1&error=1`, upgrade: 'spdy-remotecommand' },
  { method: 'GET', path: `/attach/${pod}/app?output=1`, upgrade: 'websocket' },
  { method: 'POST', path: `/portForward/${pod}`, upgrade: 'spdy-portforward' },
  { method: 'GET', path: `/portForward/${pod}/{uid}`, upgrade: 'spdy-portforward' },
  { method: 'GET', path: `/containerLogs/${pod}/app` },
  { method: 'GET', path: `/containerLogs/{ns}/missing/app`, note: 'no such pod' },
  { method: 'POST', path: `/containerLogs/${pod}/app`, note: 'wrong method' },
  { method: 'GET', path: '/logs/' },
  { method: 'GET', path: '/logs', note: 'mux redirect' },
  { method: 'GET', path: '/logs/no-such-file' },
  { method: 'GET', path: '/metrics' },
  { method: 'GET', path: '/metrics/cadvisor' },
  { method: 'GET', path: '/metrics/resource' },
  { method: 'GET', path: '/metrics/probes' },
  { method: 'GET', path: '/metrics/nope', note: 'not registered' },
  { method: 'GET', path: '/stats/summary' },
  { method: 'POST', path: '/stats/summary', body: '{"only_cpu_and_memory":true}' },
  { method: 'GET', path: '/stats/' },
  { method: 'GET', path: '/stats', note: 'mux redirect' },
  { method: 'GET', path: '/stats/container' },
  { method: 'GET', path: `/stats/${pod}/{uid}/app` },
  { method: 'GET', path: '/spec/' },
  { method: 'GET', path: '/spec' },
  { method: 'GET', path: '/configz' },
  { method: 'GET', path: '/healthz' },
  { method: 'GET', path: '/healthz/ping' },
  { method: 'GET', path: '/healthz/log' },
  { method: 'GET', path: '/healthz/syncloop' },
  { method: 'GET', path: '/healthz/nope', note: 'not registered' },
  { method: 'GET', path: '/debug/pprof/' },
  { method: 'GET', path: '/debug/pprof/cmdline' },
  { method: 'GET', path: '/debug/pprof', note: 'mux redirect' },
  { method: 'PUT', path: '/debug/flags/v', body: '1' },
  { method: 'POST', path: `/checkpoint/${pod}/app` },
  { method: 'GET', path: '/' },
  { method: 'GET', path: '/nope' },
];

const UPGRADE_HEADERS: Record<NonNullable<Row['upgrade']>, Record<string, string>> = {
  'spdy-remotecommand': { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' },
  'spdy-portforward': { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'portforward.k8s.io' },
  websocket: {
    Connection: 'Upgrade',
    Upgrade: 'websocket',
    'Sec-WebSocket-Version': '13',
    'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Protocol': 'v4.channel.k8s.io',
  },
};

interface Outcome {
  status: number;
  body: string;
}

/** One request straight at a kubelet's port, as anything on the network can make it; a 101 ends the connection at once. */
function send(kind: Kind, row: Row, identity: Identity): Promise<Outcome> {
  const path = row.path.replace('{ns}', NS).replace('{pod}', podName(kind)).replace('{uid}', uids[kind]);
  const headers: Record<string, string> = { ...(row.upgrade ? UPGRADE_HEADERS[row.upgrade] : {}) };
  if (identity === 'serviceaccount') headers.Authorization = `Bearer ${saToken}`;
  if (row.body !== undefined) headers['Content-Type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const request = httpsRequest(
      { host: '127.0.0.1', port: PORTS[kind], method: row.method, path, headers, rejectUnauthorized: false, agent: false, timeout: 30_000, ...(identity === 'authorized' ? adminCert : {}) },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body.length < 4096 ? (body += chunk) : undefined));
        response.on('end', () => resolve({ status: response.statusCode!, body }));
        response.on('error', reject);
      },
    );
    request.on('upgrade', (response, socket) => {
      socket.destroy();
      resolve({ status: response.statusCode!, body: '' });
    });
    request.on('timeout', () => request.destroy(new Error(`${kind} ${row.method} ${path}: no answer within 30 s`)));
    request.on('error', reject);
    request.end(row.body);
  });
}

type Results = Map<string, Outcome>;
const key = (kind: Kind, row: Row, column: string) => `${kind} ${row.method} ${row.path} ${row.upgrade ?? ''} ${column}`;

async function measure(results: Results, columns: Array<[string, Identity]>): Promise<void> {
  for (const row of rows) {
    for (const [column, identity] of columns) {
      for (const kind of ['ours', 'go'] as Kind[]) {
        try {
          results.set(key(kind, row, column), await send(kind, row, identity));
        } catch (error) {
          results.set(key(kind, row, column), { status: 0, body: String(error) });
        }
      }
    }
  }
}

const healthy = async (kind: Kind) =>
  waitFor(`${kind} kubelet answers on ${PORTS[kind]}`, async () => (await send(kind, { method: 'GET', path: '/healthz' }, 'authorized').catch(() => undefined))?.status === 200, 120_000, describe);
await healthy('ours');
await healthy('go');

const results: Results = new Map();
const columns: Array<[string, Identity]> = [
  ['anonymous', 'anonymous'],
  ['serviceaccount', 'serviceaccount'],
  ['authorized', 'authorized'],
];
await measure(results, columns);

// The second pair: anonymous requests enabled (Go's default without kubeadm's config): system:anonymous is then
// authenticated and asks the webhook authorizer, which RBAC denies.
await Promise.all(Object.values(kubelets).map((k) => k.stop()));
kubelets.ours = await start('ours', true);
kubelets.go = await start('go', true);
await healthy('ours');
await healthy('go');
for (const kind of ['ours', 'go'] as Kind[]) {
  await waitFor(`pod ${podName(kind)} still Running`, async () => (await kubectl.getOrUndefined(['pod', '-n', NS, podName(kind)]))?.status?.phase === 'Running', 60_000, describe);
}
await measure(results, [['anonymous enabled', 'anonymous']]);

const allColumns = [...columns.map(([c]) => c), 'anonymous enabled'];
const label = (row: Row) => `\`${row.method} ${row.path.replace(/\?.*$/, '')}\`${row.upgrade ? ` (${row.upgrade})` : ''}${row.note ? ` ${row.note}` : ''}`;
const lines = [
  `The kubelet's port: status codes of kubelet-ts / the Go kubelet ${cluster.version}, each a node of a real ${cluster.version} control plane with Webhook authn/authz, the cluster CA as client CA; anonymous: no credential; serviceaccount: a token with no rights on nodes/*; authorized: the API server's kubelet client certificate (system:masters). The last column: both restarted with --anonymous-auth=true.`,
  '',
  `| request | ${allColumns.join(' | ')} |`,
  `|---|${allColumns.map(() => '---').join('|')}|`,
];
for (const row of rows) {
  const cells = allColumns.map((column) => {
    const ours = results.get(key('ours', row, column))!.status;
    const go = results.get(key('go', row, column))!.status;
    return ours === go ? `${ours} / ${go}` : `**${ours} / ${go}**`;
  });
  lines.push(`| ${label(row)} | ${cells.join(' | ')} |`);
}
const table = lines.join('\n');
const file = join(process.env.TMPDIR ?? tmpdir(), 'authz-matrix.md');
writeFileSync(file, `${table}\n`);
t.comment(`${table}\n(written to ${file})`);

for (const row of rows) {
  t.test(label(row), async (t) => {
    for (const column of allColumns) {
      const ours = results.get(key('ours', row, column))!;
      const go = results.get(key('go', row, column))!;
      t.equal(ours.status, go.status, `${column}: ours ${ours.status} (${ours.body.slice(0, 200).trim()}) vs Go ${go.status} (${go.body.slice(0, 200).trim()})`);
    }
  });
}

t.test('the cells a cluster relies on', async (t) => {
  const statusOf = (row: Row, column: string) => results.get(key('ours', row, column))!.status;
  for (const row of rows.filter((r) => ['/pods', '/metrics', '/stats/summary', '/configz', '/healthz'].includes(r.path) && r.method === 'GET')) {
    t.equal(statusOf(row, 'anonymous'), 401, `${label(row)}: no credential is 401`);
    t.equal(statusOf(row, 'serviceaccount'), 403, `${label(row)}: a token without node rights is 403`);
    t.equal(statusOf(row, 'anonymous enabled'), 403, `${label(row)}: system:anonymous is 403`);
    t.equal(statusOf(row, 'authorized'), 200, `${label(row)}: system:masters is 200`);
  }
  const exec = rows.find((r) => r.path.startsWith('/exec/') && r.upgrade === 'spdy-remotecommand')!;
  t.equal(statusOf(exec, 'authorized'), 101, 'an authorized exec upgrades (101)');
});
