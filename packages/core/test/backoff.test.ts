import t from 'tap';
import { Backoff, containerRestartBackoff } from '../src/index.js';
import { FakeClock } from '../src/testing.js';

const setup = (opts: { maxDurationMs?: number } = {}) => {
  const clock = new FakeClock(0);
  return { clock, backoff: new Backoff({ initialMs: 1000, maxMs: 8000, clock, ...opts }) };
};

t.test('next starts at initial and doubles up to max', async (t) => {
  const { clock, backoff } = setup();
  t.equal(backoff.get('a'), 0, 'unknown ids have no backoff');
  const seen: number[] = [];
  for (let i = 0; i < 6; i++) {
    backoff.next('a');
    seen.push(backoff.get('a'));
    clock.step(500);
  }
  t.same(seen, [1000, 2000, 4000, 8000, 8000, 8000]);
  t.equal(backoff.get('b'), 0, 'ids are independent');
});

t.test('an entry idle longer than maxDuration (default 2*max) restarts from initial', async (t) => {
  const { clock, backoff } = setup();
  backoff.next('a');
  backoff.next('a');
  t.equal(backoff.get('a'), 2000);
  clock.step(16_000);
  backoff.next('a');
  t.equal(backoff.get('a'), 4000, 'exactly 2*max idle is not yet expired');
  clock.step(16_001);
  backoff.next('a');
  t.equal(backoff.get('a'), 1000);
});

t.test('expiry is judged by the event time passed to next', async (t) => {
  const { clock, backoff } = setup({ maxDurationMs: 5000 });
  backoff.next('a');
  backoff.next('a', clock.now() + 5001);
  t.equal(backoff.get('a'), 1000, 'an event far after the last update restarts');
  backoff.next('a', clock.now() + 100);
  t.equal(backoff.get('a'), 2000);
});

t.test('isInBackOffSince compares now - eventTime with the current backoff', async (t) => {
  const { clock, backoff } = setup();
  t.notOk(backoff.isInBackOffSince('a', clock.now()), 'no entry, no backoff');
  const exitedAt = clock.now();
  backoff.next('a');
  t.ok(backoff.isInBackOffSince('a', exitedAt));
  clock.step(999);
  t.ok(backoff.isInBackOffSince('a', exitedAt));
  clock.step(1);
  t.notOk(backoff.isInBackOffSince('a', exitedAt), 'a full backoff has passed');
  t.ok(backoff.isInBackOffSince('a', clock.now() - 10), 'a later event is still in backoff');
});

t.test('isInBackOffSince is false when the event is long after the last update', async (t) => {
  const { clock, backoff } = setup();
  backoff.next('a');
  clock.step(20_000);
  t.notOk(backoff.isInBackOffSince('a', clock.now()), 'expired entries do not hold anything back');
});

t.test('isInBackOffSinceUpdate compares eventTime - lastUpdate with the current backoff', async (t) => {
  const { clock, backoff } = setup();
  t.notOk(backoff.isInBackOffSinceUpdate('a', clock.now()));
  backoff.next('a');
  const updatedAt = clock.now();
  clock.step(5000); // unlike isInBackOffSince, now does not matter
  t.ok(backoff.isInBackOffSinceUpdate('a', updatedAt + 999));
  t.notOk(backoff.isInBackOffSinceUpdate('a', updatedAt + 1000));
  t.notOk(backoff.isInBackOffSinceUpdate('a', updatedAt + 16_001), 'expired');
});

t.test('reset and delete forget an id', async (t) => {
  const { backoff } = setup();
  backoff.next('a');
  backoff.next('a');
  backoff.reset('a');
  t.equal(backoff.get('a'), 0);
  backoff.next('a');
  t.equal(backoff.get('a'), 1000);
  backoff.delete('a');
  t.equal(backoff.get('a'), 0);
  t.equal(backoff.size(), 0);
});

t.test('gc drops entries idle longer than maxDuration', async (t) => {
  const { clock, backoff } = setup({ maxDurationMs: 10_000 });
  backoff.next('old');
  clock.step(6000);
  backoff.next('recent');
  clock.step(4000);
  backoff.gc();
  t.equal(backoff.size(), 2, 'exactly maxDuration idle is kept');
  clock.step(1);
  backoff.gc();
  t.equal(backoff.size(), 1);
  t.equal(backoff.get('old'), 0);
  t.equal(backoff.get('recent'), 1000);
});

t.test('jitter adds up to factor*previous backoff, capped at max', async (t) => {
  const clock = new FakeClock(0);
  const backoff = new Backoff({ initialMs: 1000, maxMs: 5000, clock, jitter: 0.5, random: () => 0.5 });
  backoff.next('a');
  t.equal(backoff.get('a'), 1250);
  backoff.next('a');
  t.equal(backoff.get('a'), 2500 + 312.5);
  backoff.next('a');
  t.equal(backoff.get('a'), 5000);
});

t.test('containerRestartBackoff is 10 s doubling to 5 min', async (t) => {
  const clock = new FakeClock(0);
  const backoff = containerRestartBackoff(clock);
  const seen: number[] = [];
  for (let i = 0; i < 7; i++) {
    backoff.next('pod_ns/app');
    seen.push(backoff.get('pod_ns/app'));
  }
  t.same(seen, [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
  clock.step(600_001);
  backoff.next('pod_ns/app');
  t.equal(backoff.get('pod_ns/app'), 10_000, 'ten minutes of quiet restarts the count');
});

t.test('uses the real clock by default', async (t) => {
  const backoff = new Backoff({ initialMs: 60_000, maxMs: 120_000 });
  backoff.next('a');
  t.ok(backoff.isInBackOffSince('a', Date.now()));
});
