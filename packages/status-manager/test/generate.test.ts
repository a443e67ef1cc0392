// Phase and conditions from container states, the way the Go kubelet computes them.
import t from 'tap';
import type { V1ContainerStatus, V1PodStatus } from '@kubernetes/client-node';
import {
  generateAPIPodStatus,
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  getPhase,
  needToReconcilePodReadiness,
  podPhase,
} from '../src/index.js';
import { T0, container, makePod, runtimeStatus } from './helpers.js';

const running = (name: string, extra: Partial<V1ContainerStatus> = {}): V1ContainerStatus => ({ name, image: 'i', imageID: '', ready: true, restartCount: 0, state: { running: {} }, ...extra });
const exited = (name: string, exitCode: number): V1ContainerStatus => ({ name, image: 'i', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode } } });
const waiting = (name: string, lastExit?: number): V1ContainerStatus => ({
  name,
  image: 'i',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { waiting: { reason: 'CrashLoopBackOff' } },
  lastState: lastExit === undefined ? undefined : { terminated: { exitCode: lastExit } },
});

t.test('getPhase follows the Go kubelet', async (t) => {
  const pod = makePod('p', { containers: ['a', 'b'] });
  t.equal(getPhase(pod, []), 'Pending', 'no statuses yet');
  t.equal(getPhase(pod, [running('a'), waiting('b')]), 'Pending', 'one still waiting');
  t.equal(getPhase(pod, [running('a'), running('b')]), 'Running');
  t.equal(getPhase(pod, [running('a'), exited('b', 1)]), 'Running', 'one running');
  t.equal(getPhase(pod, [exited('a', 0), exited('b', 0)]), 'Running', 'Always: all exited are being restarted');
  t.equal(getPhase(pod, [running('a'), waiting('b', 1)]), 'Running', 'waiting after a termination counts as stopped');
  const never = makePod('p', { containers: ['a', 'b'], restartPolicy: 'Never' });
  t.equal(getPhase(never, [exited('a', 0), exited('b', 0)]), 'Succeeded');
  t.equal(getPhase(never, [exited('a', 0), exited('b', 2)]), 'Failed');
  const onFailure = makePod('p', { containers: ['a'], restartPolicy: 'OnFailure' });
  t.equal(getPhase(onFailure, [exited('a', 0)]), 'Succeeded');
  t.equal(getPhase(onFailure, [exited('a', 1)]), 'Running', 'OnFailure: a failed container restarts');
  t.equal(getPhase(pod, [exited('a', 0), exited('b', 1)], true), 'Failed', 'terminal pod: restart policy no longer matters');
  t.equal(getPhase(pod, [exited('a', 0), exited('b', 0)], true), 'Succeeded');
  const staticPod = makePod('s', { containers: ['a'], annotations: { 'kubernetes.io/config.source': 'file' } });
  t.equal(getPhase(staticPod, [exited('a', 0)], true), 'Running', 'static pods are never made terminal (#116484)');
  t.equal(getPhase(pod, [running('a')]), 'Pending', 'a container without status keeps the pod pending');

  const withInit = makePod('i', { containers: ['a'], initContainers: ['init'], restartPolicy: 'Never' });
  t.equal(getPhase(withInit, [running('init')]), 'Pending', 'init running');
  t.equal(getPhase(withInit, [exited('init', 1)]), 'Failed', 'init failed under Never');
  t.equal(getPhase(withInit, [exited('init', 0), running('a')]), 'Running');
  const retryInit = makePod('i', { containers: ['a'], initContainers: ['init'], restartPolicy: 'OnFailure' });
  t.equal(getPhase(retryInit, [exited('init', 1), waiting('a')]), 'Pending', 'init failed but will be retried');

  const sidecar = makePod('sc', { containers: ['a'], initContainers: [{ name: 'side', image: 'i', restartPolicy: 'Always' }] });
  t.equal(getPhase(sidecar, [running('side', { started: false })]), 'Pending', 'sidecar not started yet');
  t.equal(getPhase(sidecar, [running('side', { started: true }), running('a')]), 'Running');
  t.equal(podPhase(sidecar, [running('side', { started: true })], [running('a')]), 'Running', 'podPhase (init, regular) signature');
});

t.test('Ready, ContainersReady and Initialized conditions', async (t) => {
  const pod = makePod('p', { containers: ['a', 'b'] });
  t.same(generateContainersReadyCondition(pod, [running('a'), running('b')], 'Running'), { type: 'ContainersReady', status: 'True' });
  t.same(generateContainersReadyCondition(pod, [running('a'), running('b', { ready: false })], 'Running'), {
    type: 'ContainersReady',
    status: 'False',
    reason: 'ContainersNotReady',
    message: 'containers with unready status: [b]',
  });
  t.same(generateContainersReadyCondition(pod, [running('a', { ready: false })], 'Running').message, 'containers with unknown status: [b], containers with unready status: [a]');
  t.same(generateContainersReadyCondition(pod, undefined, 'Pending'), { type: 'ContainersReady', status: 'False', reason: 'UnknownContainerStatuses' });
  t.same(generateContainersReadyCondition(pod, [exited('a', 0), exited('b', 0)], 'Succeeded'), { type: 'ContainersReady', status: 'False', reason: 'PodCompleted' });
  t.same(generateContainersReadyCondition(pod, [running('a'), running('b')], 'Failed'), { type: 'ContainersReady', status: 'False', reason: 'PodFailed' });

  const gated = makePod('g', { containers: ['a'] });
  gated.spec!.readinessGates = [{ conditionType: 'example.com/lb' }];
  t.same(generatePodReadyCondition(gated, [], [running('a')], 'Running'), {
    type: 'Ready',
    status: 'False',
    reason: 'ReadinessGatesNotReady',
    message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
  });
  t.same(generatePodReadyCondition(gated, [{ type: 'example.com/lb', status: 'False' }], [running('a')], 'Running').message, 'the status of pod readiness gate "example.com/lb" is not "True", but False');
  t.same(generatePodReadyCondition(gated, [{ type: 'example.com/lb', status: 'True' }], [running('a')], 'Running'), { type: 'Ready', status: 'True' });
  t.same(generatePodReadyCondition(pod, [], [running('a', { ready: false }), running('b')], 'Running').reason, 'ContainersNotReady', 'Ready mirrors ContainersReady');

  const withInit = makePod('i', { containers: ['a'], initContainers: ['one', 'two'] });
  t.same(generatePodInitializedCondition(withInit, [exited('one', 0), waiting('two')], 'Pending'), {
    type: 'Initialized',
    status: 'False',
    reason: 'ContainersNotInitialized',
    message: 'containers with incomplete status: [one two]',
  }, 'ready is what marks an init container done (the prober sets it for exit 0)');
  t.same(generatePodInitializedCondition(withInit, [{ ...exited('one', 0), ready: true }, { ...exited('two', 0), ready: true }], 'Pending'), { type: 'Initialized', status: 'True' });
  t.same(generatePodInitializedCondition(withInit, [running('a')], 'Running'), { type: 'Initialized', status: 'True' }, 'a started regular container means initialized');
  t.same(generatePodInitializedCondition(withInit, [], 'Succeeded').status, 'False');
  t.same(generatePodInitializedCondition(withInit, [exited('one', 0), exited('two', 0)], 'Succeeded'), { type: 'Initialized', status: 'True', reason: 'PodCompleted' });
});

t.test('generateAPIPodStatus: container statuses, phase, conditions and IPs from the runtime', async (t) => {
  const pod = makePod('web', { containers: ['web', 'side'] });
  pod.status = { phase: 'Pending', qosClass: 'BestEffort', conditions: [{ type: 'example.com/gate', status: 'True' }, { type: 'PodScheduled', status: 'True' }] };
  const old = container('web', 'exited', { exitCode: 137, restartCount: 0, createdAt: T0 });
  const cur = container('web', 'running', { restartCount: 1, createdAt: T0 + 10 });
  const side = container('side', 'running', { createdAt: T0 + 5 });
  const rs = runtimeStatus(pod, [old, cur, side], { ips: ['10.88.0.7', 'fd00::7'] });
  const s = generateAPIPodStatus({ pod, status: rs, now: T0 + 60_000, readiness: (id) => (id.includes('side') ? false : undefined), hostIPs: ['192.168.1.2'] });
  t.equal(s.phase, 'Running');
  t.same(s.containerStatuses!.map((c) => c.name), ['side', 'web'], 'sorted by name, as Go does');
  const web = s.containerStatuses!.find((c) => c.name === 'web')!;
  t.equal(web.restartCount, 1);
  t.equal(web.containerID, `containerd://${cur.id.id}`);
  t.equal(web.imageID, 'docker.io/library/busybox@sha256:abc');
  t.ok(web.state?.running?.startedAt instanceof Date);
  t.equal(web.lastState?.terminated?.exitCode, 137, 'previous attempt as lastState');
  t.equal(web.ready, true);
  t.equal(web.started, true);
  t.equal(s.containerStatuses!.find((c) => c.name === 'side')!.ready, false, 'readiness probe says no');
  t.same(s.podIPs, [{ ip: '10.88.0.7' }, { ip: 'fd00::7' }]);
  t.equal(s.podIP, '10.88.0.7');
  t.equal(s.hostIP, '192.168.1.2');
  t.equal(s.qosClass, 'BestEffort');
  const cond = Object.fromEntries(s.conditions!.map((c) => [c.type, c]));
  t.equal(cond.PodReadyToStartContainers.status, 'True');
  t.equal(cond.Initialized.status, 'True');
  t.equal(cond.Ready.status, 'False');
  t.equal(cond.Ready.message, 'containers with unready status: [side]');
  t.equal(cond.ContainersReady.status, 'False');
  t.equal(cond.PodScheduled.status, 'True');
  t.equal(cond['example.com/gate'].status, 'True', 'conditions the kubelet does not own are kept');
  t.equal(s.conditions!.filter((c) => c.type === 'PodScheduled').length, 1, 'no duplicate PodScheduled');
  t.equal((cond.Ready.lastTransitionTime as Date).getTime(), T0 + 60_000);

  // Later: side becomes ready. Ready's transition time moves, Initialized's stays.
  const s2 = generateAPIPodStatus({ pod, status: rs, oldPodStatus: s, now: T0 + 120_000 });
  const cond2 = Object.fromEntries(s2.conditions!.map((c) => [c.type, c]));
  t.equal(cond2.Ready.status, 'True');
  t.equal((cond2.Ready.lastTransitionTime as Date).getTime(), T0 + 120_000, 'changed condition: new time');
  t.equal((cond2.Initialized.lastTransitionTime as Date).getTime(), T0 + 60_000, 'unchanged condition: time kept');
  t.equal((s2.startTime as Date).getTime(), (s.startTime as Date).getTime(), 'start time kept');
});

t.test('generateAPIPodStatus: waiting reasons, terminal phases, lost containers, init containers', async (t) => {
  const pod = makePod('job', { containers: ['main'], restartPolicy: 'Never' });
  const done = runtimeStatus(pod, [container('main', 'exited', { exitCode: 0 })]);
  const s = generateAPIPodStatus({ pod, status: done, now: T0 });
  t.equal(s.phase, 'Succeeded');
  t.equal(s.containerStatuses![0].state?.terminated?.reason, 'Completed', 'a missing runtime reason becomes Completed/Error');
  t.same(s.conditions!.find((c) => c.type === 'Ready'), { type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: new Date(T0) });

  // A terminal phase stays, even if the runtime later shows something else.
  const restarted = runtimeStatus(pod, [container('main', 'running')]);
  t.equal(generateAPIPodStatus({ pod, status: restarted, oldPodStatus: s, now: T0 }).phase, 'Succeeded');
  const apiTerminal = { ...pod, status: { phase: 'Failed' } as V1PodStatus };
  t.equal(generateAPIPodStatus({ pod: apiTerminal, status: restarted, now: T0 }).phase, 'Failed', 'the API server\'s terminal phase wins');
  // An evicted pod whose container then exits 0: the API server's Failed stays, with its reason and message.
  const evictedApi = { ...makePod('evicted', { containers: ['main'] }), status: { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: ephemeral-storage. ' } as V1PodStatus };
  const exitedZero = runtimeStatus(evictedApi, [container('main', 'exited', { exitCode: 0 })]);
  const kept = generateAPIPodStatus({ pod: evictedApi, status: exitedZero, podIsTerminal: true, oldPodStatus: { phase: 'Running' }, now: T0 });
  t.same([kept.phase, kept.reason, kept.message], ['Failed', 'Evicted', 'The node was low on resource: ephemeral-storage. '], 'the forced phase keeps the reason it came with');

  const crash = makePod('crash', { containers: ['c'] });
  const crashed = runtimeStatus(crash, [container('c', 'exited', { exitCode: 1, reason: 'Error' })]);
  const w = generateAPIPodStatus({ pod: crash, status: crashed, now: T0, waitingReasons: new Map([['c', { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container' }]]) });
  t.same(w.containerStatuses![0].state, { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container' } });
  t.equal(w.containerStatuses![0].lastState?.terminated?.exitCode, 1);
  t.equal(w.phase, 'Running', 'waiting after a termination: stopped, Always restarts');

  const creating = generateAPIPodStatus({ pod: crash, status: runtimeStatus(crash, [], { sandboxReady: false, ips: [] }), now: T0 });
  t.same(creating.containerStatuses![0].state, { waiting: { reason: 'ContainerCreating' } });
  t.equal(creating.phase, 'Pending');
  t.equal(creating.conditions!.find((c) => c.type === 'PodReadyToStartContainers')!.status, 'False');

  // The runtime lost a container that was running: it is shown as terminated-unknown, not waiting.
  const lostOld = generateAPIPodStatus({ pod: crash, status: runtimeStatus(crash, [container('c', 'running')]), now: T0 });
  const lost = generateAPIPodStatus({ pod: crash, status: runtimeStatus(crash, []), oldPodStatus: lostOld, now: T0 });
  t.equal(lost.containerStatuses![0].lastState?.terminated?.reason, 'ContainerStatusUnknown');
  t.equal(lost.containerStatuses![0].restartCount, 1);
  t.equal(lost.podIP, lostOld.podIP, 'IPs kept when the sandbox is gone');

  const init = makePod('init', { containers: ['app'], initContainers: ['setup'] });
  const initRunning = generateAPIPodStatus({ pod: init, status: runtimeStatus(init, [container('setup', 'running')]), now: T0 });
  t.same(initRunning.containerStatuses![0].state, { waiting: { reason: 'PodInitializing' } });
  t.equal(initRunning.initContainerStatuses![0].ready, false);
  t.equal(initRunning.conditions!.find((c) => c.type === 'Initialized')!.message, 'containers with incomplete status: [setup]');
  const initDone = generateAPIPodStatus({ pod: init, status: runtimeStatus(init, [container('setup', 'exited', { exitCode: 0 }), container('app', 'running')]), now: T0 });
  t.equal(initDone.initContainerStatuses![0].ready, true, 'an init container that exited 0 is ready');
  t.equal(initDone.conditions!.find((c) => c.type === 'Initialized')!.status, 'True');
  t.equal(initDone.phase, 'Running');
});

t.test('generateAPIPodStatus: the prober decides started and ready, so a probe that has not run keeps a container unready', async (t) => {
  const pod = makePod('web', { containers: ['web', 'side'] });
  const rs = runtimeStatus(pod, [container('web', 'running', { createdAt: T0 }), container('side', 'running', { createdAt: T0 })]);
  const seen: string[] = [];
  // As the prober's UpdatePodStatus does: "web" has a startup probe with no result yet, "side" has no probe.
  const probes = {
    updatePodStatus(p: typeof pod, status: V1PodStatus): void {
      seen.push(p.metadata!.name!);
      for (const c of status.containerStatuses ?? []) {
        c.started = c.name !== 'web';
        if (c.started) c.ready = true;
      }
    },
  };
  const s = generateAPIPodStatus({ pod, status: rs, now: T0 + 1000, probes, readiness: () => true, startup: () => true });
  t.same(seen, ['web'], 'the prober is asked once, with the pod');
  const web = s.containerStatuses!.find((c) => c.name === 'web')!;
  t.equal(web.started, false, 'a startup probe that has not run: not started');
  t.equal(web.ready, false, 'and not ready');
  t.equal(s.containerStatuses!.find((c) => c.name === 'side')!.ready, true);
  t.equal(s.conditions!.find((c) => c.type === 'Ready')!.status, 'False', 'the pod is not Ready before its probe ran');
  t.equal(s.conditions!.find((c) => c.type === 'ContainersReady')!.message, 'containers with unready status: [web]');
});

t.test('needToReconcilePodReadiness: a readiness gate set by a controller makes the Ready condition stale', async (t) => {
  const pod = makePod('g', { containers: ['a'] });
  pod.spec!.readinessGates = [{ conditionType: 'example.com/lb' }];
  pod.status = {
    phase: 'Running',
    containerStatuses: [running('a')],
    conditions: [
      { type: 'Ready', status: 'False', reason: 'ReadinessGatesNotReady', message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.' },
    ],
  };
  t.equal(needToReconcilePodReadiness(pod), false, 'Ready matches the gate that is still missing');
  pod.status.conditions!.push({ type: 'example.com/lb', status: 'True' });
  t.equal(needToReconcilePodReadiness(pod), true, 'the gate turned True: Ready must follow');
  pod.status.conditions![0] = { type: 'Ready', status: 'True' };
  t.equal(needToReconcilePodReadiness(pod), false, 'reconciled');
  const ungated = makePod('u', { containers: ['a'] });
  ungated.status = { phase: 'Running', containerStatuses: [running('a')], conditions: [{ type: 'Ready', status: 'False' }] };
  t.equal(needToReconcilePodReadiness(ungated), false, 'no readiness gates: never');
});
