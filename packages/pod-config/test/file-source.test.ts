import t from 'tap';
import { mkdir, rm, symlink, unlink, writeFile, appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigSourceAnnotationKey, PodOperation } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FileSource, PodConfig } from '../src/index.js';
import { drainUpdates, summarize } from '../src/testing.js';
import { captureStderr, manifestYaml, recordingSink, tempDir, writeManifest } from './helpers.js';

function make(path: string, opts: { periodMs?: number } = {}) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const rec = recordingSink();
  const source = new FileSource({ path, nodeName: 'node-1', sink: rec.sink, clock, logger, watch: false, periodMs: opts.periodMs });
  return { clock, logger, rec, source };
}

/** Fires the re-list timer and waits for the pass to finish. */
async function tick(clock: FakeClock, source: FileSource, ms = 20_000): Promise<void> {
  clock.step(ms);
  await source.settled();
}

t.test('lists a directory at start: manifests in name order; hidden, foreign and sub-directories ignored', async (t) => {
  const dir = await tempDir(t);
  await writeManifest(dir, 'b.yaml', 'bravo');
  await writeFile(join(dir, 'a.json'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'alpha' }, spec: { containers: [{ name: 'c', image: 'i:1' }] } }));
  await writeManifest(dir, 'c.yml', 'charlie');
  await writeManifest(dir, '.hidden.yaml', 'hidden');
  await writeManifest(dir, 'notes.txt', 'txt');
  await writeManifest(dir, 'd.yaml~', 'backup');
  await mkdir(join(dir, 'sub.yaml'));
  const { source, rec, logger, clock } = make(dir);
  source.start();
  await source.settled();
  t.equal(rec.updates.length, 1);
  t.equal(rec.last()?.op, PodOperation.SET);
  t.equal(rec.last()?.source, 'file');
  t.same(rec.names(), ['alpha-node-1', 'bravo-node-1', 'charlie-node-1']);
  t.equal(rec.last()?.pods[0].metadata?.annotations?.[ConfigSourceAnnotationKey], 'file');
  t.ok(logger.find('Not recursing into manifest path'));
  await tick(clock, source);
  t.equal(rec.updates.length, 1, 'an unchanged re-list sends nothing');
  t.equal(source.stats().fileReads, 3, 'and reads no file again (stat unchanged)');
  await source.stop();
  t.equal(clock.pendingTimers(), 0, 'no timers left');
});

t.test('a missing path sends an empty SET (so the source is seen), and its pods appear when it is created', async (t) => {
  const base = await tempDir(t);
  const dir = join(base, 'manifests');
  const { source, rec, clock } = make(dir);
  const config = new PodConfig();
  const sink = config.channel('file');
  rec.updates.length = 0;
  const src = new FileSource({ path: dir, nodeName: 'node-1', sink, clock, watch: false });
  src.start();
  await src.settled();
  t.ok(config.sourcesReady());
  t.same(summarize(drainUpdates(config)), ['ADD:']);
  await mkdir(dir);
  await writeManifest(dir, 'a.yaml', 'a');
  await tick(clock, src);
  t.same(summarize(drainUpdates(config)), ['ADD:a-node-1']);
  await rm(dir, { recursive: true });
  await tick(clock, src);
  t.same(summarize(drainUpdates(config)), ['REMOVE:a-node-1'], 'the path going away removes its pods, as Go');
  await src.stop();
  await source.stop();
});

t.test('a malformed file is reported once with its name and skipped; the other pods are unaffected', async (t) => {
  const dir = await tempDir(t);
  await writeManifest(dir, 'good.yaml', 'good');
  await writeFile(join(dir, 'bad.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: x\n');
  await writeFile(join(dir, 'dup.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: d}\nspec: {containers: [{name: web, image: i}, {name: web, image: i}]}\n');
  const { source, rec, logger, clock } = make(dir);
  source.start();
  await source.settled();
  t.same(rec.names(), ['good-node-1']);
  // Files are read concurrently, so their errors may be logged in either order.
  const errors = logger.entries.filter((e) => e.level === 'error').sort((a, b) => String(a.kv.path).localeCompare(String(b.kv.path)));
  t.equal(errors.length, 2, logger.lines().join('\n'));
  t.match(String((errors[0].err as Error).message), new RegExp(`^${join(dir, 'bad.yaml')}: couldn't parse as pod`));
  t.equal(errors[0].kv.path, join(dir, 'bad.yaml'));
  t.match(String((errors[1].err as Error).message), /dup\.yaml: invalid pod: spec\.containers\[1\]\.name: Duplicate value: "web"/);
  t.match(source.stats(), { invalidManifests: 2, skippedFiles: 2 }, 'both bad files are counted');
  // Re-lists do not repeat the error at error level, nor count it again.
  await appendFile(join(dir, 'good.yaml'), '\n');
  await tick(clock, source);
  t.equal(logger.entries.filter((e) => e.level === 'error').length, 2);
  await source.relist({ reread: true });
  t.equal(logger.entries.filter((e) => e.level === 'error').length, 2, 'nor does reading the unchanged files again');
  t.match(source.stats(), { invalidManifests: 2, skippedFiles: 2 });
  // Fixing one file takes it off skippedFiles; deleting the other too; the count of errors stays.
  await writeManifest(dir, 'dup.yaml', 'dup');
  await unlink(join(dir, 'bad.yaml'));
  await tick(clock, source);
  t.same(rec.names(), ['dup-node-1', 'good-node-1']);
  t.match(source.stats(), { invalidManifests: 2, skippedFiles: 0 });
  await source.stop();
});

t.test('with no logger given, a bad manifest is one error line on stderr in klog format naming the file, and counted', async (t) => {
  const dir = await tempDir(t);
  const bad = join(dir, 'bad.yaml');
  await writeFile(bad, 'apiVersion: v1\nkind: Pod\nmetadata: {name: x\n');
  const clock = new FakeClock();
  const rec = recordingSink();
  const stderr = captureStderr(t);
  const source = new FileSource({ path: dir, nodeName: 'node-1', sink: rec.sink, clock, watch: false });
  source.start();
  await source.settled();
  await tick(clock, source);
  await source.stop();
  stderr.restore();
  t.same(rec.names(), [], 'an empty SET, as before');
  const lines = stderr.lines();
  t.equal(lines.length, 1, lines.join('\n'));
  t.match(lines[0], /^E\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+\] "Can't process manifest file; skipping it" err="/);
  t.ok(lines[0].includes(`err="${bad}: couldn't parse as pod`), 'the error names the file and what is wrong');
  t.ok(lines[0].endsWith(` source="file" path="${bad}"`));
  t.match(source.stats(), { invalidManifests: 1, skippedFiles: 1 });
});

t.test('a duplicate pod is counted as an invalid manifest and a skipped file', async (t) => {
  const dir = await tempDir(t);
  await writeManifest(dir, 'a.yaml', 'same');
  await writeManifest(dir, 'b.yaml', 'same', { image: 'other:1' });
  const { source, clock } = make(dir);
  source.start();
  await source.settled();
  t.match(source.stats(), { invalidManifests: 1, skippedFiles: 1 });
  await tick(clock, source);
  t.match(source.stats(), { invalidManifests: 1, skippedFiles: 1 }, 'reported once');
  await unlink(join(dir, 'a.yaml'));
  await tick(clock, source);
  t.match(source.stats(), { invalidManifests: 1, skippedFiles: 0 }, 'b.yaml gives the pod now');
  await source.stop();
});

t.test('a file that cannot be stat\'ed (a symlink loop) is reported once and counted; replacing it with a manifest works', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'loop.yaml');
  await symlink('loop.yaml', file);
  const { source, logger, clock, rec } = make(dir);
  source.start();
  await source.settled();
  await tick(clock, source);
  const errors = logger.entries.filter((e) => e.level === 'error');
  t.equal(errors.length, 1, logger.lines().join('\n'));
  t.match(errors[0], { msg: "Can't get metadata for manifest file; skipping it", kv: { path: file } });
  t.match(String((errors[0].err as Error).message), /ELOOP/);
  t.match(source.stats(), { invalidManifests: 1, skippedFiles: 1 });
  await unlink(file);
  await writeManifest(dir, 'loop.yaml', 'loop');
  await tick(clock, source);
  t.same(rec.names(), ['loop-node-1']);
  t.match(source.stats(), { invalidManifests: 1, skippedFiles: 0 });
  t.ok(logger.find('Manifest file is valid again'));
  await source.stop();
});

t.test('a dangling symlink is reported once, naming it; a pod whose link target goes away is removed', async (t) => {
  const dir = await tempDir(t);
  const elsewhere = await tempDir(t);
  await symlink(join(elsewhere, 'missing.yaml'), join(dir, 'dangling.yaml'));
  await writeManifest(elsewhere, 'target.yaml', 'linked');
  await symlink(join(elsewhere, 'target.yaml'), join(dir, 'linked.yaml'));
  const { source, logger, clock, rec } = make(dir);
  source.start();
  await source.settled();
  t.same(rec.names(), ['linked-node-1'], 'a symlink to a manifest is read');
  await tick(clock, source);
  const errors = () => logger.entries.filter((e) => e.level === 'error');
  t.equal(errors().length, 1, logger.lines().join('\n'));
  t.match(errors()[0], { msg: "Can't get metadata for manifest file; skipping it", kv: { path: join(dir, 'dangling.yaml') } });
  t.match(String((errors()[0].err as Error).message), /ENOENT/);
  t.match(source.stats(), { invalidManifests: 1, skippedFiles: 1 });
  await unlink(join(elsewhere, 'target.yaml'));
  await tick(clock, source);
  await tick(clock, source);
  t.same(rec.names(), [], 'the pod went with its target');
  t.equal(errors().length, 2, 'the newly dangling link is reported, once');
  t.match(source.stats(), { invalidManifests: 2, skippedFiles: 2 });
  await source.stop();
});

t.test('a half-written file is skipped, then read again on the next re-list', async (t) => {
  const dir = await tempDir(t);
  const text = manifestYaml('web');
  await writeFile(join(dir, 'web.yaml'), text.slice(0, Math.floor(text.length / 2)));
  const { source, rec, clock } = make(dir);
  source.start();
  await source.settled();
  t.same(rec.names(), [], 'nothing yet');
  await writeFile(join(dir, 'web.yaml'), text);
  await tick(clock, source);
  t.same(rec.names(), ['web-node-1']);
  await source.stop();
});

t.test('an edit that breaks a file keeps the pod it gave before; fixing or deleting it goes on normally', async (t) => {
  const dir = await tempDir(t);
  await writeManifest(dir, 'web.yaml', 'web');
  await writeManifest(dir, 'other.yaml', 'other');
  const { source, rec, clock, logger } = make(dir);
  source.start();
  await source.settled();
  const uid = rec.last()?.pods.find((p) => p.metadata?.name === 'web-node-1')?.metadata?.uid;
  await writeFile(join(dir, 'web.yaml'), 'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {restartPolicy: Sometimes, containers: [{name: c, image: i}]}\n');
  await tick(clock, source);
  t.equal(rec.updates.length, 1, 'no new SET: the last good pod stays');
  t.ok(logger.find("Can't process manifest file; keeping the pod it gave before"));
  t.same(source.pods().map((p) => p.metadata?.uid).includes(uid), true);
  await writeManifest(dir, 'web.yaml', 'web', { image: 'busybox:2' });
  await tick(clock, source);
  t.equal(rec.updates.length, 2);
  t.not(rec.last()?.pods.find((p) => p.metadata?.name === 'web-node-1')?.metadata?.uid, uid, 'a fixed file with new content is a new pod');
  t.ok(logger.find('Manifest file is valid again'));
  await unlink(join(dir, 'web.yaml'));
  await tick(clock, source);
  t.same(rec.names(), ['other-node-1']);
  await source.stop();
});

t.test('two files defining the same pod: the first file in name order wins, the other is reported naming both', async (t) => {
  const dir = await tempDir(t);
  await writeManifest(dir, 'a.yaml', 'same');
  await writeManifest(dir, 'b.yaml', 'same', { image: 'other:1' });
  const { source, rec, logger } = make(dir);
  source.start();
  await source.settled();
  t.same(rec.names(), ['same-node-1']);
  t.equal(rec.last()?.pods[0].spec?.containers[0].image, 'busybox:1.36');
  const e = logger.find('Manifest file defines the same pod as an earlier file; ignoring it');
  t.match(e?.kv, { path: join(dir, 'b.yaml'), firstPath: join(dir, 'a.yaml'), pod: 'default/same-node-1' });
  await source.stop();
});

t.test('staticPodPath may be a single file, whatever its name', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, 'pod.manifest');
  await writeFile(file, manifestYaml('single'));
  const { source, rec, clock } = make(file);
  source.start();
  await source.settled();
  t.same(rec.names(), ['single-node-1']);
  await writeFile(file, manifestYaml('single', { image: 'x:2' }));
  await tick(clock, source);
  t.equal(rec.last()?.pods[0].spec?.containers[0].image, 'x:2');
  await unlink(file);
  await tick(clock, source);
  t.same(rec.names(), []);
  await source.stop();
});

t.test('re-lists follow fileCheckFrequency and stop() is idempotent; relist() lists on demand', async (t) => {
  const dir = await tempDir(t);
  const { source, clock } = make(dir, { periodMs: 5000 });
  source.start();
  source.start();
  await source.settled();
  t.equal(source.stats().relists, 1);
  await tick(clock, source, 5000);
  await tick(clock, source, 5000);
  t.equal(source.stats().relists, 3);
  await source.relist();
  t.equal(source.stats().relists, 4);
  await source.stop();
  await source.stop();
  clock.step(60_000);
  await source.settled();
  t.equal(source.stats().relists, 4, 'nothing after stop');
  t.equal(clock.pendingTimers(), 0);
});

t.test('a path that is neither file nor directory is an error, logged', async (t) => {
  const { source, logger } = make('/dev/null');
  source.start();
  await source.settled();
  t.ok(logger.find('Unable to read config path'));
  await source.stop();
});

t.test('stop() does not hang on a sink that waits (a full config nobody reads)', async (t) => {
  const dir = await tempDir(t);
  await writeManifest(dir, 'a.yaml', 'a');
  const clock = new FakeClock();
  const source = new FileSource({ path: dir, nodeName: 'n', sink: () => new Promise<void>(() => undefined), clock, watch: false });
  source.start();
  await clock.flush();
  await source.stop();
  t.pass('stopped');
});
