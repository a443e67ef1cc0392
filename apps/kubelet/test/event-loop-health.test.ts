// The process's event loop as the kubelet exposes it (issue 33, scenario 8): the `eventloop` healthz check on the
// healthz port (10248) and on the secure port's /healthz, the warning logged once per stall, and the nodejs_* runtime
// metrics on both servers that serve /metrics. The kubelet runs standalone on the embedded runtime; its monitor runs
// on a FakeClock whose monotonic time can run ahead of its timers, which is a blocked loop without blocking.
import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventLoopMonitor, noopLogger, realClock } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet } from '../src/index.js';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function get(port: number, path: string, tls = false): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = tls ? httpsRequest : httpRequest;
    request({ host: '127.0.0.1', port, path, rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    })
      .on('error', reject)
      .end();
  });
}

/** The value of one sample line of the text. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

t.test('a stalled loop fails the eventloop healthz check on both ports for the window; the metrics are on /metrics', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-eventloop-'));
  const [healthzPort, readOnlyPort] = [await freePort(), await freePort()];
  const config = resolveConfig(
    parseFlags([
      `--root-dir=${join(dir, 'root')}`,
      `--pod-logs-dir=${join(dir, 'logs')}`,
      '--hostname-override=eventloop-node',
      `--healthz-port=${healthzPort}`,
      '--address=127.0.0.1',
      '--port=0',
      `--read-only-port=${readOnlyPort}`,
      '--anonymous-auth=true',
    ]),
  );
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  c.register(Tokens.Logger, { useValue: noopLogger });
  const clock = new FakeClock(Date.parse('2026-11-28T17:40:00Z'));
  let blocked = 0;
  const logger = new RecordingLogger();
  const monitor = new EventLoopMonitor({ clock, now: () => clock.now() + blocked, logger });
  c.register(Tokens.EventLoopMonitor, { useValue: monitor });
  const controller = new AbortController();
  const running = await startKubelet(c, controller.signal);
  t.teardown(async () => {
    controller.abort();
    await running.done;
    rmSync(dir, { recursive: true, force: true });
  });
  const secure = (path: string) => get(running.port!, path, true);
  const healthz = (path: string) => get(running.healthzPort!, path);

  t.ok(monitor.running, 'the kubelet started the monitor');
  t.equal(running.healthzPort, healthzPort);
  clock.step(500);
  t.same(await healthz('/healthz'), { status: 200, body: 'ok' });
  t.match((await healthz('/healthz?verbose')).body, '[+]ping ok\n[+]log ok\n[+]syncloop ok\n[+]eventloop ok\nhealthz check passed\n');
  t.same(await healthz('/healthz/eventloop'), { status: 200, body: 'ok' });

  // The loop blocked for 12.3 s: the next tick runs that late.
  blocked += 12_300;
  clock.step(500);
  t.equal(monitor.check()?.message, 'event loop was blocked for 12.3s at 2026-11-28T17:40:01Z; threshold is 10s');
  for (const [where, fetch] of [
    ['healthz port', healthz],
    ['secure port', secure],
  ] as const) {
    const failed = await fetch('/healthz');
    t.equal(failed.status, 500, `${where}: /healthz fails`);
    t.equal(failed.body, '[+]ping ok\n[+]log ok\n[+]syncloop ok\n[-]eventloop failed: reason withheld\nhealthz check failed\n', `${where}: only eventloop failed`);
    t.equal((await fetch('/healthz/eventloop')).status, 500, `${where}: /healthz/eventloop fails`);
  }
  t.same(
    logger.entries.filter((e) => e.level === 'warn').map((e) => [e.msg, e.kv]),
    [['Event loop was blocked longer than the threshold', { blocked: '12.3s', threshold: '10s' }]],
    'the stall is logged with its reason, once',
  );

  // The nodejs_* metrics on the secure and the read-only port, read from the monitor at scrape time.
  for (const [where, fetch] of [
    ['secure port', secure],
    ['read-only port', (path: string) => get(readOnlyPort, path)],
  ] as const) {
    const metrics = (await fetch('/metrics')).body;
    t.match(metrics, '# TYPE nodejs_eventloop_lag_seconds gauge\n', where);
    t.equal(sample(metrics, 'nodejs_eventloop_lag_seconds'), 12.3, `${where}: the monitor's lag`);
    for (const name of [
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_eventloop_utilization_ratio',
      'nodejs_heap_size_used_bytes',
      'nodejs_heap_size_total_bytes',
      'nodejs_external_memory_bytes',
      'nodejs_active_handles_total',
      'nodejs_active_resources_total',
    ]) {
      t.ok(sample(metrics, name) !== undefined, `${where}: ${name}`);
    }
    t.match(metrics, /^nodejs_active_resources\{type="Timeout"\} \d+$/m, `${where}: the timers`);
    t.match(metrics, /^process_open_fds \d+$/m, `${where}: beside the process metrics`);
  }

  clock.step(60_000);
  t.equal((await healthz('/healthz')).status, 500, 'still failing a minute after the stall');
  clock.step(500);
  t.same(await healthz('/healthz'), { status: 200, body: 'ok' }, 'healthy once the stall left the window');
  t.same(await secure('/healthz'), { status: 200, body: 'ok' });
  t.equal(logger.entries.filter((e) => e.level === 'warn').length, 1, 'no warning per tick');

  controller.abort();
  await running.done;
  t.notOk(monitor.running, 'stopped with the kubelet');
});

t.test("one monitor per container, on the container's clock and logger; it runs while any of its kubelets runs", async (t) => {
  const config = resolveConfig(parseFlags(['--hostname-override=n1']));
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  const logger = new RecordingLogger();
  const clock = new FakeClock();
  c.register(Tokens.Logger, { useValue: logger });
  c.register(Tokens.Clock, { useValue: clock });
  const monitor = c.resolve<EventLoopMonitor>(Tokens.EventLoopMonitor);
  t.ok(monitor instanceof EventLoopMonitor);
  t.equal(c.resolve(Tokens.EventLoopMonitor), monitor, 'a singleton');
  t.equal(monitor.check()?.message, 'event loop monitor has yet to start');
  const a = new AbortController();
  const b = new AbortController();
  monitor.start(a.signal);
  monitor.start(b.signal);
  t.equal(clock.pendingTimers(), 1, 'ticking on the container clock');
  a.abort();
  t.ok(monitor.running, 'a fleet node stopped: the others still run');
  b.abort();
  t.notOk(monitor.running);
  t.equal(clock.pendingTimers(), 0);

  const real = container.createChildContainer();
  registerKubeletDeps(real, config);
  t.equal(real.resolve(Tokens.Clock), realClock);
  t.ok(real.resolve<EventLoopMonitor>(Tokens.EventLoopMonitor) instanceof EventLoopMonitor);
});
