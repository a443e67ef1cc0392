import t, { type Test } from 'tap';
import { open, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { findTailLineStartIndex, formatTimestampFixed, readLogs, type ReadLogsOptions } from '../src/index.js';
import { FakeLogRuntime, criLogLines, type CriLogLineInit } from '../src/testing.js';
import { Sink, T0, eventually, tempDir } from './helpers.js';

const sec = (s: number): number => T0 + s * 1000;

/** Ten full stdout lines, one a second, "line 0".."line 9". */
const tenLines: CriLogLineInit[] = Array.from({ length: 10 }, (_, i) => ({ time: sec(i), text: `line ${i}` }));
const expected = (from: number, to = 10): string =>
  Array.from({ length: to - from }, (_, i) => `line ${from + i}\n`).join('');

async function setup(t: Test, content: string | Buffer) {
  const dir = tempDir(t);
  const path = join(dir, '0.log');
  await writeFile(path, content);
  const stdout = new Sink();
  const stderr = new Sink();
  const logger = new RecordingLogger();
  const clock = new FakeClock(sec(100));
  const runtime = new FakeLogRuntime();
  runtime.addContainer('c1', path, false);
  const read = (options: ReadLogsOptions = {}) => readLogs(path, 'c1', options, { runtime, stdout, stderr, clock, logger });
  return { dir, path, stdout, stderr, logger, clock, runtime, read };
}

t.test('reads everything by stream', async (t) => {
  const env = await setup(
    t,
    criLogLines([
      { time: sec(0), text: 'out 1' },
      { time: sec(1), stream: 'stderr', text: 'err 1' },
      { time: sec(2), text: 'out 2' },
    ]),
  );
  await env.read();
  t.equal(env.stdout.text(), 'out 1\nout 2\n');
  t.equal(env.stderr.text(), 'err 1\n');
  t.equal(env.runtime.calls.length, 0, 'no runtime call without follow');
});

t.test('tail', async (t) => {
  const env = await setup(t, criLogLines(tenLines));
  await env.read({ tailLines: 3 });
  t.equal(env.stdout.text(), expected(7), 'the last 3');

  const larger = await setup(t, criLogLines(tenLines));
  await larger.read({ tailLines: 50 });
  t.equal(larger.stdout.text(), expected(0), 'more than the file: all of it');

  const exact = await setup(t, criLogLines(tenLines));
  await exact.read({ tailLines: 10 });
  t.equal(exact.stdout.text(), expected(0));

  const zero = await setup(t, criLogLines(tenLines));
  await zero.read({ tailLines: 0 });
  t.equal(zero.stdout.text(), '', 'tail 0 writes nothing');

  const empty = await setup(t, '');
  await empty.read({ tailLines: 5 });
  t.equal(empty.stdout.text(), '', 'an empty file');
});

t.test('tail counts records, partial ones too, as Go does', async (t) => {
  const lines = criLogLines([
    { time: sec(0), text: 'first' },
    { time: sec(1), tag: 'P', text: 'a-' },
    { time: sec(2), tag: 'P', text: 'b-' },
    { time: sec(3), tag: 'F', text: 'c' },
  ]);
  const env = await setup(t, lines);
  await env.read({ tailLines: 2 });
  t.equal(env.stdout.text(), 'b-c\n', 'the last two records');
  const all = await setup(t, lines);
  await all.read({ tailLines: 3 });
  t.equal(all.stdout.text(), 'a-b-c\n');
});

t.test('findTailLineStartIndex across block boundaries', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'f');
  const text = 'aa\nbbbbbbbbbb\nc\n\ndddd\nincomplete';
  await writeFile(path, text);
  const file = await open(path, 'r');
  t.teardown(() => file.close());
  for (const block of [1, 2, 3, 7, 64, 1024]) {
    const starts = [];
    for (let n = 0; n <= 6; n++) starts.push(await findTailLineStartIndex(file, n, block));
    // n=0: after the last newline; the incomplete line is not counted.
    t.same(starts, [22, 17, 16, 14, 3, 0, 0], `block size ${block}`);
  }
  t.equal(await findTailLineStartIndex(file, -1), 0, 'negative: whole file');
});

t.test('partial records are written without a newline and joined by the reader', async (t) => {
  const env = await setup(
    t,
    criLogLines([
      { time: sec(0), tag: 'P', text: 'hello ' },
      { time: sec(1), tag: 'F', text: 'world' },
      { time: sec(2), tag: 'P', text: 'dangling' },
    ]),
  );
  await env.read();
  t.equal(env.stdout.text(), 'hello world\ndangling');
  t.same(
    env.stdout.chunks.map((c) => c.toString()),
    ['hello world\ndangling'],
    'batched into one write',
  );
});

t.test('since', async (t) => {
  const env = await setup(t, criLogLines(tenLines));
  await env.read({ sinceTime: sec(6) });
  t.equal(env.stdout.text(), expected(6), 'records at or after sinceTime');

  // The clock is at sec(100): sinceSeconds 97 means from sec(3).
  const secs = await setup(t, criLogLines(tenLines));
  await secs.read({ sinceSeconds: 97 });
  t.equal(secs.stdout.text(), expected(3), 'sinceSeconds counts back from the clock');

  const sub = await setup(t, criLogLines([{ time: sec(5) - 0.5, text: 'before' }, { time: sec(5) + 0.25, text: 'after' }]));
  await sub.read({ sinceTime: sec(5) });
  t.equal(sub.stdout.text(), 'after\n', 'sub-millisecond timestamps compare right');

  const tailed = await setup(t, criLogLines(tenLines));
  await tailed.read({ sinceTime: sec(8), tailLines: 4 });
  t.equal(tailed.stdout.text(), expected(8), 'tail then since');
});

t.test('limitBytes across both streams', async (t) => {
  const lines = criLogLines([
    { time: sec(0), text: 'abcdef' },
    { time: sec(1), stream: 'stderr', text: 'ghijkl' },
    { time: sec(2), text: 'mnopqr' },
  ]);
  const env = await setup(t, lines);
  await env.read({ limitBytes: 10 });
  t.equal(env.stdout.text(), 'abcdef\n');
  t.equal(env.stderr.text(), 'ghi', 'cut in the middle of the second line');

  const exact = await setup(t, lines);
  await exact.read({ limitBytes: 7 });
  t.equal(exact.stdout.text(), 'abcdef\n');
  t.equal(exact.stderr.text(), '', 'stops right at the limit');

  const stamped = await setup(t, lines);
  await stamped.read({ limitBytes: 38, timestamps: true });
  t.equal(stamped.stdout.text(), '2026-01-01T00:00:00.000000000Z abcdef\n', 'the timestamp counts');
  t.equal(stamped.stderr.text(), '', '31 + 7 = 38: the limit is reached');
});

t.test('timestamps: Go RFC3339NanoFixed, once per line', async (t) => {
  const raw = [
    '2026-01-01T00:00:01.5Z stdout F one\n',
    '2026-01-01T00:00:02.123456789Z stdout P two-\n',
    '2026-01-01T00:00:03Z stdout F part\n',
    '2026-01-01T02:00:04.1+02:00 stderr F zoned\n',
  ].join('');
  const env = await setup(t, raw);
  await env.read({ timestamps: true });
  t.equal(
    env.stdout.text(),
    '2026-01-01T00:00:01.500000000Z one\n2026-01-01T00:00:02.123456789Z two-part\n',
    'the continuation of a partial record is not stamped',
  );
  t.equal(env.stderr.text(), '2026-01-01T02:00:04.100000000+02:00 zoned\n', 'the zone is kept');
  t.equal(formatTimestampFixed('2026-01-01T00:00:00Z'), '2026-01-01T00:00:00.000000000Z');
});

t.test('malformed lines', async (t) => {
  const good = criLogLines([{ time: sec(0), text: 'good' }]);
  const env = await setup(t, `${good}not a record\n${criLogLines([{ time: sec(1), text: 'also good' }])}`);
  await env.read();
  t.equal(env.stdout.text(), 'good\nalso good\n', 'skipped');
  const logged = env.logger.entries.filter((e) => e.msg === 'Failed when parsing line in log file');
  t.equal(logged.length, 1);
  t.equal(logged[0].kv.line, 'not a record');

  const first = await setup(t, `garbage\n${good}`);
  await t.rejects(first.read(), /failed to get parse function: unsupported log format: "garbage"/, 'a first line in no known format fails');
});

t.test('an incomplete last line is written (and logged) when not following', async (t) => {
  const env = await setup(t, `${criLogLines([{ time: sec(0), text: 'done' }])}2026-01-01T00:00:01Z stdout F half`);
  await env.read();
  t.equal(env.stdout.text(), 'done\nhalf');
  t.ok(env.logger.entries.some((e) => e.msg === 'Incomplete line in log file'));
});

t.test('bytes pass through unchanged, also when not UTF-8; long lines span read chunks', async (t) => {
  const binary = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
  const long = 'x'.repeat(200_000);
  const env = await setup(
    t,
    Buffer.concat([Buffer.from('2026-01-01T00:00:00Z stdout F '), binary, Buffer.from('\n'), Buffer.from(criLogLines([{ time: sec(1), text: long }]))]),
  );
  await env.read();
  t.same(Buffer.concat(env.stdout.chunks), Buffer.concat([binary, Buffer.from(`\n${long}\n`)]));
});

t.test('stdout and stderr may be one stream; order is kept', async (t) => {
  const env = await setup(
    t,
    criLogLines([
      { time: sec(0), text: 'o1' },
      { time: sec(1), stream: 'stderr', text: 'e1' },
      { time: sec(2), text: 'o2' },
    ]),
  );
  const both = new Sink();
  await readLogs(env.path, 'c1', {}, { runtime: env.runtime, stdout: both, stderr: both, clock: env.clock });
  t.equal(both.text(), 'o1\ne1\no2\n');
});

t.test('symlinks are resolved; a missing file fails', async (t) => {
  const env = await setup(t, criLogLines(tenLines));
  const link = join(env.dir, 'link.log');
  await symlink(env.path, link);
  await readLogs(link, 'c1', { tailLines: 1 }, { runtime: env.runtime, stdout: env.stdout, stderr: env.stderr });
  t.equal(env.stdout.text(), 'line 9\n');
  await t.rejects(
    readLogs(join(env.dir, 'missing.log'), 'c1', {}, { runtime: env.runtime, stdout: env.stdout, stderr: env.stderr }),
    /failed to try resolving symlinks in path/,
  );
});

t.test('a slow writer is waited for: memory stays bounded', async (t) => {
  // 240 kB of log against a sink that holds 256 bytes: the reader may run one 64 KiB batch ahead, no more.
  const batch = 64 * 1024;
  const lines = Array.from({ length: 20_000 }, (_, i) => ({ time: sec(0), text: `line ${String(i).padStart(6, '0')}` }));
  const env = await setup(t, criLogLines(lines));
  const slow = new Sink({ highWaterMark: 256, hold: true });
  let maxBuffered = 0;
  const write = slow.write.bind(slow) as (chunk: Buffer) => boolean;
  slow.write = ((chunk: Buffer) => {
    const ok = write(chunk);
    maxBuffered = Math.max(maxBuffered, slow.writableLength);
    return ok;
  }) as typeof slow.write;
  const reading = readLogs(env.path, 'c1', {}, { runtime: env.runtime, stdout: slow, stderr: slow, clock: env.clock });
  await eventually(() => slow.writableNeedDrain, { what: 'the sink to fill' });
  await new Promise((resolve) => setTimeout(resolve, 30));
  t.equal(slow.chunks.length, 1, 'only the first write reached the sink');
  t.ok(slow.writableLength <= batch + 256, `buffered ${slow.writableLength} bytes: one batch`);
  slow.release();
  await reading;
  t.ok(maxBuffered <= batch + 256 + 20, `never more than a batch plus a line buffered (max ${maxBuffered} of 240 kB)`);
  t.equal(slow.text(), lines.map((l) => `${l.text}\n`).join(''));
});

t.test('a closed output stream fails the read', async (t) => {
  const env = await setup(t, criLogLines(tenLines));
  const closed = new Sink();
  closed.destroy();
  await t.rejects(
    readLogs(env.path, 'c1', {}, { runtime: env.runtime, stdout: closed, stderr: closed }),
    /log output stream closed/,
  );
});

t.test('an aborted signal rejects before reading', async (t) => {
  const env = await setup(t, criLogLines(tenLines));
  const controller = new AbortController();
  controller.abort();
  await t.rejects(
    readLogs(env.path, 'c1', {}, { runtime: env.runtime, stdout: env.stdout, stderr: env.stderr, signal: controller.signal }),
    { name: 'AbortError' },
  );
  t.equal(env.stdout.text(), '');
});
