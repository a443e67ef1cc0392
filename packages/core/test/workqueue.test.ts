import t from 'tap';
import {
  RateLimitingQueue,
  TimedWorkQueue,
  ItemExponentialFailureRateLimiter,
  BucketRateLimiter,
  MaxOfRateLimiter,
  defaultControllerRateLimiter,
  type RateLimiter,
} from '../src/index.js';
import { FakeClock } from '../src/testing.js';

t.test('RateLimitingQueue basics', async (t) => {
  t.test('hands out items in FIFO order and dedups while queued', async (t) => {
    const q = new RateLimitingQueue<string>();
    q.add('a');
    q.add('b');
    q.add('a');
    t.equal(q.len(), 2);
    t.equal(await q.get(), 'a');
    t.equal(await q.get(), 'b');
    t.equal(q.len(), 0);
  });

  t.test('an item being processed is not handed out twice; re-added it returns after done', async (t) => {
    const q = new RateLimitingQueue<string>();
    q.add('a');
    const item = await q.get();
    q.add('a');
    q.add('a');
    t.equal(q.len(), 0, 'not queued while processing');
    let second: string | undefined;
    void q.get().then((i) => (second = i));
    await new Promise((resolve) => setImmediate(resolve));
    t.equal(second, undefined, 'nobody else gets it while it is processed');
    q.done(item as string);
    await new Promise((resolve) => setImmediate(resolve));
    t.equal(second, 'a', 'requeued once after done');
    q.done('a');
    t.equal(q.len(), 0);
  });

  t.test('done without a re-add does not requeue', async (t) => {
    const q = new RateLimitingQueue<string>();
    q.add('a');
    q.done((await q.get()) as string);
    t.equal(q.len(), 0);
  });

  t.test('get waits for an add, serving waiters in order', async (t) => {
    const q = new RateLimitingQueue<string>();
    const first = q.get();
    const second = q.get();
    q.add('x');
    q.add('y');
    t.equal(await first, 'x');
    t.equal(await second, 'y');
  });

  t.test('get can be aborted while waiting', async (t) => {
    const q = new RateLimitingQueue<string>();
    const controller = new AbortController();
    const waiting = q.get(controller.signal);
    controller.abort();
    await t.rejects(waiting, { name: 'AbortError' });
    q.add('a');
    t.equal(q.len(), 1, 'the aborted waiter did not swallow the item');
    await t.rejects(q.get(AbortSignal.abort()), { name: 'AbortError' }, 'an aborted caller gets no item');
    t.equal(q.len(), 1);
    t.equal(await q.get(), 'a');
  });

  t.test('shutDown drains queued items, then get returns undefined', async (t) => {
    const q = new RateLimitingQueue<string>();
    const waiting = q.get();
    q.add('a');
    t.equal(await waiting, 'a');
    const idle = q.get();
    q.add('b');
    q.add('c');
    t.equal(await idle, 'b');
    const blocked = q.get();
    const blocked2 = q.get();
    t.notOk(q.shuttingDown());
    q.shutDown();
    t.ok(q.shuttingDown());
    t.equal(await blocked, 'c');
    t.equal(await blocked2, undefined, 'a waiter is released with undefined');
    q.add('d');
    t.equal(q.len(), 0, 'adds are ignored after shutdown');
    t.equal(await q.get(), undefined);
  });

  t.test('shutDownWithDrain waits for items in processing to be done', async (t) => {
    const q = new RateLimitingQueue<string>();
    q.add('a');
    const item = (await q.get()) as string;
    let drained = false;
    const draining = q.shutDownWithDrain().then(() => (drained = true));
    await new Promise((resolve) => setImmediate(resolve));
    t.notOk(drained);
    q.done(item);
    await draining;
    t.ok(drained);
    await q.shutDownWithDrain();
  });
});

t.test('RateLimitingQueue delays', async (t) => {
  t.test('addAfter adds once the clock reaches the delay', async (t) => {
    const clock = new FakeClock(0);
    const q = new RateLimitingQueue<string>({ clock });
    q.addAfter('a', 100);
    t.equal(q.len(), 0);
    t.equal(q.delayedLen(), 1);
    clock.step(99);
    t.equal(q.len(), 0);
    clock.step(1);
    t.equal(q.len(), 1);
    t.equal(q.delayedLen(), 0);
    q.addAfter('now', 0);
    t.equal(q.len(), 2, 'a non-positive delay adds at once');
  });

  t.test('a waiting get receives the delayed item', async (t) => {
    const clock = new FakeClock(0);
    const q = new RateLimitingQueue<string>({ clock });
    const waiting = q.get();
    q.addAfter('a', 50);
    await clock.advance(50);
    t.equal(await waiting, 'a');
  });

  t.test('the earlier of two addAfter of one item wins', async (t) => {
    const clock = new FakeClock(0);
    const q = new RateLimitingQueue<string>({ clock });
    q.addAfter('a', 100);
    q.addAfter('a', 300);
    clock.step(100);
    t.equal(q.len(), 1);
    q.addAfter('b', 300);
    q.addAfter('b', 100);
    t.equal(clock.pendingTimers(), 1, 'the later timer was cancelled');
    clock.step(100);
    t.equal(q.len(), 2);
    t.equal(clock.pendingTimers(), 0);
  });

  t.test('shutDown cancels delayed items', async (t) => {
    const clock = new FakeClock(0);
    const q = new RateLimitingQueue<string>({ clock });
    q.addAfter('a', 100);
    q.shutDown();
    t.equal(clock.pendingTimers(), 0);
    q.addAfter('b', 100);
    t.equal(clock.pendingTimers(), 0);
    clock.step(200);
    t.equal(await q.get(), undefined);
  });

  t.test('addRateLimited backs off exponentially per item until forget', async (t) => {
    const clock = new FakeClock(0);
    const q = new RateLimitingQueue<string>({ clock, baseDelayMs: 10, maxDelayMs: 50 });
    const readyAfter: number[] = [];
    for (let i = 0; i < 4; i++) {
      const start = clock.now();
      q.addRateLimited('a');
      await clock.advance(clock.nextTimerAt()! - clock.now());
      const item = (await q.get()) as string;
      readyAfter.push(clock.now() - start);
      q.done(item);
    }
    t.same(readyAfter, [10, 20, 40, 50]);
    t.equal(q.numRequeues('a'), 4);
    t.equal(q.numRequeues('b'), 0);
    q.forget('a');
    t.equal(q.numRequeues('a'), 0);
    q.addRateLimited('a');
    t.equal(clock.nextTimerAt(), clock.now() + 10, 'back to the base delay');
    q.shutDown();
  });

  t.test('defaults to 5 ms base', async (t) => {
    const clock = new FakeClock(0);
    const q = new RateLimitingQueue<string>({ clock });
    q.addRateLimited('a');
    t.equal(clock.nextTimerAt(), 5);
    q.shutDown();
  });

  t.test('qps/burst limit the overall rate; the longer wait wins', async (t) => {
    const clock = new FakeClock(0);
    const q = new RateLimitingQueue<string>({ clock, qps: 10, burst: 2, baseDelayMs: 1 });
    q.addRateLimited('a'); // burst token, item delay 1 ms
    q.addRateLimited('b'); // burst token
    q.addRateLimited('c'); // bucket empty: 100 ms at 10 qps
    clock.step(1);
    t.equal(q.len(), 2);
    clock.step(98);
    t.equal(q.len(), 2);
    clock.step(1);
    t.equal(q.len(), 3);
  });

  t.test('a custom rate limiter replaces the built-in one', async (t) => {
    const clock = new FakeClock(0);
    const calls: string[] = [];
    const limiter: RateLimiter<string> = {
      when: (item) => (calls.push(`when:${item}`), 42),
      forget: (item) => void calls.push(`forget:${item}`),
      numRequeues: () => 7,
    };
    const q = new RateLimitingQueue<string>({ clock, rateLimiter: limiter });
    q.addRateLimited('a');
    q.forget('a');
    t.equal(q.numRequeues('a'), 7);
    t.same(calls, ['when:a', 'forget:a']);
    t.equal(clock.nextTimerAt(), 42);
    q.shutDown();
  });
});

t.test('rate limiters', async (t) => {
  t.test('ItemExponentialFailureRateLimiter', async (t) => {
    const limiter = new ItemExponentialFailureRateLimiter<string>(5, 1_000_000);
    const delays = Array.from({ length: 5 }, () => limiter.when('a'));
    t.same(delays, [5, 10, 20, 40, 80]);
    t.equal(limiter.when('b'), 5, 'per item');
    t.equal(limiter.numRequeues('a'), 5);
    for (let i = 0; i < 2000; i++) limiter.when('a');
    t.equal(limiter.when('a'), 1_000_000, 'capped, also once 2^n overflows');
    limiter.forget('a');
    t.equal(limiter.when('a'), 5);
  });

  t.test('BucketRateLimiter refills at qps up to burst', async (t) => {
    const clock = new FakeClock(0);
    const limiter = new BucketRateLimiter<string>(2, 3, clock);
    t.same([limiter.when('x'), limiter.when('x'), limiter.when('x')], [0, 0, 0]);
    t.equal(limiter.when('x'), 500);
    t.equal(limiter.when('x'), 1000, 'reservations queue up');
    clock.step(10_000);
    t.same([limiter.when('x'), limiter.when('x'), limiter.when('x'), limiter.when('x')], [0, 0, 0, 500], 'refilled only to burst');
    t.equal(limiter.numRequeues('x'), 0);
    limiter.forget('x');
  });

  t.test('MaxOfRateLimiter takes the longest wait and the most requeues', async (t) => {
    const clock = new FakeClock(0);
    const limiter = new MaxOfRateLimiter<string>(new ItemExponentialFailureRateLimiter(100, 1000), new BucketRateLimiter(1, 1, clock));
    t.equal(limiter.when('a'), 100);
    t.equal(limiter.when('a'), 1000, 'the bucket wait (1 s) beats 200 ms');
    t.equal(limiter.numRequeues('a'), 2);
    limiter.forget('a');
    t.equal(limiter.numRequeues('a'), 0);
  });

  t.test('defaultControllerRateLimiter is 5 ms per item with 10 qps / 100 burst overall', async (t) => {
    const clock = new FakeClock(0);
    const limiter = defaultControllerRateLimiter<number>(clock);
    const delays = Array.from({ length: 101 }, (_, i) => limiter.when(i));
    t.ok(delays.slice(0, 100).every((d) => d === 5));
    t.equal(delays[100], 100);
  });
});

t.test('TimedWorkQueue', async (t) => {
  t.test('getWork returns and removes the items that are due', async (t) => {
    const clock = new FakeClock(0);
    const q = new TimedWorkQueue<string>({ clock });
    q.enqueue('now', 0);
    q.enqueue('soon', 100);
    q.enqueue('later', 1000);
    t.same(q.getWork(), ['now']);
    t.same(q.getWork(), [], 'removed once handed out');
    clock.step(100);
    t.same(q.getWork(), ['soon']);
    t.equal(q.len(), 1);
    clock.step(5000);
    t.same(q.getWork(), ['later']);
    t.equal(q.len(), 0);
  });

  t.test('enqueueing again replaces the due time', async (t) => {
    const clock = new FakeClock(0);
    const q = new TimedWorkQueue<string>({ clock });
    q.enqueue('a', 10);
    q.enqueue('a', 500);
    clock.step(100);
    t.same(q.getWork(), []);
    q.enqueue('a', 0);
    t.same(q.getWork(), ['a']);
  });

  t.test('uses the real clock by default', async (t) => {
    const q = new TimedWorkQueue<string>();
    q.enqueue('a', -1);
    t.same(q.getWork(), ['a']);
  });
});
