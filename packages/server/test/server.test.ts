import t, { type Test } from 'tap';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer, connect, type Socket } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import { noopLogger } from '@kubelet-ts/core';
import type { LogOptions } from '@kubelet-ts/container-logs';
import { HostNotFoundError, KubeletServer, generateSelfSignedCertKey, metricsPathBucket, type HttpRequestLabels, type RequestGate, type ServerHost, type StreamOptions } from '../src/index.js';

const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
  spec: { containers: [{ name: 'app', image: 'busybox' }], initContainers: [{ name: 'init', image: 'busybox' }] },
};

interface Calls {
  exec: Array<{ cmd: string[]; streams: StreamOptions; container: string }>;
  logs: Array<{ container: string; options: LogOptions }>;
}

function fakeHost(overrides: Partial<ServerHost> = {}, streamingUrl = 'http://127.0.0.1:1/exec/token'): { host: ServerHost; calls: Calls } {
  const calls: Calls = { exec: [], logs: [] };
  const host: ServerHost = {
    healthChecks: [{ name: 'syncloop', check: () => undefined }],
    getPods: () => [{ metadata: { name: 'web' } }],
    getRunningPods: async () => [{ metadata: { name: 'running' } }],
    getPodByName: (namespace, name) => (namespace === 'default' && name === 'web' ? pod : undefined),
    getConfigz: () => ({ port: 10250 }),
    getMachineInfo: async () => ({ num_cores: 2 }),
    getContainerLogs: async (_pod, container, options, out: Writable) => {
      calls.logs.push({ container, options });
      out.write('line 1\n');
      out.write('line 2\n');
    },
    getExec: async (_pod, _uid, container, cmd, streams) => {
      calls.exec.push({ cmd, streams, container });
      return streamingUrl;
    },
    getAttach: async () => streamingUrl,
    getPortForward: async () => streamingUrl,
    runInContainer: async (_pod, _uid, _container, cmd) => Buffer.from(`ran ${cmd.join(' ')}`),
    getStatsSummary: async (only) => ({ node: { nodeName: 'n1' }, onlyCpuAndMemory: only }),
    resourceMetrics: async () => 'node_cpu_usage_seconds_total 1\n',
    ...overrides,
  };
  return { host, calls };
}

const allowAll: RequestGate = { checkRequest: async () => true };

async function started(t: Test, options: Partial<ConstructorParameters<typeof KubeletServer>[0]> & { host: ServerHost }): Promise<number> {
  const server = new KubeletServer({ address: '127.0.0.1', port: 0, logger: noopLogger, gate: allowAll, ...options });
  const port = await server.start();
  t.teardown(() => server.stop());
  return port;
}

function get(port: number, path: string, method = 'GET', body?: string): Promise<{ status: number; body: string; headers: IncomingMessage['headers'] }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString(), headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

t.test('default handlers: pods, runningpods, configz, stats, healthz', async (t) => {
  const { host } = fakeHost();
  const port = await started(t, { host });
  const pods = await get(port, '/pods');
  t.equal(pods.status, 200);
  t.equal(pods.headers['content-type'], 'application/json');
  t.same(JSON.parse(pods.body), { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [{ metadata: { name: 'web' } }] });
  t.same(JSON.parse((await get(port, '/runningpods/')).body).items, [{ metadata: { name: 'running' } }]);
  t.same(JSON.parse((await get(port, '/configz')).body), { kubeletconfig: { port: 10250 } });
  t.equal((await get(port, '/spec/')).status, 404, 'Go 1.20 serves /spec/ only with enableCAdvisorJSONEndpoints');
  t.same(JSON.parse((await get(port, '/stats/summary')).body), { node: { nodeName: 'n1' }, onlyCpuAndMemory: false });
  t.same(JSON.parse((await get(port, '/stats/summary?only_cpu_and_memory=true')).body).onlyCpuAndMemory, true);
  t.same(JSON.parse((await get(port, '/stats/summary', 'POST', '{"only_cpu_and_memory":true}')).body).onlyCpuAndMemory, true);
  t.equal((await get(port, '/stats/summary', 'POST', '{bad')).status, 400);
  t.equal((await get(port, '/healthz')).body, 'ok');
  t.equal((await get(port, '/healthz/syncloop')).body, 'ok');
  const resource = await get(port, '/metrics/resource');
  t.equal(resource.body, 'node_cpu_usage_seconds_total 1\n');
  t.match(resource.headers['content-type'], /text\/plain; version=0.0.4/);
  t.equal((await get(port, '/nothing')).status, 404);
  t.equal((await get(port, '/pods', 'DELETE')).status, 405);
});

t.test('metrics and request accounting', async (t) => {
  const seen: HttpRequestLabels[] = [];
  let ended = 0;
  const { host } = fakeHost();
  const port = await started(t, {
    host,
    metrics: { contentType: 'text/plain; version=0.0.4; charset=utf-8', metrics: async () => 'kubelet_node_name{node="n1"} 1\n' },
    onHttpRequest: (labels) => {
      seen.push(labels);
      return () => ended++;
    },
  });
  t.equal((await get(port, '/metrics')).body, 'kubelet_node_name{node="n1"} 1\n');
  t.equal((await get(port, '/metrics/probes')).status, 404, 'no probe registry given');
  await get(port, '/exec/default/web/app?command=ls&output=1');
  t.same(seen.map((l) => [l.method, l.path, l.serverType, l.longRunning]), [
    ['GET', 'metrics', 'readwrite', false],
    ['GET', 'metrics/probes', 'readwrite', false],
    ['GET', 'exec', 'readwrite', true],
  ]);
  t.equal(ended, 3);
  t.equal(metricsPathBucket('/metrics/cadvisor'), 'metrics/cadvisor');
  t.equal(metricsPathBucket('/containerLogs/a/b/c'), 'containerLogs');
  t.equal(metricsPathBucket('/secret'), 'other');
});

t.test('the gate answers before any route', async (t) => {
  const { host, calls } = fakeHost();
  const gate: RequestGate = {
    checkRequest: async (_request, response) => {
      response.writeHead(401, { 'content-type': 'text/plain; charset=utf-8' }).end('Unauthorized');
      return false;
    },
  };
  const port = await started(t, { host, gate });
  const res = await get(port, '/containerLogs/default/web/app');
  t.equal(res.status, 401);
  t.equal(res.body, 'Unauthorized');
  t.equal(calls.logs.length, 0);
});

t.test('containerLogs: options, bad input and unknown pods or containers', async (t) => {
  const { host, calls } = fakeHost();
  const port = await started(t, { host });
  const ok = await get(port, '/containerLogs/default/web/app?tailLines=5&timestamps=true');
  t.equal(ok.status, 200);
  t.equal(ok.body, 'line 1\nline 2\n');
  t.match(calls.logs[0], { container: 'app', options: { tailLines: 5, timestamps: true, follow: false } });
  await get(port, '/containerLogs/default/web/init?tail=all');
  t.equal(calls.logs[1]!.options.tailLines, undefined, 'tail=all means the whole log');
  await get(port, '/containerLogs/default/web/app?tail=3');
  t.equal(calls.logs[2]!.options.tailLines, 3, 'the legacy tail parameter');

  const negative = await get(port, '/containerLogs/default/web/app?tailLines=-1');
  t.equal(negative.status, 400);
  t.match(negative.body, /^tailLines: Invalid value: -1/);
  const badTime = await get(port, '/containerLogs/default/web/app?sinceTime=yesterday');
  t.equal(badTime.status, 400);
  t.match(badTime.body, /sinceTime/);
  const noPod = await get(port, '/containerLogs/default/nope/app');
  t.equal(noPod.status, 404);
  t.equal(noPod.body, 'pod "nope" does not exist');
  const noContainer = await get(port, '/containerLogs/default/web/nope');
  t.equal(noContainer.status, 404);
  t.equal(noContainer.body, 'container "nope" not found in pod "web"');
  const unclean = await get(port, '/containerLogs/default//app');
  t.equal(unclean.status, 301, "Go's mux cleans the path before any handler: an empty pod name never reaches it");
  t.equal(unclean.headers.location, '/containerLogs/default/app');
});

t.test('containerLogs: an error before any output is a 400 with its message', async (t) => {
  const { host } = fakeHost({
    getContainerLogs: async () => {
      throw new Error('previous terminated container "app" in pod "web" not found');
    },
  });
  const port = await started(t, { host });
  const res = await get(port, '/containerLogs/default/web/app?previous=true');
  t.equal(res.status, 400);
  t.equal(res.body, 'previous terminated container "app" in pod "web" not found');
});

t.test('containerLogs: a client that goes away aborts the read', async (t) => {
  let aborted!: () => void;
  const abortedPromise = new Promise<void>((resolve) => (aborted = resolve));
  const { host } = fakeHost({
    getContainerLogs: async (_pod, _container, _options, out, signal) => {
      out.write('first\n');
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      aborted();
    },
  });
  const port = await started(t, { host });
  await new Promise<void>((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/containerLogs/default/web/app?follow=true' }, (res) => {
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.end();
  });
  await abortedPromise;
  t.pass('the host saw the abort');
});

/** A stand-in for the runtime's streaming server: switches protocols, then echoes. */
async function echoStreamingServer(t: Test, status = 101): Promise<{ url: string; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((socket: Socket) => {
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      requests.push(head.slice(0, end));
      if (status !== 101) {
        socket.end(`HTTP/1.1 ${status} Not Found\r\nContent-Length: 13\r\nConnection: close\r\n\r\nno such token`);
        return;
      }
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
      const rest = head.slice(end + 4);
      if (rest) socket.write(rest);
      socket.pipe(socket);
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/exec/abc123`, requests };
}

function upgrade(port: number, path: string, extraHeaders = ''): Promise<{ socket: Socket; head: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nAuthorization: Bearer secret\r\n${extraHeaders}\r\n`);
    });
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      resolve({ socket, head });
    };
    socket.on('data', onData);
    socket.on('error', reject);
  });
}

t.test('exec: the upgraded connection is proxied to the runtime streaming URL', async (t) => {
  const backend = await echoStreamingServer(t);
  const { host, calls } = fakeHost({}, backend.url);
  const port = await started(t, { host });
  const { socket, head } = await upgrade(port, '/exec/default/web/app?command=sh&command=-c&command=echo%20hi&input=1&output=1&tty=1&error=1');
  t.match(head, /^HTTP\/1.1 101/);
  t.same(calls.exec[0], { cmd: ['sh', '-c', 'echo hi'], container: 'app', streams: { stdin: true, stdout: true, stderr: false, tty: true } });
  const forwarded = backend.requests[0]!;
  t.match(forwarded, /^POST \/exec\/abc123 HTTP\/1.1/);
  t.match(forwarded, /Upgrade: SPDY\/3.1/);
  t.match(forwarded, /X-Stream-Protocol-Version: v4.channel.k8s.io/);
  t.notMatch(forwarded, /Authorization/i, 'the client credential stays with the kubelet');
  const echoed = new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString())));
  socket.write('ping');
  t.equal(await echoed, 'ping');
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.destroy();
  await closed;
});

t.test('exec: a runtime error status is passed through; no upgrade is a 500; bad options a 400', async (t) => {
  const backend = await echoStreamingServer(t, 404);
  const { host } = fakeHost({}, backend.url);
  const port = await started(t, { host });
  const { head } = await upgrade(port, '/exec/default/web/app?command=ls&output=1');
  t.match(head, /^HTTP\/1.1 404/);
  const plain = await get(port, '/exec/default/web/app?command=ls&output=1', 'POST');
  t.equal(plain.status, 500);
  t.equal(plain.body, 'Upgrade request required');
  const noStreams = await get(port, '/exec/default/web/app?command=ls', 'POST');
  t.equal(noStreams.status, 400);
  t.equal(noStreams.body, 'you must specify at least 1 of stdin, stdout, stderr');
  const noPod = await upgrade(port, '/exec/default/nope/app?command=ls&output=1');
  t.match(noPod.head, /^HTTP\/1.1 404/);
});

t.test('exec: a missing container maps the runtime NotFound to 404 and other failures to 500', async (t) => {
  const notFound = new HostNotFoundError('container not found ("nope")');
  const { host } = fakeHost({
    getExec: async () => {
      throw notFound;
    },
    getAttach: async () => {
      throw new Error('runtime down');
    },
  });
  const port = await started(t, { host });
  const missing = await upgrade(port, '/exec/default/web/nope?command=ls&output=1');
  t.match(missing.head, /^HTTP\/1.1 404/);
  const broken = await upgrade(port, '/attach/default/web/app?output=1');
  t.match(broken.head, /^HTTP\/1.1 500/);
});

t.test('portForward: WebSocket clients must name ports; pod uid must match', async (t) => {
  const backend = await echoStreamingServer(t);
  const { host } = fakeHost({}, backend.url);
  const port = await started(t, { host });
  const ws = await upgrade(port, '/portForward/default/web', '');
  t.match(ws.head, /^HTTP\/1.1 101/, 'SPDY: ports travel in stream headers');
  ws.socket.destroy();
  const missing = await new Promise<string>((resolve) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('GET /portForward/default/web HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: x\r\n\r\n'),
    );
    socket.once('data', (chunk: Buffer) => resolve(chunk.toString()));
  });
  t.match(missing, /^HTTP\/1.1 400/);
  t.match(missing, /query parameter "port" is required/);
  const wrongUid = await upgrade(port, '/portForward/default/web/other-uid');
  t.match(wrongUid.head, /^HTTP\/1.1 404/);
});

t.test('run: POST runs a command and answers its output', async (t) => {
  const { host } = fakeHost();
  const port = await started(t, { host });
  const res = await get(port, '/run/default/web/app?cmd=echo%20hello', 'POST');
  t.equal(res.status, 200);
  t.equal(res.body, 'ran echo hello');
});

t.test('/logs/ serves the node log directory and stays inside it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'node-logs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'pods'));
  writeFileSync(join(dir, 'syslog'), 'boot\n');
  writeFileSync(join(tmpdir(), 'outside-secret'), 'secret');
  symlinkSync(join(tmpdir(), 'outside-secret'), join(dir, 'escape'));
  const { host } = fakeHost();
  const port = await started(t, { host, nodeLogDir: dir });
  const listing = await get(port, '/logs/');
  t.equal(listing.body, '<pre>\n<a href="escape">escape</a>\n<a href="pods/">pods/</a>\n<a href="syslog">syslog</a>\n</pre>\n');
  t.equal((await get(port, '/logs/syslog')).body, 'boot\n');
  t.equal((await get(port, '/logs/pods')).status, 301);
  t.equal((await get(port, '/logs/escape')).status, 404, 'a symlink out of the directory is not followed');
  for (const escape of ['/logs/../../etc/passwd', '/logs/%2e%2e/%2e%2e/etc/passwd']) {
    const res = await get(port, escape);
    t.same([res.status, res.headers.location], [301, '/etc/passwd'], `${escape}: Go's mux redirects to the clean path, outside /logs/`);
  }
  t.equal((await get(port, '/etc/passwd')).status, 404);
});

t.test('debugging handlers off: Go answers 405 with its message', async (t) => {
  const { host } = fakeHost();
  const port = await started(t, { host, enableDebuggingHandlers: false });
  const res = await get(port, '/containerLogs/default/web/app');
  t.equal(res.status, 405);
  t.equal(res.body, 'Debug endpoints are disabled.');
});

t.test('the read-only server serves only the default handlers, without a gate', async (t) => {
  const { host } = fakeHost();
  const server = new KubeletServer({ host, address: '127.0.0.1', port: 0, readOnly: true, logger: noopLogger });
  const port = await server.start();
  t.teardown(() => server.stop());
  t.equal((await get(port, '/pods')).status, 200);
  t.equal((await get(port, '/healthz')).status, 200);
  t.equal((await get(port, '/spec/')).status, 404);
  t.equal((await get(port, '/containerLogs/default/web/app')).status, 404);
  t.equal((await get(port, '/exec/default/web/app?output=1')).status, 404);
  t.throws(() => new KubeletServer({ host, address: '127.0.0.1', port: 0, logger: noopLogger }), /needs authentication/);
});

t.test('TLS: the secure server serves HTTPS with the given pair', async (t) => {
  const { host } = fakeHost();
  const pair = generateSelfSignedCertKey('127.0.0.1');
  const port = await started(t, { host, tls: { certPem: pair.certPem, keyPem: pair.keyPem, minVersion: 'TLSv1.2' } });
  const ca = pair.certPem.slice(pair.certPem.indexOf('-----END CERTIFICATE-----') + '-----END CERTIFICATE-----\n'.length);
  const body = await new Promise<string>((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path: '/healthz', ca }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
  t.equal(body, 'ok', 'the certificate verifies against its CA for the IP SAN');
});

t.test('TLS: no certificate until one is set, then a rotated one for new connections', async (t) => {
  const { host } = fakeHost();
  const { connect } = await import('node:tls');
  const server = new KubeletServer({ address: '127.0.0.1', port: 0, logger: noopLogger, gate: allowAll, host, tls: {} });
  const port = await server.start();
  t.teardown(() => server.stop());
  const peerSerial = () =>
    new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
        resolve(socket.getPeerX509Certificate()?.serialNumber ?? '');
        socket.end();
      });
      socket.once('error', reject);
    });
  await t.rejects(peerSerial(), 'handshakes fail while there is no serving certificate');
  const first = generateSelfSignedCertKey('127.0.0.1');
  server.setCertificate(first.certPem, first.keyPem);
  const { X509Certificate } = await import('node:crypto');
  t.equal(await peerSerial(), new X509Certificate(first.certPem).serialNumber);
  const second = generateSelfSignedCertKey('127.0.0.1');
  server.setCertificate(second.certPem, second.keyPem);
  t.equal(await peerSerial(), new X509Certificate(second.certPem).serialNumber);
  const readOnly = new KubeletServer({ address: '127.0.0.1', port: 0, logger: noopLogger, host, readOnly: true });
  t.throws(() => readOnly.setCertificate(first.certPem, first.keyPem), /the read-only server has no certificate/);
});

t.test('self-signed pairs always parse: serial numbers are minimal DER integers, whatever their leading bytes', async (t) => {
  const { X509Certificate } = await import('node:crypto');
  const { createSecureContext } = await import('node:tls');
  for (let i = 0; i < 20; i++) {
    const pair = generateSelfSignedCertKey('node-a', ['10.0.0.1']);
    const leaf = new X509Certificate(pair.certPem);
    t.ok(/^[0-9A-F]{32}$/.test(leaf.serialNumber) && !leaf.serialNumber.startsWith('00'), `serial ${leaf.serialNumber} is 16 bytes, minimal`);
    createSecureContext({ cert: pair.certPem, key: pair.keyPem });
  }
});
