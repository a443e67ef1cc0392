// cri-client names gRPC status codes without loading grpc-js; the numbers must stay grpc-js's.
import t from 'tap';
import { status } from '@grpc/grpc-js';
import { grpcCodeName, grpcStatusFor } from '../src/errors.js';

t.test('every gRPC status maps to its Go name and back, with grpc-js numbers', async (t) => {
  const goNames: Record<string, string> = { OK: 'OK', CANCELLED: 'Canceled' };
  const pascal = (name: string) => name.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
  for (const [name, code] of Object.entries(status).filter(([, v]) => typeof v === 'number') as [string, number][]) {
    const goName = goNames[name] ?? pascal(name);
    t.equal(grpcCodeName(code), goName, `${name} (${code}) is ${goName}`);
    t.equal(grpcStatusFor(grpcCodeName(code)), code, `${goName} is ${code} again`);
  }
  t.equal(grpcCodeName(99), 'Unknown');
});

t.test('importing the package does not load grpc-js; making a client does', async (t) => {
  const { spawnSync } = await import('node:child_process');
  const probe = `
    import { createRequire } from 'node:module';
    const require = createRequire(import.meta.url);
    const loaded = () => Object.keys(require.cache).some((f) => f.includes('/@grpc/grpc-js/'));
    const cri = await import('@kubelet-ts/cri-client');
    const afterImport = loaded();
    new cri.RemoteRuntimeService({ endpoint: 'unix:///nonexistent/cri.sock' }).close();
    console.log(JSON.stringify({ afterImport, afterClient: loaded() }));`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: new URL('..', import.meta.url).pathname, encoding: 'utf8' });
  t.equal(child.status, 0, child.stderr);
  t.same(JSON.parse(child.stdout), { afterImport: false, afterClient: true });
});
