// The fleet benchmark's own pieces, without the control plane: the CRI v1alpha2 relay that lets the Go kubelet v1.20.2
// use local-runtime (runtime.v1 only; Go's gRPC sends the socket path as :authority, which Node's HTTP/2 server
// refuses), and the counters and percentiles the bench prints.
import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect as http2Connect } from 'node:http2';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, waitFor } from '../src/index.js';
import { startCriAlphaRelay } from '../src/fleet-bench-cri-alpha.js';
import { counterSum, delta, percentile, total } from '../src/fleet-bench.js';

interface Answer {
  status?: number;
  grpcStatus?: string;
  body: Buffer;
  rstCode?: number;
}

/** One unary gRPC call as Go's client makes it over a unix socket: :authority is the socket path. */
async function grpcCall(socket: string, path: string, headers: Record<string, string> = {}): Promise<Answer[]> {
  const session = http2Connect('http://localhost', { createConnection: () => connect(socket) });
  const answers: Answer[] = [];
  try {
    // twice on one connection: the second header block refers to the first's HPACK dynamic table entries
    for (let i = 0; i < 2; i++) {
      answers.push(
        await new Promise<Answer>((resolve) => {
          const answer: Answer = { body: Buffer.alloc(0) };
          const chunks: Buffer[] = [];
          const req = session.request({ ':method': 'POST', ':path': path, ':authority': socket, 'content-type': 'application/grpc', te: 'trailers', 'user-agent': 'grpc-go/1.27.1', ...headers });
          req.on('response', (h) => (answer.status = Number(h[':status'])));
          req.on('trailers', (h) => (answer.grpcStatus = String(h['grpc-status'])));
          req.on('data', (chunk: Buffer) => chunks.push(chunk));
          req.on('error', () => undefined);
          req.on('close', () => {
            answer.body = Buffer.concat(chunks);
            answer.rstCode = req.rstCode;
            resolve(answer);
          });
          req.end(Buffer.from([0, 0, 0, 0, 0])); // an empty request message
        }),
      );
    }
  } finally {
    session.destroy();
  }
  return answers;
}

t.test('the relay answers CRI v1alpha2 calls of a Go-style client from a runtime.v1 server', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'fleet-bench-relay-'));
  const runtimeSocket = join(dir, 'runtime.sock');
  const runtime = spawn(process.execPath, [join(repoRoot, 'packages/local-runtime/dist/cli.js'), '--socket', runtimeSocket, '--root-dir', join(dir, 'root'), '--mode', 'simulated'], { stdio: 'ignore' });
  t.teardown(() => {
    runtime.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  await waitFor('local-runtime listening', async () => existsSync(runtimeSocket), 30_000, undefined, 20);

  // Without the relay: the runtime resets the stream (the authority) and knows no v1alpha2 service.
  const direct = await grpcCall(runtimeSocket, '/runtime.v1alpha2.RuntimeService/Version');
  t.equal(direct[0].status, undefined, 'no answer from the runtime itself');
  t.equal(direct[0].rstCode, 1, 'reset with PROTOCOL_ERROR');

  const relay = await startCriAlphaRelay(join(dir, 'alpha.sock'), runtimeSocket);
  t.teardown(() => relay.close());
  t.equal(relay.endpoint, `unix://${join(dir, 'alpha.sock')}`);
  const version = await grpcCall(join(dir, 'alpha.sock'), '/runtime.v1alpha2.RuntimeService/Version');
  for (const answer of version) {
    t.equal(answer.status, 200);
    t.equal(answer.grpcStatus, '0');
    t.match(answer.body.toString('latin1'), /0\.1\.0[\s\S]*local-runtime/, 'the VersionResponse bytes: version 0.1.0, runtime local-runtime');
  }
  const images = await grpcCall(join(dir, 'alpha.sock'), '/runtime.v1alpha2.ImageService/ListImages', { 'grpc-timeout': '2S', 'x-long-header': 'v'.repeat(200) });
  t.same(
    images.map((a) => a.grpcStatus),
    ['0', '0'],
  );
  t.same(Object.fromEntries(relay.calls), { 'RuntimeService/Version': 2, 'ImageService/ListImages': 2 });
});

t.test('counterSum adds a counter\'s samples, filtered by labels and grouped by one', async (t) => {
  const text = [
    '# TYPE apiserver_request_total counter',
    'apiserver_request_total{code="200",resource="nodes",verb="PATCH"} 12',
    'apiserver_request_total{code="200",resource="leases",verb="PUT"} 30',
    'apiserver_request_total{code="200",resource="pods",verb="WATCH"} 4',
    'apiserver_request_total{code="201",resource="pods",verb="POST"} 6',
    'apiserver_request_total_other{resource="pods"} 100',
    'rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 7',
  ].join('\n');
  t.equal(total(counterSum(text, 'apiserver_request_total')), 52);
  t.same(Object.fromEntries(counterSum(text, 'apiserver_request_total', {}, 'resource')), { nodes: 12, leases: 30, pods: 10 });
  t.same(Object.fromEntries(counterSum(text, 'apiserver_request_total', { verb: 'WATCH' }, 'resource')), { pods: 4 });
  t.equal(total(counterSum(text, 'rest_client_requests_total')), 7);
  t.same(Object.fromEntries(delta(new Map([['a', 1], ['b', 5]]), new Map([['a', 4], ['c', 2]]))), { a: 3, b: -5, c: 2 });
});

t.test('percentile is the nearest rank', async (t) => {
  const values = Array.from({ length: 100 }, (_, i) => 100 - i);
  t.equal(percentile(values, 50), 50);
  t.equal(percentile(values, 99), 99);
  t.equal(percentile(values, 100), 100);
  t.equal(percentile([7], 99), 7);
  t.ok(Number.isNaN(percentile([], 50)));
});
