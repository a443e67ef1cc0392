// The in-process path is light: a runtime client on inProcessClient never loads @grpc/grpc-js.
import t from 'tap';
import { createRequire } from 'node:module';
import { RemoteImageService, RemoteRuntimeService, criCodec, inProcessClient } from '../src/index.js';

const require = createRequire(import.meta.url);
const loaded = (pattern: RegExp) => Object.keys(require.cache).filter((path) => pattern.test(path));

t.test('in-process clients and calls load no grpc-js', async (t) => {
  const defs = criCodec().serviceDefinitions();
  const rs = new RemoteRuntimeService({
    endpoint: 'inprocess://light',
    client: inProcessClient(defs.RuntimeService, {
      Version: (_call: unknown, callback: (e: null, r: unknown) => void) =>
        callback(null, { version: 'v1', runtimeName: 'light', runtimeVersion: '1', runtimeApiVersion: 'v1' }),
    }),
  });
  const is = new RemoteImageService({ endpoint: 'inprocess://light', client: inProcessClient(defs.ImageService, {}) });
  t.teardown(() => {
    rs.close();
    is.close();
  });
  t.match(await rs.version('v1'), { runtimeName: 'light' });
  await t.rejects(is.listImages(), { name: 'UnimplementedError' });
  t.same(loaded(/[\\/]@grpc[\\/]/), [], 'no @grpc module loaded');
});
