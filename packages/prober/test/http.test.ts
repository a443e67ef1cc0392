import t from 'tap';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { httpProbe, Prober, DEFAULT_PROBE_USER_AGENT, probeUserAgent } from '../src/index.js';
import { RecordingEventRecorder } from '@kubelet-ts/core/testing';
import { makePod } from './helpers.js';

function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

async function closedPort(): Promise<number> {
  const server = createTcpServer();
  const port = await listen(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const timers = new Set<NodeJS.Timeout>();
let port = 0;
const seenHeaders: Array<IncomingMessage['headers']> = [];
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const path = (req.url ?? '/').split('?')[0];
  switch (path) {
    case '/ok':
      res.end('ok body');
      return;
    case '/created':
      res.writeHead(201).end('created');
      return;
    case '/headers':
      seenHeaders.push(req.headers);
      res.end('headers');
      return;
    case '/redirect-relative':
      res.writeHead(302, { location: '/ok' }).end('moved');
      return;
    case '/redirect-absolute':
      res.writeHead(301, { location: `http://127.0.0.1:${port}/headers` }).end('moved');
      return;
    case '/redirect-other-host':
      // localhost is another host name than 127.0.0.1 even though it is the same server.
      res.writeHead(302, { location: `http://localhost:${port}/ok` }).end('elsewhere');
      return;
    case '/redirect-loop':
      res.writeHead(302, { location: '/redirect-loop' }).end();
      return;
    case '/not-modified':
      res.writeHead(304).end();
      return;
    case '/error':
      res.writeHead(500).end('internal secret details');
      return;
    case '/missing':
      res.writeHead(404).end('nope');
      return;
    case '/big':
      res.end(Buffer.alloc(100 * 1024, 'x'));
      return;
    case '/slow': {
      const timer = setTimeout(() => res.end('late'), 3000);
      timers.add(timer);
      return;
    }
    case '/slow-body': {
      res.writeHead(200, { 'content-length': '10' });
      res.write('12345');
      const timer = setTimeout(() => res.end('67890'), 3000);
      timers.add(timer);
      return;
    }
    default:
      res.writeHead(404).end();
  }
});

// A server answering with a status line Go and undici both reject.
const sockets = new Set<Socket>();
const badStatus = createTcpServer((socket) => {
  sockets.add(socket);
  socket.on('error', () => undefined);
  socket.once('data', () => socket.end('HTTP/1.1 abc OK\r\ncontent-length: 0\r\n\r\n'));
});
let badPort = 0;

t.before(async () => {
  port = await listen(server);
  badPort = await listen(badStatus);
});
t.teardown(async () => {
  for (const timer of timers) clearTimeout(timer);
  server.closeAllConnections();
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => server.close(resolve));
  await new Promise((resolve) => badStatus.close(resolve));
});

const url = (path: string): string => `http://127.0.0.1:${port}${path}`;

t.test('2xx succeeds with the body as output', async (t) => {
  t.same(await httpProbe({ url: url('/ok') }), { result: 'success', output: 'ok body' });
  t.same(await httpProbe({ url: url('/created') }), { result: 'success', output: 'created' });
});

t.test('non-2xx/3xx fails with the status code and no body', async (t) => {
  t.same(await httpProbe({ url: url('/error') }), { result: 'failure', output: 'HTTP probe failed with statuscode: 500' });
  t.same(await httpProbe({ url: url('/missing') }), { result: 'failure', output: 'HTTP probe failed with statuscode: 404' });
});

t.test('redirects to the same host are followed', async (t) => {
  t.same(await httpProbe({ url: url('/redirect-relative') }), { result: 'success', output: 'ok body' });
  const before = seenHeaders.length;
  t.same(await httpProbe({ url: url('/redirect-absolute'), headers: [{ name: 'X-Custom', value: 'kept' }] }), { result: 'success', output: 'headers' });
  t.equal(seenHeaders[before]['x-custom'], 'kept', 'headers carry over to a same-host redirect');
});

t.test('a redirect to another host is not followed: success with a warning', async (t) => {
  t.same(await httpProbe({ url: url('/redirect-other-host') }), { result: 'warning', output: 'Probe terminated redirects, Response body: elsewhere' });
  t.same(await httpProbe({ url: url('/redirect-other-host'), followNonLocalRedirects: true }), { result: 'success', output: 'ok body' });
  t.same(await httpProbe({ url: url('/not-modified') }), { result: 'warning', output: 'Probe terminated redirects, Response body: ' });
});

t.test('a redirect loop stops after 10 redirects', async (t) => {
  t.same(await httpProbe({ url: url('/redirect-loop') }), { result: 'failure', output: `Get "${url('/redirect-loop')}": stopped after 10 redirects` });
});

t.test('headers: User-Agent kube-probe/<version>, Accept */*, custom headers and Host', async (t) => {
  seenHeaders.length = 0;
  await httpProbe({ url: url('/headers') });
  t.equal(seenHeaders[0]['user-agent'], DEFAULT_PROBE_USER_AGENT);
  t.match(DEFAULT_PROBE_USER_AGENT, /^kube-probe\/\d+\.\d+$/);
  t.equal(seenHeaders[0].accept, '*/*');
  t.equal(seenHeaders[0]['accept-encoding'], undefined, 'no compression requested (Go DisableCompression)');
  t.equal(seenHeaders[0].connection, 'close', 'no keep-alive (Go DisableKeepAlives)');

  await httpProbe({
    url: url('/headers'),
    userAgent: probeUserAgent('v1.31.4'),
    headers: [
      { name: 'X-Custom', value: 'a' },
      { name: 'X-Custom', value: 'b' },
      { name: 'Host', value: 'example.test' },
      { name: 'Accept', value: '' },
    ],
  });
  t.equal(seenHeaders[1]['user-agent'], 'kube-probe/1.31');
  t.equal(seenHeaders[1]['x-custom'], 'a, b');
  t.equal(seenHeaders[1].host, 'example.test');
  t.equal(seenHeaders[1].accept, undefined, 'an empty Accept removes it');

  await httpProbe({ url: url('/headers'), headers: { 'User-Agent': 'mine', Accept: 'text/plain' } });
  t.equal(seenHeaders[2]['user-agent'], 'mine');
  t.equal(seenHeaders[2].accept, 'text/plain');
});

t.test('the body is read up to 10 KiB', async (t) => {
  const res = await httpProbe({ url: url('/big') });
  t.equal(res.result, 'success');
  t.equal(res.output.length, 10 * 1024);
});

t.test('a slow response past the timeout fails', async (t) => {
  const start = Date.now();
  t.same(await httpProbe({ url: url('/slow'), timeoutSeconds: 1 }), {
    result: 'failure',
    output: `Get "${url('/slow')}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
  });
  t.ok(Date.now() - start < 2500, 'gave up at the timeout');
  t.same(await httpProbe({ url: url('/slow-body'), timeoutSeconds: 1 }), {
    result: 'failure',
    output: `Get "${url('/slow-body')}": context deadline exceeded (Client.Timeout or context cancellation while reading body)`,
  });
});

t.test('connection refused and a malformed status line fail with Go-style messages', async (t) => {
  const p = await closedPort();
  t.same(await httpProbe({ url: `http://127.0.0.1:${p}/healthz` }), {
    result: 'failure',
    output: `Get "http://127.0.0.1:${p}/healthz": dial tcp 127.0.0.1:${p}: connect: connection refused`,
  });
  const bad = await httpProbe({ url: `http://127.0.0.1:${badPort}/` });
  t.equal(bad.result, 'failure');
  t.equal(bad.output, `Get "http://127.0.0.1:${badPort}/": net/http: HTTP/1.x transport connection broken: malformed HTTP status code`);
});

t.test('Prober: httpGet spec with pod IP, port name, path and headers; events for failures and warnings', async (t) => {
  const recorder = new RecordingEventRecorder();
  const prober = new Prober({ recorder, kubeletVersion: 'v1.30.2' });
  t.teardown(() => prober.close());
  const container = { name: 'app', ports: [{ name: 'http', containerPort: port }] };
  const pod = makePod([container]);
  const status = { podIP: '127.0.0.1' };
  const spec = (path: string, extra: object = {}) => ({ httpGet: { port: 'http', path, httpHeaders: [{ name: 'X-Probe', value: '1' }], ...extra }, timeoutSeconds: 1 });

  seenHeaders.length = 0;
  t.equal(await prober.probe('readiness', pod, status, { ...container, readinessProbe: spec('/headers') }, 'containerd://c1'), 'success');
  t.equal(seenHeaders[0]['x-probe'], '1');
  t.equal(seenHeaders[0]['user-agent'], 'kube-probe/1.30');
  t.equal(seenHeaders[0].host, `127.0.0.1:${port}`);

  t.equal(await prober.probe('liveness', pod, status, { ...container, livenessProbe: spec('/error') }, 'containerd://c1'), 'failure');
  t.equal(await prober.probe('readiness', pod, status, { ...container, readinessProbe: spec('/redirect-other-host') }, 'containerd://c1'), 'success');
  t.equal(await prober.probe('startup', pod, status, { ...container, startupProbe: spec('/ok', { port: 'metrics' }) }, 'containerd://c1'), 'failure');
  t.equal(await prober.probe('readiness', pod, status, { ...container, readinessProbe: spec('/ok', { host: '127.0.0.1', port, scheme: 'HTTP' }) }, 'containerd://c1'), 'success');
  t.same(recorder.events.map((e) => [e.reason, e.message, e.details?.fieldPath]), [
    ['Unhealthy', 'Liveness probe failed: HTTP probe failed with statuscode: 500', 'spec.containers{app}'],
    ['ProbeWarning', 'Readiness probe warning: Probe terminated redirects, Response body: elsewhere', 'spec.containers{app}'],
    ['Unhealthy', 'Startup probe errored: strconv.Atoi: parsing "metrics": invalid syntax', 'spec.containers{app}'],
  ]);
});
