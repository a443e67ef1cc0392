import t from 'tap';
import { PodCache, type PodLifecycleEvent } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { computePodEvents, convertState, generateEvents, GenericPLEG, type PlegContainerState } from '../src/index.js';
import { drain, FakeContainerRuntime, toRuntimePod } from './helpers.js';

const ev = (type: PodLifecycleEvent['type'], data = 'c1', id = 'pod1'): PodLifecycleEvent => ({ id, type, data });

t.test('generateEvents: every old -> new transition', async (t) => {
  const table: [PlegContainerState, PlegContainerState, PodLifecycleEvent['type'][]][] = [
    ['non-existent', 'non-existent', []],
    ['non-existent', 'running', ['ContainerStarted']],
    ['non-existent', 'exited', ['ContainerDied']],
    ['non-existent', 'unknown', ['ContainerChanged']],
    ['running', 'running', []],
    ['running', 'exited', ['ContainerDied']],
    ['running', 'unknown', ['ContainerChanged']],
    ['running', 'non-existent', ['ContainerDied', 'ContainerRemoved']],
    ['exited', 'exited', []],
    ['exited', 'running', ['ContainerStarted']],
    ['exited', 'unknown', ['ContainerChanged']],
    ['exited', 'non-existent', ['ContainerRemoved']],
    ['unknown', 'unknown', []],
    ['unknown', 'running', ['ContainerStarted']],
    ['unknown', 'exited', ['ContainerDied']],
    ['unknown', 'non-existent', ['ContainerDied', 'ContainerRemoved']],
  ];
  for (const [oldState, newState, types] of table) {
    t.same(
      generateEvents('pod1', 'c1', oldState, newState),
      types.map((type) => ev(type)),
      `${oldState} -> ${newState}`,
    );
  }
  t.throws(() => generateEvents('p', 'c', 'running', 'bogus' as PlegContainerState), /unrecognized container state/);
});

t.test('convertState: created counts as unknown', async (t) => {
  t.equal(convertState('created'), 'unknown');
  t.equal(convertState('unknown'), 'unknown');
  t.equal(convertState('running'), 'running');
  t.equal(convertState('exited'), 'exited');
  t.throws(() => convertState('paused' as never), /unrecognized container state: paused/);
});

t.test('computePodEvents treats sandboxes as containers', async (t) => {
  const oldPod = toRuntimePod({ uid: 'pod1', containers: [{ id: 'c1', state: 'running' }], sandboxes: [{ id: 's1', state: 'running' }] });
  const newPod = toRuntimePod({ uid: 'pod1', containers: [{ id: 'c2', state: 'running' }], sandboxes: [{ id: 's1', state: 'exited' }] });
  t.same(computePodEvents('pod1', oldPod, newPod), [
    ev('ContainerDied', 'c1'),
    ev('ContainerRemoved', 'c1'),
    ev('ContainerDied', 's1'),
    ev('ContainerStarted', 'c2'),
  ]);
  t.same(computePodEvents('pod1', undefined, undefined), []);
  t.same(computePodEvents('pod1', oldPod, undefined), [
    ev('ContainerDied', 'c1'),
    ev('ContainerRemoved', 'c1'),
    ev('ContainerDied', 's1'),
    ev('ContainerRemoved', 's1'),
  ]);
});

function setup(opts: { channelCapacity?: number } = {}) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const runtime = new FakeContainerRuntime();
  runtime.now = () => clock.now();
  const cache = new PodCache({ clock });
  const pleg = new GenericPLEG({ runtime, cache, clock, logger, ...opts });
  return { clock, logger, runtime, cache, pleg };
}

t.test('relist: events, cache updates and the global timestamp', async (t) => {
  const { clock, runtime, cache, pleg } = setup();
  runtime.setPod({ uid: 'pod1', containers: [{ id: 'c1', state: 'running' }], sandboxes: [{ id: 's1', state: 'running' }], ips: ['10.0.0.1'] });
  const waiter = cache.getNewerThan('other', clock.now() - 1);

  await pleg.relist();
  t.same(drain(pleg.eventChannel), [ev('ContainerStarted', 'c1'), ev('ContainerStarted', 's1')]);
  t.same(runtime.getPodStatusCalls, ['pod1']);
  const cached = cache.get('pod1');
  t.equal(cached.status.containerStatuses[0].state, 'running');
  t.same(cached.status.ips, ['10.0.0.1']);
  t.equal(cache.getEntry('pod1')?.modified, clock.now());
  t.equal(cache.timestamp(), clock.now(), 'cache.updateTime(relist start)');
  t.equal((await waiter).status.id, 'other', 'a waiter on any pod is released by the relist');
  t.equal(pleg.lastRelistTime(), clock.now());

  // steady state: no events, no inspection, timestamp still moves
  clock.step(1000);
  await pleg.relist();
  t.same(drain(pleg.eventChannel), []);
  t.same(runtime.getPodStatusCalls, ['pod1']);
  t.equal(cache.timestamp(), clock.now());

  // the container dies: ContainerDied, pod inspected again
  clock.step(1000);
  runtime.setState('pod1', 'c1', 'exited', 137);
  await pleg.relist();
  t.same(drain(pleg.eventChannel), [ev('ContainerDied', 'c1')]);
  t.equal(cache.get('pod1').status.containerStatuses[0].exitCode, 137);

  // the exited container is removed: ContainerRemoved only
  clock.step(1000);
  runtime.removeContainer('pod1', 'c1');
  await pleg.relist();
  t.same(drain(pleg.eventChannel), [ev('ContainerRemoved', 'c1')]);

  // the sandbox goes while running, and with it the pod: Died + Removed, cache entry deleted
  clock.step(1000);
  runtime.removePod('pod1');
  await pleg.relist();
  t.same(drain(pleg.eventChannel), [ev('ContainerDied', 's1'), ev('ContainerRemoved', 's1')]);
  t.equal(cache.getEntry('pod1'), undefined);
  t.same(runtime.getPodStatusCalls, ['pod1', 'pod1', 'pod1'], 'a vanished pod is not inspected');

  // and it is forgotten: nothing more to report
  clock.step(1000);
  await pleg.relist();
  t.same(drain(pleg.eventChannel), []);
});

t.test('relist: a created container updates the cache but ContainerChanged is not emitted', async (t) => {
  const { runtime, cache, pleg } = setup();
  runtime.setPod({ uid: 'pod1', containers: [{ id: 'c1', state: 'created' }] });
  await pleg.relist();
  t.same(drain(pleg.eventChannel), []);
  t.same(runtime.getPodStatusCalls, ['pod1']);
  t.equal(cache.get('pod1').status.containerStatuses[0].state, 'created');
});

t.test('relist: a failed inspection is retried on the next relist and its events kept', async (t) => {
  const { clock, runtime, cache, pleg, logger } = setup();
  runtime.setPod({ uid: 'pod1', containers: [{ id: 'c1', state: 'running' }] });
  runtime.podStatusErrors.set('pod1', [new Error('runtime busy')]);

  await pleg.relist();
  t.same(drain(pleg.eventChannel), [], 'no events for a pod that could not be inspected');
  t.same(pleg.podsPendingReinspection(), ['pod1']);
  t.equal(cache.getEntry('pod1')?.error?.message, 'runtime busy', 'the error is cached for the pod workers');
  t.ok(logger.find('PLEG: Write status'));

  clock.step(1000);
  await pleg.relist();
  t.same(drain(pleg.eventChannel), [ev('ContainerStarted', 'c1')], 'the same events are computed again');
  t.same(runtime.getPodStatusCalls, ['pod1', 'pod1']);
  t.same(pleg.podsPendingReinspection(), []);
  t.equal(cache.getEntry('pod1')?.error, undefined);

  // a pod with no change but marked for reinspection is inspected again
  clock.step(1000);
  runtime.setState('pod1', 'c1', 'exited');
  runtime.podStatusErrors.set('pod1', [new Error('again')]);
  await pleg.relist();
  t.same(pleg.podsPendingReinspection(), ['pod1']);
  clock.step(1000);
  await pleg.relist();
  t.same(drain(pleg.eventChannel), [ev('ContainerDied', 'c1')]);
  clock.step(1000);
  await pleg.relist();
  t.same(runtime.getPodStatusCalls.length, 4, 'no inspection once it succeeded and nothing changed');
});

t.test('relist: a failed listing changes nothing and does not count as activity', async (t) => {
  const { runtime, cache, pleg, logger } = setup();
  runtime.getPodsErrors.push(new Error('connection refused'));
  await pleg.relist();
  t.equal(pleg.lastRelistTime(), undefined);
  t.equal(cache.timestamp(), undefined);
  t.same(pleg.healthy().healthy, false);
  t.equal(pleg.healthy().error?.message, 'pleg has yet to be successful');
  t.ok(logger.find('GenericPLEG: Unable to retrieve pods'));
  t.equal(pleg.relists, 1);
});

t.test('healthy() flips after 3 min without a successful relist and back', async (t) => {
  const { clock, runtime, pleg } = setup();
  pleg.start();
  await clock.flush();
  t.same(pleg.healthy(), { healthy: true });

  runtime.getPodsFailure = new Error('runtime down');
  await clock.advance(180_000);
  t.equal(pleg.healthy().healthy, true, 'exactly at the threshold is still healthy');
  await clock.advance(1000);
  const health = pleg.healthy();
  t.equal(health.healthy, false);
  t.equal(health.error?.message, 'pleg was last seen active 3m1s ago; threshold is 3m0s');

  runtime.getPodsFailure = undefined;
  await clock.advance(1000);
  t.same(pleg.healthy(), { healthy: true });
  t.ok(runtime.getPodsCalls >= 183, `relisted about once a second (${runtime.getPodsCalls})`);

  await pleg.stop();
  t.equal(clock.pendingTimers(), 0, 'stop() leaves no timers');
  t.notOk(pleg.running);
});

t.test('a full channel drops events, counts and logs them', async (t) => {
  const { runtime, pleg, logger } = setup({ channelCapacity: 2 });
  runtime.setPod({ uid: 'pod1', containers: [{ id: 'c1', state: 'running' }, { id: 'c2', state: 'running' }, { id: 'c3', state: 'running' }] });
  await pleg.relist();
  t.equal(pleg.droppedEvents, 1);
  t.equal(pleg.eventChannel.length, 2);
  t.equal(logger.messages('error').filter((m) => m === 'Event channel is full, discard this relist() cycle event').length, 1);
  t.same(drain(pleg.eventChannel), [ev('ContainerStarted', 'c1'), ev('ContainerStarted', 'c2')]);
});

t.test('watch() delivers events and ends on abort', async (t) => {
  const { clock, runtime, pleg } = setup();
  const controller = new AbortController();
  const seen: PodLifecycleEvent[] = [];
  const consumer = (async () => {
    for await (const event of pleg.watch({ signal: controller.signal })) seen.push(event);
  })();
  runtime.setPod({ uid: 'pod1', containers: [{ id: 'c1', state: 'running' }] });
  await pleg.relist();
  await clock.flush();
  t.same(seen, [ev('ContainerStarted', 'c1')]);
  controller.abort();
  await consumer;
});

t.test('updateCache keeps the old pod IPs once the sandbox is gone', async (t) => {
  const { runtime, cache, pleg } = setup();
  runtime.setPod({ uid: 'pod1', containers: [{ id: 'c1', state: 'running' }], sandboxes: [{ id: 's1', state: 'running' }], ips: ['10.0.0.7'] });
  await pleg.relist();
  runtime.setPod({ uid: 'pod1', containers: [{ id: 'c1', state: 'exited' }], sandboxes: [{ id: 's1', state: 'exited' }], ips: [] });
  await pleg.relist();
  t.same(cache.get('pod1').status.ips, ['10.0.0.7'], 'exited pod keeps its IP');

  runtime.setPod({ uid: 'pod2', sandboxes: [{ id: 's2', state: 'running' }], ips: ['10.0.0.8'] });
  await pleg.relist();
  runtime.setPod({ uid: 'pod2', sandboxes: [{ id: 's2', state: 'exited' }, { id: 's3', state: 'running' }], ips: [] });
  await pleg.relist();
  t.same(cache.get('pod2').status.ips, [], 'a ready sandbox without IPs means no IPs');

  const result = await pleg.updateCache(undefined, 'pod2');
  t.same(result, { updated: true });
  t.equal(cache.getEntry('pod2'), undefined);
});

t.test('relists are serialized and their durations recorded', async (t) => {
  const durations: number[] = [];
  const clock = new FakeClock();
  const runtime = new FakeContainerRuntime();
  const cache = new PodCache({ clock });
  const pleg = new GenericPLEG({ runtime, cache, clock, onRelistDuration: (ms) => durations.push(ms), relistDurationSamples: 2 });
  let inFlight = 0;
  let maxInFlight = 0;
  const original = runtime.getPods.bind(runtime);
  runtime.getPods = async (all) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await new Promise((resolve) => setImmediate(resolve));
    inFlight--;
    return original(all);
  };
  await Promise.all([pleg.relist(), pleg.relist(), pleg.relist()]);
  t.equal(maxInFlight, 1);
  t.equal(durations.length, 3);
  t.equal(pleg.relistDurations().length, 2, 'keeps the configured number of samples');
  t.type(pleg.lastRelistDurationMs(), 'number');
});

t.test('onRelistInterval and onPodsListed report each relist for metrics', async (t) => {
  const clock = new FakeClock();
  const runtime = new FakeContainerRuntime();
  const cache = new PodCache({ clock });
  const intervals: number[] = [];
  const listed: string[][] = [];
  const pleg = new GenericPLEG({ runtime, cache, clock, onRelistInterval: (ms) => intervals.push(ms), onPodsListed: (pods) => listed.push(pods.map((p) => p.id)) });
  runtime.setPod({ uid: 'pod1', containers: [{ id: 'c1', state: 'running' }], sandboxes: [{ id: 's1', state: 'running' }] });
  await pleg.relist();
  t.same(intervals, [], 'no interval before the first successful listing');
  t.same(listed, [['pod1']]);
  await clock.advance(1500);
  runtime.getPodsErrors.push(new Error('connection refused'));
  await pleg.relist();
  t.same(intervals, [1500], 'the interval since the last listing, as the relist starts');
  t.same(listed, [['pod1']], 'a failed listing reports no pods');
  await clock.advance(500);
  runtime.setPod({ uid: 'pod2', containers: [], sandboxes: [{ id: 's2', state: 'running' }] });
  await pleg.relist();
  t.same(intervals, [1500, 2000], 'a failed listing does not move the last listing time');
  t.same(listed, [['pod1'], ['pod1', 'pod2']]);
});

t.test('update() restarts a running loop with the new period', async (t) => {
  const { clock, runtime, pleg } = setup();
  pleg.start();
  pleg.start(); // idempotent
  await clock.flush();
  t.equal(runtime.getPodsCalls, 1);
  pleg.update({ relistPeriodMs: 10_000, relistThresholdMs: 60_000 });
  await clock.flush();
  t.equal(runtime.getPodsCalls, 2, 'restarting relists at once');
  await clock.advance(9_000);
  t.equal(runtime.getPodsCalls, 2);
  await clock.advance(1_000);
  t.equal(runtime.getPodsCalls, 3);
  t.same(pleg.relistDuration, { relistPeriodMs: 10_000, relistThresholdMs: 60_000 });
  await pleg.stop();
  await pleg.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('evented mode: statuses stored at the runtime timestamp, stale ones emit nothing', async (t) => {
  const { clock, runtime, cache, pleg } = setup();
  pleg.setEventedPLEGInUse(true);
  runtime.setPod({ uid: 'pod1', containers: [{ id: 'c1', state: 'running' }] });
  // an event already stored a fresher status
  cache.set('pod1', { ...(await runtime.getPodStatus('pod1', 'pod-pod1', 'default')), timestamp: clock.now() + 10 }, undefined, clock.now() + 10);
  runtime.now = () => clock.now() - 5;
  await pleg.relist();
  t.same(drain(pleg.eventChannel), [], 'the evented PLEG already reported this pod');
  // the record was not updated, so the next relist (with a fresh status) reports it
  runtime.now = () => clock.now() + 20;
  await pleg.relist();
  t.same(drain(pleg.eventChannel), [ev('ContainerStarted', 'c1')]);
  t.equal(cache.getEntry('pod1')?.modified, clock.now() + 20);
});

t.test('constructor requires a cache', async (t) => {
  t.throws(() => new GenericPLEG({ runtime: new FakeContainerRuntime(), cache: undefined as never }), /cache cannot be nil/);
});

t.test('a relist inspects changed pods several at a time, up to inspectionConcurrency, and emits each pod\'s events', async (t) => {
  const runtime = new FakeContainerRuntime();
  const clock = new FakeClock();
  const cache = new PodCache({ clock });
  let inFlight = 0;
  let most = 0;
  const release: Array<() => void> = [];
  const inspect = runtime.getPodStatus.bind(runtime);
  runtime.getPodStatus = async (uid, name, namespace) => {
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise<void>((resolve) => release.push(resolve));
    inFlight--;
    return inspect(uid, name, namespace);
  };
  const pleg = new GenericPLEG({ runtime, cache, clock, inspectionConcurrency: 2 });
  for (const uid of ['a', 'b', 'c', 'd', 'e']) runtime.setPod({ uid, containers: [{ id: `c-${uid}`, state: 'running' }] });
  const relist = pleg.relist();
  for (let released = 0; released < 5; ) {
    await new Promise((resolve) => setImmediate(resolve));
    const next = release.shift();
    if (next) {
      next();
      released++;
    }
  }
  await relist;
  t.equal(most, 2, 'never more than two inspections at once');
  t.same(runtime.getPodStatusCalls.sort(), ['a', 'b', 'c', 'd', 'e'], 'every changed pod inspected once');
  const events = drain(pleg.eventChannel).map((e) => `${e.id}:${e.type}`).sort();
  t.same(events, ['a:ContainerStarted', 'b:ContainerStarted', 'c:ContainerStarted', 'd:ContainerStarted', 'e:ContainerStarted']);
  t.equal(cache.timestamp(), clock.now(), 'the global timestamp moves once all are in the cache');
});
