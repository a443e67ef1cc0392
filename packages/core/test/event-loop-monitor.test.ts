import t from 'tap';
import { EventLoopMonitor, type EventLoopDelayHistogram, type EventLoopMonitorOptions } from '../src/index.js';
import { FakeClock, RecordingLogger } from '../src/testing.js';

const START = Date.parse('2026-11-28T17:40:00Z');

/** A histogram with set values (ns), counting enable/disable/reset. */
class FakeHistogram implements EventLoopDelayHistogram {
  enabled = false;
  resets = 0;
  count = 0;
  min = 9223372036854776000;
  max = 0;
  mean = NaN;
  stddev = NaN;
  percentiles: Record<number, number> = {};
  enable(): boolean {
    const was = this.enabled;
    this.enabled = true;
    return !was;
  }
  disable(): boolean {
    const was = this.enabled;
    this.enabled = false;
    return was;
  }
  reset(): void {
    this.resets++;
    this.count = 0;
    this.min = 9223372036854776000;
    this.max = 0;
    this.mean = NaN;
    this.stddev = NaN;
    this.percentiles = {};
  }
  percentile(p: number): number {
    return this.percentiles[p] ?? 0;
  }
}

/**
 * A monitor on a FakeClock whose monotonic time can run ahead of the fake clock's timers: `block(ms)` is the loop
 * busy for ms, so the next tick runs that late.
 */
function setup(options: EventLoopMonitorOptions = {}) {
  const clock = new FakeClock(START);
  let blocked = 0;
  const histogram = new FakeHistogram();
  const logger = new RecordingLogger();
  const monitor = new EventLoopMonitor({ clock, now: () => clock.now() + blocked, logger, delayHistogram: () => histogram, ...options });
  return {
    clock,
    monitor,
    histogram,
    logger,
    block(ms: number) {
      blocked += ms;
    },
  };
}

t.test('a tick measures how late it ran: the current and the worst lag', async (t) => {
  const { clock, monitor, block } = setup();
  monitor.start();
  t.teardown(() => monitor.stop());
  t.equal(monitor.intervalMs, 500);
  clock.step(500);
  t.equal(monitor.lagMs(), 0, 'on time');
  block(300);
  clock.step(500);
  t.equal(monitor.lagMs(), 300);
  t.same(monitor.worstLag(), { lagMs: 300, at: START + 1000 });
  clock.step(500);
  t.equal(monitor.lagMs(), 0, 'the next tick is due an interval after the late one ran');
  t.same(monitor.worstLag(), { lagMs: 300, at: START + 1000 }, 'the worst lag is kept');
  t.equal(monitor.check(), undefined, 'a lag under the threshold is healthy');
});

t.test('a stall over the threshold fails check() for the window, then it is healthy again', async (t) => {
  const { clock, monitor, block, logger } = setup();
  monitor.start();
  t.teardown(() => monitor.stop());
  clock.step(500);
  t.equal(monitor.check(), undefined);
  block(12_300);
  clock.step(500);
  t.equal(monitor.lagMs(), 12_300);
  t.equal(monitor.check()?.message, 'event loop was blocked for 12.3s at 2026-11-28T17:40:01Z; threshold is 10s');
  const warnings = () => logger.entries.filter((e) => e.level === 'warn');
  t.same(
    warnings().map((e) => [e.msg, e.kv]),
    [['Event loop was blocked longer than the threshold', { blocked: '12.3s', threshold: '10s' }]],
  );
  clock.step(60_000);
  t.match(monitor.check()?.message, /^event loop was blocked for 12\.3s/, 'still failing a window (1 min) after the stall');
  t.equal(warnings().length, 1, 'one warning per stall, not per tick');
  clock.step(500);
  t.equal(monitor.check(), undefined, 'healthy once the stall is older than the window');

  block(20_000);
  clock.step(500);
  t.equal(monitor.check()?.message, 'event loop was blocked for 20s at 2026-11-28T17:41:02Z; threshold is 10s');
  t.equal(warnings().length, 2, 'a second stall is logged again');
});

t.test('a lag of exactly the threshold is healthy; thresholds and window are options', async (t) => {
  const { clock, monitor, block } = setup({ thresholdMs: 2000, windowMs: 5000, intervalMs: 100 });
  monitor.start();
  t.teardown(() => monitor.stop());
  block(2000);
  clock.step(100);
  t.equal(monitor.check(), undefined);
  block(2001);
  clock.step(100);
  t.equal(monitor.check()?.message, 'event loop was blocked for 2.001s at 2026-11-28T17:40:00Z; threshold is 2s');
  clock.step(5000);
  t.ok(monitor.check(), 'failing for the whole window');
  clock.step(100);
  t.equal(monitor.check(), undefined);
});

t.test('a monitor that has not ticked for longer than the threshold is unhealthy', async (t) => {
  t.test('never started', async (t) => {
    const { monitor } = setup();
    t.equal(monitor.check()?.message, 'event loop monitor has yet to start');
  });
  t.test('no tick ran (the loop is still blocked when check() runs)', async (t) => {
    const { clock, monitor, block } = setup();
    monitor.start();
    t.teardown(() => monitor.stop());
    clock.step(500);
    block(10_000);
    t.equal(monitor.check(), undefined, 'exactly the threshold is healthy');
    block(4000);
    t.equal(monitor.check()?.message, 'event loop was last seen active 14s ago; threshold is 10s');
  });
  t.test('stopped', async (t) => {
    const { clock, monitor } = setup();
    monitor.start();
    clock.step(1000);
    monitor.stop();
    clock.step(10_000);
    t.equal(monitor.check(), undefined);
    clock.step(500);
    t.equal(monitor.check()?.message, 'event loop was last seen active 10.5s ago; threshold is 10s');
  });
});

t.test('stop() clears the timer and disables the delay histogram; start() is idempotent', async (t) => {
  const { clock, monitor, histogram } = setup();
  t.equal(clock.pendingTimers(), 0, 'nothing scheduled before start()');
  monitor.start();
  monitor.start();
  t.equal(clock.pendingTimers(), 1);
  t.ok(monitor.running);
  t.ok(histogram.enabled);
  clock.step(2000);
  t.equal(clock.pendingTimers(), 1, 'one timer rescheduled per tick');
  monitor.stop();
  t.equal(clock.pendingTimers(), 0);
  t.notOk(monitor.running);
  t.notOk(histogram.enabled);
});

t.test('start(signal): the monitor runs while any starter signal is live', async (t) => {
  const { clock, monitor } = setup();
  const a = new AbortController();
  const b = new AbortController();
  monitor.start(a.signal);
  monitor.start(b.signal);
  a.abort();
  t.ok(monitor.running, 'one kubelet of two stopped');
  b.abort();
  t.notOk(monitor.running, 'the last one stopped it');
  t.equal(clock.pendingTimers(), 0);
  monitor.start(a.signal);
  t.notOk(monitor.running, 'an aborted signal starts nothing');
});

t.test('the timer on the real clock does not keep the process alive', async (t) => {
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();
  const monitor = new EventLoopMonitor({ logger: new RecordingLogger() });
  monitor.start();
  t.teardown(() => monitor.stop());
  t.ok(monitor.running);
  t.equal(timers(), before, 'no ref-ed Timeout added');
});

t.test('utilization() is the share of active time since the previous read', async (t) => {
  const samples = [
    { idle: 800, active: 200 },
    { idle: 900, active: 300 },
    { idle: 900, active: 300 },
    { idle: 900, active: 700 },
  ];
  const { monitor } = setup({ eventLoopUtilization: () => samples.shift()! });
  t.equal(monitor.utilization(), 0.2, 'since process start on the first read');
  t.equal(monitor.utilization(), 0.5);
  t.equal(monitor.utilization(), 0, 'no time passed');
  t.equal(monitor.utilization(), 1);
});

t.test('takeDelayStats() reads the delay histogram in ms and resets it', async (t) => {
  const { monitor, histogram } = setup();
  t.same(monitor.takeDelayStats(), { minMs: 0, maxMs: 0, meanMs: 0, stddevMs: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0 }, 'zeros before start');
  monitor.start();
  t.teardown(() => monitor.stop());
  t.same(monitor.takeDelayStats(), { minMs: 0, maxMs: 0, meanMs: 0, stddevMs: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0 }, 'zeros with no sample');
  Object.assign(histogram, { count: 3, min: 10_000_000, max: 40_000_000, mean: 20_000_000, stddev: 5_000_000, percentiles: { 50: 11_000_000, 90: 30_000_000, 99: 40_000_000 } });
  const resets = histogram.resets;
  t.same(monitor.takeDelayStats(), { minMs: 10, maxMs: 40, meanMs: 20, stddevMs: 5, p50Ms: 11, p90Ms: 30, p99Ms: 40 });
  t.equal(histogram.resets, resets + 1);
});
