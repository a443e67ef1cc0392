// The API server source and makePodSourceConfig against @kubelet-ts/test-apiserver, which speaks
// the real list/watch wire format (resourceVersion, watch events, 410 Expired, bookmarks).
import t from 'tap';
import type { TeardownHost } from './helpers.js';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { realClock } from '@kubelet-ts/core';
import { RecordingLogger } from '@kubelet-ts/core/testing';
// A devDependency used by tests only; the depConstraints have no exemption for test files (yet).
import { startTestApiServer, type TestApiServer } from '@kubelet-ts/test-apiserver';
import { ApiserverSource, PodConfig, makePodSourceConfig } from '../src/index.js';
import { drainUpdates, makeTestManifest, summarize } from '../src/testing.js';
import { tempDir, waitFor, writeManifest } from './helpers.js';

async function setup(t: TeardownHost): Promise<{ server: TestApiServer; kc: KubeConfig; dir: string }> {
  const server = await startTestApiServer({ bookmarkIntervalMs: 0 });
  t.teardown(() => server.close());
  const dir = await tempDir(t);
  const kc = new KubeConfig();
  kc.loadFromFile(await server.writeKubeconfig(join(dir, 'kubeconfig')));
  return { server, kc, dir };
}

const podObj = (name: string, nodeName: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { nodeName, containers: [{ name: 'c', image: 'busybox:1.36' }] },
});

const watchRequests = (server: TestApiServer) => server.requests.filter((r) => r.verb === 'watch' && r.resource === 'pods');
const listRequests = (server: TestApiServer) => server.requests.filter((r) => r.verb === 'list' && r.resource === 'pods');

function startSource(t: TeardownHost, kc: KubeConfig) {
  const config = new PodConfig();
  const logger = new RecordingLogger();
  const source = new ApiserverSource({ nodeName: 'node-1', kubeConfig: kc, sink: config.channel('api'), clock: realClock, logger, backoffInitialMs: 20, backoffJitter: 0 });
  source.start();
  t.teardown(() => source.stop());
  return { config, source, logger };
}

t.test('lists and watches only this node\'s pods; changes flow through PodConfig as ADD/RECONCILE/DELETE/REMOVE', async (t) => {
  const { server, kc } = await setup(t);
  server.store.create('pods', podObj('mine', 'node-1'));
  server.store.create('pods', podObj('theirs', 'node-2'));
  const { config, source } = startSource(t, kc);
  await waitFor(() => config.sourcesReady() && server.activeWatches('pods') === 1, 5000, 'list and watch');
  t.same(summarize(drainUpdates(config)), ['ADD:mine']);
  const list = listRequests(server)[0];
  t.equal(list.query.fieldSelector, 'spec.nodeName=node-1');
  const watch = watchRequests(server)[0];
  t.match(watch.query, { fieldSelector: 'spec.nodeName=node-1', allowWatchBookmarks: 'true', resourceVersion: String(server.store.resourceVersion) });
  t.ok(Number(watch.query.timeoutSeconds) >= 300);

  server.store.create('pods', podObj('second', 'node-1'));
  server.store.create('pods', podObj('other', 'node-2'));
  await waitFor(() => config.stats().emitted === 2, 5000, 'ADD second');
  t.same(summarize(drainUpdates(config)), ['ADD:second']);

  server.store.patch('pods', 'default', 'second', { status: { phase: 'Running' } }, 'merge', 'status');
  await waitFor(() => config.stats().emitted === 3, 5000, 'RECONCILE');
  t.same(summarize(drainUpdates(config)), ['RECONCILE:second']);

  server.store.delete('pods', 'default', 'second', { gracePeriodSeconds: 30 });
  await waitFor(() => config.stats().emitted === 4, 5000, 'graceful DELETE');
  const [del] = drainUpdates(config);
  t.same(summarize([del]), ['DELETE:second']);
  t.ok(del.pods[0].metadata?.deletionTimestamp instanceof Date, 'deletionTimestamp set, as a Date');

  server.store.delete('pods', 'default', 'second', { gracePeriodSeconds: 0 });
  await waitFor(() => config.stats().emitted === 5, 5000, 'REMOVE');
  t.same(summarize(drainUpdates(config)), ['REMOVE:second']);
  t.equal(listRequests(server).length, 1, 'one list only');
  t.equal(source.lastSyncResourceVersion(), String(server.store.resourceVersion), 'the rv of the last event');
});

t.test('bookmarks move the resourceVersion; a reconnect resumes from it without a re-list', async (t) => {
  const { server, kc } = await setup(t);
  server.store.create('pods', podObj('a', 'node-1'));
  const { config, source } = startSource(t, kc);
  await waitFor(() => config.sourcesReady() && server.activeWatches('pods') === 1, 5000);
  drainUpdates(config);
  // Changes to other nodes' pods move the server's resourceVersion; a bookmark tells us.
  server.store.create('pods', podObj('x', 'node-2'));
  server.store.create('pods', podObj('y', 'node-2'));
  server.sendBookmarks();
  await waitFor(() => source.stats().bookmarks === 1, 5000, 'bookmark');
  const rv = String(server.store.resourceVersion);
  t.equal(source.lastSyncResourceVersion(), rv);
  t.equal(config.stats().emitted, 1, 'a bookmark sends nothing');

  await server.stop();
  await waitFor(() => source.stats().errors >= 1 || source.stats().watches >= 2, 5000, 'watch noticed the close');
  await server.restart();
  await waitFor(() => server.activeWatches('pods') === 1, 5000, 'watching again');
  const watches = watchRequests(server);
  t.equal(watches[watches.length - 1].query.resourceVersion, rv, 'resumed from the bookmark resourceVersion');
  t.equal(listRequests(server).length, 1, 'no re-list');
  server.store.create('pods', podObj('b', 'node-1'));
  await waitFor(() => config.stats().emitted === 2, 5000);
  t.same(summarize(drainUpdates(config)), ['ADD:b']);
});

t.test('410 Expired on the watch re-lists and catches up', async (t) => {
  const { server, kc } = await setup(t);
  server.store.create('pods', podObj('a', 'node-1'));
  const { config, source, logger } = startSource(t, kc);
  await waitFor(() => config.sourcesReady() && server.activeWatches('pods') === 1, 5000);
  drainUpdates(config);
  await server.stop();
  server.store.create('pods', podObj('b', 'node-1'));
  server.store.delete('pods', 'default', 'a', { gracePeriodSeconds: 0 });
  server.compact();
  await server.restart();
  await waitFor(() => source.stats().gone === 1, 10_000, '410');
  await waitFor(() => listRequests(server).length === 2 && config.stats().emitted >= 3, 5000, 're-list');
  t.same(summarize(drainUpdates(config)), ['REMOVE:a', 'ADD:b']);
  t.ok(logger.find(/410 Gone/));
  await waitFor(() => server.activeWatches('pods') === 1, 5000);
});

t.test('makePodSourceConfig: file, HTTP and API server sources into one stream; sourcesReady once each delivered', async (t) => {
  const { server, kc, dir } = await setup(t);
  server.store.create('pods', podObj('api-pod', 'node-1'));
  const manifests = join(dir, 'manifests');
  const { mkdir } = await import('node:fs/promises');
  await mkdir(manifests);
  await writeManifest(manifests, 'static.yaml', 'static');
  const http = createServer((req, res) => {
    t.equal(req.headers['x-kubelet'], 'yes');
    res.end(JSON.stringify(makeTestManifest('web')));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/`;
  t.throws(() => makePodSourceConfig({ nodeName: 'node-1', staticPodURL: url, staticPodURLHeader: 'a:b:c' }), /single ':' key-value separator/, 'bad header: nothing starts');
  t.throws(() => makePodSourceConfig({ nodeName: '' }), /nodeName is required/);
  const pc = makePodSourceConfig({ nodeName: 'node-1', staticPodPath: manifests, staticPodURL: url, staticPodURLHeader: 'X-Kubelet:yes', kubeConfig: kc });
  t.teardown(() => pc.stop());
  t.same(pc.podConfig.configuredSources(), ['file', 'http', 'api']);
  const seen: string[] = [];
  for await (const u of pc.podConfig.updates()) {
    seen.push(`${u.source}:${summarize([u])[0]}`);
    if (pc.podConfig.sourcesReady()) break;
  }
  t.same(seen.sort(), ['api:ADD:api-pod', 'file:ADD:static-node-1', 'http:ADD:web-node-1']);
  t.ok(pc.podConfig.seenAllSources(['file', 'http', 'api']));
  t.ok(pc.file && pc.http && pc.api);
  await pc.stop();
  const it = pc.podConfig.updates()[Symbol.asyncIterator]();
  t.same(await it.next(), { value: undefined, done: true }, 'stop() ends the stream');
});
