// What the generated codec spares: importing the package loads neither gRPC nor the codec, and a client talking to a
// server (both on loadCriServices) never loads @grpc/proto-loader or protobufjs (no .proto parse, no
// fromObject/toObject on any message).
import t from 'tap';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RemoteRuntimeService, grpcJs, loadCriServices } from '../src/index.js';

const require = createRequire(import.meta.url);
const loaded = (pattern: RegExp) => Object.keys(require.cache).filter((path) => pattern.test(path));

t.test('importing the package loads neither gRPC nor the codec', async (t) => {
  t.same(loaded(/[\\/]@grpc[\\/]/), []);
  t.same(loaded(/[\\/]generated[\\/]codec/), []);
});

t.test('a client and a server on loadCriServices load neither proto-loader nor protobufjs', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cri-codec-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const grpc = grpcJs();
  const { RuntimeService } = loadCriServices();
  const server = new grpc.Server();
  server.addService(RuntimeService.service, {
    Version: (call: any, callback: any) =>
      callback(null, { version: call.request.version, runtimeName: 'fake', runtimeVersion: '1', runtimeApiVersion: 'v1' }),
    ListContainers: (_call: any, callback: any) =>
      callback(null, { containers: [{ id: 'c1', state: 'CONTAINER_RUNNING', createdAt: 1.7e18, labels: { a: 'b' } }] }),
  });
  const endpoint = `unix://${join(dir, 'cri.sock')}`;
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve())),
  );
  t.teardown(() => server.forceShutdown());
  const runtime = new RemoteRuntimeService({ endpoint });
  t.teardown(() => runtime.close());

  t.match(await runtime.version('v1'), { version: 'v1', runtimeName: 'fake', runtimeApiVersion: 'v1' });
  const containers = await runtime.listContainers({ state: { state: 'CONTAINER_RUNNING' } });
  t.match(containers, [{ id: 'c1', state: 'CONTAINER_RUNNING', createdAt: 1.7e18, labels: { a: 'b' }, podSandboxId: '', metadata: null }]);
  t.not(loaded(/[\\/]generated[\\/]codec/).length, 0, 'the codec is loaded now');
  t.same(loaded(/[\\/]@grpc[\\/]proto-loader[\\/]/), [], 'no proto-loader');
  t.same(loaded(/[\\/]protobufjs[\\/]/), [], 'no protobufjs');
});
