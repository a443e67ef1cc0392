// SharedPodWatch against @kubelet-ts/test-apiserver: one list and one watch with fieldSelector=spec.nodeName!=
// feed several nodes' PodConfigs; unbound pods never reach a node.
import t from 'tap';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { realClock } from '@kubelet-ts/core';
import { RecordingLogger } from '@kubelet-ts/core/testing';
// A devDependency used by tests only.
import { startTestApiServer } from '@kubelet-ts/test-apiserver';
import { SharedPodWatch, makePodSourceConfig } from '../src/index.js';
import { drainUpdates, summarize } from '../src/testing.js';
import { tempDir, waitFor } from './helpers.js';

const podObj = (name: string, nodeName?: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'c', image: 'busybox:1.36' }] },
});

t.test('one list and one watch of the bound pods for every node; each node sees only its own', async (t) => {
  const server = await startTestApiServer({ bookmarkIntervalMs: 0 });
  t.teardown(() => server.close());
  const dir = await tempDir(t);
  const kc = new KubeConfig();
  kc.loadFromFile(await server.writeKubeconfig(join(dir, 'kubeconfig')));
  server.store.create('pods', podObj('a', 'fleet-0'));
  server.store.create('pods', podObj('b', 'fleet-1'));
  server.store.create('pods', podObj('unbound'));

  const watch = new SharedPodWatch({ kubeConfig: kc, clock: realClock, logger: new RecordingLogger(), backoffInitialMs: 20, backoffJitter: 0 });
  const configs = ['fleet-0', 'fleet-1', 'fleet-2'].map((nodeName) => makePodSourceConfig({ nodeName, sharedPodWatch: watch, kubeConfig: kc, clock: realClock, logger: new RecordingLogger() }));
  t.teardown(async () => {
    await Promise.all(configs.map((c) => c.stop()));
    await watch.stop();
  });
  watch.start();
  await waitFor(() => configs.every((c) => c.podConfig.sourcesReady()) && server.activeWatches('pods') === 1, 5000, 'list and watch');
  const lists = server.requests.filter((r) => r.verb === 'list' && r.resource === 'pods');
  const watches = server.requests.filter((r) => r.verb === 'watch' && r.resource === 'pods');
  t.equal(lists.length, 1, 'one list for three nodes');
  t.equal(watches.length, 1, 'one watch for three nodes');
  t.equal(lists[0].query.fieldSelector, 'spec.nodeName!=');
  t.match(watches[0].query, { fieldSelector: 'spec.nodeName!=', allowWatchBookmarks: 'true' });
  t.same(configs.map((c) => summarize(drainUpdates(c.podConfig))), [['ADD:a'], ['ADD:b'], ['ADD:']]);

  server.store.create('pods', podObj('c', 'fleet-2'));
  server.store.create('pods', podObj('unbound-2'));
  await waitFor(() => configs[2].podConfig.stats().emitted === 2, 5000, 'ADD c');
  t.same(summarize(drainUpdates(configs[2].podConfig)), ['ADD:c']);
  server.store.delete('pods', 'default', 'a', { gracePeriodSeconds: 0 });
  await waitFor(() => configs[0].podConfig.stats().emitted === 2, 5000, 'REMOVE a');
  t.same(summarize(drainUpdates(configs[0].podConfig)), ['REMOVE:a']);
  t.same(drainUpdates(configs[1].podConfig), [], 'fleet-1 saw nothing');
  t.equal(watch.stats().pods, 2, 'unbound pods are not watched');
});
