import t from 'tap';
import { HealthzServer } from '../src/index.js';

t.test('healthz answers ok, lists checks when verbose, and fails with the failed check', async (t) => {
  let syncloop: Error | undefined = undefined;
  const server = new HealthzServer(
    [
      { name: 'ping', check: () => undefined },
      { name: 'syncloop', check: () => syncloop },
    ],
    { port: 0, address: '127.0.0.1' },
  );
  const port = await server.start();
  t.teardown(() => server.stop());
  const get = async (path: string) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: response.status, body: await response.text() };
  };
  t.same(await get('/healthz'), { status: 200, body: 'ok' });
  t.same(await get('/healthz?verbose'), { status: 200, body: '[+]ping ok\n[+]syncloop ok\nhealthz check passed\n' });
  syncloop = new Error('stuck');
  t.same(await get('/healthz'), { status: 500, body: '[+]ping ok\n[-]syncloop failed: reason withheld\nhealthz check failed\n' });
  t.same(await get('/healthz/ping'), { status: 200, body: 'ok' });
  t.equal((await get('/nope')).status, 404);
});
