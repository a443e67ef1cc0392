import t from 'tap';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { FakeClock, RecordingEventRecorder } from '@kubelet-ts/core/testing';
import { grpcProbe, Prober, tcpProbe } from '../src/index.js';
import { makePod } from './helpers.js';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

t.test('tcp: a listener succeeds, a closed port fails with Go\'s dial error', async (t) => {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  t.same(await tcpProbe({ host: '127.0.0.1', port, timeoutSeconds: 1 }), { result: 'success', output: '' });
  await new Promise((resolve) => setTimeout(resolve, 20));
  t.equal(accepted, 1, 'the listener saw the connection');
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => server.close(resolve));

  const closed = await closedPort();
  t.same(await tcpProbe({ host: '127.0.0.1', port: closed, timeoutSeconds: 1 }), {
    result: 'failure',
    output: `dial tcp 127.0.0.1:${closed}: connect: connection refused`,
  });
});

t.test('tcp: a connect that does not finish in time fails with i/o timeout', async (t) => {
  // The fake clock's timer fires before the connect can complete (it never completes synchronously).
  const server = createServer((s) => s.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const clock = new FakeClock();
  const pending = tcpProbe({ host: '127.0.0.1', port, timeoutSeconds: 1, clock });
  clock.step(1000);
  t.same(await pending, { result: 'failure', output: `dial tcp 127.0.0.1:${port}: i/o timeout` });
  t.equal(clock.pendingTimers(), 0);
  await new Promise((resolve) => server.close(resolve));
});

t.test('grpc: a real grpc.health.v1 server', async (t) => {
  const health = new HealthImplementation({ '': 'SERVING', 'svc.ok': 'SERVING', 'svc.down': 'NOT_SERVING' });
  const server = new grpc.Server();
  health.addToServer(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  t.teardown(() => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));

  t.same(await grpcProbe({ host: '127.0.0.1', port }), { result: 'success', output: 'service healthy' });
  t.same(await grpcProbe({ host: '127.0.0.1', port, service: 'svc.ok' }), { result: 'success', output: 'service healthy' });
  t.same(await grpcProbe({ host: '127.0.0.1', port, service: 'svc.down' }), {
    result: 'failure',
    output: 'service unhealthy (responded with "NOT_SERVING")',
  });
  t.same(await grpcProbe({ host: '127.0.0.1', port, service: 'svc.unknown' }), {
    result: 'failure',
    output: 'error: health rpc probe failed: rpc error: code = NotFound desc = Health status unknown for service svc.unknown',
  });
  health.setStatus('svc.ok', 'NOT_SERVING');
  t.equal((await grpcProbe({ host: '127.0.0.1', port, service: 'svc.ok' })).result, 'failure');

  // Through the Prober: the pod IP and the grpc action's port and service.
  const recorder = new RecordingEventRecorder();
  const prober = new Prober({ recorder });
  const container = { name: 'app', livenessProbe: { grpc: { port, service: 'svc.down' }, timeoutSeconds: 1 } };
  t.equal(await prober.probe('liveness', makePod([container]), { podIP: '127.0.0.1' }, container, 'containerd://c1'), 'failure');
  t.same(recorder.messages(), ['Liveness probe failed: service unhealthy (responded with "NOT_SERVING")']);
  await prober.close();
});

t.test('grpc: a server without the health service, and no server at all', async (t) => {
  const server = new grpc.Server();
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const res = await grpcProbe({ host: '127.0.0.1', port });
  t.equal(res.result, 'failure');
  t.match(res.output, /^error: this server does not implement the grpc health protocol \(grpc\.health\.v1\.Health\): /);
  await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));

  const closed = await closedPort();
  const start = Date.now();
  t.same(await grpcProbe({ host: '127.0.0.1', port: closed, timeoutSeconds: 1 }), {
    result: 'failure',
    output: `timeout: failed to connect service "127.0.0.1:${closed}" within 1s: context deadline exceeded`,
  });
  t.ok(Date.now() - start < 3000, 'gives up at the timeout');
});
