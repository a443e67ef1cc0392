import t, { type Test } from 'tap';
import { LogOptionsError, parseLogOptions, parseRFC3339 } from '../src/index.js';

const parse = (query: string) => parseLogOptions(new URLSearchParams(query));

function rejects(t: Test, query: string, field: string, message: string | RegExp): void {
  try {
    parse(query);
    t.fail(`${query} should fail`);
  } catch (err) {
    t.ok(err instanceof LogOptionsError, `${query}: a LogOptionsError`);
    t.equal((err as LogOptionsError).field, field, `${query}: field`);
    if (typeof message === 'string') t.equal((err as Error).message, message, `${query}: message`);
    else t.match((err as Error).message, message, `${query}: message`);
  }
}

t.test('defaults: nothing set', async (t) => {
  t.same(parse(''), { follow: false, previous: false, timestamps: false });
});

t.test('all options decode', async (t) => {
  t.same(parse('follow=true&previous=1&timestamps=TRUE&tailLines=10&limitBytes=500&sinceSeconds=30'), {
    follow: true,
    previous: true,
    timestamps: true,
    tailLines: 10,
    limitBytes: 500,
    sinceSeconds: 30,
  });
  t.same(parse('sinceTime=2026-01-02T03:04:05Z'), {
    follow: false,
    previous: false,
    timestamps: false,
    sinceTime: Date.parse('2026-01-02T03:04:05Z'),
  });
});

t.test("booleans decode as Go's query conversion: only 0 and false are false", async (t) => {
  t.equal(parse('follow=false').follow, false);
  t.equal(parse('follow=FALSE').follow, false);
  t.equal(parse('follow=0').follow, false);
  t.equal(parse('follow').follow, true, 'a bare ?follow is true');
  t.equal(parse('follow=').follow, true);
  t.equal(parse('follow=1').follow, true);
  t.equal(parse('timestamps=yes').timestamps, true, 'never a decode error');
});

t.test('legacy tail parameter', async (t) => {
  t.equal(parse('tail=5').tailLines, 5);
  t.equal(parse('tail=5&tailLines=7').tailLines, 5, 'tail wins');
  t.equal(parse('tail=all&tailLines=7').tailLines, undefined, 'all means every line');
  rejects(t, 'tail=x', 'tailLines', 'tailLines: Invalid value: "x": strconv.ParseInt: parsing "x": invalid syntax');
});

t.test('integers: Go ParseInt syntax', async (t) => {
  t.equal(parse('tailLines=%2B3').tailLines, 3);
  t.equal(parse('tailLines=0').tailLines, 0, 'tail 0 is valid');
  t.equal(parse('tailLines=9223372036854775807').tailLines, Number.MAX_SAFE_INTEGER, 'max int64 clamps to a safe integer');
  rejects(t, 'tailLines=9223372036854775808', 'tailLines', /value out of range/);
  rejects(t, 'tailLines=1.5', 'tailLines', /invalid syntax/);
  rejects(t, 'tailLines=', 'tailLines', 'tailLines: Invalid value: "": strconv.ParseInt: parsing "": invalid syntax');
  rejects(t, 'limitBytes=abc', 'limitBytes', /^limitBytes: Invalid value: "abc": strconv.ParseInt/);
  rejects(t, 'sinceSeconds=0x10', 'sinceSeconds', /^sinceSeconds: Invalid value: "0x10"/);
});

t.test('validation as ValidatePodLogOptions', async (t) => {
  rejects(t, 'tailLines=-1', 'tailLines', 'tailLines: Invalid value: -1: must be greater than or equal to 0');
  rejects(t, 'limitBytes=0', 'limitBytes', 'limitBytes: Invalid value: 0: must be greater than 0');
  rejects(t, 'limitBytes=-5', 'limitBytes', 'limitBytes: Invalid value: -5: must be greater than 0');
  rejects(t, 'sinceSeconds=0', 'sinceSeconds', 'sinceSeconds: Invalid value: 0: must be greater than 0');
  rejects(t, 'sinceSeconds=-2', 'sinceSeconds', 'sinceSeconds: Invalid value: -2: must be greater than 0');
  rejects(t, 'sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z', '', 'at most one of `sinceTime` or `sinceSeconds` may be specified');
  rejects(t, 'sinceSeconds=5&sinceTime=', '', /at most one/);
});

t.test('sinceTime: RFC3339 as Go time.Parse', async (t) => {
  rejects(t, 'sinceTime=x', 'sinceTime', 'sinceTime: Invalid value: "x": parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse as RFC3339');
  rejects(t, 'sinceTime=2026-01-01', 'sinceTime', /^sinceTime: Invalid value: "2026-01-01": parsing time/);
  rejects(t, 'sinceTime=2026-13-01T00:00:00Z', 'sinceTime', /month out of range/);
  rejects(t, 'sinceTime=2026-02-29T00:00:00Z', 'sinceTime', /day out of range/);
  rejects(t, 'sinceTime=2026-01-01T24:00:00Z', 'sinceTime', /hour out of range/);
  t.equal(parse('sinceTime=').sinceTime, undefined, 'empty is the zero time: no bound');
  t.equal(parse('sinceTime=null').sinceTime, undefined);
  t.equal(parseRFC3339('2026-01-02T03:04:05+02:00'), Date.parse('2026-01-02T01:04:05Z'), 'offsets');
  t.equal(parseRFC3339('2026-01-02T03:04:05.987654321Z'), Date.parse('2026-01-02T03:04:05.987Z'), 'fractions truncate to ms');
  t.equal(parseRFC3339('2024-02-29T00:00:00-00:30'), Date.parse('2024-02-29T00:30:00Z'), 'leap day, negative offset');
});
