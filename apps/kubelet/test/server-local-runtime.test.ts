// The kubelet's server as the binary wires it, over real TLS, with the embedded local runtime: static pods' logs,
// stats and metrics through the secure port, the read-only port, and exec and port-forward through the local runtime's
// streaming server.
import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:tls';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { noopLogger, pollUntil } from '@kubelet-ts/core';
import { remoteCommandSession, upgradeToSpdy } from '@kubelet-ts/local-runtime/testing';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'kubelet-server-local-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
writeFileSync(
  join(manifests, 'talker.json'),
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'talker', namespace: 'default' },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: 'localhost/kubelet-ts/busybox:1', command: ['sh', '-c', "trap 'exit 0' TERM; echo hello; echo oops >&2; while true; do sleep 1; done"] }],
    },
  }),
);

const config = resolveConfig(
  parseFlags([
    `--pod-manifest-path=${manifests}`,
    `--root-dir=${join(dir, 'root')}`,
    `--pod-logs-dir=${join(dir, 'logs')}`,
    '--hostname-override=server-node',
    '--file-check-frequency=1s',
    '--healthz-port=0',
    '--address=127.0.0.1',
    '--port=0',
    // Standalone: anonymous requests with AlwaysAllow (the Go kubelet's legacy flag defaults) for this test.
    '--anonymous-auth=true',
    '--read-only-port=0',
  ]),
);
const c = container.createChildContainer();
registerKubeletDeps(c, config);
if (!process.env.KUBELET_E2E_LOGS) c.register(Tokens.Logger, { useValue: noopLogger });
const controller = new AbortController();
const running = await startKubelet(c, controller.signal);
t.teardown(async () => {
  controller.abort();
  await running.done;
  rmSync(dir, { recursive: true, force: true });
});
const port = running.port!;

function get(path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    httpsRequest({ host: '127.0.0.1', port, path, rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    })
      .on('error', reject)
      .end();
  });
}

await pollUntil(async () => (await get('/containerLogs/default/talker-server-node/app')).body.includes('hello'), 100, 30_000);

t.test('the secure port serves TLS with the self-signed certificate written under --cert-dir', async (t) => {
  const certificate = await new Promise<{ subject: { CN: string } }>((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate() as never);
      socket.end();
    });
    socket.on('error', reject);
  });
  t.match(certificate.subject.CN, /^server-node@\d+$/, 'Go\'s self-signed subject <host>@<unix time>');
});

t.test('logs, pods, stats and metrics of a static pod on the local runtime', async (t) => {
  t.equal((await get('/containerLogs/default/talker-server-node/app')).body, 'hello\noops\n');
  t.equal((await get('/containerLogs/default/talker-server-node/app?tailLines=1')).body, 'oops\n');
  const pods = JSON.parse((await get('/pods')).body);
  t.equal(pods.kind, 'PodList');
  t.equal(pods.items[0].metadata.name, 'talker-server-node');
  t.equal(pods.items[0].status.phase, 'Running', 'the kubelet\'s own status');
  const summary = JSON.parse((await get('/stats/summary')).body);
  t.equal(summary.node.nodeName, 'server-node');
  t.ok(summary.pods.some((p: { podRef: { name: string } }) => p.podRef.name === 'talker-server-node'), 'the pod is in the summary');
  const metrics = (await get('/metrics')).body;
  t.match(metrics, /kubelet_node_name\{node="server-node"\} 1/);
  t.match(metrics, /kubelet_running_pods 1/);
  t.match(metrics, /kubelet_runtime_operations_total\{operation_type="run_podsandbox"\} 1/);
  t.match((await get('/metrics/resource')).body, /container_memory_working_set_bytes\{container="app",namespace="default",pod="talker-server-node"\}/);
  const cadvisor = (await get('/metrics/cadvisor')).body;
  t.match(cadvisor, /container_memory_working_set_bytes\{[^}]*container="app"[^}]*namespace="default"[^}]*pod="talker-server-node"[^}]*\}/, 'cadvisor figures labelled from the CRI container labels');
  t.same(JSON.parse((await get('/configz')).body).kubeletconfig.port, 0);
  t.match((await get('/healthz/syncloop')).body, 'ok');
});

t.test("exec and port-forward through the kubelet's server reach the local runtime's streaming server", async (t) => {
  const command = ['sh', '-c', 'echo hi; cat; echo oops >&2; exit 5'].map((c) => `command=${encodeURIComponent(c)}`).join('&');
  const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
  const up = await upgradeToSpdy(socket, { path: `/exec/default/talker-server-node/app?${command}&input=1&output=1&error=1`, host: `127.0.0.1:${port}` });
  t.equal(up.status, 101, 'the kubelet proxied the SPDY upgrade to the runtime');
  const result = await remoteCommandSession(up.spdy!, { stdin: 'typed\n' });
  t.equal(result.stdout, 'hi\ntyped\n', 'stdin in, stdout out');
  t.equal(result.stderr, 'oops\n');
  t.same(JSON.parse(result.error).details, { causes: [{ reason: 'ExitCode', message: '5' }] }, 'the exit code in the v4 status');

  const again = await upgradeToSpdy(connect({ host: '127.0.0.1', port, rejectUnauthorized: false }), {
    path: '/exec/default/talker-server-node/app?command=true&output=1',
    host: `127.0.0.1:${port}`,
  });
  t.same(await remoteCommandSession(again.spdy!, { stderr: false }), { stdout: '', stderr: '', error: '{"metadata":{},"status":"Success"}' });

  // Port-forward: the pod shares the host's network, so a listener on 127.0.0.1 is "in the pod".
  const echo = createNetServer((conn) => conn.pipe(conn));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  t.teardown(() => echo.close());
  const echoPort = (echo.address() as { port: number }).port;
  const pf = await upgradeToSpdy(connect({ host: '127.0.0.1', port, rejectUnauthorized: false }), {
    path: '/portForward/default/talker-server-node',
    host: `127.0.0.1:${port}`,
    protocols: ['portforward.k8s.io'],
  });
  t.equal(pf.status, 101, 'port-forward upgraded through the kubelet');
  const headers = { port: [String(echoPort)], requestid: ['0'] };
  const errorStream = await pf.spdy!.createStream({ streamtype: ['error'], ...headers });
  await errorStream.end();
  const dataStream = await pf.spdy!.createStream({ streamtype: ['data'], ...headers });
  await dataStream.write('forwarded\n');
  await dataStream.end();
  const read = (stream: typeof dataStream) =>
    new Promise<string>((resolve) => {
      let text = '';
      stream.input.on('data', (chunk: Buffer) => (text += chunk.toString()));
      stream.input.once('end', () => resolve(text));
    });
  t.same(await Promise.all([read(dataStream), read(errorStream)]), ['forwarded\n', ''], 'echoed by the listener in the pod');
  await pf.spdy!.close();
  const run = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    httpsRequest({ host: '127.0.0.1', port, path: '/run/default/talker-server-node/app?cmd=echo%20ran', method: 'POST', rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    })
      .on('error', reject)
      .end();
  });
  t.same(run, { status: 200, body: 'ran\n' }, '/run goes through ExecSync');
});

t.test('unknown pods and containers are 404s; a bad query is a 400 naming the parameter', async (t) => {
  t.same(await get('/containerLogs/default/nope/app'), { status: 404, body: 'pod "nope" does not exist' });
  t.same(await get('/containerLogs/default/talker-server-node/nope'), { status: 404, body: 'container "nope" not found in pod "talker-server-node"' });
  const bad = await get('/containerLogs/default/talker-server-node/app?limitBytes=0');
  t.equal(bad.status, 400);
  t.match(bad.body, /^limitBytes: Invalid value: 0/);
});

t.test('no secure server without an authentication method; the read-only port needs none', async (t) => {
  const bare = resolveConfig(
    parseFlags([`--root-dir=${join(dir, 'root2')}`, `--pod-logs-dir=${join(dir, 'logs2')}`, '--hostname-override=bare-node', '--healthz-port=0', '--address=127.0.0.1', '--read-only-port=0', '--port=0']),
  );
  const readOnlyPort = await freePort();
  const child = container.createChildContainer();
  registerKubeletDeps(child, { ...bare, readOnlyPort });
  child.register(Tokens.Logger, { useValue: noopLogger });
  const stop = new AbortController();
  const other = await startKubelet(child, stop.signal);
  t.teardown(async () => {
    stop.abort();
    await other.done;
  });
  t.equal(other.port, undefined, 'no secure server');
  t.equal(other.readOnlyPort, readOnlyPort);
  const pods = await new Promise<string>((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port: readOnlyPort, path: '/pods' }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
  t.equal(JSON.parse(pods).kind, 'PodList');
});

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
