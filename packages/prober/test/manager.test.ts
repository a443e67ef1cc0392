import t, { type Test } from 'tap';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { FakeClock } from '@kubelet-ts/core/testing';
import { ProbeManager, type ProbeType } from '../src/index.js';
import { FakeProber } from '../src/testing.js';
import { container, execProbeSpec, makePod, running, StatusStore, terminated } from './helpers.js';

const C1 = 'containerd://c1';
const C2 = 'containerd://c2';

function setup(opts: { random?: number } = {}) {
  const clock = new FakeClock();
  const store = new StatusStore();
  const prober = new FakeProber();
  const manager = new ProbeManager({ getPodStatus: store.get, prober, clock, random: () => opts.random ?? 0 });
  return { clock, store, prober, manager };
}

function runningStatus(clock: FakeClock, id = C1, extra: Partial<V1PodStatus> = {}, started?: boolean): V1PodStatus {
  return { phase: 'Running', podIP: '10.0.0.5', containerStatuses: [running('app', id, clock.now(), started === undefined ? {} : { started })], ...extra };
}

async function finish(t: Test, manager: ProbeManager, clock: FakeClock): Promise<void> {
  await manager.stop();
  t.equal(manager.workerCount(), 0, 'no workers left');
  t.equal(clock.pendingTimers(), 0, 'no timers left');
}

t.test('readiness: starts failed, needs successThreshold successes and failureThreshold failures', async (t) => {
  const { clock, store, prober, manager } = setup();
  const pod = makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 10, successThreshold: 2, failureThreshold: 3 }) })]);
  store.set('uid-1', runningStatus(clock, C1, {}, true));
  manager.addPod(pod);
  await clock.advance(0);
  t.equal(prober.count('readiness'), 1, 'first probe at once (no jitter with random 0)');
  t.equal(manager.readinessManager.get(C1), 'failure', 'readiness defaults to failure; 1 success < successThreshold 2');
  await clock.advance(10_000);
  t.equal(prober.count('readiness'), 2);
  t.equal(manager.readinessManager.get(C1), 'success', 'two successes in a row');

  prober.set('readiness', 'failure');
  await clock.advance(20_000);
  t.equal(prober.count('readiness'), 4);
  t.equal(manager.readinessManager.get(C1), 'success', 'two failures < failureThreshold 3');
  await clock.advance(10_000);
  t.equal(manager.readinessManager.get(C1), 'failure', 'third failure flips it');
  // readiness failures never put the worker on hold
  prober.set('readiness', 'success');
  await clock.advance(20_000);
  t.equal(manager.readinessManager.get(C1), 'success');
  await finish(t, manager, clock);
  t.equal(manager.readinessManager.get(C1), undefined, 'results removed when the worker ends');
});

t.test('onProbeResult reports every probe run, onProbeWorkerStopped each worker that ends', async (t) => {
  const clock = new FakeClock();
  const store = new StatusStore();
  const prober = new FakeProber();
  const results: string[] = [];
  const stopped: string[] = [];
  const manager = new ProbeManager({
    getPodStatus: store.get,
    prober,
    clock,
    random: () => 0,
    onProbeResult: (p, result) => results.push(`${p.probeType}/${p.podNamespace}/${p.podName}/${p.podUID}/${p.containerName}=${result}`),
    onProbeWorkerStopped: (p) => stopped.push(`${p.probeType}/${p.containerName}`),
  });
  const pod = makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 10, successThreshold: 2 }), liveness: execProbeSpec({ periodSeconds: 10 }) })]);
  store.set('uid-1', runningStatus(clock, C1, {}, true));
  manager.addPod(pod);
  await clock.advance(0);
  prober.set('readiness', 'failure');
  await clock.advance(10_000);
  t.same(results.filter((r) => r.startsWith('readiness')), ['readiness/default/web/uid-1/app=success', 'readiness/default/web/uid-1/app=failure'], 'each run, below the thresholds too');
  t.equal(results.filter((r) => r.startsWith('liveness')).length, 2);
  manager.stopLivenessAndStartup(pod);
  await clock.advance(0);
  t.same(stopped, ['liveness/app']);
  await finish(t, manager, clock);
  t.same(stopped, ['liveness/app', 'readiness/app'], 'reported once per worker');
});

t.test('liveness: defaults to success, failure after the threshold, then on hold until a new container', async (t) => {
  const { clock, store, prober, manager } = setup();
  const pod = makePod([container('app', { liveness: execProbeSpec({ periodSeconds: 5, failureThreshold: 2 }) })]);
  store.set('uid-1', runningStatus(clock, C1, {}, true));
  const updates: string[] = [];
  manager.livenessManager.subscribe((u) => updates.push(`${u.containerId}=${u.result}@${u.podUID}`));
  prober.set('liveness', 'failure');
  manager.addPod(pod);
  await clock.advance(0);
  t.equal(manager.livenessManager.get(C1), 'success', 'liveness defaults to success');
  t.equal(manager.livenessManager.lookup(C1), 'success');
  await clock.advance(5_000);
  t.equal(manager.livenessManager.get(C1), 'failure');
  t.equal(manager.livenessManager.lookup(C1), 'failure', 'runtime-manager lookup sees the failure');
  const probesAtFailure = prober.count('liveness');
  await clock.advance(30_000);
  t.equal(prober.count('liveness'), probesAtFailure, 'on hold: no probes while the container is the same');

  // The runtime manager restarts the container: a new id.
  prober.set('liveness', 'success');
  store.set('uid-1', runningStatus(clock, C2, {}, true));
  await clock.advance(5_000);
  t.equal(manager.livenessManager.get(C1), undefined, 'old container result removed');
  t.equal(manager.livenessManager.get(C2), 'success', 'fresh result for the new container');
  t.ok(prober.count('liveness') > probesAtFailure, 'probing resumed');
  t.same(updates, [`${C1}=success@uid-1`, `${C1}=failure@uid-1`, `${C2}=success@uid-1`]);
  await finish(t, manager, clock);
});

t.test('startup gates liveness and readiness until it succeeds', async (t) => {
  const { clock, store, prober, manager } = setup();
  const pod = makePod([
    container('app', {
      startup: execProbeSpec({ periodSeconds: 1, failureThreshold: 5 }),
      readiness: execProbeSpec({ periodSeconds: 1 }),
      liveness: execProbeSpec({ periodSeconds: 1 }),
    }),
  ]);
  const status = runningStatus(clock);
  store.set('uid-1', status);
  prober.setSequence('startup', ['failure', 'failure']);
  manager.addPod(pod);
  await clock.advance(0);
  t.equal(manager.startupManager.get(C1), 'unknown', 'startup starts unknown');
  t.equal(manager.startupManager.lookup(C1), undefined, 'unknown reads as "not probed yet" for the runtime manager');
  manager.updatePodStatus(pod, status);
  t.equal(status.containerStatuses?.[0].started, false, 'not started before the startup probe succeeds');
  t.equal(status.containerStatuses?.[0].ready, false);

  await clock.advance(1_000);
  t.equal(prober.count('startup'), 2);
  t.equal(prober.count('readiness') + prober.count('liveness'), 0, 'other probes wait');
  await clock.advance(1_000);
  t.equal(manager.startupManager.get(C1), 'success', 'third startup probe succeeded');
  manager.updatePodStatus(pod, status);
  t.equal(status.containerStatuses?.[0].started, true);
  t.equal(status.containerStatuses?.[0].ready, false, 'readiness still at its initial failure');

  await clock.advance(1_000);
  t.equal(prober.count('readiness'), 1);
  t.equal(prober.count('liveness'), 1);
  const startupProbes = prober.count('startup');
  await clock.advance(3_000);
  t.equal(prober.count('startup'), startupProbes, 'startup stops probing once started');
  manager.updatePodStatus(pod, status);
  t.equal(status.containerStatuses?.[0].ready, true);
  await finish(t, manager, clock);
});

t.test('startup failure after the threshold is reported and holds the worker', async (t) => {
  const { clock, store, prober, manager } = setup();
  const pod = makePod([container('app', { startup: execProbeSpec({ periodSeconds: 1, failureThreshold: 2 }) })]);
  store.set('uid-1', runningStatus(clock));
  prober.set('startup', 'failure');
  manager.addPod(pod);
  await clock.advance(1_000);
  t.equal(manager.startupManager.lookup(C1), 'failure');
  const n = prober.count('startup');
  await clock.advance(5_000);
  t.equal(prober.count('startup'), n, 'on hold');
  await finish(t, manager, clock);
});

t.test('initialDelaySeconds counts from the container start', async (t) => {
  const { clock, store, prober, manager } = setup();
  const pod = makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 10, initialDelaySeconds: 25 }) })]);
  store.set('uid-1', runningStatus(clock, C1, {}, true));
  manager.addPod(pod);
  await clock.advance(20_000);
  t.equal(prober.count('readiness'), 0, 'no probe at 0, 10 and 20 s');
  await clock.advance(10_000);
  t.equal(prober.count('readiness'), 1, 'first probe at 30 s');
  await finish(t, manager, clock);
});

t.test('initialDelaySeconds with startedAt as an RFC 3339 string, and a new startedAt of the same container id', async (t) => {
  const { clock, store, prober, manager } = setup();
  const pod = makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 10, initialDelaySeconds: 25 }) })]);
  const status = (startedAt: number): V1PodStatus => {
    const s = runningStatus(clock, C1, {}, true);
    // A status read from JSON carries the time as a string (the worker keeps its parsed value until it changes).
    (s.containerStatuses?.[0].state?.running as { startedAt: unknown }).startedAt = new Date(startedAt).toISOString();
    return s;
  };
  store.set('uid-1', status(clock.now()));
  manager.addPod(pod);
  await clock.advance(20_000);
  t.equal(prober.count('readiness'), 0, 'no probe at 0, 10 and 20 s');
  await clock.advance(10_000);
  t.equal(prober.count('readiness'), 1, 'first probe at 30 s');
  store.set('uid-1', status(clock.now()));
  await clock.advance(20_000);
  t.equal(prober.count('readiness'), 1, 'a later startedAt delays the probes again');
  await clock.advance(10_000);
  t.equal(prober.count('readiness'), 2);
  await finish(t, manager, clock);
});

t.test('the first probe is jittered within the period right after the manager starts', async (t) => {
  const { clock, store, prober, manager } = setup({ random: 0.5 });
  store.set('uid-1', runningStatus(clock, C1, {}, true));
  manager.addPod(makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 10 }) })]));
  await clock.advance(4_999);
  t.equal(prober.count(), 0);
  await clock.advance(1);
  t.equal(prober.count(), 1, 'first probe at half the period');
  await clock.advance(10_000);
  t.equal(prober.count(), 2, 'then every period');

  // Long after the manager started: no jitter.
  store.set('uid-2', runningStatus(clock, 'containerd://late', {}, true));
  manager.addPod(makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 10 }) })], { uid: 'uid-2', name: 'late' }));
  await clock.advance(0);
  t.equal(prober.count('readiness', 'app'), 3, 'the late pod is probed at once');
  await finish(t, manager, clock);
});

t.test('workers stop with removePod, cleanupPods and stopLivenessAndStartup and leave nothing behind', async (t) => {
  const { clock, store, manager } = setup();
  const podA = makePod([container('app', { readiness: execProbeSpec(), liveness: execProbeSpec() })], { uid: 'a' });
  const podB = makePod([container('app', { readiness: execProbeSpec(), startup: execProbeSpec() })], { uid: 'b' });
  store.set('a', runningStatus(clock, 'containerd://a1', {}, true));
  store.set('b', runningStatus(clock, 'containerd://b1', {}, true));
  manager.addPod(podA);
  manager.addPod(podA); // duplicate: no new workers
  manager.addPod(podB);
  await clock.advance(0);
  t.equal(manager.workerCount(), 4);
  t.equal(manager.readinessManager.get('containerd://a1'), 'success');

  manager.stopLivenessAndStartup(podB);
  await clock.advance(0);
  t.equal(manager.workerCount(), 3);
  t.ok(manager.getWorker('b', 'app', 'readiness'));

  manager.removePod(podA);
  await clock.advance(0);
  t.equal(manager.workerCount(), 1);
  t.equal(manager.readinessManager.get('containerd://a1'), undefined, 'results of a removed pod are dropped');
  t.equal(manager.livenessManager.get('containerd://a1'), undefined);

  manager.cleanupPods(new Set(['a']));
  await clock.advance(0);
  t.equal(manager.workerCount(), 0);
  t.equal(clock.pendingTimers(), 0);
  await manager.stop();
});

t.test('a worker ends when the pod is terminated or its container will not restart', async (t) => {
  const { clock, store, manager } = setup();
  const pod = makePod([container('app', { liveness: execProbeSpec({ periodSeconds: 1 }) })]);
  store.set('uid-1', runningStatus(clock, C1, {}, true));
  manager.addPod(pod);
  await clock.advance(0);
  store.set('uid-1', { phase: 'Succeeded', containerStatuses: [terminated('app', C1, 0)] });
  await clock.advance(1_000);
  t.equal(manager.workerCount(), 0, 'pod Succeeded');

  const never = makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 1 }) })], { uid: 'n', restartPolicy: 'Never' });
  store.set('n', { phase: 'Running', containerStatuses: [terminated('app', 'containerd://n1')] });
  const updates: string[] = [];
  manager.readinessManager.subscribe((u) => updates.push(u.result));
  manager.addPod(never);
  await clock.advance(0);
  t.equal(manager.workerCount(), 0, 'terminated container with restartPolicy Never');
  t.same(updates, ['failure'], 'a non-running container is marked failed');

  const always = makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 1 }) })], { uid: 'r' });
  store.set('r', { phase: 'Running', containerStatuses: [terminated('app', 'containerd://r1')] });
  manager.addPod(always);
  await clock.advance(3_000);
  t.equal(manager.workerCount(), 1, 'restartPolicy Always: keeps waiting for the restart');
  t.equal(manager.readinessManager.get('containerd://r1'), 'failure');
  await finish(t, manager, clock);
});

t.test('a worker waits for the pod status and the container id', async (t) => {
  const { clock, store, prober, manager } = setup();
  const pod = makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 1 }) })]);
  manager.addPod(pod);
  await clock.advance(2_000);
  t.equal(prober.count(), 0, 'no status yet');
  store.set('uid-1', { phase: 'Pending', containerStatuses: [{ name: 'app', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } }] });
  await clock.advance(2_000);
  t.equal(prober.count(), 0, 'no container id yet');
  store.set('uid-1', runningStatus(clock, C1, {}, true));
  await clock.advance(1_000);
  t.equal(prober.count(), 1);
  await finish(t, manager, clock);
});

t.test('pod deletion: liveness and startup end with a quiet success', async (t) => {
  const { clock, store, prober, manager } = setup();
  const pod: V1Pod = makePod([container('app', { liveness: execProbeSpec({ periodSeconds: 1 }), readiness: execProbeSpec({ periodSeconds: 1 }) })]);
  pod.metadata!.deletionTimestamp = new Date(clock.now());
  store.set('uid-1', runningStatus(clock, C1, {}, true));
  prober.set('liveness', 'failure');
  manager.addPod(pod);
  await clock.advance(0);
  t.equal(manager.getWorker('uid-1', 'app', 'liveness'), undefined, 'liveness worker ended');
  t.ok(manager.getWorker('uid-1', 'app', 'readiness'), 'readiness keeps probing during termination');
  t.equal(prober.count('liveness'), 0);
  await finish(t, manager, clock);
});

t.test('updatePodStatus sets started and ready as Go does', async (t) => {
  const { clock, store, prober, manager } = setup();
  const noProbes = makePod([container('plain')], { uid: 'p' });
  const status: V1PodStatus = { phase: 'Running', containerStatuses: [running('plain', 'containerd://p1', clock.now())] };
  manager.updatePodStatus(noProbes, status);
  t.equal(status.containerStatuses?.[0].started, true, 'no startup probe: started');
  t.equal(status.containerStatuses?.[0].ready, true, 'no readiness probe: ready');

  const stopped: V1PodStatus = { phase: 'Running', containerStatuses: [terminated('plain', 'containerd://p1')] };
  manager.updatePodStatus('p', stopped);
  t.equal(stopped.containerStatuses?.[0].started, false, 'not running: not started');

  // A readiness worker that has not seen the container yet: not ready, and it is triggered now.
  const pod = makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 60 }) })], {
    initContainers: [
      { name: 'init', image: 'busybox' },
      { name: 'sidecar', image: 'busybox', restartPolicy: 'Always', readinessProbe: execProbeSpec({ periodSeconds: 60 }) },
    ],
  });
  const podStatus: V1PodStatus = {
    phase: 'Running',
    containerStatuses: [running('app', C1, clock.now())],
    initContainerStatuses: [terminated('init', 'containerd://i1', 0), running('sidecar', 'containerd://s1', clock.now())],
  };
  manager.addPod(pod);
  await clock.advance(0);
  t.equal(prober.count(), 0, 'not started yet: nothing probed');
  manager.updatePodStatus(pod, podStatus);
  t.equal(podStatus.containerStatuses?.[0].ready, false, 'readiness initial failure');
  t.equal(podStatus.initContainerStatuses?.[0].ready, true, 'init container that exited 0 is ready');
  t.equal(podStatus.initContainerStatuses?.[1].started, true);
  t.equal(podStatus.initContainerStatuses?.[1].ready, false, 'sidecar with a readiness probe and no success yet');
  store.set('uid-1', podStatus);
  // The status now says started; updatePodStatus triggered both readiness workers, so they probe
  // without waiting for their 60 s period.
  await clock.advance(0);
  t.equal(prober.count('readiness'), 2);
  manager.updatePodStatus(pod, podStatus);
  t.equal(podStatus.containerStatuses?.[0].ready, true);
  t.equal(podStatus.initContainerStatuses?.[1].ready, true);
  await finish(t, manager, clock);
});

t.test('a prober that throws does not break the worker', async (t) => {
  const clock = new FakeClock();
  const store = new StatusStore();
  let calls = 0;
  const manager = new ProbeManager({
    getPodStatus: store.get,
    clock,
    random: () => 0,
    prober: {
      probe: async () => {
        calls++;
        throw new Error('boom');
      },
    },
  });
  store.set('uid-1', runningStatus(clock, C1, {}, true));
  manager.addPod(makePod([container('app', { readiness: execProbeSpec({ periodSeconds: 1 }) })]));
  await clock.advance(2_000);
  t.equal(calls, 3);
  t.equal(manager.workerCount(), 1);
  await finish(t, manager, clock);
});

t.test('results updates stream as an async iterable', async (t) => {
  const { clock, store, prober, manager } = setup();
  const controller = new AbortController();
  const seen: Array<{ type: ProbeType; result: string }> = [];
  const consume = (async () => {
    for await (const u of manager.livenessManager.updates(controller.signal)) seen.push({ type: 'liveness', result: u.result });
  })();
  store.set('uid-1', runningStatus(clock, C1, {}, true));
  prober.set('liveness', 'failure');
  manager.addPod(makePod([container('app', { liveness: execProbeSpec({ periodSeconds: 1, failureThreshold: 1 }) })]));
  await clock.advance(0);
  controller.abort();
  await consume;
  t.same(seen, [
    { type: 'liveness', result: 'success' },
    { type: 'liveness', result: 'failure' },
  ]);
  await finish(t, manager, clock);
});
