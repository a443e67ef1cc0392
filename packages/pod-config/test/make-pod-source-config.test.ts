import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { makePodSourceConfig, type PodListerWatcher } from '../src/index.js';
import { drainUpdates, makeTestPod, summarize } from '../src/testing.js';
import { tempDir, waitFor, writeManifest } from './helpers.js';

/** Lists one pod, then holds the watch open until aborted. */
function staticLW(pods: V1Pod[]): PodListerWatcher {
  return {
    list: async () => ({ pods, resourceVersion: '1' }),
    watch: (_opts, _onEvent, signal) => new Promise<void>((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
  };
}

t.test('composes the configured sources on their Go channels; no sources means ready at once', async (t) => {
  const empty = makePodSourceConfig({ nodeName: 'n' });
  t.same(empty.podConfig.configuredSources(), []);
  t.ok(empty.podConfig.sourcesReady());
  t.equal(empty.podConfig.mode, 'incremental');
  await empty.stop();

  const dir = await tempDir(t);
  await writeManifest(dir, 'a.yaml', 'a');
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  let synced = false;
  const pc = makePodSourceConfig({
    nodeName: 'node-1',
    staticPodPath: dir,
    fileCheckFrequencyMs: 1000,
    podListerWatcher: staticLW([makeTestPod({ name: 'api', nodeName: 'node-1' })]),
    nodeHasSynced: () => synced,
    mode: 'snapshotAndUpdates',
    clock,
    logger,
  });
  t.same(pc.podConfig.configuredSources(), ['file', 'api']);
  t.equal(pc.http, undefined);
  await waitFor(() => pc.podConfig.stats().emitted === 1, 5000, 'file SET');
  t.notOk(pc.podConfig.sourcesReady(), 'the API source waits for the node');
  synced = true;
  await clock.advance(1000);
  await waitFor(() => pc.podConfig.sourcesReady(), 5000, 'api listed');
  t.same(summarize(drainUpdates(pc.podConfig)), ['SET:a-node-1', 'SET:a-node-1,api']);
  t.ok(logger.find('Adding static pod path'));
  t.ok(logger.find('Adding apiserver pod source'));
  await pc.stop();
  t.equal(clock.pendingTimers(), 0, 'no timers left');
});

t.test('invalid options throw before anything starts', async (t) => {
  t.throws(() => makePodSourceConfig({ nodeName: 'n', staticPodURL: 'not a url' }));
  t.throws(() => makePodSourceConfig({ nodeName: 'n', staticPodURLHeader: 'nocolon' }), /single ':'/);
});
