// The ServiceLister against @kubelet-ts/test-apiserver: list, watch, resume, 410 re-list, backoff.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { KubeConfig } from '@kubernetes/client-node';
import { RecordingLogger } from '@kubelet-ts/core/testing';
import { serviceEnvVarMap } from '@kubelet-ts/runtime-manager';
import { startTestApiServer, type TestApiServer } from '@kubelet-ts/test-apiserver';
import { ServiceLister } from '../src/service-lister.js';

interface TeardownHost {
  teardown(fn: () => unknown): void;
}

async function waitFor(cond: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function setup(t: TeardownHost): Promise<{ server: TestApiServer; kc: KubeConfig }> {
  const server = await startTestApiServer({ bookmarkIntervalMs: 0 });
  t.teardown(() => server.close());
  for (const name of ['team', 'other']) if (!server.store.get('namespaces', undefined, name)) server.store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const dir = await mkdtemp(join(tmpdir(), 'service-lister-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const kc = new KubeConfig();
  kc.loadFromFile(await server.writeKubeconfig(join(dir, 'kubeconfig')));
  return { server, kc };
}

function startLister(t: TeardownHost, kc: KubeConfig, signal?: AbortSignal) {
  const logger = new RecordingLogger();
  const lister = new ServiceLister({ kubeConfig: kc, logger, backoffInitialMs: 20, backoffJitter: 0 });
  lister.start(signal);
  t.teardown(() => lister.stop());
  return { lister, logger };
}

const service = (namespace: string, name: string, clusterIP: string, port = 80) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: { clusterIP, ports: [{ name: 'http', port, protocol: 'TCP' }] },
});

const requests = (server: TestApiServer, verb: string) => server.requests.filter((r) => r.verb === verb && r.resource === 'services');
const names = (lister: ServiceLister, ns: string) => lister.list(ns).map((s) => s.metadata?.name).sort();

t.test('lists every namespace\'s services, then follows adds, updates and deletes', async (t) => {
  const { server, kc } = await setup(t);
  server.store.create('services', service('default', 'kubernetes', '10.96.0.1', 443));
  server.store.create('services', service('team', 'web', '10.96.0.10'));
  server.store.create('services', service('other', 'db', '10.96.0.20'));
  const { lister } = startLister(t, kc);
  t.equal(lister.hasSynced(), false, 'not synced before the first list');
  await waitFor(() => lister.hasSynced() && server.activeWatches('services') === 1, 5000, 'list and watch');
  t.same(names(lister, 'team'), ['web']);
  t.same(names(lister, 'default'), ['kubernetes']);
  t.same(lister.list('').length, 3);
  t.same(lister.list('nowhere'), []);
  t.equal(lister.get('team', 'web')?.spec?.clusterIP, '10.96.0.10');
  t.equal(requests(server, 'list')[0].query.resourceVersion, '0', 'the first list may come from the watch cache');
  const watch = requests(server, 'watch')[0];
  t.match(watch.query, { allowWatchBookmarks: 'true', resourceVersion: lister.lastSyncResourceVersion() });
  t.ok(Number(watch.query.timeoutSeconds) >= 300);

  server.store.create('services', service('team', 'api', '10.96.0.11'));
  await waitFor(() => lister.list('team').length === 2, 5000, 'ADDED');
  server.store.patch('services', 'team', 'web', { spec: { ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] } }, 'merge');
  await waitFor(() => lister.get('team', 'web')?.spec?.ports?.[0].port === 8080, 5000, 'MODIFIED');
  server.store.delete('services', 'other', 'db');
  await waitFor(() => lister.list('other').length === 0, 5000, 'DELETED');
  t.equal(lister.lastSyncResourceVersion(), String(server.store.resourceVersion));
  t.equal(requests(server, 'list').length, 1, 'one list only');

  // What the runtime manager makes of it.
  const env = serviceEnvVarMap(lister, 'team', true);
  t.equal(env.get('KUBERNETES_SERVICE_HOST'), '10.96.0.1');
  t.equal(env.get('WEB_SERVICE_PORT'), '8080');
  t.equal(env.get('API_PORT_80_TCP_ADDR'), '10.96.0.11');
  t.notOk(env.has('DB_SERVICE_HOST'));
});

t.test('a reconnect resumes from the last resourceVersion without a re-list; a 410 re-lists from the latest', async (t) => {
  const { server, kc } = await setup(t);
  server.store.create('services', service('team', 'a', '10.96.0.1'));
  const { lister, logger } = startLister(t, kc);
  await waitFor(() => lister.hasSynced() && server.activeWatches('services') === 1, 5000);

  await server.stop();
  await waitFor(() => lister.stats().errors >= 1 || lister.stats().watches >= 2, 5000, 'watch noticed the close');
  await server.restart();
  await waitFor(() => server.activeWatches('services') === 1, 5000, 'watching again');
  const watches = requests(server, 'watch');
  t.equal(watches[watches.length - 1].query.resourceVersion, lister.lastSyncResourceVersion());
  t.equal(requests(server, 'list').length, 1, 'no re-list');

  await server.stop();
  server.store.create('services', service('team', 'b', '10.96.0.2'));
  server.store.delete('services', 'team', 'a');
  server.compact();
  await server.restart();
  await waitFor(() => lister.stats().gone === 1, 10_000, '410');
  await waitFor(() => requests(server, 'list').length === 2 && server.activeWatches('services') === 1, 5000, 're-list');
  t.same(names(lister, 'team'), ['b'], 'the re-list replaced the cache');
  t.notOk(requests(server, 'list')[1].query.resourceVersion, 'after a 410 the list asks for the latest state');
  t.ok(logger.find(/410 Gone/));
  t.ok(lister.hasSynced());
});

t.test('a failed first list backs off and retries; not synced until it succeeds', async (t) => {
  const { server, kc } = await setup(t);
  server.store.create('services', service('team', 'a', '10.96.0.1'));
  server.failNext(2, { code: 500, match: (r) => r.verb === 'list' && r.resource === 'services' });
  const { lister, logger } = startLister(t, kc);
  await waitFor(() => lister.hasSynced(), 5000, 'synced after retries');
  t.equal(lister.stats().errors, 2);
  t.equal(requests(server, 'list').length, 3);
  t.ok(logger.find(/List\/watch of services failed; retrying/));
  t.same(names(lister, 'team'), ['a']);
});

t.test('start(signal): aborting the signal stops the watch; stop() is idempotent', async (t) => {
  const { server, kc } = await setup(t);
  const controller = new AbortController();
  const { lister } = startLister(t, kc, controller.signal);
  await waitFor(() => lister.hasSynced() && server.activeWatches('services') === 1, 5000);
  controller.abort();
  await lister.stop();
  await waitFor(() => server.activeWatches('services') === 0, 5000, 'watch closed');
  await lister.stop();
  t.ok(lister.hasSynced(), 'the cache stays');
  t.throws(() => new ServiceLister({}), /needs a kubeConfig or a listerWatcher/);
});
