// core's client-node helpers against the real client-node and a local HTTP "API server".
import t from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawnSync } from 'node:child_process';
import { apiCallOptions, lazyApiClient, lazyWatch, loadClientNode, loadedClientNode, PatchContentType } from '../src/client-node.js';

async function apiServer(t: { teardown(fn: () => unknown): void }) {
  const seen: { method: string; url: string; contentType: string | undefined; body: string }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, contentType: req.headers['content-type'], body });
      if (req.url?.startsWith('/slow')) return; // never answers
      res.setHeader('content-type', 'application/json');
      if (req.url?.includes('watch=true')) {
        res.write(JSON.stringify({ type: 'ADDED', object: { kind: 'Node', apiVersion: 'v1', metadata: { name: 'n1' } } }) + '\n');
        res.end();
        return;
      }
      res.end(JSON.stringify({ kind: 'Node', apiVersion: 'v1', metadata: { name: 'n1', resourceVersion: '7' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  const k = await loadClientNode();
  const kubeConfig = new k.KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return { seen, kubeConfig };
}

t.test('apiCallOptions: a patch Content-Type, resourceVersion=0 from the cache, through a real client-node call', async (t) => {
  const { seen, kubeConfig } = await apiServer(t);
  const core = lazyApiClient(kubeConfig, (k) => k.CoreV1Api);
  await (await core()).patchNode({ name: 'n1', body: { metadata: { labels: { a: 'b' } } } }, apiCallOptions({ contentType: PatchContentType.StrategicMergePatch }));
  t.equal(seen[0].method, 'PATCH');
  t.equal(seen[0].contentType, 'application/strategic-merge-patch+json');
  const node = await (await core()).readNode({ name: 'n1' }, apiCallOptions({ fromCache: true }));
  t.equal(node.metadata?.resourceVersion, '7');
  t.match(seen[1].url, /resourceVersion=0/);
  t.same(apiCallOptions(), {}, 'no options: nothing added');
});

t.test('apiCallOptions: the signal and the timeout abort the call', async (t) => {
  const { kubeConfig } = await apiServer(t);
  kubeConfig.clusters[0] = { ...kubeConfig.clusters[0], server: `${kubeConfig.clusters[0].server}/slow` };
  const core = await lazyApiClient(kubeConfig, (k) => k.CoreV1Api)();
  await t.rejects(core.readNode({ name: 'n1' }, apiCallOptions({ timeoutMs: 50 })), 'the timeout aborts');
  const controller = new AbortController();
  const call = core.readNode({ name: 'n1' }, apiCallOptions({ signal: controller.signal }));
  controller.abort(new Error('stopped'));
  await t.rejects(call, 'the signal aborts');
});

t.test('lazyWatch: a client-node Watch made on the first watch', async (t) => {
  const { kubeConfig } = await apiServer(t);
  const events: string[] = [];
  await new Promise<void>((resolve, reject) => {
    void lazyWatch(kubeConfig)
      .watch('/api/v1/nodes', {}, (type, obj: { metadata: { name: string } }) => events.push(`${type} ${obj.metadata.name}`), (err) => (err ? reject(err as Error) : resolve()))
      .catch(reject);
  });
  t.same(events, ['ADDED n1']);
});

t.test('loadedClientNode: the module once loaded, a clear error before', async (t) => {
  t.equal(loadedClientNode(), await loadClientNode());
  const probe = `
    const core = await import(${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)});
    let error = '';
    try { core.loadedClientNode(); } catch (e) { error = e.message; }
    process.stdout.write(JSON.stringify({ error }));`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', probe], { encoding: 'utf8' });
  t.equal(child.status, 0, child.stderr);
  t.match(JSON.parse(child.stdout).error, /not loaded yet: await loadClientNode\(\)/);
});

t.test('deferredApiClient: usable at once, each call goes to the client made on the first', async (t) => {
  const { seen, kubeConfig } = await apiServer(t);
  const { deferredApiClient } = await import('../src/client-node.js');
  const core = deferredApiClient(kubeConfig, (k) => k.CoreV1Api);
  t.equal((core as unknown as { then?: unknown }).then, undefined, 'not a thenable: awaiting it gives the proxy back');
  const node = await core.readNode({ name: 'n1' });
  t.equal(node.metadata?.name, 'n1');
  await core.patchNode({ name: 'n1', body: {} }, apiCallOptions({ contentType: PatchContentType.MergePatch }));
  t.same(seen.map((s) => `${s.method} ${s.contentType ?? ''}`), ['GET ', 'PATCH application/merge-patch+json']);
});
