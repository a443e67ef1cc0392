import t from 'tap';
import { until, jitterUntil, nonSlidingUntil, jitter, pollUntil, WaitTimeoutError, forEachLimit, raceAbort } from '../src/index.js';
import { captureStderr, FakeClock, RecordingLogger } from '../src/testing.js';

t.test('jitter', async (t) => {
  t.equal(jitter(1000, 0.5, () => 0), 1000);
  t.equal(jitter(1000, 0.5, () => 1), 1500);
  t.equal(jitter(1000, 0, () => 0.5), 1500, 'a factor <= 0 means 1, as Go');
  t.equal(jitter(1000, -1, () => 1), 2000);
  for (let i = 0; i < 100; i++) {
    const d = jitter(100, 0.1);
    t.ok(d >= 100 && d <= 110);
  }
});

t.test('until runs immediately, then every period after fn finishes', async (t) => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  const runs: number[] = [];
  const loop = until(
    async () => {
      runs.push(clock.now());
      await clock.sleep(30); // fn takes 30 ms
    },
    100,
    controller.signal,
    clock,
  );
  await clock.advance(400);
  // sliding: starts 130 apart (30 of work + 100 of period)
  t.same(runs, [0, 130, 260, 390]);
  controller.abort();
  await clock.advance(30); // let the running fn finish
  await loop;
  t.equal(clock.pendingTimers(), 0, 'no timers left behind');
});

t.test('nonSlidingUntil counts fn time into the period', async (t) => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  const runs: number[] = [];
  const loop = nonSlidingUntil(
    async () => {
      runs.push(clock.now());
      await clock.sleep(30);
    },
    100,
    controller.signal,
    clock,
  );
  await clock.advance(350);
  t.same(runs, [0, 100, 200, 300]);
  controller.abort();
  await clock.advance(30);
  await loop;
  t.equal(clock.pendingTimers(), 0);
});

t.test('non-sliding fn slower than the period runs again right away', async (t) => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  const runs: number[] = [];
  const loop = jitterUntil(
    async () => {
      runs.push(clock.now());
      await clock.sleep(150);
    },
    100,
    0,
    false,
    controller.signal,
    clock,
  );
  await clock.advance(400);
  t.same(runs, [0, 150, 300]);
  controller.abort();
  await clock.advance(150);
  await loop;
});

t.test('a synchronous fn with the period already spent does not starve the event loop', async (t) => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  let runs = 0;
  const loop = jitterUntil(
    () => {
      runs++;
      if (runs === 5) controller.abort();
    },
    0,
    0,
    false,
    controller.signal,
    clock,
  );
  await loop;
  t.equal(runs, 5);
});

t.test('jitterUntil waits a jittered period', async (t) => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  const runs: number[] = [];
  const original = Math.random;
  Math.random = () => 0.5;
  try {
    const loop = jitterUntil(() => void runs.push(clock.now()), 100, 1, true, controller.signal, clock);
    await clock.advance(400);
    controller.abort();
    await loop;
  } finally {
    Math.random = original;
  }
  t.same(runs, [0, 150, 300]);
});

t.test('errors in fn are logged and the loop continues', async (t) => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  const logger = new RecordingLogger();
  let runs = 0;
  const loop = until(
    async () => {
      runs++;
      if (runs === 1) throw new Error('async failure');
      if (runs === 2) throw 'not an Error';
    },
    10,
    controller.signal,
    clock,
    { logger, name: 'housekeeping' },
  );
  await clock.advance(30);
  controller.abort();
  await loop;
  t.equal(runs, 4);
  t.equal(logger.entries.length, 2);
  t.equal(logger.entries[0].level, 'error');
  t.same(logger.entries[0].kv, { loop: 'housekeeping' });
  t.match(logger.entries[0].err, { message: 'async failure' });
  t.equal(logger.entries[1].err, 'not an Error');
});

t.test('a synchronous throw is caught too, and logged to stderr without a logger', async (t) => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  const stderr = captureStderr(t);
  let runs = 0;
  try {
    const loop = until(
      () => {
        runs++;
        throw new Error('sync failure');
      },
      10,
      controller.signal,
      clock,
    );
    await clock.advance(10);
    controller.abort();
    await loop;
  } finally {
    stderr.restore();
  }
  const written = stderr.chunks();
  t.equal(runs, 2);
  t.equal(written.length, 2);
  t.match(written[0], /^E\d{4} .* wait\] "Observed an error in a loop; continuing" err="sync failure"\n$/);
});

t.test('an AbortError from fn after abort is not logged', async (t) => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  const logger = new RecordingLogger();
  const loop = until((signal) => clock.sleep(1000, signal), 10, controller.signal, clock, { logger });
  await clock.advance(5);
  controller.abort();
  await loop;
  t.same(logger.entries, []);
  t.equal(clock.pendingTimers(), 0);
});

t.test('fn receives the signal; abort during the wait resolves at once without timers', async (t) => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  let received: AbortSignal | undefined;
  const loop = until((signal) => void (received = signal), 60_000, controller.signal, clock);
  await clock.flush();
  t.equal(received, controller.signal);
  t.equal(clock.pendingTimers(), 1);
  controller.abort();
  await loop;
  t.equal(clock.pendingTimers(), 0);
});

t.test('an already aborted signal never runs fn', async (t) => {
  const clock = new FakeClock(0);
  let runs = 0;
  await until(() => void runs++, 10, AbortSignal.abort(), clock);
  t.equal(runs, 0);
});

t.test('until works with the real clock', async (t) => {
  const controller = new AbortController();
  let runs = 0;
  const loop = until(
    () => {
      runs++;
      if (runs === 3) controller.abort();
    },
    1,
    controller.signal,
  );
  await loop;
  t.equal(runs, 3);
});

t.test('pollUntil', async (t) => {
  t.test('checks immediately and resolves when the condition holds', async (t) => {
    const clock = new FakeClock(0);
    let checks = 0;
    await pollUntil(() => ++checks > 0, 100, 1000, undefined, clock);
    t.equal(checks, 1);
    t.equal(clock.now(), 0);
  });

  t.test('polls every interval until true', async (t) => {
    const clock = new FakeClock(0);
    const checkedAt: number[] = [];
    const polling = pollUntil(
      async () => {
        checkedAt.push(clock.now());
        return clock.now() >= 250;
      },
      100,
      1000,
      undefined,
      clock,
    );
    await clock.advance(300);
    await polling;
    t.same(checkedAt, [0, 100, 200, 300]);
    t.equal(clock.pendingTimers(), 0);
  });

  t.test('rejects with a WaitTimeoutError after a last check at the deadline', async (t) => {
    const clock = new FakeClock(0);
    const checkedAt: number[] = [];
    const polling = pollUntil(() => (checkedAt.push(clock.now()), false), 100, 250, undefined, clock);
    const outcome = polling.catch((e: unknown) => e);
    await clock.advance(300);
    const err = await outcome;
    t.ok(err instanceof WaitTimeoutError);
    t.equal((err as WaitTimeoutError).timeoutMs, 250);
    t.match((err as Error).message, /timed out waiting for the condition after 250ms/);
    t.same(checkedAt, [0, 100, 200, 250]);
    t.equal(clock.pendingTimers(), 0);
  });

  t.test('immediate: false waits one interval first', async (t) => {
    const clock = new FakeClock(0);
    const checkedAt: number[] = [];
    const polling = pollUntil(() => (checkedAt.push(clock.now()), true), 100, 1000, undefined, clock, { immediate: false });
    await clock.advance(100);
    await polling;
    t.same(checkedAt, [100]);
  });

  t.test('a throwing condition rejects with its error', async (t) => {
    const clock = new FakeClock(0);
    await t.rejects(
      pollUntil(
        () => {
          throw new Error('cannot check');
        },
        10,
        100,
        undefined,
        clock,
      ),
      /cannot check/,
    );
  });

  t.test('abort rejects with the signal reason and clears the timer', async (t) => {
    const clock = new FakeClock(0);
    const controller = new AbortController();
    const polling = pollUntil(() => false, 100, Infinity, controller.signal, clock);
    await clock.advance(250);
    t.equal(clock.pendingTimers(), 1);
    controller.abort(new Error('shutting down'));
    await t.rejects(polling, /shutting down/);
    t.equal(clock.pendingTimers(), 0);
    await t.rejects(pollUntil(() => true, 1, 1, AbortSignal.abort(), clock), { name: 'AbortError' });
  });
});

t.test('non-sliding jitter draws one jittered period per run, before fn', async (t) => {
  const clock = new FakeClock(0);
  const controller = new AbortController();
  const runs: number[] = [];
  const draws: number[] = [];
  const original = Math.random;
  const values = [0, 0.5, 1];
  Math.random = () => {
    const value = values[draws.length % values.length];
    draws.push(value);
    return value;
  };
  try {
    const loop = jitterUntil(
      async () => {
        runs.push(clock.now());
        await clock.sleep(10);
      },
      100,
      0.2,
      false,
      controller.signal,
      clock,
    );
    await clock.advance(330);
    controller.abort();
    await clock.advance(10);
    await loop;
  } finally {
    Math.random = original;
  }
  // periods 100, 110, 120 measured from each start
  t.same(runs, [0, 100, 210, 330]);
  t.equal(draws.length, 4);
});

t.test('forEachLimit runs every item once, in order of start, never more than limit at once', async (t) => {
  const started: number[] = [];
  let inFlight = 0;
  let most = 0;
  await forEachLimit([1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
    started.push(item);
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise((resolve) => setImmediate(resolve));
    inFlight--;
  });
  t.same(started, [1, 2, 3, 4, 5, 6, 7]);
  t.equal(most, 3);
  let calls = 0;
  await forEachLimit([], 3, async () => void calls++);
  await forEachLimit(['only'], 0, async () => void calls++);
  t.equal(calls, 1, 'nothing for no items; a limit below 1 still runs one at a time');
});

t.test('raceAbort: the value, or onAbort as soon as the signal aborts, or the rejection', async (t) => {
  const controller = new AbortController();
  t.equal(await raceAbort(Promise.resolve(1), controller.signal, 'aborted'), 1);
  await t.rejects(raceAbort(Promise.reject(new Error('boom')), controller.signal, 'aborted'), /boom/);
  const pending = raceAbort(new Promise<number>(() => undefined), controller.signal, 'aborted');
  controller.abort();
  t.equal(await pending, 'aborted');
  t.equal(await raceAbort(Promise.resolve(2), controller.signal, 'aborted'), 'aborted', 'already aborted');
});

t.test('raceAbort leaves nothing on the signal once settled: neither a listener nor the value raced', async (t) => {
  // In node:events since Node 15; not in the installed @types/node's module type.
  const { getEventListeners } = (await import('node:events')) as unknown as { getEventListeners(target: EventTarget, type: string): unknown[] };
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const controller = new AbortController();
  const refs: WeakRef<object>[] = [];
  // A loop over a long stream, as the kubelet's sync loop reads its sources: every item must be collectable once
  // handled, for as long as the signal lives (a race against one abort promise kept each of them).
  const handle = async (i: number): Promise<boolean> => {
    const item = { pods: new Array(100).fill(i) };
    refs.push(new WeakRef(item));
    return (await raceAbort(Promise.resolve(item), controller.signal, undefined)) === item;
  };
  for (let i = 0; i < 200; i++) if (!(await handle(i))) t.fail('not the value');
  t.equal(getEventListeners(controller.signal, 'abort').length, 0);
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  t.equal(refs.filter((r) => r.deref() !== undefined).length, 0, 'every raced value was collected');
});
