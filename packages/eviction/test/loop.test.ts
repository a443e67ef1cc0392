import t from 'tap';
import { harness, Gi, Mi, node, pod } from './helpers.js';

const low = node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi } });

t.test('start(): a pass every 10 s; after an eviction, polls cleanup every second, then synchronizes at once; stop() leaves no timers', async (t) => {
  const cleaned = new Set<string>();
  const h = harness({ hard: { 'memory.available': '1Gi' } }, { podCleanedUp: (p) => cleaned.has(p.metadata?.name ?? '') });
  const gets = () => h.stats.calls.length;
  h.manager.start();
  await h.clock.flush();
  t.equal(gets(), 1, 'the first pass runs at once');
  await h.clock.advance(10_000);
  t.equal(gets(), 2, 'then every monitoring interval');

  h.set(low, [[pod('a'), { memoryBytes: 2 * Gi }], [pod('b'), { memoryBytes: Gi }]]);
  await h.clock.advance(10_000);
  t.equal(gets(), 3);
  t.same(h.killer.names(), ['a']);
  await h.clock.advance(5_000);
  t.equal(gets(), 3, 'waiting for the pod to be cleaned up');
  cleaned.add('a');
  await h.clock.advance(1_000);
  t.equal(gets(), 4, 'cleaned up: synchronizes again at once');
  t.same(h.killer.names(), ['a'], 'the same stats: no second eviction');
  t.ok(h.logger.messages('info').includes('Eviction manager: pods successfully cleaned up'));

  await h.clock.advance(4_000);
  h.set(low, [[pod('b'), { memoryBytes: Gi }]]);
  await h.clock.advance(6_000);
  t.same(h.killer.names(), ['a', 'b']);
  const evictedAt = gets();
  await h.clock.advance(29_000);
  t.equal(gets(), evictedAt, 'b is never cleaned up: still waiting after 29 s');
  await h.clock.advance(1_000);
  t.equal(gets(), evictedAt + 1, 'the 30 s cleanup timeout, then the next pass');
  t.ok(h.logger.messages('warn').includes('Eviction manager: timed out waiting for pods to be cleaned up'));

  await h.manager.stop();
  t.equal(h.clock.pendingTimers(), 0);
  await h.clock.advance(60_000);
  t.equal(gets(), evictedAt + 1, 'stopped');
});

t.test('start(signal): aborting the signal stops the loop; start() twice runs one loop; a throwing activePods is logged', async (t) => {
  const abort = new AbortController();
  let calls = 0;
  const h = harness(
    { hard: { 'memory.available': '1Gi' } },
    {
      activePods: () => {
        calls++;
        if (calls === 2) throw new Error('pod manager gone');
        return [];
      },
    },
  );
  h.manager.start(abort.signal);
  h.manager.start(abort.signal);
  await h.clock.flush();
  t.equal(calls, 1);
  await h.clock.advance(10_000);
  t.equal(calls, 2);
  t.ok(h.logger.entries.some((e) => e.msg === 'Eviction manager: synchronize failed' && /pod manager gone/.test(String(e.err))));
  await h.clock.advance(10_000);
  t.equal(calls, 3, 'the loop goes on after an error');
  abort.abort();
  await h.manager.stop();
  t.equal(h.clock.pendingTimers(), 0);

  const pre = new AbortController();
  pre.abort();
  const h2 = harness({ hard: { 'memory.available': '1Gi' } });
  h2.manager.start(pre.signal);
  await h2.manager.stop();
  t.same(h2.stats.calls, [], 'an aborted signal: no pass');
  t.equal(h2.clock.pendingTimers(), 0);
});

t.test('without podCleanedUp the next pass follows an eviction at once', async (t) => {
  const h = harness({ hard: { 'memory.available': '1Gi' } }, { monitoringIntervalMs: 60_000 });
  h.set(low, [[pod('a'), { memoryBytes: 2 * Gi }]]);
  h.manager.start();
  await h.clock.flush();
  t.same(h.killer.names(), ['a']);
  await h.clock.advance(1_000);
  t.equal(h.stats.calls.length, 2, 'one poll period, then the next pass');
  await h.clock.advance(59_000);
  t.equal(h.stats.calls.length, 2, 'then the custom 60 s interval');
  await h.clock.advance(1_000);
  t.equal(h.stats.calls.length, 3);
  await h.manager.stop();
});
