import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { readLogs, timestampParseCounts, type ReadLogsOptions } from '../src/read-logs.js';
import { FakeLogRuntime, criLogLines } from '../src/testing.js';
import { Sink, T0, tempDir } from './helpers.js';
import { readLogs as referenceReadLogs } from './reference-read-logs.js';

/** A deterministic pseudo-random sequence. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

const pad = (n: number, w: number): string => String(n).padStart(w, '0');

/**
 * A log with what runtimes write and what they should not: fractions of 0 to 9 digits (trailing zeros trimmed, as
 * RFC3339Nano does), zones, seconds that change and go back, T24:00:00, P and F records of both streams, tags with
 * flags, empty contents, non-UTF-8 bytes, records longer than the read buffer, and malformed records of every kind.
 */
function makeLog(seed: number, records: number): Buffer {
  const r = rng(seed);
  const parts: Buffer[] = [];
  let second = 0;
  for (let n = 0; n < records; n++) {
    if (r() < 0.1) second += 1 + Math.floor(r() * 3);
    if (r() < 0.02) second -= 2;
    const d = new Date(T0 + second * 1000);
    let prefix = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
    if (r() < 0.01) prefix = '2026-01-01T24:00:00';
    const digits = Math.floor(r() * 10);
    const fraction = digits === 0 ? '' : `.${String(Math.floor(r() * 10 ** digits)).padStart(digits, '0')}`;
    const zone = r() < 0.9 ? 'Z' : r() < 0.5 ? '+05:30' : '-01:00';
    const stream = r() < 0.7 ? 'stdout' : 'stderr';
    const tag = r() < 0.8 ? 'F' : r() < 0.9 ? 'P' : 'F:x';
    let text: Buffer;
    const kind = r();
    if (kind < 0.05) text = Buffer.alloc(0);
    else if (kind < 0.08) text = Buffer.from([0xff, 0xfe, 0x41, 0xc3]);
    else if (kind < 0.082) text = Buffer.alloc(70_000 + Math.floor(r() * 70_000), 'x');
    else text = Buffer.from(`record ${n} ${'é lorem ipsum '.repeat(Math.floor(r() * 8))}`);
    let line = Buffer.concat([Buffer.from(`${prefix}${fraction}${zone} ${stream} ${tag} `), text]);
    const bad = r();
    if (bad < 0.01) line = Buffer.from(`${prefix}${fraction}${zone} stdout`);
    else if (bad < 0.02) line = Buffer.from(`${prefix}${fraction}${zone} stdin F x`);
    else if (bad < 0.03) line = Buffer.from(`${prefix}.1234567890Z stdout F ten digits`);
    else if (bad < 0.04) line = Buffer.from(`2026-13-01T00:00:00Z stdout F bad month`);
    else if (bad < 0.05) line = Buffer.from(`${prefix}${fraction}${zone} stdout X bad tag`);
    else if (bad < 0.06) line = Buffer.from(`${prefix}${fraction}${zone} stdout F`);
    else if (bad < 0.065) line = Buffer.from('');
    else if (bad < 0.07) line = Buffer.from(`${prefix}${fraction}${zone}  stdout F two spaces`);
    parts.push(line, Buffer.from('\n'));
  }
  return Buffer.concat(parts);
}

interface Outcome {
  stdout: string;
  stderr: string;
  same: string;
  error: string | undefined;
  log: string[];
}

type Read = typeof readLogs;

async function run(read: Read, path: string, options: ReadLogsOptions): Promise<Outcome> {
  const outcome: Outcome = { stdout: '', stderr: '', same: '', error: undefined, log: [] };
  const runtime = new FakeLogRuntime();
  runtime.addContainer('c1', path, false);
  const clock = new FakeClock(T0 + 100_000);
  for (const sameStream of [false, true]) {
    const stdout = new Sink({ highWaterMark: 1024 });
    const stderr = sameStream ? stdout : new Sink({ highWaterMark: 1024 });
    const logger = new RecordingLogger();
    try {
      await read(path, 'c1', options, { runtime, stdout, stderr, clock, logger });
    } catch (err) {
      outcome.error = (err as Error).message;
    }
    outcome.log.push(...logger.entries.map((e) => `${e.level} ${e.msg} ${JSON.stringify(e.kv)} ${(e.err as Error | undefined)?.message ?? ''}`));
    // Compare bytes: hex keeps non-UTF-8 output exact.
    if (sameStream) outcome.same = Buffer.concat(stdout.chunks).toString('hex');
    else {
      outcome.stdout = Buffer.concat(stdout.chunks).toString('hex');
      outcome.stderr = Buffer.concat((stderr as Sink).chunks).toString('hex');
    }
  }
  return outcome;
}

t.test('output, errors and log entries are those of the reference implementation for every option combination', async (t) => {
  const dir = tempDir(t);
  const logs: Array<[string, Buffer]> = [];
  for (const seed of [1, 2, 3]) logs.push([`seed ${seed}`, makeLog(seed, 600)]);
  // An incomplete last record, and a log whose first record is malformed.
  logs.push(['incomplete last line', Buffer.concat([makeLog(4, 50), Buffer.from('2026-01-01T00:00:05.5Z stdout F no newline')])]);
  logs.push(['first line malformed', Buffer.concat([Buffer.from('not a cri log\n'), makeLog(5, 20)])]);
  logs.push(['P then incomplete', Buffer.from('2026-01-01T00:00:01Z stdout P abc\n2026-01-01T00:00:01Z stdout P def')]);

  const sinces: Array<Pick<ReadLogsOptions, 'sinceTime' | 'sinceSeconds'>> = [{}, { sinceTime: T0 + 3_500 }, { sinceTime: T0 + 10_000 }, { sinceSeconds: 95 }];
  let combos = 0;
  for (const [name, content] of logs) {
    const path = join(dir, `${name.replace(/ /g, '-')}.log`);
    await writeFile(path, content);
    for (const timestamps of [false, true])
      for (const since of sinces)
        for (const tailLines of [undefined, 0, 1, 7, 100_000])
          for (const limitBytes of [undefined, 1, 37, 5000])
            for (const follow of [false, true]) {
              const options: ReadLogsOptions = { timestamps, ...since, tailLines, limitBytes, follow };
              const ours = await run(readLogs, path, options);
              const reference = await run(referenceReadLogs, path, options);
              combos++;
              if (JSON.stringify(ours) !== JSON.stringify(reference)) {
                t.same(ours, reference, `${name}: ${JSON.stringify(options)}`);
                return;
              }
            }
  }
  t.pass(`${combos} combinations identical`);
});

t.test('timestamps are not parsed per record without since; with since, one date parse per second of log', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, '0.log');
  // 1,000 records in one second, with fractions.
  await writeFile(path, criLogLines(Array.from({ length: 1000 }, (_, i) => ({ time: T0 + i / 1000 + (i % 1000), text: `r${i}` }))));
  const runtime = new FakeLogRuntime();
  runtime.addContainer('c1', path, false);
  const deps = { runtime, stdout: new Sink(), stderr: new Sink(), clock: new FakeClock(T0 + 100_000), logger: new RecordingLogger() };

  const counted = async (options: ReadLogsOptions) => {
    const before = { ...timestampParseCounts };
    await readLogs(path, 'c1', options, deps);
    return { dates: timestampParseCounts.dates - before.dates, recordTimes: timestampParseCounts.recordTimes - before.recordTimes };
  };
  t.same(await counted({}), { dates: 1, recordTimes: 0 }, 'no record time without since or timestamps: the second is validated once');
  t.same(await counted({ timestamps: true }), { dates: 1, recordTimes: 0 }, 'timestamps are copied as bytes, not parsed');
  t.same(await counted({ sinceTime: T0 + 500 }), { dates: 1, recordTimes: 1000 }, 'since needs every record time, from one date parse');
  t.equal((deps.stdout as Sink).chunks.length > 0, true);
});
