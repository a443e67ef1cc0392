import t from 'tap';
import { createLogger, defaultLogger, noopLogger, safeJsonStringify, errorText, formatKlogHeader, type LoggerOptions } from '../src/index.js';
import { captureStderr, FakeClock, RecordingLogger, type LogEntry } from '../src/testing.js';

// 2026-11-23T08:00:00.123456Z, with sub-millisecond precision as the logger may receive it
const WHEN = Date.parse('2026-11-23T08:00:00.123Z') + 0.456;
const PID = String(process.pid).padStart(7, ' ');

function capture(opts: LoggerOptions = {}): { lines: string[]; opts: LoggerOptions } {
  const lines: string[] = [];
  return { lines, opts: { clock: new FakeClock(WHEN), sink: (line) => lines.push(line), ...opts } };
}

t.test('text format', async (t) => {
  t.test('info line has the klog header, quoted message and key/values', async (t) => {
    const { lines, opts } = capture({ name: 'kubelet' });
    createLogger(opts).info('Pod started', { pod: 'default/web', attempt: 2, ready: true });
    t.same(lines, [`I1123 08:00:00.123456 ${PID} kubelet] "Pod started" pod="default/web" attempt=2 ready=true`]);
  });

  t.test('severity letters for warn and error; err comes first', async (t) => {
    const { lines, opts } = capture();
    const log = createLogger(opts);
    log.warn('Slow relist', { seconds: 3.5 });
    log.error('Sync failed', new Error('rpc error: "unavailable"'), { pod: 'a' });
    log.error('No error value');
    t.equal(lines[0], `W1123 08:00:00.123456 ${PID}] "Slow relist" seconds=3.5`);
    t.equal(lines[1], `E1123 08:00:00.123456 ${PID}] "Sync failed" err="rpc error: \\"unavailable\\"" pod="a"`);
    t.equal(lines[2], `E1123 08:00:00.123456 ${PID}] "No error value"`);
  });

  t.test('values are JSON-escaped strings, JSON objects, <nil> for null', async (t) => {
    const { lines, opts } = capture();
    createLogger(opts).info('line\nbreak', {
      s: 'tab\there "q"',
      obj: { a: 1, b: ['x'] },
      nothing: null,
      missing: undefined,
      big: 10n,
      when: new Date(0),
      cause: new TypeError('bad'),
      sym: Symbol("s"),
    });
    t.equal(
      lines[0],
      `I1123 08:00:00.123456 ${PID}] "line\\nbreak" s="tab\\there \\"q\\"" obj={"a":1,"b":["x"]} nothing=<nil> missing=<nil> big=10 when="1970-01-01T00:00:00.000Z" cause="bad" sym="Symbol(s)"`,
    );
  });

  t.test('a non-Error err is printed as text', async (t) => {
    const { lines, opts } = capture();
    const log = createLogger(opts);
    log.error('x', 'plain');
    log.error('y', { code: 14 });
    log.error('z', null);
    t.match(lines[0], /"x" err="plain"$/);
    t.match(lines[1], /"y" err="\{\\"code\\":14\}"$/);
    t.match(lines[2], /"z" err="<nil>"$/);
  });

  t.test('the header uses UTC month, day and microseconds', async (t) => {
    t.equal(formatKlogHeader(Date.parse('2026-01-02T03:04:05.006Z'), 'I', 42), 'I0102 03:04:05.006000      42]');
    t.equal(formatKlogHeader(Date.parse('2026-12-31T23:59:59.999Z'), 'E', 1234567, 'n'), 'E1231 23:59:59.999000 1234567 n]');
  });
});

t.test('verbosity', async (t) => {
  const { lines, opts } = capture({ verbosity: 2 });
  const log = createLogger(opts);
  t.ok(log.v(0).enabled);
  t.ok(log.v(2).enabled);
  t.notOk(log.v(3).enabled);
  log.v(2).info('shown', { n: 1 });
  log.v(3).info('hidden');
  t.equal(lines.length, 1);
  t.match(lines[0], /^I.*\] "shown" n=1$/);
  t.notOk(createLogger(capture().opts).v(1).enabled, 'default verbosity is 0');
});

t.test('with adds key/values to every line, call values override', async (t) => {
  const { lines, opts } = capture();
  const base = createLogger(opts);
  const podLog = base.with({ pod: 'default/web', podUID: 'u1' });
  const containerLog = podLog.with({ container: 'app' });
  containerLog.info('Started', { pod: 'override' });
  podLog.v(0).info('Synced');
  base.info('Plain');
  t.match(lines[0], /"Started" pod="override" podUID="u1" container="app"$/);
  t.match(lines[1], /"Synced" pod="default\/web" podUID="u1"$/);
  t.match(lines[2], /"Plain"$/);
});

t.test('json format', async (t) => {
  t.test('one object per line with ts seconds, v, msg and key/values', async (t) => {
    const { lines, opts } = capture({ format: 'json', verbosity: 4, name: 'pleg' });
    const log = createLogger(opts).with({ node: 'n1' });
    log.v(4).info('Relisted', { pods: 3 });
    log.error('Relist failed', new Error('boom'), { msg: 'cannot override', attempt: 1 });
    log.warn('Careful');
    const first = JSON.parse(lines[0]);
    t.same(first, { ts: WHEN / 1000, logger: 'pleg', msg: 'Relisted', v: 4, node: 'n1', pods: 3 });
    t.same(Object.keys(first).slice(0, 4), ['ts', 'logger', 'msg', 'v']);
    const second = JSON.parse(lines[1]);
    t.same(second, { ts: WHEN / 1000, logger: 'pleg', msg: 'Relist failed', err: 'boom', node: 'n1', attempt: 1 });
    t.notOk('v' in second, 'errors carry no v, as klog');
    t.same(JSON.parse(lines[2]), { ts: WHEN / 1000, logger: 'pleg', msg: 'Careful', v: 0, severity: 'warning', node: 'n1' });
  });

  t.test('unserializable values do not throw', async (t) => {
    const { lines, opts } = capture({ format: 'json' });
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    createLogger(opts).info('odd', { cyclic, big: 2n ** 70n, set: new Set([1]), map: new Map([['k', 'v']]) });
    const parsed = JSON.parse(lines[0]);
    t.same(parsed.cyclic, { name: 'loop', self: '[Circular]' });
    t.equal(parsed.big, '1180591620717411303424');
    t.same(parsed.set, [1]);
    t.same(parsed.map, { k: 'v' });
  });
});

t.test('safeJsonStringify', async (t) => {
  const shared = { x: 1 };
  t.equal(safeJsonStringify({ a: shared, b: shared }), '{"a":{"x":1},"b":{"x":1}}', 'repeated non-cyclic references are kept');
  t.equal(safeJsonStringify(undefined), 'null');
  t.equal(safeJsonStringify({ e: new Error('inner') }), '{"e":"inner"}');
  const m = new Map<string, unknown>();
  m.set('me', m);
  t.equal(safeJsonStringify(m), '{"me":"[Circular]"}');
  t.equal(errorText(new Error('m')), 'm');
  t.equal(errorText(undefined), '<nil>');
});

t.test('default sink writes to stderr', async (t) => {
  const stderr = captureStderr(t);
  try {
    createLogger({ clock: new FakeClock(WHEN) }).info('to stderr');
  } finally {
    stderr.restore();
  }
  const written = stderr.chunks();
  t.same(written, [`I1123 08:00:00.123456 ${PID}] "to stderr"\n`]);
});

t.test('minSeverity', async (t) => {
  t.test("'warning' writes warnings and errors in klog text format, not info or v(n)", async (t) => {
    const { lines, opts } = capture({ minSeverity: 'warning', verbosity: 5 });
    const log = createLogger(opts).with({ source: 'file' });
    log.info('not shown');
    t.notOk(log.v(0).enabled, 'v(0) is off below the threshold, so callers skip computing key/values');
    log.v(0).info('not shown either');
    log.warn('Careful', { path: '/etc/kubernetes/manifests/a.yaml' });
    log.error('Could not decode', new Error('bad yaml'), { path: '/m/b.yaml' });
    t.same(lines, [
      `W1123 08:00:00.123456 ${PID}] "Careful" source="file" path="/etc/kubernetes/manifests/a.yaml"`,
      `E1123 08:00:00.123456 ${PID}] "Could not decode" err="bad yaml" source="file" path="/m/b.yaml"`,
    ]);
  });

  t.test("'error' writes errors only", async (t) => {
    const { lines, opts } = capture({ minSeverity: 'error' });
    const log = createLogger(opts);
    log.info('i');
    log.warn('w');
    log.error('e');
    t.same(lines, [`E1123 08:00:00.123456 ${PID}] "e"`]);
  });

  t.test("'info' (the default) writes everything", async (t) => {
    const { lines, opts } = capture({ minSeverity: 'info' });
    const log = createLogger(opts);
    log.info('i');
    log.v(0).info('v0');
    log.warn('w');
    t.equal(lines.length, 3);
  });

  t.test('an unknown value is refused', async (t) => {
    t.throws(() => createLogger({ minSeverity: 'debug' as never }), /minSeverity must be/);
  });

  t.test('json format honours it too', async (t) => {
    const { lines, opts } = capture({ minSeverity: 'warning', format: 'json' });
    const log = createLogger(opts);
    log.info('i');
    log.warn('w');
    t.same(lines.map((l) => JSON.parse(l).msg), ['w']);
  });
});

t.test('defaultLogger writes warnings and errors to stderr in klog text format, not info', async (t) => {
  const stderr = captureStderr(t);
  try {
    defaultLogger.info('info is quiet');
    defaultLogger.v(0).info('so is v(0)');
    defaultLogger.with({ source: 'file' }).warn('Path does not exist', { path: '/nowhere' });
    defaultLogger.error('Could not process manifest file', new Error('no name'), { path: '/m/bad.yaml' });
  } finally {
    stderr.restore();
  }
  const written = stderr.chunks();
  t.notOk(defaultLogger.v(0).enabled);
  t.equal(written.length, 2);
  t.match(written[0], new RegExp(`^W\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6} ${PID}\\] "Path does not exist" source="file" path="/nowhere"\\n$`));
  t.match(written[1], new RegExp(`^E\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6} ${PID}\\] "Could not process manifest file" err="no name" path="/m/bad.yaml"\\n$`));
  t.not(defaultLogger, noopLogger, 'noopLogger stays available for silence');
});

t.test('noopLogger discards everything', async (t) => {
  noopLogger.info('x');
  noopLogger.warn('x');
  noopLogger.error('x', new Error('e'));
  t.notOk(noopLogger.v(0).enabled);
  noopLogger.v(0).info('x');
  t.equal(noopLogger.with({ a: 1 }), noopLogger);
});

t.test('RecordingLogger', async (t) => {
  const log = new RecordingLogger({ verbosity: 3 });
  const child = log.with({ pod: 'p' });
  log.info('one', { a: 1 });
  child.warn('two');
  child.with({ c: 'x' }).error('three', new Error('bad'), { b: 2 });
  log.v(3).info('four');
  log.v(4).info('five');
  t.notOk(log.v(4).enabled);
  t.same(log.entries, [
    { level: 'info', v: 0, msg: 'one', kv: { a: 1 } },
    { level: 'warn', v: 0, msg: 'two', kv: { pod: 'p' } },
    { level: 'error', v: 0, msg: 'three', kv: { pod: 'p', c: 'x', b: 2 }, err: new Error('bad') },
    { level: 'info', v: 3, msg: 'four', kv: {} },
  ]);
  t.same(log.messages(), ['one', 'two', 'three', 'four']);
  t.same(log.messages('error'), ['three']);
  t.equal(log.find(/thr/)?.kv.b, 2);
  t.equal(log.find('two')?.level, 'warn');
  t.same(log.lines()[2], 'error "three" err="bad" {"pod":"p","c":"x","b":2}');
  t.same(log.lines()[3], 'info(v3) "four" {}');
  log.clear();
  t.same(child.with({}) instanceof RecordingLogger, true);
  t.equal(log.entries.length, 0);
  t.ok(new RecordingLogger().v(10).enabled, 'records up to v10 by default');
});

t.test('RecordingLogger can share an entries array and start with key/values', async (t) => {
  const entries: LogEntry[] = [];
  const a = new RecordingLogger({ entries, kv: { component: 'a' } });
  const b = new RecordingLogger({ entries, verbosity: 0 });
  a.info('from a');
  b.v(1).info('dropped');
  b.warn('from b');
  t.same(
    entries.map((e) => [e.msg, e.kv]),
    [
      ['from a', { component: 'a' }],
      ['from b', {}],
    ],
  );
});
