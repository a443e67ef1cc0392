// The kubelet's HTTPS server end to end: the real control plane (v1.20.2 from tools/kube) reaches our kubelet on
// containerd the way a cluster user's kubectl makes it: logs (-f, --previous, --tail), exec (stdout, stderr, exit
// code, stdin), attach, port-forward and cp through the API server's node proxy, the node's stats and metrics
// through `kubectl get --raw`, and requests with no or too small a credential straight at port 10250.
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import {
  adminWireServer,
  ensureCluster,
  Kubectl,
  KubeletProcess,
  nodeKubeconfig,
  ourCgroupRoot,
  unmountAndRemove,
  waitFor,
} from '../src/index.js';
import { condition, isPodReady, sleepForever } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-srv-node';
const NS = 'kts-srv';
const PORT = 10250;

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const dir = mkdtempSync(join(containerd.root, 'server-e2e-'));
const kubeconfig = await nodeKubeconfig(NODE);
const kubelet = await KubeletProcess.startOurs({
  node: NODE,
  kubeconfig,
  runtimeEndpoint: containerd.endpoint,
  dir,
  extraArgs: ['--sync-frequency=10s', `--client-ca-file=${cluster.caFile}`, `--port=${PORT}`, '--container-log-max-size=2Ki', '--container-log-max-files=3'],
});
const kubeletLog = () => kubelet.logTail(60);

t.teardown(async () => {
  await kubelet.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS);
  await removeHostCgroup(ourCgroupRoot(NODE)).catch(() => undefined);
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

/** kubectl with the admin kubeconfig as a child process, for the commands that stream. */
function kubectlProcess(args: string[]): ChildProcess & { output: () => string; errors: () => string; exit: Promise<number | null> } {
  const child = spawn(cluster.kubectl, ['--kubeconfig', cluster.kubeconfig, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return Object.assign(child, { output: () => stdout, errors: () => stderr, exit });
}

/** Runs kubectl to its end: stdout, stderr and the exit code (a failing command is a result here, not an error). */
async function kubectlResult(args: string[], input?: string): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const child = kubectlProcess(args);
  child.stdin!.end(input ?? '');
  const code = await child.exit;
  return { stdout: child.output(), stderr: child.errors(), code };
}

const podObject = (name: string, spec: Json): Json => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS },
  spec: { nodeName: NODE, terminationGracePeriodSeconds: 2, ...spec },
});
const getPod = (name: string) => kubectl.getOrUndefined(['pod', '-n', NS, name]);
async function runningAndReady(name: string, timeoutMs = 60_000): Promise<Json> {
  return waitFor(`pod ${name} Running and Ready`, async () => {
    const pod = await getPod(name);
    return pod?.status?.phase === 'Running' && isPodReady(pod) && pod;
  }, timeoutMs, kubeletLog);
}
/** The API server's static admin token (group system:masters): the kubelet's webhook authenticates and authorizes it. */
const adminToken = adminWireServer(cluster).token;
const raw = async (path: string) => kubectl.run(['get', '--raw', `/api/v1/nodes/${NODE}/proxy${path}`]);

await waitFor('node Ready', async () => condition(await kubectl.getOrUndefined(['node', NODE]), 'Ready')?.status === 'True', 60_000, kubeletLog);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);

const image = containerd.busyboxImage;
await kubectl.apply(
  // Writes numbered lines to stdout and stderr, forever; its readiness probe feeds prober_probe_total.
  podObject('logger', {
    containers: [
      {
        name: 'app',
        image,
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', "trap 'exit 0' TERM; i=0; while true; do echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); sleep 0.2; done"],
        readinessProbe: { exec: { command: ['true'] }, periodSeconds: 1 },
      },
    ],
  }),
  // Prints its run number and exits 1, so its previous instance has a log of its own.
  podObject('crasher', {
    containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', 'echo "run at $(date +%s%N)"; sleep 1; exit 1'] }],
  }),
  podObject('shell', {
    containers: [
      { name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever] },
      // attach: the container's own stdin, no tty; it echoes what it reads, upper-cased.
      { name: 'echo', image, imagePullPolicy: 'IfNotPresent', stdin: true, command: ['sh', '-c', 'while read line; do echo "got $line" | tr a-z A-Z; done'] },
      { name: 'web', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', "mkdir -p /www && echo served-by-httpd > /www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"], ports: [{ containerPort: 8080 }] },
    ],
  }),
);
await runningAndReady('logger');
await runningAndReady('shell');

await t.test('the kubelet serves TLS on its port with a self-signed certificate under --cert-dir', async (t) => {
  const pki = join(dir, 'root', 'pki');
  t.ok(existsSync(join(pki, 'kubelet.crt')) && existsSync(join(pki, 'kubelet.key')), 'kubelet.crt and kubelet.key were generated');
  const node = await kubectl.json(['get', 'node', NODE]);
  t.equal(node.status.daemonEndpoints.kubeletEndpoint.Port, PORT, 'the node reports the port it serves on');
});

await t.test('kubectl logs: the whole log, --tail, --timestamps, --limit-bytes, --since, -c, and errors', async (t) => {
  await waitFor('a few log lines', async () => (await kubectl.run(['logs', '-n', NS, 'logger'])).split('\n').length > 10, 20_000, kubeletLog);
  const all = await kubectl.run(['logs', '-n', NS, 'logger']);
  const numbers = all.split('\n').filter(Boolean).map((line) => /^(out|err) (\d+)$/.exec(line)?.[2]);
  t.ok(numbers.every((n) => n !== undefined), 'every line is one the container wrote');
  t.ok(numbers.every((n, i) => i === 0 || Number(n) - Number(numbers[i - 1]) <= 1), 'stdout and stderr interleaved in order (since the last rotation)');
  const tail = await kubectl.run(['logs', '-n', NS, 'logger', '--tail=2']);
  t.equal(tail.split('\n').filter(Boolean).length, 2, '--tail=2 gives two lines');
  t.match(tail, /^(out|err) \d+\n(out|err) \d+\n$/);
  const stamped = await kubectl.run(['logs', '-n', NS, 'logger', '--tail=1', '--timestamps']);
  t.match(stamped, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z (out|err) \d+\n$/, '--timestamps prefixes RFC3339Nano');
  t.equal((await kubectl.run(['logs', '-n', NS, 'logger', '--limit-bytes=5'])).length, 5, '--limit-bytes=5');
  const recent = await kubectl.run(['logs', '-n', NS, 'logger', '--since=1s']);
  t.ok(recent.split('\n').filter(Boolean).length < all.split('\n').filter(Boolean).length, '--since=1s gives only the recent lines');
  t.match(await kubectl.run(['logs', '-n', NS, 'shell', '-c', 'app']), /^$/, '-c picks the container');
  const noContainer = await kubectlResult(['logs', '-n', NS, 'shell', '-c', 'nope']);
  t.not(noContainer.code, 0);
  t.match(noContainer.stderr, /container nope is not valid for pod shell|container "nope" not found/, 'an unknown container is refused');
  // Straight at the kubelet (the API server's proxy reports a non-Status error body only as "unknown reason").
  const badTail = await direct(`/containerLogs/${NS}/logger/app?tailLines=-1`, adminToken);
  t.equal(badTail.status, 400);
  t.match(badTail.body, /^tailLines: Invalid value: -1/, 'a malformed query names the parameter');
  const badSince = await direct(`/containerLogs/${NS}/logger/app?sinceTime=yesterday`, adminToken);
  t.equal(badSince.status, 400);
  t.match(badSince.body, /^sinceTime: /);
  const noPod = await direct(`/containerLogs/${NS}/no-such-pod/app`, adminToken);
  t.same(noPod, { status: 404, body: 'pod "no-such-pod" does not exist' });
});

await t.test('kubectl logs -f streams new lines and stops when the client goes away', async (t) => {
  const follow = kubectlProcess(['logs', '-f', '-n', NS, 'logger', '--tail=1']);
  const first = await waitFor('followed lines', async () => {
    const lines = follow.output().split('\n').filter(Boolean);
    return lines.length >= 6 && lines;
  }, 20_000, () => follow.errors());
  const numbers = first.map((line) => Number(line.split(' ')[1]));
  t.ok(numbers.at(-1)! > numbers[0]!, `new lines arrive while following: ${first.join(' | ')}`);
  follow.kill('SIGINT');
  await follow.exit;
});

await t.test('kubectl logs --previous reads the container instance before the restart', async (t) => {
  const pod = await waitFor('crasher restarted', async () => {
    const p = await getPod('crasher');
    return (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 && p;
  }, 60_000, kubeletLog);
  t.ok(pod.status.containerStatuses[0].restartCount >= 1);
  const previous = await kubectl.run(['logs', '-n', NS, 'crasher', '--previous']);
  t.match(previous, /^run at \S+\n$/, 'the previous instance printed its run line');
  const fresh = await getPod('logger');
  const never = await kubectlResult(['logs', '-n', NS, fresh!.metadata.name, '--previous']);
  t.match(never.stderr, /previous terminated container "app" in pod "logger" not found/, 'Go\'s message when there is no previous instance');
});

await t.test('log rotation: containerLogMaxSize rotates through CRI ReopenContainerLog and logs still read', async (t) => {
  const logDir = join(dir, 'pod-logs');
  const pod = await getPod('logger');
  const containerDir = join(logDir, `${NS}_logger_${pod!.metadata.uid}`, 'app');
  const rotated = await waitFor('a rotated log file', async () => {
    const files = existsSync(containerDir) ? (await import('node:fs')).readdirSync(containerDir) : [];
    return files.some((f) => /^\d+\.log\.\d{8}-\d{6}/.test(f)) && files;
  }, 40_000, kubeletLog);
  t.ok(rotated.length <= 3, `at most containerLogMaxFiles=3 files: ${rotated.join(', ')}`);
  // Just after a rotation the new current file can still be empty (kubectl reads only it, as with Go's kubelet).
  const current = await waitFor('a line in the current log after rotation', async () => {
    const last = await kubectl.run(['logs', '-n', NS, 'logger', '--tail=1']);
    return last !== '' && last;
  }, 20_000, kubeletLog);
  t.match(current, /^(out|err) \d+\n$/, 'the current log still reads after rotation');
});

await t.test('kubectl exec: stdout, stderr, the exit code, and stdin', async (t) => {
  const result = await kubectlResult(['exec', '-n', NS, 'shell', '-c', 'app', '--', 'sh', '-c', 'echo to-out; echo to-err >&2; exit 3']);
  t.equal(result.stdout, 'to-out\n');
  t.equal(result.stderr.split('\n').filter((l) => !/command terminated/.test(l)).join('\n').trim(), 'to-err');
  t.equal(result.code, 3, 'kubectl exits with the command\'s exit code');
  const stdin = await kubectlResult(['exec', '-i', '-n', NS, 'shell', '-c', 'app', '--', 'sh', '-c', 'tr a-z A-Z'], 'hello through stdin\n');
  t.equal(stdin.stdout, 'HELLO THROUGH STDIN\n');
  t.equal(stdin.code, 0);
  const missing = await kubectlResult(['exec', '-n', NS, 'shell', '-c', 'app', '--', 'no-such-binary']);
  t.not(missing.code, 0, 'a missing binary fails the exec');
});

await t.test('a client that goes away mid-exec closes its session: the exec reading stdin sees EOF and ends', async (t) => {
  // The stream is closed through to the runtime. A process that ignores its stdin would keep running: containerd
  // does not kill an exec whose client went away, with the Go kubelet as with this one.
  const ps = () => kubectl.run(['exec', '-n', NS, 'shell', '-c', 'app', '--', 'ps', '-o', 'args']);
  const session = kubectlProcess(['exec', '-i', '-n', NS, 'shell', '-c', 'app', '--', 'sh', '-c', 'cat >/dev/null; echo stdin closed', 'session-313']);
  await waitFor('the exec session runs', async () => (await ps()).includes('session-313'), 20_000, () => session.errors());
  session.kill('SIGKILL');
  await session.exit;
  await waitFor('the exec process is gone', async () => !(await ps()).includes('session-313'), 30_000, kubeletLog);
  t.pass('the runtime ended the exec once its client went away');
});

await t.test('kubectl cp copies a file in and out of a container', async (t) => {
  const local = join(dir, 'cp-source.txt');
  writeFileSync(local, 'copied through tar\n');
  await kubectl.run(['cp', local, `${NS}/shell:/tmp/copied.txt`, '-c', 'app']);
  t.equal(await kubectl.run(['exec', '-n', NS, 'shell', '-c', 'app', '--', 'cat', '/tmp/copied.txt']), 'copied through tar\n');
  const back = join(dir, 'cp-back.txt');
  await kubectl.run(['cp', `${NS}/shell:/tmp/copied.txt`, back, '-c', 'app']);
  t.equal(readFileSync(back, 'utf8'), 'copied through tar\n');
});

await t.test('kubectl attach -i talks to the container\'s own stdin and stdout', async (t) => {
  const attach = kubectlProcess(['attach', '-i', '-n', NS, 'shell', '-c', 'echo']);
  attach.stdin!.write('first\n');
  await waitFor('the attached container answers', async () => attach.output().includes('GOT FIRST'), 20_000, () => attach.errors());
  attach.stdin!.write('second\n');
  await waitFor('a second answer', async () => attach.output().includes('GOT SECOND'), 20_000, () => attach.errors());
  t.pass('both lines came back through the attach');
  attach.kill('SIGINT');
  await attach.exit;
});

await t.test('kubectl port-forward reaches a pod\'s port', async (t) => {
  const forward = kubectlProcess(['port-forward', '-n', NS, 'pod/shell', ':8080']);
  const localPort = await waitFor('the local port', async () => Number(/Forwarding from 127\.0\.0\.1:(\d+)/.exec(forward.output())?.[1]) || false, 20_000, () => forward.errors());
  const body = await new Promise<string>((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port: localPort, path: '/index.html' }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve(text));
    })
      .on('error', reject)
      .end();
  });
  t.equal(body, 'served-by-httpd\n');
  forward.kill('SIGINT');
  await forward.exit;
});

await t.test('stats/summary, as metrics-server reads it, covers the node and the running pods', async (t) => {
  const summary = JSON.parse(await raw('/stats/summary')) as Json;
  t.equal(summary.node.nodeName, NODE);
  t.ok(summary.node.memory.workingSetBytes > 0, 'node memory working set');
  t.ok(summary.node.cpu.usageCoreNanoSeconds > 0, 'node cpu usage');
  t.ok(summary.node.fs.capacityBytes > 0, 'node fs capacity');
  const logger = summary.pods.find((p: Json) => p.podRef.name === 'logger' && p.podRef.namespace === NS);
  t.ok(logger, 'the logger pod is in the summary');
  const app = logger?.containers?.find((c: Json) => c.name === 'app');
  t.ok(app?.cpu?.usageCoreNanoSeconds > 0, 'container cpu');
  t.ok(app?.memory?.workingSetBytes > 0, 'container memory');
  t.ok(app?.logs?.usedBytes > 0, 'container log usage');
  const cpuOnly = JSON.parse(await raw('/stats/summary?only_cpu_and_memory=true')) as Json;
  t.equal(cpuOnly.node.fs, undefined, 'only_cpu_and_memory leaves fs out');
});

await t.test('/metrics, /metrics/resource and /metrics/probes through the API server', async (t) => {
  const metrics = await raw('/metrics');
  t.match(metrics, new RegExp(`kubelet_node_name\\{node="${NODE}"\\} 1`));
  t.match(metrics, /kubelet_running_pods \d+/);
  t.match(metrics, /kubelet_runtime_operations_total\{operation_type="[a-z_]+"\} \d+/);
  t.match(metrics, /kubelet_http_requests_total\{.*path="metrics".*\} \d+/);
  t.match(metrics, /kubelet_pleg_relist_duration_seconds_bucket/);
  const resource = await raw('/metrics/resource');
  t.match(resource, new RegExp(`container_cpu_usage_seconds_total\\{container="app",namespace="${NS}",pod="logger"\\} [0-9.e+-]+ \\d+`));
  t.match(resource, new RegExp(`pod_memory_working_set_bytes\\{namespace="${NS}",pod="logger"\\} \\d+`));
  t.match(resource, /node_memory_working_set_bytes [0-9.e+]+ \d+/);
  const probes = await raw('/metrics/probes');
  t.match(probes, new RegExp(`prober_probe_total\\{container="app",namespace="${NS}",pod="logger",pod_uid="[^"]+",probe_type="Readiness",result="successful"\\} \\d+`));
});

/** A request straight at the kubelet's port, as anything on the network could make it. */
function direct(path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    httpsRequest({ host: '127.0.0.1', port: PORT, path, rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    })
      .on('error', reject)
      .end();
  });
}

await t.test('no credential is 401; a token without node rights is 403 with Go\'s message', async (t) => {
  const anonymous = await direct('/pods');
  t.equal(anonymous.status, 401);
  t.equal(anonymous.body, 'Unauthorized');
  t.equal((await direct('/pods', 'not-a-token')).status, 401, 'a token the API server does not know');
  await kubectl.run(['create', 'serviceaccount', '-n', NS, 'nobody']);
  const secretName = await waitFor('the service account token secret', async () => (await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'nobody']))?.secrets?.[0]?.name);
  const secret = await kubectl.json(['get', 'secret', '-n', NS, secretName]);
  const token = Buffer.from(secret.data.token, 'base64').toString('utf8');
  const denied = await direct('/pods', token);
  t.equal(denied.status, 403);
  t.equal(denied.body, `Forbidden (user=system:serviceaccount:${NS}:nobody, verb=get, resource=nodes, subresource=proxy)`);
  const deniedStats = await direct('/stats/summary', token);
  t.equal(deniedStats.body, `Forbidden (user=system:serviceaccount:${NS}:nobody, verb=get, resource=nodes, subresource=stats)`);
  // Allowed once RBAC grants nodes/proxy: the webhook authorizer asks the API server again after its 30 s deny cache.
  await kubectl.apply(
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'kts-srv-node-metrics' }, rules: [{ apiGroups: [''], resources: ['nodes/metrics'], verbs: ['get'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'kts-srv-node-metrics' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kts-srv-node-metrics' }, subjects: [{ kind: 'ServiceAccount', name: 'nobody', namespace: NS }] },
  );
  t.teardown(() => kubectl.run(['delete', 'clusterrole,clusterrolebinding', 'kts-srv-node-metrics', '--ignore-not-found']).then(() => undefined, () => undefined));
  const allowed = await direct('/metrics', token);
  t.equal(allowed.status, 200, 'nodes/metrics granted: /metrics is served (never asked before, so not in the deny cache)');
  t.match(allowed.body, /kubelet_node_name/);
});
