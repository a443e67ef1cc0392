import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import type { ContainerStatus, PodStatus } from '@kubelet-ts/core';
import { makeTestPod } from '@kubelet-ts/pod-config/testing';
import { generateAPIPodStatus } from '../src/index.js';

const now = Date.parse('2026-01-01T00:00:00Z');

function container(name: string, state: ContainerStatus['state'], extra: Partial<ContainerStatus> = {}): ContainerStatus {
  return { id: { type: 'fake', id: `${name}-${extra.restartCount ?? 0}` }, name, state, createdAt: now + (extra.restartCount ?? 0), exitCode: 0, image: 'busybox', imageId: 'sha256:1', hash: 'h', restartCount: 0, startedAt: now, ...extra };
}

function status(pod: V1Pod, containers: ContainerStatus[], sandboxReady = true): PodStatus {
  return {
    id: pod.metadata!.uid!,
    name: pod.metadata!.name!,
    namespace: 'default',
    ips: sandboxReady ? ['10.88.0.5'] : [],
    containerStatuses: containers,
    sandboxStatuses: [{ id: 's', name: pod.metadata!.name!, namespace: 'default', uid: pod.metadata!.uid!, attempt: 0, state: sandboxReady ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY', createdAt: now, labels: {}, annotations: {} }],
    timestamp: now,
  };
}

const conditions = (s: ReturnType<typeof generateAPIPodStatus>) => Object.fromEntries((s.conditions ?? []).map((c) => [c.type, c.status]));

t.test('phase and conditions follow the containers (Go getPhase)', async (t) => {
  const pod = makeTestPod({ name: 'web', containers: ['a', 'b'] });
  const cases: Array<[string, V1Pod, ContainerStatus[], string]> = [
    ['nothing created yet', pod, [], 'Pending'],
    ['one running, one not created', pod, [container('a', 'running')], 'Pending'],
    ['all running', pod, [container('a', 'running'), container('b', 'running')], 'Running'],
    ['one exited 0 under Always', pod, [container('a', 'running'), container('b', 'exited')], 'Running'],
    ['all exited 0 under Never', makeTestPod({ name: 'job', containers: ['a', 'b'], restartPolicy: 'Never' }), [container('a', 'exited'), container('b', 'exited')], 'Succeeded'],
    ['one failed under Never', makeTestPod({ name: 'job', containers: ['a', 'b'], restartPolicy: 'Never' }), [container('a', 'exited'), container('b', 'exited', { exitCode: 1 })], 'Failed'],
    ['failed under OnFailure restarts', makeTestPod({ name: 'job', containers: ['a'], restartPolicy: 'OnFailure' }), [container('a', 'exited', { exitCode: 1 })], 'Running'],
    ['all exited under Always keeps Running', pod, [container('a', 'exited', { exitCode: 1 }), container('b', 'exited')], 'Running'],
  ];
  for (const [name, p, containers, phase] of cases) {
    t.equal(generateAPIPodStatus({ pod: p, status: status(p, containers), now }).phase, phase, name);
  }
  const running = generateAPIPodStatus({ pod, status: status(pod, [container('a', 'running'), container('b', 'running')]), now });
  t.same(conditions(running), { PodReadyToStartContainers: 'True', Initialized: 'True', Ready: 'True', ContainersReady: 'True', PodScheduled: 'True' });
  t.equal(running.podIP, '10.88.0.5');
  const notReady = generateAPIPodStatus({ pod, status: status(pod, [container('a', 'running'), container('b', 'running')]), readiness: (id) => !id.includes('b-'), now });
  t.equal(conditions(notReady).Ready, 'False');
  t.equal(notReady.conditions?.find((c) => c.type === 'Ready')?.message, 'containers with unready status: [b]');
});

t.test('init containers gate the pod', async (t) => {
  const pod = makeTestPod({ name: 'init', containers: ['app'], initContainers: ['setup'] });
  const pending = generateAPIPodStatus({ pod, status: status(pod, [container('setup', 'running')]), now });
  t.equal(pending.phase, 'Pending');
  t.equal(conditions(pending).Initialized, 'False');
  t.equal(pending.containerStatuses?.[0].state?.waiting?.reason, 'PodInitializing');
  const done = generateAPIPodStatus({ pod, status: status(pod, [container('setup', 'exited'), container('app', 'running')]), now });
  t.equal(done.phase, 'Running');
  t.equal(conditions(done).Initialized, 'True');
  const neverPod = makeTestPod({ name: 'init', containers: ['app'], initContainers: ['setup'], restartPolicy: 'Never' });
  t.equal(generateAPIPodStatus({ pod: neverPod, status: status(neverPod, [container('setup', 'exited', { exitCode: 2 })]), now }).phase, 'Failed');
});

t.test('waiting reasons, restart counts and last state', async (t) => {
  const pod = makeTestPod({ name: 'crash', containers: ['app'] });
  const s = generateAPIPodStatus({
    pod,
    status: status(pod, [container('app', 'exited', { exitCode: 1, restartCount: 2 }), container('app', 'exited', { exitCode: 1, restartCount: 1 })]),
    waitingReasons: new Map([['app', { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container=app' }]]),
    now,
  });
  const app = s.containerStatuses![0];
  t.equal(app.state?.waiting?.reason, 'CrashLoopBackOff');
  t.equal(app.lastState?.terminated?.exitCode, 1);
  t.equal(app.restartCount, 2);
  t.equal(app.ready, false);
  const pulling = generateAPIPodStatus({ pod, status: status(pod, []), waitingReasons: new Map([['app', { reason: 'ErrImagePull', message: 'not found' }]]), now });
  t.same(pulling.containerStatuses![0].state?.waiting, { reason: 'ErrImagePull', message: 'not found' });
});
