import t from 'tap';
import { RealClock, realClock, isAbortError, abortReason } from '../src/index.js';
import { FakeClock } from '../src/testing.js';

const START = Date.parse('2026-01-01T00:00:00Z');

t.test('RealClock', async (t) => {
  t.test('now and since follow Date.now', async (t) => {
    const clock = new RealClock();
    const before = Date.now();
    const now = clock.now();
    t.ok(now >= before && now <= Date.now());
    t.ok(clock.since(now - 1000) >= 1000);
    t.equal(realClock.now() >= before, true);
  });

  t.test('setTimeout fires and cancel prevents firing', async (t) => {
    const clock = new RealClock();
    let fired = 0;
    let cancelledFired = 0;
    clock.setTimeout(() => fired++, 1);
    const cancelled = clock.setTimeout(() => cancelledFired++, 1);
    cancelled.cancel();
    await new Promise((resolve) => setTimeout(resolve, 10));
    t.equal(fired, 1);
    t.equal(cancelledFired, 0);
  });

  t.test('setInterval repeats until cancelled', async (t) => {
    const clock = new RealClock();
    let ticks = 0;
    const handle = clock.setInterval(() => ticks++, 1);
    await new Promise((resolve) => setTimeout(resolve, 15));
    handle.cancel();
    const seen = ticks;
    t.ok(seen >= 2, `ticked ${seen} times`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    t.equal(ticks, seen, 'no ticks after cancel');
  });

  t.test('sleep resolves after the delay', async (t) => {
    const clock = new RealClock();
    const start = Date.now();
    await clock.sleep(3);
    t.ok(Date.now() - start >= 2);
  });

  t.test('sleep rejects with the abort reason and clears its timer', async (t) => {
    const clock = new RealClock();
    const controller = new AbortController();
    const sleeping = clock.sleep(60_000, controller.signal);
    controller.abort();
    const err = await sleeping.catch((e: unknown) => e);
    t.ok(isAbortError(err), 'AbortError');
    t.equal(err, controller.signal.reason);
    // If the 60 s timer were still pending the test process would hang; tap would time out.
  });

  t.test('sleep on an already aborted signal rejects at once with a custom reason', async (t) => {
    const clock = new RealClock();
    const reason = new Error('stop');
    await t.rejects(clock.sleep(60_000, AbortSignal.abort(reason)), reason);
  });
});

t.test('abortReason falls back to an AbortError', async (t) => {
  const fake = { reason: undefined } as AbortSignal;
  const reason = abortReason(fake);
  t.ok(isAbortError(reason));
  t.notOk(isAbortError(new Error('x')));
  t.notOk(isAbortError(null));
});

t.test('FakeClock', async (t) => {
  t.test('starts at 2026-01-01 by default, or at the given time', async (t) => {
    t.equal(new FakeClock().now(), START);
    t.equal(new FakeClock(5).now(), 5);
    const clock = new FakeClock(1000);
    clock.step(500);
    t.equal(clock.since(1000), 500);
  });

  t.test('step fires timers in due order, each at its own due time', async (t) => {
    const clock = new FakeClock(0);
    const fired: [string, number][] = [];
    clock.setTimeout(() => fired.push(['b', clock.now()]), 20);
    clock.setTimeout(() => fired.push(['a', clock.now()]), 10);
    clock.setTimeout(() => fired.push(['a2', clock.now()]), 10);
    clock.setTimeout(() => fired.push(['late', clock.now()]), 31);
    clock.step(30);
    t.same(fired, [
      ['a', 10],
      ['a2', 10],
      ['b', 20],
    ]);
    t.equal(clock.now(), 30);
    t.equal(clock.pendingTimers(), 1);
    clock.step(1);
    t.same(fired.at(-1), ['late', 31]);
    t.equal(clock.pendingTimers(), 0);
  });

  t.test('timers added while firing fire within the same step when due', async (t) => {
    const clock = new FakeClock(0);
    const fired: number[] = [];
    clock.setTimeout(() => {
      fired.push(clock.now());
      clock.setTimeout(() => fired.push(clock.now()), 5);
      clock.setTimeout(() => fired.push(clock.now()), 50);
    }, 10);
    clock.step(20);
    t.same(fired, [10, 15]);
    t.equal(clock.pendingTimers(), 1);
  });

  t.test('a zero delay timer fires on step(0)', async (t) => {
    const clock = new FakeClock(0);
    let fired = false;
    clock.setTimeout(() => (fired = true), 0);
    t.notOk(fired);
    clock.step(0);
    t.ok(fired);
  });

  t.test('intervals fire once per period at their own times until cancelled', async (t) => {
    const clock = new FakeClock(0);
    const ticks: number[] = [];
    const handle = clock.setInterval(() => ticks.push(clock.now()), 100);
    clock.step(350);
    t.same(ticks, [100, 200, 300]);
    handle.cancel();
    clock.step(1000);
    t.same(ticks, [100, 200, 300]);
    t.equal(clock.pendingTimers(), 0);
  });

  t.test('an interval can cancel itself from its callback', async (t) => {
    const clock = new FakeClock(0);
    let ticks = 0;
    const handle = clock.setInterval(() => {
      ticks++;
      if (ticks === 2) handle.cancel();
    }, 10);
    clock.step(100);
    t.equal(ticks, 2);
    t.equal(clock.pendingTimers(), 0);
  });

  t.test('intervals and timers interleave by due time', async (t) => {
    const clock = new FakeClock(0);
    const order: string[] = [];
    clock.setInterval(() => order.push(`i${clock.now()}`), 10);
    clock.setTimeout(() => order.push(`t${clock.now()}`), 15);
    clock.step(30);
    t.same(order, ['i10', 't15', 'i20', 'i30']);
  });

  t.test('an interval below 1 ms is clamped to 1 ms', async (t) => {
    const clock = new FakeClock(0);
    let ticks = 0;
    clock.setInterval(() => ticks++, 0);
    clock.step(5);
    t.equal(ticks, 5);
  });

  t.test('cancel is idempotent and works after firing', async (t) => {
    const clock = new FakeClock(0);
    const handle = clock.setTimeout(() => undefined, 10);
    t.equal(clock.pendingTimers(), 1);
    handle.cancel();
    handle.cancel();
    t.equal(clock.pendingTimers(), 0);
    const fired = clock.setTimeout(() => undefined, 1);
    clock.step(1);
    fired.cancel();
    t.equal(clock.pendingTimers(), 0);
  });

  t.test('setTime forward fires due timers; backward fires nothing', async (t) => {
    const clock = new FakeClock(1000);
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(clock.now()), 100);
    clock.setTime(500);
    t.equal(clock.now(), 500);
    t.same(fired, []);
    clock.setTime(1100);
    t.same(fired, [1100]);
    t.equal(clock.now(), 1100);
  });

  t.test('nextTimerAt reports the earliest due timer', async (t) => {
    const clock = new FakeClock(0);
    t.equal(clock.nextTimerAt(), undefined);
    clock.setTimeout(() => undefined, 30);
    clock.setTimeout(() => undefined, 20);
    t.equal(clock.nextTimerAt(), 20);
  });

  t.test('a throwing timer propagates from step and leaves others pending', async (t) => {
    const clock = new FakeClock(0);
    let later = false;
    clock.setTimeout(() => {
      throw new Error('boom');
    }, 1);
    clock.setTimeout(() => (later = true), 2);
    t.throws(() => clock.step(5), /boom/);
    t.equal(clock.now(), 1);
    clock.step(5);
    t.ok(later);
  });

  t.test('sleep resolves when time is stepped past it, not before', async (t) => {
    const clock = new FakeClock(0);
    let done = false;
    const sleeping = clock.sleep(100).then(() => (done = true));
    clock.step(99);
    await clock.flush();
    t.notOk(done);
    clock.step(1);
    await sleeping;
    t.ok(done);
    t.equal(clock.pendingTimers(), 0);
  });

  t.test('sleep aborts with the signal reason and clears its timer', async (t) => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    const sleeping = clock.sleep(100, controller.signal);
    t.equal(clock.pendingTimers(), 1);
    controller.abort();
    await t.rejects(sleeping, { name: 'AbortError' });
    t.equal(clock.pendingTimers(), 0);
    await t.rejects(clock.sleep(1, controller.signal), { name: 'AbortError' });
    t.equal(clock.pendingTimers(), 0);
  });

  t.test('sleep removes its abort listener once done', async (t) => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    let added = 0;
    let removed = 0;
    const signal = controller.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => {
      added++;
      return add(...args);
    }) as typeof signal.addEventListener;
    signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      removed++;
      return remove(...args);
    }) as typeof signal.removeEventListener;
    for (let i = 0; i < 3; i++) {
      const sleeping = clock.sleep(10, signal);
      clock.step(10);
      await sleeping;
    }
    t.equal(added, 3);
    t.equal(removed, 3);
  });

  t.test('advance lets an async loop built on sleep make progress', async (t) => {
    const clock = new FakeClock(0);
    const runs: number[] = [];
    const controller = new AbortController();
    const loop = (async () => {
      while (!controller.signal.aborted) {
        runs.push(clock.now());
        await Promise.resolve();
        await clock.sleep(100, controller.signal).catch(() => undefined);
      }
    })();
    await clock.advance(350);
    t.same(runs, [0, 100, 200, 300]);
    t.equal(clock.now(), 350);
    // step alone fires only the one pending sleep; the loop's continuation runs after the whole
    // step, so it sees the final time and schedules just one more sleep
    clock.step(300);
    await clock.flush();
    t.same(runs, [0, 100, 200, 300, 650]);
    t.equal(clock.nextTimerAt(), 750);
    controller.abort();
    await loop;
    t.equal(clock.pendingTimers(), 0);
  });

  t.test('advance with stepMs moves in fixed increments', async (t) => {
    const clock = new FakeClock(0);
    const seen: number[] = [];
    const controller = new AbortController();
    const loop = (async () => {
      for (;;) {
        await clock.sleep(25, controller.signal).catch(() => undefined);
        if (controller.signal.aborted) return;
        seen.push(clock.now());
      }
    })();
    await clock.advance(100, 10);
    // the sleep due at 25 fires inside the step to 30; the loop's continuation runs after that step,
    // sees 30 and sleeps until 55, which the step to 60 fires, and so on
    t.same(seen, [30, 60, 90]);
    t.equal(clock.now(), 100);
    controller.abort();
    await loop;
  });

  t.test('advance fires timers that come due exactly at the target', async (t) => {
    const clock = new FakeClock(0);
    let fired = 0;
    (async () => {
      await clock.sleep(50);
      fired++;
      await clock.sleep(50);
      fired++;
    })();
    await clock.advance(100);
    t.equal(fired, 2);
  });

  t.test('advance detects a busy loop of zero delay timers', async (t) => {
    const clock = new FakeClock(0);
    const rearm = (): void => void clock.setTimeout(rearm, 0);
    rearm();
    await t.rejects(clock.advance(10), /without time moving/);
    t.equal(clock.now(), 0);
  });

  t.test('flush runs pending continuations without moving time', async (t) => {
    const clock = new FakeClock(0);
    let reached = false;
    void (async () => {
      await Promise.resolve();
      await new Promise((resolve) => setImmediate(resolve));
      reached = true;
    })();
    await clock.flush();
    t.ok(reached);
    t.equal(clock.now(), 0);
  });
});
