import t from 'tap';
import { Registry } from 'prom-client';
import type { EventLoopDelayStats } from '@kubelet-ts/core';
import { KubeletMetrics, registerNodejsMetrics, type EventLoopStatsSource } from '../src/metrics.js';

/** The value of one sample line of the text, e.g. sample(text, 'nodejs_eventloop_lag_seconds'). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const ZERO: EventLoopDelayStats = { minMs: 0, maxMs: 0, meanMs: 0, stddevMs: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0 };

/** A monitor with set figures; takeDelayStats() hands out its stats once, as the histogram resets. */
function fakeMonitor() {
  const state = { lagMs: 0, utilization: 0, stats: ZERO, takes: 0 };
  const source: EventLoopStatsSource = {
    lagMs: () => state.lagMs,
    utilization: () => state.utilization,
    takeDelayStats: () => {
      state.takes++;
      const stats = state.stats;
      state.stats = ZERO;
      return stats;
    },
  };
  return { state, source };
}

t.test("prom-client's Node.js runtime metrics: names, types, help texts, read at scrape time", async (t) => {
  const { state, source } = fakeMonitor();
  const metrics = new KubeletMetrics({ eventLoop: source, processMetrics: false });
  t.teardown(() => metrics.close());
  state.lagMs = 12;
  state.utilization = 0.25;
  state.stats = { minMs: 10, maxMs: 40, meanMs: 20, stddevMs: 5, p50Ms: 11, p90Ms: 30, p99Ms: 40 };
  const text = await metrics.metrics();
  for (const [name, help] of [
    ['nodejs_eventloop_lag_seconds', 'Lag of event loop in seconds.'],
    ['nodejs_eventloop_lag_min_seconds', 'The minimum recorded event loop delay.'],
    ['nodejs_eventloop_lag_max_seconds', 'The maximum recorded event loop delay.'],
    ['nodejs_eventloop_lag_mean_seconds', 'The mean of the recorded event loop delays.'],
    ['nodejs_eventloop_lag_stddev_seconds', 'The standard deviation of the recorded event loop delays.'],
    ['nodejs_eventloop_lag_p50_seconds', 'The 50th percentile of the recorded event loop delays.'],
    ['nodejs_eventloop_lag_p90_seconds', 'The 90th percentile of the recorded event loop delays.'],
    ['nodejs_eventloop_lag_p99_seconds', 'The 99th percentile of the recorded event loop delays.'],
    ['nodejs_eventloop_utilization_ratio', undefined],
    ['nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.'],
    ['nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.'],
    ['nodejs_external_memory_bytes', 'Node.js external memory size in bytes.'],
    ['nodejs_active_handles_total', 'Total number of active handles.'],
    ['nodejs_active_resources', 'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.'],
    ['nodejs_active_resources_total', 'Total number of active resources.'],
  ] as const) {
    if (help) t.match(text, `# HELP ${name} ${help}\n`, `${name} help`);
    t.match(text, `# TYPE ${name} gauge\n`, `${name} is a gauge`);
  }
  t.equal(sample(text, 'nodejs_eventloop_lag_seconds'), 0.012, "the monitor's lag in seconds");
  t.equal(sample(text, 'nodejs_eventloop_utilization_ratio'), 0.25);
  t.equal(sample(text, 'nodejs_eventloop_lag_min_seconds'), 0.01);
  t.equal(sample(text, 'nodejs_eventloop_lag_max_seconds'), 0.04);
  t.equal(sample(text, 'nodejs_eventloop_lag_mean_seconds'), 0.02);
  t.equal(sample(text, 'nodejs_eventloop_lag_stddev_seconds'), 0.005);
  t.equal(sample(text, 'nodejs_eventloop_lag_p50_seconds'), 0.011);
  t.equal(sample(text, 'nodejs_eventloop_lag_p90_seconds'), 0.03);
  t.equal(sample(text, 'nodejs_eventloop_lag_p99_seconds'), 0.04);
  t.ok(sample(text, 'nodejs_heap_size_used_bytes')! > 0);
  t.ok(sample(text, 'nodejs_heap_size_total_bytes')! >= sample(text, 'nodejs_heap_size_used_bytes')!);
  t.ok(sample(text, 'nodejs_external_memory_bytes')! > 0);
  t.equal(state.takes, 1, 'the delay histogram is read (and reset) once per scrape');

  const again = await metrics.metrics();
  t.equal(state.takes, 2);
  t.equal(sample(again, 'nodejs_eventloop_lag_max_seconds'), 0, 'the delay figures are since the previous scrape');
});

t.test('nodejs_active_resources counts the resources by type: Timeout is the ref-ed timers', async (t) => {
  const registry = new Registry();
  registerNodejsMetrics(registry, fakeMonitor().source);
  const timeoutsNow = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const timers = [setTimeout(() => undefined, 60_000), setTimeout(() => undefined, 60_000)];
  t.teardown(() => timers.forEach(clearTimeout));
  const text = await registry.metrics();
  const timeouts = sample(text, 'nodejs_active_resources{type="Timeout"}');
  t.ok(timeouts !== undefined && timeouts >= 2, `Timeout=${timeouts}`);
  t.equal(timeouts, timeoutsNow());
  t.ok(sample(text, 'nodejs_active_resources_total')! >= timeouts!);
  t.ok(sample(text, 'nodejs_active_handles_total')! >= 0);
  for (const timer of timers) clearTimeout(timer);
  const after = await registry.metrics();
  t.equal(sample(after, 'nodejs_active_resources{type="Timeout"}'), timeoutsNow() || undefined, 'a type that is gone is dropped, not left at its old count');
});

t.test('without an event loop source, KubeletMetrics registers no nodejs_ metric', async (t) => {
  const metrics = new KubeletMetrics({ processMetrics: false });
  t.teardown(() => metrics.close());
  t.notMatch(await metrics.metrics(), 'nodejs_');
});
