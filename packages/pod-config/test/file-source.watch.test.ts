// Integration: a real directory and fs.watch. The re-list timer runs on a FakeClock that is never
// advanced (unless a test says so), so every change seen here came through the watch.
import t from 'tap';
import { mkdir, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FileSource, PodConfig } from '../src/index.js';
import { drainUpdates, summarize } from '../src/testing.js';
import { manifestYaml, recordingSink, tempDir, waitFor, writeManifest } from './helpers.js';

function make(path: string) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const rec = recordingSink();
  const source = new FileSource({ path, nodeName: 'node-1', sink: rec.sink, clock, logger });
  return { clock, logger, rec, source };
}

const podNames = (rec: ReturnType<typeof recordingSink>) => rec.names().join(',');

t.test('files created, changed, renamed and deleted are picked up by the watch', async (t) => {
  const dir = await tempDir(t);
  const { source, rec, clock } = make(dir);
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => rec.updates.length === 1, 5000, 'first SET');
  t.same(rec.names(), []);
  t.ok(source.isWatching());

  await writeManifest(dir, 'web.yaml', 'web');
  await waitFor(() => podNames(rec) === 'web-node-1', 5000, 'created');
  const uid1 = rec.last()?.pods[0].metadata?.uid;

  await writeManifest(dir, 'web.yaml', 'web', { image: 'busybox:2' });
  await waitFor(() => rec.last()?.pods[0]?.spec?.containers[0].image === 'busybox:2', 5000, 'changed');
  t.not(rec.last()?.pods[0].metadata?.uid, uid1, 'changed content, new UID');

  await rename(join(dir, 'web.yaml'), join(dir, 'renamed.yaml'));
  await waitFor(() => rec.last()?.pods.length === 1 && rec.last()?.pods[0].metadata?.annotations?.['kubernetes.io/config.hash'] !== undefined && source.pods().length === 1, 5000, 'renamed');
  await waitFor(() => source.stats().events >= 4, 5000);
  await source.settled();
  t.same(rec.names(), ['web-node-1'], 'still one pod after the rename');

  await rename(join(dir, 'renamed.yaml'), join(dir, '.renamed.yaml'));
  await waitFor(() => rec.names().length === 0, 5000, 'renamed to a hidden name');

  await writeManifest(dir, 'a.yaml', 'a');
  await writeManifest(dir, 'b.yaml', 'b');
  await waitFor(() => podNames(rec) === 'a-node-1,b-node-1', 5000, 'two files');
  await unlink(join(dir, 'a.yaml'));
  await waitFor(() => podNames(rec) === 'b-node-1', 5000, 'deleted');
  t.equal(clock.now(), new FakeClock().now(), 'the re-list clock never moved');
  t.equal(source.stats().relists, 1, 'only the initial list ran');
});

t.test('an editor-style replace (write a hidden temp file, rename it over) is one update', async (t) => {
  const dir = await tempDir(t);
  await writeManifest(dir, 'web.yaml', 'web');
  const config = new PodConfig();
  const source = new FileSource({ path: dir, nodeName: 'node-1', sink: config.channel('file'), clock: new FakeClock() });
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => config.stats().emitted === 1, 5000);
  t.same(summarize(drainUpdates(config)), ['ADD:web-node-1']);
  await writeFile(join(dir, '.web.yaml.swp'), manifestYaml('web', { image: 'busybox:9' }));
  await rename(join(dir, '.web.yaml.swp'), join(dir, 'web.yaml'));
  await waitFor(() => config.stats().emitted >= 3, 5000, 'REMOVE+ADD');
  await source.settled();
  t.same(summarize(drainUpdates(config)), ['REMOVE:web-node-1', 'ADD:web-node-1'], 'new content: the old pod goes, the new one comes');
  t.equal(config.pods()[0].spec?.containers[0].image, 'busybox:9');
});

t.test('a file written in pieces ends up read whole; an invalid file never disturbs the others', async (t) => {
  const dir = await tempDir(t);
  await writeManifest(dir, 'other.yaml', 'other');
  const { source, rec, logger } = make(dir);
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => podNames(rec) === 'other-node-1', 5000);
  const text = manifestYaml('slow');
  const { open } = await import('node:fs/promises');
  const fh = await open(join(dir, 'slow.yaml'), 'w');
  await fh.write(text.slice(0, 20));
  await fh.sync();
  await new Promise((r) => setTimeout(r, 30));
  await fh.write(text.slice(20));
  await fh.close();
  await waitFor(() => podNames(rec) === 'other-node-1,slow-node-1', 5000, 'whole file');
  await writeFile(join(dir, 'broken.yaml'), 'kind: Pod\napiVersion: v1\nmetadata: {name: broken}\nspec: {containers: []}\n');
  await waitFor(() => logger.entries.some((e) => e.level === 'error' && String(e.kv.path).endsWith('broken.yaml')), 5000, 'error for the broken file');
  await source.settled();
  t.equal(podNames(rec), 'other-node-1,slow-node-1');
});

t.test('the directory removed and created again: pods go, the watch comes back', async (t) => {
  const base = await tempDir(t);
  const dir = join(base, 'manifests');
  await mkdir(dir);
  await writeManifest(dir, 'a.yaml', 'a');
  const { source, rec, clock } = make(dir);
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => podNames(rec) === 'a-node-1', 5000);
  await rm(dir, { recursive: true });
  await waitFor(() => rec.names().length === 0 && !source.isWatching(), 5000, 'pods gone, watch closed');
  await mkdir(dir);
  await writeManifest(dir, 'b.yaml', 'b');
  // The watch is retried every second (Go's retryPeriod) on the source's clock.
  await clock.advance(1000);
  await waitFor(() => source.isWatching(), 5000, 'watching again');
  await waitFor(() => podNames(rec) === 'b-node-1', 5000, 'b listed after the watch came back');
  await writeManifest(dir, 'c.yaml', 'c');
  await waitFor(() => podNames(rec) === 'b-node-1,c-node-1', 5000, 'c seen by the new watch');
});

t.test('a missing directory at start is watched once it appears', async (t) => {
  const base = await tempDir(t);
  const dir = join(base, 'later');
  const { source, rec, clock } = make(dir);
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => rec.updates.length === 1, 5000);
  t.notOk(source.isWatching());
  await mkdir(dir);
  await writeManifest(dir, 'x.yaml', 'x');
  await clock.advance(1000);
  await waitFor(() => podNames(rec) === 'x-node-1', 5000);
  t.ok(source.isWatching());
  await source.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('a single-file path is watched through its directory (rename-over works)', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'pod.yaml');
  await writeFile(file, manifestYaml('single'));
  await writeManifest(dir, 'unrelated.yaml', 'unrelated');
  const { source, rec } = make(file);
  source.start();
  t.teardown(() => source.stop());
  await waitFor(() => podNames(rec) === 'single-node-1', 5000);
  await writeFile(join(dir, 'tmp'), manifestYaml('single', { image: 'x:3' }));
  await rename(join(dir, 'tmp'), file);
  await waitFor(() => rec.last()?.pods[0]?.spec?.containers[0].image === 'x:3', 5000);
  await unlink(file);
  await waitFor(() => rec.names().length === 0, 5000);
  t.pass('followed');
});
