import t from 'tap';
import { formatDuration, parseDuration } from '../src/index.js';

t.test('parses Go durations', async (t) => {
  t.equal(parseDuration('1m'), 60_000);
  t.equal(parseDuration('20s'), 20_000);
  t.equal(parseDuration('1m30s'), 90_000);
  t.equal(parseDuration('100ms'), 100);
  t.equal(parseDuration('2h45m'), 9_900_000);
  t.equal(parseDuration('1.5s'), 1500);
  t.equal(parseDuration('0'), 0);
  t.equal(parseDuration('-5s'), -5000);
  t.equal(parseDuration('250us'), 0.25);
});

t.test('rejects bad durations with the input in the message', async (t) => {
  for (const bad of ['', '10', '1x', 's', '1m 30s', 'abc']) {
    t.throws(() => parseDuration(bad), new RegExp(`invalid duration ${JSON.stringify(bad)}`), bad);
  }
});

t.test('formats like Go', async (t) => {
  t.equal(formatDuration(0), '0s');
  t.equal(formatDuration(90_000), '1m30s');
  t.equal(formatDuration(3 * 60_000), '3m0s');
  t.equal(formatDuration(500), '500ms');
  t.equal(formatDuration(3_600_000), '1h0m0s');
  t.equal(formatDuration(1500), '1.5s');
  t.equal(formatDuration(10_000), '10s');
  t.equal(formatDuration(1_234), '1.234s');
  t.equal(formatDuration(80_000), '1m20s');
  t.equal(formatDuration(120_000), '2m0s');
  t.equal(formatDuration(300_000), '5m0s');
  t.equal(formatDuration(3_600_000 + 61_000), '1h1m1s');
});

t.test('both micro signs (U+00B5 and U+03BC) are microseconds, as in Go', async (t) => {
  t.equal(parseDuration('1500µs'), 1.5);
  t.equal(parseDuration('1500μs'), 1.5);
  t.equal(parseDuration('1ms500µs'), 1.5);
});
