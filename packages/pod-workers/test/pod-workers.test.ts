import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { emptyPodStatus, PodCache, type PodStatus, type RuntimePod } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { calculateEffectiveGracePeriod, PodWorkers } from '../src/index.js';
import { RecordingPodSyncer } from '../src/testing.js';

function makePod(uid: string, opts: { grace?: number; name?: string; static?: boolean; phase?: string; deleting?: number } = {}): V1Pod {
  const pod: V1Pod = {
    metadata: { uid, name: opts.name ?? `pod-${uid}`, namespace: 'default', annotations: opts.static ? { 'kubernetes.io/config.source': 'file' } : {} },
    spec: { containers: [{ name: 'app', image: 'busybox' }], terminationGracePeriodSeconds: opts.grace ?? 30 },
  };
  if (opts.phase) pod.status = { phase: opts.phase };
  if (opts.deleting !== undefined) {
    pod.metadata!.deletionTimestamp = new Date();
    pod.metadata!.deletionGracePeriodSeconds = opts.deleting;
  }
  return pod;
}

function setup() {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const cache = new PodCache({ clock });
  const syncer = new RecordingPodSyncer({ clock });
  const workers = new PodWorkers({ syncer, cache, clock, logger, random: () => 0 });
  /** What a PLEG relist does for the pod workers: time moves and every pod is fresher. */
  const relist = async (): Promise<void> => {
    await clock.flush(); // let the workers finish what they can first
    clock.step(1);
    cache.updateTime(clock.now());
    await clock.flush();
  };
  return { clock, logger, cache, syncer, workers, relist };
}

t.test('create syncs once the cache is fresh, then again on each resync', async (t) => {
  const { clock, cache, syncer, workers, relist } = setup();
  const pod = makePod('a');
  workers.updatePod({ updateType: 'create', pod });
  t.ok(workers.isWorking('a'));
  await clock.flush();
  t.same(syncer.calls, [], 'waits on PodCache.getNewerThan before the first sync');
  t.equal(cache.pendingWaiters(), 1);

  await relist();
  t.same(syncer.methods(), ['syncPod']);
  t.equal(syncer.calls[0].updateType, 'create');
  t.equal(syncer.calls[0].pod, pod);
  t.notOk(workers.isWorking('a'));
  t.equal(workers.podWorkerState('a'), 'sync');

  // due again after the resync interval (jitter 0 here)
  clock.step(59_999);
  t.same(workers.workQueue.getWork(), []);
  clock.step(1);
  t.same(workers.workQueue.getWork(), ['a']);

  // the kubelet's sync loop turns due pods into 'sync' updates
  workers.updatePod({ updateType: 'sync', pod });
  await clock.flush();
  t.equal(syncer.calls.length, 1, 'no sync on a cache that is not newer than the last sync');
  const fresh: PodStatus = { ...emptyPodStatus('a'), name: 'pod-a', namespace: 'default', timestamp: clock.now() + 5 };
  cache.set('a', fresh, undefined, clock.now() + 5);
  await clock.flush();
  t.same(syncer.methods(), ['syncPod', 'syncPod']);
  t.equal(syncer.calls[1].updateType, 'sync');
  t.equal(syncer.calls[1].podStatus, fresh, 'the sync sees the newer status');
  await workers.stop();
});

t.test('updates arriving during a sync are coalesced into the latest', async (t) => {
  const { syncer, workers, relist } = setup();
  const release = syncer.hold('syncPod');
  workers.updatePod({ updateType: 'create', pod: makePod('a', { name: 'v1' }) });
  await relist();
  t.equal(syncer.calls.length, 1, 'first sync in flight');
  workers.updatePod({ updateType: 'update', pod: makePod('a', { name: 'v2' }) });
  workers.updatePod({ updateType: 'update', pod: makePod('a', { name: 'v3' }) });
  await relist();
  t.equal(syncer.calls.length, 1, 'still one sync in flight');
  release();
  await relist();
  t.same(
    syncer.calls.map((c) => [c.updateType, c.pod?.metadata?.name]),
    [
      ['create', 'v1'],
      ['update', 'v3'],
    ],
    'the syncer never saw v2',
  );
  t.same(workers.activeUpdate('a')?.pod?.metadata?.name, 'v3');
  await workers.stop();
});

t.test('onSyncDuration reports each processed update with a start time, by operation type', async (t) => {
  const clock = new FakeClock();
  const cache = new PodCache({ clock });
  const syncer = new RecordingPodSyncer({ clock });
  const durations: Array<[string, number]> = [];
  const workers = new PodWorkers({ syncer, cache, clock, random: () => 0, onSyncDuration: (type, ms) => durations.push([type, ms]) });
  const relist = async (): Promise<void> => {
    await clock.flush();
    clock.step(1);
    cache.updateTime(clock.now());
    await clock.flush();
  };
  const pod = makePod('a');
  workers.updatePod({ updateType: 'create', pod, startTime: clock.now() });
  clock.step(250);
  await relist();
  t.same(durations, [['create', 251]], 'from the update\'s start time to the end of the sync, queueing included');

  syncer.failNext('syncPod');
  workers.updatePod({ updateType: 'update', pod, startTime: clock.now() });
  await relist();
  t.same(durations[1], ['update', 1], 'a failed sync is observed too');

  workers.updatePod({ updateType: 'sync', pod });
  await relist();
  t.equal(durations.length, 2, 'an update without a start time is not observed');

  workers.updatePod({ updateType: 'kill', pod, startTime: clock.now() });
  await relist();
  await relist();
  t.same(syncer.methods(), ['syncPod', 'syncPod', 'syncPod', 'syncTerminatingPod', 'syncTerminatedPod']);
  t.same(
    durations.slice(2).map(([type]) => type),
    ['kill'],
    'the terminating sync is a kill; the replayed update that finishes the pod carries no start time (as in Go)',
  );
  await workers.stop();
});

t.test('kill: terminating with the grace period, terminated, then forgotten by syncKnownPods', async (t) => {
  const { syncer, workers, relist } = setup();
  const pod = makePod('a', { grace: 30 });
  workers.updatePod({ updateType: 'create', pod });
  await relist();
  t.ok(workers.couldHaveRunningContainers('a'));
  t.notOk(workers.isPodTerminationRequested('a'));

  let completed = 0;
  workers.updatePod({ updateType: 'kill', pod, killPodOptions: { completed: () => completed++ } });
  t.ok(workers.isPodTerminationRequested('a'), 'requested at once');
  t.notOk(workers.shouldPodContainersBeTerminating('a'), 'the worker has not seen it yet');
  t.equal(workers.podWorkerState('a'), 'terminating');
  await relist();
  t.ok(workers.shouldPodContainersBeTerminating('a'));
  t.same(syncer.methods(), ['syncPod', 'syncTerminatingPod']);
  t.equal(syncer.calls[1].gracePeriodSeconds, 30);
  t.equal(completed, 1, 'completed once the containers are stopped');
  t.ok(workers.isPodKnownTerminated('a'));
  t.notOk(workers.couldHaveRunningContainers('a'));
  t.ok(workers.shouldPodRuntimeBeRemoved('a'));
  t.notOk(workers.shouldPodContentBeRemoved('a'), 'killed but neither deleted nor evicted');

  await relist();
  t.same(syncer.methods(), ['syncPod', 'syncTerminatingPod', 'syncTerminatedPod']);
  t.ok(workers.shouldPodBeFinished('a'));
  t.equal(workers.podWorkerState('a'), 'terminated');

  // a finished pod ignores updates; a later kill completes at once
  workers.updatePod({ updateType: 'update', pod });
  workers.updatePod({ updateType: 'kill', pod, killPodOptions: { completed: () => completed++ } });
  await relist();
  t.equal(syncer.calls.length, 3);
  t.equal(completed, 1, 'a finished pod ignores the kill entirely (Go returns before closing CompletedCh)');

  t.same([...workers.syncKnownPods([pod])], [['a', { state: 'terminated', orphan: false, hasConfig: true, static: false }]]);
  t.same(workers.knownPods(), ['a'], 'kept while desired');
  t.same([...workers.syncKnownPods([])], []);
  t.same(workers.knownPods(), [], 'forgotten once no longer desired');
  // unknown pods after the first syncKnownPods
  t.notOk(workers.couldHaveRunningContainers('a'));
  t.ok(workers.shouldPodContentBeRemoved('a'));
  await workers.stop();
});

t.test('a later kill with a shorter grace period shortens it; a longer one does not', async (t) => {
  const { syncer, workers, relist } = setup();
  const pod = makePod('a', { grace: 60 });
  workers.updatePod({ updateType: 'create', pod });
  await relist();
  const release = syncer.hold('syncTerminatingPod');
  workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodOverrideSeconds: 30 } });
  await relist();
  t.same(syncer.callsOf('syncTerminatingPod').map((c) => c.gracePeriodSeconds), [30]);

  workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodOverrideSeconds: 10 } });
  await relist();
  const terminating = syncer.callsOf('syncTerminatingPod');
  t.equal(terminating[0].outcome, 'aborted', 'the running termination was cancelled');
  t.same(terminating.map((c) => c.gracePeriodSeconds), [30, 10]);

  workers.updatePod({ updateType: 'kill', pod, killPodOptions: { gracePeriodOverrideSeconds: 20 } });
  await relist();
  t.equal(terminating[1].outcome, undefined, 'a longer grace period does not cancel');
  release();
  await relist();
  await relist();
  t.same(syncer.callsOf('syncTerminatingPod').map((c) => c.gracePeriodSeconds), [30, 10], 'never back to 20');
  t.equal(syncer.callsOf('syncTerminatedPod').length, 1);
  await workers.stop();
});

t.test('API deletion: deletionGracePeriodSeconds wins, minimum 1 s, content removable after termination', async (t) => {
  const { syncer, workers, relist } = setup();
  workers.updatePod({ updateType: 'create', pod: makePod('a', { grace: 30 }) });
  await relist();
  workers.updatePod({ updateType: 'update', pod: makePod('a', { grace: 30, deleting: 0 }) });
  await relist();
  t.equal(syncer.callsOf('syncTerminatingPod')[0].gracePeriodSeconds, 1);
  t.ok(workers.shouldPodContentBeRemoved('a'), 'deleted and terminated');
  await workers.stop();
});

t.test('calculateEffectiveGracePeriod', async (t) => {
  const pod = makePod('a', { grace: 30 });
  t.same(calculateEffectiveGracePeriod(0, pod, undefined), { gracePeriod: 30, shortened: false }, 'spec value first');
  t.same(calculateEffectiveGracePeriod(0, pod, { gracePeriodOverrideSeconds: 45 }), { gracePeriod: 45, shortened: false }, 'an override sets the first value');
  t.same(calculateEffectiveGracePeriod(30, pod, { gracePeriodOverrideSeconds: 10 }), { gracePeriod: 10, shortened: true });
  t.same(calculateEffectiveGracePeriod(10, pod, { gracePeriodOverrideSeconds: 20 }), { gracePeriod: 10, shortened: false }, 'never grows');
  t.same(calculateEffectiveGracePeriod(0, makePod('b', { deleting: 5 }), { gracePeriodOverrideSeconds: 8 }), { gracePeriod: 5, shortened: false });
  t.same(calculateEffectiveGracePeriod(0, pod, { gracePeriodOverrideSeconds: 0 }), { gracePeriod: 1, shortened: false }, 'minimum 1 s');
  t.same(calculateEffectiveGracePeriod(0, { metadata: { uid: 'x' } }, undefined), { gracePeriod: 1, shortened: false });
});

t.test('a failed sync is retried after the backoff; network not ready after 1 s', async (t) => {
  const { clock, syncer, workers, relist, logger } = setup();
  syncer.failNext('syncPod', new Error('image pull failed'));
  workers.updatePod({ updateType: 'create', pod: makePod('a') });
  await relist();
  t.equal(syncer.calls[0].outcome, 'error');
  t.ok(logger.find('Error syncing pod, skipping'));
  clock.step(9_999);
  t.same(workers.workQueue.getWork(), []);
  clock.step(1);
  t.same(workers.workQueue.getWork(), ['a'], 'due after backOffPeriod (10 s)');

  syncer.failNext('syncPod', new Error('network is not ready: cni config uninitialized'));
  workers.updatePod({ updateType: 'sync', pod: makePod('a') });
  await relist();
  t.equal(syncer.calls.length, 2);
  clock.step(999);
  t.same(workers.workQueue.getWork(), []);
  clock.step(1);
  t.same(workers.workQueue.getWork(), ['a'], 'due after 1 s');
  await workers.stop();
});

t.test('a cached inspection error fails the sync without calling the syncer', async (t) => {
  const { clock, cache, syncer, workers, logger } = setup();
  cache.set('a', undefined, new Error('rpc error: code = Unavailable'), clock.now() + 1);
  workers.updatePod({ updateType: 'create', pod: makePod('a') });
  await clock.flush();
  t.same(syncer.calls, []);
  t.match(logger.find('Error syncing pod, skipping')?.err, { message: /Unavailable/ });
  await workers.stop();
});

t.test('syncPod reporting a terminal pod moves it through termination on its own', async (t) => {
  const { syncer, workers, relist } = setup();
  syncer.terminal.set('a', true);
  workers.updatePod({ updateType: 'create', pod: makePod('a') });
  await relist();
  t.ok(workers.isPodTerminationRequested('a'));
  t.ok(workers.shouldPodContainersBeTerminating('a'), 'completeSync acknowledges at once');
  await relist();
  await relist();
  t.same(syncer.methods(), ['syncPod', 'syncTerminatingPod', 'syncTerminatedPod']);
  t.equal(syncer.calls[1].gracePeriodSeconds, undefined, 'no kill: the syncer uses the pod spec (as Go passes nil)');
  t.notOk(workers.shouldPodContentBeRemoved('a'), 'a completed pod keeps its content until deleted');
  await workers.stop();
});

t.test('a terminal pod first seen with a terminal runtime status only runs syncTerminatedPod', async (t) => {
  const { syncer, workers, relist } = setup();
  workers.updatePod({ updateType: 'create', pod: makePod('a', { phase: 'Succeeded' }) });
  t.ok(workers.isPodKnownTerminated('a'));
  await relist();
  t.same(syncer.methods(), ['syncTerminatedPod']);
  await workers.stop();
});

t.test('a pod created in a terminal phase with a running status goes through termination', async (t) => {
  const { clock, cache, syncer, workers, relist } = setup();
  cache.set('a', { ...emptyPodStatus('a'), containerStatuses: [{ id: { type: 'x', id: 'c' }, name: 'app', state: 'running', createdAt: 0, exitCode: 0, image: '', imageId: '', hash: '', restartCount: 0 }] }, undefined, clock.now());
  workers.updatePod({ updateType: 'create', pod: makePod('a', { phase: 'Failed' }) });
  t.notOk(workers.isPodKnownTerminated('a'));
  t.ok(workers.isPodTerminationRequested('a'));
  await relist();
  await relist();
  t.same(syncer.methods(), ['syncTerminatingPod', 'syncTerminatedPod']);
  await workers.stop();
});

t.test('runtime-only pods are terminated via syncTerminatingRuntimePod and not tracked afterwards', async (t) => {
  const { clock, syncer, workers, logger } = setup();
  const runningPod: RuntimePod = { id: 'orphan', name: 'old', namespace: 'default', createdAt: 0, containers: [], sandboxes: [] };
  workers.updatePod({ updateType: 'sync', runningPod });
  t.ok(logger.find('Pod update is ignored, runtime pods can only be killed'));
  t.same(workers.knownPods(), []);

  workers.updatePod({ updateType: 'kill', runningPod, killPodOptions: { gracePeriodOverrideSeconds: 1 } });
  t.ok(workers.isPodTerminationRequested('orphan'));
  await clock.flush();
  t.same(syncer.methods(), ['syncTerminatingRuntimePod'], 'no cache wait for a runtime pod');
  t.equal(syncer.calls[0].runningPod, runningPod);
  t.same(workers.knownPods(), [], 'forgotten once stopped');
  t.ok(workers.couldHaveRunningContainers('orphan'), 'unknown before the first syncKnownPods');

  workers.updatePod({ updateType: 'kill', killPodOptions: {} });
  t.ok(logger.find(/neither a pod nor a running pod/));
  await workers.stop();
});

t.test('a runtime kill for a known pod uses its spec', async (t) => {
  const { syncer, workers, relist } = setup();
  const pod = makePod('a');
  workers.updatePod({ updateType: 'create', pod });
  await relist();
  workers.updatePod({ updateType: 'kill', runningPod: { id: 'a', name: 'pod-a', namespace: 'default', createdAt: 0, containers: [], sandboxes: [] } });
  await relist();
  t.same(syncer.methods(), ['syncPod', 'syncTerminatingPod']);
  t.equal(syncer.calls[1].pod, pod);
  t.ok(workers.shouldPodContentBeRemoved('a'), 'orphaned runtime pods count as deleted');
  await workers.stop();
});

t.test('syncKnownPods terminates orphans that still run and forgets unstarted ones', async (t) => {
  const { syncer, workers, relist } = setup();
  const a = makePod('a');
  const s1 = makePod('s1', { name: 'etcd', static: true });
  const s2 = makePod('s2', { name: 'etcd', static: true });
  workers.updatePod({ updateType: 'create', pod: a });
  workers.updatePod({ updateType: 'create', pod: s1 });
  await relist();
  workers.updatePod({ updateType: 'create', pod: s2 }); // waits for s1: never started
  await relist();
  const known = workers.syncKnownPods([s1]);
  t.same(
    [...known],
    [
      ['a', { state: 'terminating', orphan: true, hasConfig: true, static: false }],
      ['s1', { state: 'sync', orphan: false, hasConfig: true, static: true }],
    ],
    's2 was never started: forgotten at once',
  );
  t.ok(workers.isPodTerminationRequested('a'));
  t.ok(workers.shouldPodContentBeRemoved('s2'), 'unknown after the sync');
  await relist();
  await relist();
  t.same(syncer.methods('a'), ['syncPod', 'syncTerminatingPod', 'syncTerminatedPod']);
  t.equal(syncer.callsOf('syncTerminatingPod', 'a')[0].gracePeriodSeconds, undefined, 'replayed update: the syncer uses the spec');
  t.same(syncer.methods('s2'), [], 's2 never synced');
  t.same([...workers.syncKnownPods([s1])].map(([uid]) => uid), ['s1']);
  await workers.stop();
});

t.test('a create for a terminating UID restarts the pod once the old one finished', async (t) => {
  const { syncer, workers, relist } = setup();
  const pod = makePod('a');
  workers.updatePod({ updateType: 'create', pod });
  await relist();
  workers.updatePod({ updateType: 'kill', pod });
  workers.updatePod({ updateType: 'create', pod });
  await relist();
  await relist();
  t.ok(workers.shouldPodBeFinished('a'));
  t.same([...workers.syncKnownPods([pod])], [], 'history removed although still desired');
  workers.updatePod({ updateType: 'create', pod });
  await relist();
  t.same(syncer.methods(), ['syncPod', 'syncTerminatingPod', 'syncTerminatedPod', 'syncPod']);
  t.equal(workers.podWorkerState('a'), 'sync');
  await workers.stop();
});

t.test('static pods with one full name start one after the other', async (t) => {
  const { clock, syncer, workers, relist } = setup();
  const first = makePod('s1', { name: 'etcd', static: true });
  const second = makePod('s2', { name: 'etcd', static: true });
  workers.updatePod({ updateType: 'create', pod: first });
  await relist();
  workers.updatePod({ updateType: 'create', pod: second });
  await relist();
  t.same(syncer.methods(), ['syncPod'], 'the second waits for the first');
  t.equal(syncer.calls[0].uid, 's1');
  t.ok(workers.isWorking('s1') === false && workers.couldHaveRunningContainers('s2'));
  t.notOk(workers.isPodForMirrorPodTerminatingByFullName('etcd_default'));
  t.same([...workers.syncKnownPods([first, second])].map(([uid, s]) => [uid, s.static]), [['s1', true], ['s2', true]]);

  workers.updatePod({ updateType: 'kill', pod: first });
  t.ok(workers.isPodForMirrorPodTerminatingByFullName('etcd_default'));
  await relist();
  await relist();
  t.notOk(workers.isPodForMirrorPodTerminatingByFullName('etcd_default'));
  t.same(syncer.methods('s1'), ['syncPod', 'syncTerminatingPod', 'syncTerminatedPod']);

  // the second was requeued with the backoff; the kubelet's resync retries it
  clock.step(10_000);
  t.ok(workers.workQueue.getWork().includes('s2'));
  workers.updatePod({ updateType: 'sync', pod: second });
  await relist();
  t.same(syncer.methods('s2'), ['syncPod']);
  t.equal(syncer.callsOf('syncPod', 's2')[0].updateType, 'sync');
  await workers.stop();
});

t.test('an evicted pod: content removable at once, status function handed to the syncer', async (t) => {
  const { syncer, workers, relist } = setup();
  const pod = makePod('a');
  workers.updatePod({ updateType: 'create', pod });
  await relist();
  const statusFn = (): void => undefined;
  workers.updatePod({ updateType: 'kill', pod, killPodOptions: { evict: true, podStatusFn: statusFn, gracePeriodOverrideSeconds: 5 } });
  t.ok(workers.shouldPodContentBeRemoved('a'));
  await relist();
  const call = syncer.callsOf('syncTerminatingPod')[0];
  t.equal(call.podStatusFn, statusFn);
  t.equal(call.gracePeriodSeconds, 5);
  await workers.stop();
});

t.test('kill options outside termination complete at once', async (t) => {
  const { workers } = setup();
  let completed = 0;
  workers.updatePod({ updateType: 'update', pod: makePod('a'), killPodOptions: { completed: () => completed++ } });
  t.equal(completed, 1);
  await workers.stop();
});

t.test('query methods before and after the first syncKnownPods for unknown pods', async (t) => {
  const { workers } = setup();
  t.ok(workers.couldHaveRunningContainers('x'));
  t.notOk(workers.shouldPodBeFinished('x'));
  t.notOk(workers.shouldPodContainersBeTerminating('x'));
  t.notOk(workers.shouldPodRuntimeBeRemoved('x'));
  t.notOk(workers.shouldPodContentBeRemoved('x'));
  t.notOk(workers.isPodTerminationRequested('x'));
  t.notOk(workers.isPodKnownTerminated('x'));
  workers.syncKnownPods([]);
  t.notOk(workers.couldHaveRunningContainers('x'));
  t.ok(workers.shouldPodBeFinished('x'));
  t.ok(workers.shouldPodContainersBeTerminating('x'));
  t.ok(workers.shouldPodRuntimeBeRemoved('x'));
  t.ok(workers.shouldPodContentBeRemoved('x'));
  t.notOk(workers.isPodTerminationRequested('x'));
  t.notOk(workers.isPodKnownTerminated('x'));
  t.equal(workers.podWorkerState('x'), undefined);
});

t.test('stop() aborts running syncs and waits, leaving no timers or waiters', async (t) => {
  const { clock, cache, syncer, workers, relist } = setup();
  syncer.hold('syncPod');
  cache.set('a', emptyPodStatus('a'), undefined, clock.now());
  cache.set('b', emptyPodStatus('b'), undefined, clock.now());
  workers.updatePod({ updateType: 'create', pod: makePod('a') });
  workers.updatePod({ updateType: 'create', pod: makePod('b') });
  workers.updatePod({ updateType: 'create', pod: makePod('c') }); // waits on the cache
  await clock.flush();
  t.equal(syncer.calls.length, 2);
  t.equal(cache.pendingWaiters(), 1);
  await workers.stop();
  t.same(
    syncer.calls.map((c) => c.outcome),
    ['aborted', 'aborted'],
  );
  t.equal(cache.pendingWaiters(), 0);
  t.equal(clock.pendingTimers(), 0);
  workers.updatePod({ updateType: 'create', pod: makePod('d') });
  await relist();
  t.equal(syncer.calls.length, 2, 'updates after stop() are ignored');
});

t.test('refreshPodStatus: a worker whose cached status predates its last sync asks for it instead of waiting for a relist', async (t) => {
  const clock = new FakeClock();
  const cache = new PodCache({ clock });
  const syncer = new RecordingPodSyncer({ clock });
  const refreshed: string[] = [];
  let refreshes = true;
  const workers = new PodWorkers({
    syncer,
    cache,
    clock,
    random: () => 0,
    refreshPodStatus: async (pod) => {
      refreshed.push(`${pod.namespace}/${pod.name}/${pod.uid}`);
      if (!refreshes) return false;
      // What the evented PLEG's inspection stores: the runtime asked now, which is not later than the last sync.
      cache.set(pod.uid, { ...emptyPodStatus(pod.uid), name: pod.name, namespace: pod.namespace, timestamp: clock.now() }, undefined, clock.now());
      return true;
    },
  });
  const pod = makePod('a');
  cache.set('a', { ...emptyPodStatus('a'), timestamp: 1 }, undefined, clock.now() + 1);
  workers.updatePod({ updateType: 'create', pod });
  await clock.flush();
  t.same(refreshed, [], 'a status newer than the last sync (none yet) is used as it is');
  t.equal(syncer.calls.length, 1);

  // The event for the sync's own last change was created while it ran: older than the sync's end.
  clock.step(10);
  cache.set('a', { ...emptyPodStatus('a'), timestamp: clock.now() }, undefined, clock.now());
  workers.updatePod({ updateType: 'sync', pod, mirrorPod: undefined });
  await clock.flush();
  t.equal(syncer.calls.length, 2, 'that status is newer than the first sync');
  // The cache still holds what the sync acted on (its timestamp is not after the sync's end).
  clock.step(5);
  workers.updatePod({ updateType: 'sync', pod });
  await clock.flush();
  t.same(refreshed, ['default/pod-a/a'], 'the worker asked for the pod status');
  t.equal(syncer.calls.length, 3, 'and synced at once, with no relist and no global timestamp');
  t.equal(syncer.calls[2].podStatus?.name, 'pod-a', 'on the refreshed status');
  t.equal(cache.pendingWaiters(), 0);

  // A PLEG that relists anyway (the evented PLEG in fallback mode) declines: the worker waits as before.
  refreshes = false;
  clock.step(1);
  workers.updatePod({ updateType: 'sync', pod });
  await clock.flush();
  t.equal(refreshed.length, 2);
  t.equal(syncer.calls.length, 3, 'waiting for the cache');
  t.equal(cache.pendingWaiters(), 1);
  clock.step(1);
  cache.updateTime(clock.now());
  await clock.flush();
  t.equal(syncer.calls.length, 4);
  await workers.stop();
});
