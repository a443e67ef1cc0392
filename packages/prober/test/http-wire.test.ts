// HTTP probes over node:net/tls (no undici): the response framings, Go's error texts for malformed
// responses, one connection per probe closed by the prober, the injected clock for the timeout, and
// the same results as the undici transport for the cases both handle.
import t from 'tap';
import { createRequire } from 'node:module';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { FakeClock } from '@kubelet-ts/core/testing';
import { createProbeAgent, httpProbe, Prober } from '../src/index.js';
import { requestHead } from '../src/http-wire.js';
import { makePod } from './helpers.js';

function listen(server: TcpServer | ReturnType<typeof createServer>): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

const sockets = new Set<Socket>();
/** A TCP server that answers every request with `reply` (bytes, or a function of the socket), recording requests. */
async function rawServer(reply: string | Buffer | ((socket: Socket, request: string) => void)): Promise<{ port: number; requests: string[]; connections: () => number }> {
  const requests: string[] = [];
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    let text = '';
    socket.on('data', (data) => {
      text += data.toString('latin1');
      if (!text.includes('\r\n\r\n')) return;
      requests.push(text);
      if (typeof reply === 'function') reply(socket, text);
      else socket.end(reply);
    });
  });
  const port = await listen(server);
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port, requests, connections: () => connections };
}
t.teardown(() => {
  for (const s of sockets) s.destroy();
});

t.test('response framings: content-length in pieces, chunked, until close, 1xx skipped, 204, bare LF', async (t) => {
  const pieces = await rawServer((socket) => {
    socket.write('HTTP/1.1 200 OK\r\nContent-');
    setTimeout(() => socket.write('Length: 11\r\n\r\nhello'), 5);
    setTimeout(() => socket.end(' world'), 10);
  });
  t.same(await httpProbe({ url: `http://127.0.0.1:${pieces.port}/` }), { result: 'success', output: 'hello world' });

  const chunked = await rawServer('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n');
  t.same(await httpProbe({ url: `http://127.0.0.1:${chunked.port}/` }), { result: 'success', output: 'hello world' });

  const untilClose = await rawServer('HTTP/1.0 200 OK\r\nServer: x\r\n\r\nall of it');
  t.same(await httpProbe({ url: `http://127.0.0.1:${untilClose.port}/` }), { result: 'success', output: 'all of it' });

  const informational = await rawServer('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone');
  t.same(await httpProbe({ url: `http://127.0.0.1:${informational.port}/` }), { result: 'success', output: 'done' });

  // A 204 has no body even if the server keeps the connection open.
  const noContent = await rawServer((socket) => socket.write('HTTP/1.1 204 No Content\r\n\r\n'));
  t.same(await httpProbe({ url: `http://127.0.0.1:${noContent.port}/` }), { result: 'success', output: '' });

  const bareLF = await rawServer('HTTP/1.1 200 OK\nContent-Length: 2\n\nok');
  t.same(await httpProbe({ url: `http://127.0.0.1:${bareLF.port}/` }), { result: 'success', output: 'ok' });

  // Chunked over a server that never closes: the final chunk ends the exchange.
  const chunkedOpen = await rawServer((socket) => socket.write('HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nbad\r\n0\r\n\r\n'));
  t.same(await httpProbe({ url: `http://127.0.0.1:${chunkedOpen.port}/` }), { result: 'failure', output: 'HTTP probe failed with statuscode: 500' });
});

t.test('the body is cut at 10 KiB and the connection closed there, not waited out', async (t) => {
  const endless = await rawServer((socket) => {
    socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${1 << 20}\r\n\r\n`);
    socket.write(Buffer.alloc(12 * 1024, 'y'));
  });
  const clock = new FakeClock();
  const res = await httpProbe({ url: `http://127.0.0.1:${endless.port}/`, clock });
  t.equal(res.result, 'success');
  t.equal(res.output, 'y'.repeat(10 * 1024));
  t.equal(clock.pendingTimers(), 0, 'the timeout timer is cancelled');
});

t.test('malformed responses fail with Go transport texts', async (t) => {
  const cases: Array<[string, string]> = [
    ['HTTP/1.1 abc OK\r\n\r\n', 'net/http: HTTP/1.x transport connection broken: malformed HTTP status code'],
    ['HTTP/1.1 2000 OK\r\n\r\n', 'net/http: HTTP/1.x transport connection broken: malformed HTTP status code'],
    ['FOO/1.1 200 OK\r\n\r\n', 'net/http: HTTP/1.x transport connection broken: malformed HTTP version "FOO/1.1"'],
    ['garbage\r\n\r\n', 'net/http: HTTP/1.x transport connection broken: malformed HTTP response "garbage"'],
    ['HTTP/1.1 200 OK\r\nno colon here\r\n\r\n', 'net/http: HTTP/1.x transport connection broken: malformed MIME header line: no colon here'],
    ['HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab', 'net/http: HTTP/1.x transport connection broken: http: message cannot contain multiple Content-Length headers; got ["1","2"]'],
    ['HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n', 'net/http: HTTP/1.x transport connection broken: bad Content-Length "x"'],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n', 'net/http: HTTP/1.x transport connection broken: unsupported transfer encoding: "gzip"'],
    ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 'net/http: HTTP/1.x transport connection broken: malformed chunked encoding'],
    ['', 'EOF'],
    ['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort', 'EOF'],
  ];
  for (const [reply, text] of cases) {
    const server = await rawServer(reply);
    t.same(await httpProbe({ url: `http://127.0.0.1:${server.port}/x` }), { result: 'failure', output: `Get "http://127.0.0.1:${server.port}/x": ${text}` }, JSON.stringify(reply));
  }
  const reset = await rawServer((socket) => socket.resetAndDestroy());
  t.same(await httpProbe({ url: `http://127.0.0.1:${reset.port}/` }), { result: 'failure', output: `Get "http://127.0.0.1:${reset.port}/": read: connection reset by peer` });
});

t.test('the request: one GET per connection with Connection: close, Go headers, the first non-empty Host', async (t) => {
  const server = await rawServer('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
  const res = await httpProbe({
    url: `http://127.0.0.1:${server.port}/p?q=1`,
    headers: [
      { name: 'Host', value: '' },
      { name: 'X-A', value: '1' },
      { name: 'Host', value: 'first.test' },
      { name: 'Host', value: 'second.test' },
      { name: 'Connection', value: 'keep-alive' },
    ],
  });
  t.equal(res.result, 'success');
  const lines = server.requests[0].split('\r\n');
  t.equal(lines[0], 'GET /p?q=1 HTTP/1.1');
  t.same(lines.filter((l) => /^host:/i.test(l)), ['Host: first.test']);
  t.same(lines.filter((l) => /^connection:/i.test(l)), ['Connection: close']);
  t.ok(lines.includes('X-A: 1'));
  t.equal(server.connections(), 1);

  const plain = await rawServer('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
  await httpProbe({ url: `http://127.0.0.1:${plain.port}/` });
  t.ok(plain.requests[0].includes(`\r\nHost: 127.0.0.1:${plain.port}\r\n`), 'Host from the URL');
});

t.test('invalid header names and values fail with Go texts, before connecting', async (t) => {
  const server = await rawServer('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
  const url = `http://127.0.0.1:${server.port}/`;
  t.same(await httpProbe({ url, headers: [{ name: 'x-bad', value: 'a\r\nInjected: 1' }] }), { result: 'failure', output: `Get "${url}": net/http: invalid header field value for "X-Bad"` });
  t.same(await httpProbe({ url, headers: [{ name: 'bad name', value: 'v' }] }), { result: 'failure', output: `Get "${url}": net/http: invalid header field name "bad name"` });
  t.equal(server.connections(), 0);
  t.same(requestHead(new URL('http://[::1]:8080/a b'), [['Accept', '*/*']]), { head: 'GET /a%20b HTTP/1.1\r\nHost: [::1]:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n' });
});

t.test('the timeout runs on the injected clock; the outer signal cancels', async (t) => {
  const silent = await rawServer(() => undefined);
  const clock = new FakeClock();
  const url = `http://127.0.0.1:${silent.port}/`;
  const pending = httpProbe({ url, clock, timeoutSeconds: 5 });
  while (silent.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  t.equal(clock.pendingTimers(), 1);
  await clock.advance(5000);
  t.same(await pending, { result: 'failure', output: `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)` });

  const halfBody = await rawServer((socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab'));
  const bodyUrl = `http://127.0.0.1:${halfBody.port}/`;
  const inBody = httpProbe({ url: bodyUrl, clock, timeoutSeconds: 1 });
  while (halfBody.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  await new Promise((resolve) => setTimeout(resolve, 20));
  await clock.advance(1000);
  t.same(await inBody, { result: 'failure', output: `Get "${bodyUrl}": context deadline exceeded (Client.Timeout or context cancellation while reading body)` });

  const controller = new AbortController();
  const aborted = httpProbe({ url, clock, signal: controller.signal });
  controller.abort();
  t.same(await aborted, { result: 'failure', output: `Get "${url}": This operation was aborted` });
});

t.test('the same results as through an undici dispatcher, and undici is not loaded without one', async (t) => {
  const cache = createRequire(import.meta.url).cache;
  const undiciLoaded = (): boolean => Object.keys(cache).some((k) => /[\\/]undici[\\/]/.test(k));
  let port = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    switch (req.url) {
      case '/ok':
        return void res.end('ok body');
      case '/chunked':
        res.write('part1 ');
        return void res.end('part2');
      case '/error':
        return void res.writeHead(503).end('secret');
      case '/redirect':
        return void res.writeHead(302, { location: '/ok' }).end('moved');
      case '/elsewhere':
        return void res.writeHead(307, { location: `http://localhost:${port}/ok` }).end('away');
      case '/bad-location':
        return void res.writeHead(302, { location: 'http://[::1' }).end();
      case '/loop':
        return void res.writeHead(301, { location: '/loop' }).end();
      case '/big':
        return void res.end(Buffer.alloc(64 * 1024, 'z'));
      default:
        return void res.writeHead(404).end();
    }
  });
  port = await listen(server);
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const refused = createTcpServer();
  const refusedPort = await listen(refused);
  await new Promise((resolve) => refused.close(resolve));

  const urls = ['/ok', '/chunked', '/error', '/redirect', '/elsewhere', '/bad-location', '/loop', '/big', '/none'].map((p) => `http://127.0.0.1:${port}${p}`);
  urls.push(`http://127.0.0.1:${refusedPort}/`);
  const wire = [];
  for (const url of urls) wire.push(await httpProbe({ url }));
  const prober = new Prober();
  const container = { name: 'app', readinessProbe: { httpGet: { port, path: '/ok' } } };
  t.same(await prober.runProbe(container.readinessProbe, { podIP: '127.0.0.1' }, container, 'containerd://x', makePod([container])), { result: 'success', output: 'ok body' });
  await prober.close();
  t.notOk(undiciLoaded(), 'no undici module loaded by wire probes');

  const dispatcher = createProbeAgent();
  t.teardown(() => dispatcher.close());
  const viaUndici = [];
  for (const url of urls) viaUndici.push(await httpProbe({ url, dispatcher }));
  t.same(wire, viaUndici);
  t.equal(wire[0].output, 'ok body');
  t.equal(wire[1].output, 'part1 part2');
  t.equal(wire[4].result, 'warning');
});
