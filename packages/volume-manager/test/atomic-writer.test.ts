import t, { type Test } from 'tap';
import * as fsp from 'node:fs/promises';
import { mkdtemp, readdir, readFile, readlink, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingLogger } from '@kubelet-ts/core/testing';
import { AtomicWriter, validatePath, type AtomicWriterFs, type FileProjection } from '../src/atomic-writer.js';

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'atomic-writer-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const file = (data: string | Buffer, mode = 0o644): FileProjection => ({ data, mode });
const tsDirs = async (dir: string) => (await readdir(dir)).filter((n) => /^\.\.\d{4}_/.test(n));

t.test('layout: files in a timestamped dir behind ..data, visible entries link into it', async (t) => {
  const dir = await tempDir(t);
  const writer = new AtomicWriter(dir, { now: () => new Date('2026-03-04T05:06:07Z') });
  t.equal(await writer.write({ a: file('A'), 'sub/b': file(Buffer.from([0, 1, 2]), 0o600), 'sub/deeper/c': file('C') }), true);

  const ts = await readlink(join(dir, '..data'));
  t.match(ts, /^\.\.2026_03_04_05_06_07\..+$/);
  t.same((await readdir(dir)).sort(), ['..data', ts, 'a', 'sub'].sort());
  t.equal(await readlink(join(dir, 'a')), '..data/a');
  t.equal(await readlink(join(dir, 'sub')), '..data/sub');
  t.equal(await readFile(join(dir, 'a'), 'utf8'), 'A');
  t.same(await readFile(join(dir, 'sub/b')), Buffer.from([0, 1, 2]));
  t.equal(await readFile(join(dir, 'sub/deeper/c'), 'utf8'), 'C');
  t.equal((await stat(join(dir, ts))).mode & 0o7777, 0o755);
  t.equal((await stat(join(dir, 'a'))).mode & 0o7777, 0o644);
  t.equal((await stat(join(dir, 'sub/b'))).mode & 0o7777, 0o600);
});

t.test('modes are exact whatever the umask', async (t) => {
  const dir = await tempDir(t);
  const old = process.umask(0o077);
  t.teardown(() => void process.umask(old));
  await new AtomicWriter(dir).write({ a: file('A', 0o644), b: file('B', 0o755), c: file('C', 0o400) });
  t.equal((await stat(join(dir, 'a'))).mode & 0o7777, 0o644);
  t.equal((await stat(join(dir, 'b'))).mode & 0o7777, 0o755);
  t.equal((await stat(join(dir, 'c'))).mode & 0o7777, 0o400);
  t.equal((await stat(join(dir, '..data'))).mode & 0o7777, 0o755, 'the timestamped dir is traversable');
});

t.test('an unchanged payload writes nothing; a changed one swaps in a new dir and drops the old', async (t) => {
  const dir = await tempDir(t);
  const writer = new AtomicWriter(dir);
  await writer.write(new Map([['a', file('A')], ['b', file('B')]]));
  const first = await readlink(join(dir, '..data'));

  t.equal(await writer.write({ a: file('A'), b: file(Buffer.from('B')) }), false);
  t.equal(await readlink(join(dir, '..data')), first, 'no new directory');

  t.equal(await writer.write({ a: file('A2'), b: file('B') }), true);
  const second = await readlink(join(dir, '..data'));
  t.not(second, first);
  t.same(await tsDirs(dir), [second], 'the old timestamped dir is gone');
  t.equal(await readFile(join(dir, 'a'), 'utf8'), 'A2');
  t.equal(await readFile(join(dir, 'b'), 'utf8'), 'B');
});

t.test('keys no longer in the payload disappear, links included', async (t) => {
  const dir = await tempDir(t);
  const writer = new AtomicWriter(dir);
  await writer.write({ a: file('A'), 'sub/b': file('B'), 'sub/c': file('C'), gone: file('G') });
  t.equal(await writer.write({ a: file('A'), 'sub/b': file('B') }), true, 'removal alone is a change');
  const ts = await readlink(join(dir, '..data'));
  t.same((await readdir(dir)).sort(), ['..data', ts, 'a', 'sub'].sort());
  t.same((await readdir(join(dir, 'sub'))).sort(), ['b']);

  t.equal(await writer.write({ a: file('A') }), true);
  t.same((await readdir(dir)).filter((n) => !n.startsWith('..')), ['a']);

  t.equal(await writer.write({}), true);
  t.same((await readdir(dir)).filter((n) => !n.startsWith('..')), []);
  t.equal(await writer.write({}), false);
});

t.test('a file may replace a directory of the same name', async (t) => {
  const dir = await tempDir(t);
  const writer = new AtomicWriter(dir);
  await writer.write({ 'x/y': file('Y') });
  t.equal(await writer.write({ x: file('X') }), true);
  t.equal(await readFile(join(dir, 'x'), 'utf8'), 'X');
});

t.test("invalid paths are refused with Go's messages and nothing is written", async (t) => {
  const dir = await tempDir(t);
  const logger = new RecordingLogger();
  const writer = new AtomicWriter(dir, { logger, logContext: 'pod ns/p volume v' });
  const cases: Array<[string, string]> = [
    ['', 'invalid path: must not be empty: ""'],
    ['/abs', 'invalid path: must be relative path: /abs'],
    ['a/../b', "invalid path: must not contain '..': a/../b"],
    ['..', "invalid path: must not contain '..': .."],
    ['..data', "invalid path: must not start with '..': ..data"],
    ['..a/b', "invalid path: must not start with '..': ..a/b"],
    ['x'.repeat(256), 'invalid path: filenames must be less than or equal to 255 characters'],
    [`${'d/'.repeat(2048)}f`, 'invalid path: must be less than or equal to 4096 characters'],
  ];
  for (const [path, message] of cases) {
    await t.rejects(writer.write({ ok: file('fine'), [path]: file('x') }), { message }, JSON.stringify(path).slice(0, 40));
    t.throws(() => validatePath(path), { message });
  }
  t.same(await readdir(dir), [], 'nothing written');
  t.ok(logger.messages('error').includes('Invalid payload'));
  t.doesNotThrow(() => validatePath('.hidden/..dots/a..b'));
  t.equal(await writer.write({ 'a//b/': file('B'), './c': file('C') }), true, 'paths are cleaned');
  t.equal(await readFile(join(dir, 'a/b'), 'utf8'), 'B');
  t.equal(await readFile(join(dir, 'c'), 'utf8'), 'C');
});

t.test('a crash between writing the new dir and the rename leaves the old contents whole; the next write succeeds', async (t) => {
  const dir = await tempDir(t);
  await new AtomicWriter(dir).write({ a: file('old-a'), b: file('old-b') });
  const before = await readlink(join(dir, '..data'));

  // The process "dies" at the rename: nothing after it runs, so no cleanup happens either.
  const crashed = new Error('killed');
  const dying: AtomicWriterFs = {
    ...fsp,
    rename: async () => {
      throw crashed;
    },
    unlink: async () => undefined,
    rm: async () => undefined,
  };
  await t.rejects(new AtomicWriter(dir, { fs: dying }).write({ a: file('new-a'), c: file('new-c') }), crashed);

  t.equal(await readlink(join(dir, '..data')), before, '..data still names the old version');
  t.equal(await readFile(join(dir, 'a'), 'utf8'), 'old-a');
  t.equal(await readFile(join(dir, 'b'), 'utf8'), 'old-b');
  t.equal((await tsDirs(dir)).length, 2, 'the new dir was written');
  t.ok((await readdir(dir)).includes('..data_tmp'), 'the tmp link was left behind');

  const logger = new RecordingLogger();
  t.equal(await new AtomicWriter(dir, { logger }).write({ a: file('new-a'), c: file('new-c') }), true);
  t.equal(await readFile(join(dir, 'a'), 'utf8'), 'new-a');
  t.equal(await readFile(join(dir, 'c'), 'utf8'), 'new-c');
  const after = await readlink(join(dir, '..data'));
  t.same((await readdir(dir)).sort(), ['..data', after, 'a', 'c'].sort(), 'leftovers and the old version are gone');
});

t.test('a failed rename cleans up after itself and keeps the old version', async (t) => {
  const dir = await tempDir(t);
  await new AtomicWriter(dir).write({ a: file('old') });
  const failing: AtomicWriterFs = { ...fsp, rename: async () => Promise.reject(Object.assign(new Error('EIO'), { code: 'EIO' })) };
  const logger = new RecordingLogger();
  await t.rejects(new AtomicWriter(dir, { fs: failing, logger }).write({ a: file('new') }), { message: 'EIO' });
  t.same((await readdir(dir)).sort(), ['..data', await readlink(join(dir, '..data')), 'a'].sort());
  t.equal(await readFile(join(dir, 'a'), 'utf8'), 'old');
  t.ok(logger.messages('error').includes('Error renaming symbolic link for data directory'));
});

t.test('missing visible links are recreated even when the data is unchanged', async (t) => {
  const dir = await tempDir(t);
  const writer = new AtomicWriter(dir);
  await writer.write({ a: file('A'), 'sub/b': file('B') });
  await unlink(join(dir, 'sub'));
  t.equal(await writer.write({ a: file('A'), 'sub/b': file('B') }), false);
  t.equal(await readFile(join(dir, 'sub/b'), 'utf8'), 'B');
});

t.test('fsUser chowns the file, leaving the group alone', async (t) => {
  const dir = await tempDir(t);
  const calls: Array<[string, number, number]> = [];
  const recording: AtomicWriterFs = {
    ...fsp,
    chown: async (path, uid, gid) => {
      calls.push([String(path), uid, gid]);
    },
  };
  await new AtomicWriter(dir, { fs: recording }).write({ token: { data: 't', mode: 0o600, fsUser: 1000 }, other: file('o') });
  t.equal(calls.length, 1);
  t.match(calls[0][0], /\/\.\.\d{4}_.*\/token$/);
  t.same(calls[0].slice(1), [1000, -1]);
});
