import t from 'tap';
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CanceledError,
  DeadlineExceededError,
  NotFoundError,
  RemoteImageService,
  RemoteRuntimeService,
  UnavailableError,
  UnimplementedError,
  loadCriPackage,
  type runtimeapi,
} from '../src/index.js';

type Handler = (call: grpc.ServerUnaryCall<any, any>, callback: grpc.sendUnaryData<any>) => void;

/** A minimal CRI server whose handlers each test sets; everything else answers Unimplemented. */
async function startServer(socketPath: string, handlers: Record<string, Handler | grpc.handleServerStreamingCall<any, any>>) {
  const cri = loadCriPackage();
  const server = new grpc.Server();
  const unimplemented: Handler = (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED, details: 'not in this test server' });
  const implementation = (service: grpc.ServiceDefinition) =>
    Object.fromEntries(Object.keys(service).map((name) => [name, handlers[name] ?? unimplemented]));
  server.addService(cri.RuntimeService.service, implementation(cri.RuntimeService.service));
  server.addService(cri.ImageService.service, implementation(cri.ImageService.service));
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socketPath}`, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve())),
  );
  return server;
}

const version: Handler = (call, callback) =>
  callback(null, { version: call.request.version, runtimeName: 'test-runtime', runtimeVersion: '1.2.3', runtimeApiVersion: 'v1' });

t.test('client against a real gRPC server on a unix socket', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cri-client-'));
  const socket = join(dir, 'cri.sock');
  let slowCalls = 0;
  const server = await startServer(socket, {
    Version: version,
    ContainerStatus: (call, callback) =>
      callback({ code: grpc.status.NOT_FOUND, details: `an error occurred when try to find container "${call.request.containerId}": not found` }),
    ListContainers: (call, callback) => {
      t.same(call.request.filter.labelSelector, { app: 'web' }, 'filter reaches the server with the right field names');
      callback(null, {
        containers: [
          { id: 'c1', podSandboxId: 's1', metadata: { name: 'web', attempt: 2 }, state: 'CONTAINER_RUNNING', createdAt: 1_700_000_000_123_456_789, labels: { app: 'web' } },
        ],
      });
    },
    StartContainer: () => {
      slowCalls++; // never answers: deadline and cancellation tests
    },
    ExecSync: (call, callback) => callback(null, { stdout: Buffer.from(call.request.cmd.join(' ')), stderr: Buffer.from(''), exitCode: 3 }),
    GetContainerEvents: (call: grpc.ServerWritableStream<any, any>) => {
      call.write({ containerId: 'c1', containerEventType: 'CONTAINER_STARTED_EVENT', createdAt: 5 });
      call.write({ containerId: 'c1', containerEventType: 'CONTAINER_STOPPED_EVENT', createdAt: 6 });
      call.end();
    },
    RuntimeConfig: (_call, callback) => callback(null, { linux: { cgroupDriver: 'CGROUPFS' } }),
    ImageStatus: (_call, callback) => callback(null, {}),
    PullImage: (call, callback) => callback(null, { imageRef: `sha256:${call.request.image.image.length}` }),
  });
  const runtime = new RemoteRuntimeService({ endpoint: `unix://${socket}`, timeoutMs: 200 });
  const images = new RemoteImageService({ endpoint: socket });
  t.teardown(() => {
    runtime.close();
    images.close();
    server.forceShutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  t.test('unary calls return typed messages with proto3 defaults', async (t) => {
    const response = await runtime.version('v1');
    t.same(response, { version: 'v1', runtimeName: 'test-runtime', runtimeVersion: '1.2.3', runtimeApiVersion: 'v1' });
    const containers = await runtime.listContainers({ labelSelector: { app: 'web' } });
    t.equal(containers.length, 1);
    const c: runtimeapi.Container = containers[0];
    t.equal(c.state, 'CONTAINER_RUNNING');
    t.equal(c.metadata?.attempt, 2);
    t.equal(c.imageRef, '', 'missing string fields default to empty');
    t.ok(Math.abs(c.createdAt - 1_700_000_000_123_456_789) < 1024, 'int64 nanoseconds arrive as numbers');
  });

  t.test('errors are typed and name the RPC and the object', async (t) => {
    const error = await runtime.containerStatus('abc123').catch((e: unknown) => e);
    t.type(error, NotFoundError);
    t.match((error as Error).message, 'RuntimeService/ContainerStatus for container "abc123" failed: rpc error: code = NotFound desc = an error occurred when try to find container "abc123": not found');
    const unimplemented = await runtime.stopPodSandbox('s1').catch((e: unknown) => e);
    t.type(unimplemented, UnimplementedError);
    t.match((unimplemented as Error).message, /RuntimeService\/StopPodSandbox for pod sandbox "s1"/);
  });

  t.test('RuntimeConfig: the runtime names its cgroup driver (SYSTEMD is the proto3 default, an empty answer)', async (t) => {
    t.same(await runtime.runtimeConfig(), { linux: { cgroupDriver: 'CGROUPFS' } });
  });

  t.test('deadline: a call that gets no answer fails with DeadlineExceededError', async (t) => {
    const error = await runtime.startContainer('slow').catch((e: unknown) => e);
    t.type(error, DeadlineExceededError);
    t.match((error as Error).message, /RuntimeService\/StartContainer for container "slow"/);
  });

  t.test('cancellation by AbortSignal', async (t) => {
    const controller = new AbortController();
    const before = slowCalls;
    const pending = runtime.startContainer('slow', { signal: controller.signal, timeoutMs: 0 });
    // Abort once the server has the call (under load it may take longer than a few ms to arrive).
    for (let i = 0; i < 500 && slowCalls === before; i++) await new Promise((resolve) => setTimeout(resolve, 2));
    t.equal(slowCalls, before + 1, 'the call reached the server');
    controller.abort();
    const error = await pending.catch((e: unknown) => e);
    t.type(error, CanceledError);
    const already = await runtime.version('v1', { signal: AbortSignal.abort() }).catch((e: unknown) => e);
    t.type(already, CanceledError, 'an already aborted signal never sends the call');
  });

  t.test('exec sync returns output and exit code', async (t) => {
    const result = await runtime.execSync('c1', ['echo', 'hi'], 5);
    t.equal(result.stdout.toString(), 'echo hi');
    t.equal(result.exitCode, 3);
  });

  t.test('container events stream as an async iterable', async (t) => {
    const events: string[] = [];
    for await (const event of runtime.getContainerEvents()) events.push(`${event.containerId}:${event.containerEventType}`);
    t.same(events, ['c1:CONTAINER_STARTED_EVENT', 'c1:CONTAINER_STOPPED_EVENT']);
  });

  t.test('image service: absent image is a null image, pull returns the ref', async (t) => {
    const status = await images.imageStatus({ image: 'busybox' });
    t.equal(status.image, null);
    t.equal(await images.pullImage({ image: 'busybox' }), 'sha256:7');
  });
});

t.test('reconnects after the runtime restarts, without re-creating the client', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cri-client-'));
  const socket = join(dir, 'cri.sock');
  let server = await startServer(socket, { Version: version });
  const runtime = new RemoteRuntimeService({ endpoint: `unix://${socket}`, timeoutMs: 1000 });
  t.teardown(() => {
    runtime.close();
    server.forceShutdown();
    rmSync(dir, { recursive: true, force: true });
  });
  t.equal((await runtime.version('v1')).runtimeName, 'test-runtime');

  server.forceShutdown();
  rmSync(socket, { force: true });
  const down = await runtime.version('v1', { timeoutMs: 500 }).catch((e: unknown) => e);
  t.ok(down instanceof UnavailableError || down instanceof DeadlineExceededError, `runtime down: ${String(down)}`);

  server = await startServer(socket, { Version: version });
  let recovered = false;
  for (let attempt = 0; attempt < 100 && !recovered; attempt++) {
    try {
      recovered = (await runtime.version('v1', { timeoutMs: 500 })).runtimeName === 'test-runtime';
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  t.ok(recovered, 'the same client works again once the runtime is back');
});
