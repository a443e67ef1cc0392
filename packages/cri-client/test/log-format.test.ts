import t from 'tap';
import { Readable } from 'node:stream';
import {
  CriLogFormatError,
  formatCriLogLine,
  formatRFC3339Nano,
  parseCriLogLine,
  readCriLog,
  writeCriLogFormatError,
  type CriLogEntry,
} from '../src/index.js';

async function collect(chunks: Array<string | Uint8Array>, errors: CriLogFormatError[] = []): Promise<CriLogEntry[]> {
  const entries: CriLogEntry[] = [];
  for await (const entry of readCriLog(Readable.from(chunks), { onError: (e) => errors.push(e) })) entries.push(entry);
  return entries;
}

t.test('formats RFC3339Nano as Go does: UTC, trailing zeros trimmed', async (t) => {
  const ms = Date.parse('2026-11-23T08:00:00.123Z');
  t.equal(formatRFC3339Nano(ms), '2026-11-23T08:00:00.123Z');
  t.equal(formatRFC3339Nano(Date.parse('2026-11-23T08:00:00Z')), '2026-11-23T08:00:00Z');
  t.equal(formatRFC3339Nano(ms, 456_789), '2026-11-23T08:00:00.123456789Z');
  t.equal(formatRFC3339Nano(ms + 0.5), '2026-11-23T08:00:00.1235Z');
});

t.test('formats and parses one record', async (t) => {
  const time = Date.parse('2026-11-23T08:00:00.5Z');
  const line = formatCriLogLine(time, 'stderr', 'F', 'oops: something failed');
  t.equal(line, '2026-11-23T08:00:00.5Z stderr F oops: something failed\n');
  const record = parseCriLogLine(line.slice(0, -1));
  t.same(record, { timestamp: '2026-11-23T08:00:00.5Z', time, stream: 'stderr', tag: 'F', text: 'oops: something failed' });
});

t.test('parses nanosecond timestamps with offsets, empty text and tags with flags', async (t) => {
  const record = parseCriLogLine('2016-10-06T00:17:09.669794202+02:00 stdout P:x part');
  t.equal(record.time, Date.parse('2016-10-05T22:17:09.669Z'));
  t.equal(record.tag, 'P');
  t.equal(record.text, 'part');
  t.equal(parseCriLogLine('2016-10-06T00:17:09Z stdout F').text, '');
  t.equal(parseCriLogLine('2016-10-06T00:17:09Z stdout F ').text, '');
  t.equal(parseCriLogLine('2016-10-06T00:17:09Z stdout F  two spaces').text, ' two spaces');
});

t.test('rejects malformed records with an error naming the field', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['garbage', /missing stream after timestamp/],
    ['yesterday stdout F hi', /timestamp "yesterday" is not RFC3339Nano/],
    ['2016-10-06T00:17:09Z stdin F hi', /stream "stdin" is neither stdout nor stderr/],
    ['2016-10-06T00:17:09Z stdout', /missing tag after stream/],
    ['2016-10-06T00:17:09Z stdout X hi', /tag "X" is neither P nor F/],
    ['2016-13-45T00:17:09Z stdout F hi', /not a valid time/],
  ];
  for (const [line, message] of cases) {
    let caught: unknown;
    try {
      parseCriLogLine(line, 7);
    } catch (error) {
      caught = error;
    }
    t.type(caught, CriLogFormatError, line);
    t.match((caught as Error).message, message, line);
    t.match((caught as Error).message, /at line 7/, line);
  }
});

t.test('joins partial records per stream and keeps streams apart', async (t) => {
  const entries = await collect([
    '2026-01-01T00:00:00.1Z stdout P hel\n',
    '2026-01-01T00:00:00.2Z stderr F err line\n',
    '2026-01-01T00:00:00.3Z stdout P lo \n',
    '2026-01-01T00:00:00.4Z stdout F world\n',
  ]);
  t.same(entries.map((e) => [e.stream, e.text, e.partial, e.timestamp]), [
    ['stderr', 'err line', false, '2026-01-01T00:00:00.2Z'],
    ['stdout', 'hello world', false, '2026-01-01T00:00:00.1Z'],
  ]);
});

t.test('reassembles records split across chunks, including multi-byte characters', async (t) => {
  const text = '2026-01-01T00:00:00Z stdout F grüße 🌍\n2026-01-01T00:00:01Z stdout F second\n';
  const bytes = Buffer.from(text);
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += 5) chunks.push(bytes.subarray(i, i + 5));
  const entries = await collect(chunks);
  t.same(entries.map((e) => e.text), ['grüße 🌍', 'second']);
});

t.test('reports malformed lines, skips them and goes on', async (t) => {
  const errors: CriLogFormatError[] = [];
  const entries = await collect(
    ['2026-01-01T00:00:00Z stdout F one\nnot a log line\n\n2026-01-01T00:00:00Z stdout Q bad tag\n2026-01-01T00:00:00Z stdout F two'],
    errors,
  );
  t.same(entries.map((e) => e.text), ['one', 'two']);
  t.equal(errors.length, 2);
  t.match(errors[0].message, /at line 2/);
  t.match(errors[1].message, /at line 4: tag "Q"/);
});

t.test('with no onError, each malformed line is one error line on stderr in klog format naming the line', async (t) => {
  const written: string[] = [];
  const original = process.stderr.write;
  process.stderr.write = ((chunk: string) => {
    written.push(chunk);
    return true;
  }) as typeof process.stderr.write;
  const entries: CriLogEntry[] = [];
  try {
    for await (const entry of readCriLog(Readable.from(['2026-01-01T00:00:00Z stdout F one\nnot a log line\n2026-01-01T00:00:00Z stdout F two\n']))) entries.push(entry);
  } finally {
    process.stderr.write = original;
  }
  t.same(entries.map((e) => e.text), ['one', 'two'], 'the line is skipped and reading goes on');
  t.equal(written.length, 1);
  t.match(
    written[0],
    /^E\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+\] "Skipping malformed CRI log record" err="malformed CRI log record at line 2: .*not a log line.*" lineNumber=2\n$/,
  );
});

t.test('writeCriLogFormatError uses the klog header (UTC, microseconds, pid)', async (t) => {
  const written: string[] = [];
  const original = process.stderr.write;
  process.stderr.write = ((chunk: string) => {
    written.push(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    writeCriLogFormatError(new CriLogFormatError('bad', 'x'), Date.parse('2026-11-23T08:00:00.123Z'));
  } finally {
    process.stderr.write = original;
  }
  t.same(written, [`E1123 08:00:00.123000 ${String(process.pid).padStart(7, ' ')}] "Skipping malformed CRI log record" err="malformed CRI log record: bad: \\"x\\""\n`]);
});

t.test('a partial message left at the end of the source is returned marked partial', async (t) => {
  const entries = await collect(['2026-01-01T00:00:00Z stdout P unfinished\n']);
  t.same(entries.map((e) => [e.text, e.partial]), [['unfinished', true]]);
});
