// The example from README.md, kept here so it cannot rot.
import t from 'tap';
import { until, Backoff } from '../src/index.js';
import { FakeClock, RecordingLogger } from '../src/testing.js';

t.test('housekeeping runs every 2 s and survives errors', async (t) => {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const controller = new AbortController();
  let runs = 0;
  const loop = until(
    () => {
      runs++;
      if (runs === 2) throw new Error('transient');
    },
    2000,
    controller.signal,
    clock,
    { logger, name: 'housekeeping' },
  );

  await clock.advance(6000); // no real waiting
  t.equal(runs, 4); // at 0, 2, 4 and 6 s
  t.same(logger.messages('error'), ['Observed an error in a loop; continuing']);

  controller.abort();
  await loop;
  t.equal(clock.pendingTimers(), 0);
});

t.test('restart backoff', async (t) => {
  const clock = new FakeClock();
  const backoff = new Backoff({ initialMs: 10_000, maxMs: 300_000, clock });
  const exitedAt = clock.now();
  backoff.next('web_default/app');
  t.ok(backoff.isInBackOffSince('web_default/app', exitedAt));
  clock.step(10_000);
  t.notOk(backoff.isInBackOffSince('web_default/app', exitedAt));
});
