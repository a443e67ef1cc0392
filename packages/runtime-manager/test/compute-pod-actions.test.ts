import t, { type Test } from 'tap';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { PodStatus } from '@kubelet-ts/core';
import { computePodActions, podSandboxChanged, type ComputePodActionsOptions, type PodActions } from '../src/index.js';
import { containerStatus, makePod, podStatus, sandboxStatus } from './helpers.js';

interface Expected {
  killPod?: boolean;
  createSandbox?: boolean;
  sandboxId?: string;
  attempt?: number;
  initContainersToStart?: number[];
  nextInitContainerToStart?: string;
  containersToStart?: number[];
  /** container names to kill, with a message fragment */
  containersToKill?: Record<string, string>;
}

interface Case {
  name: string;
  pod: V1Pod;
  status: (pod: V1Pod) => PodStatus;
  opts?: ComputePodActionsOptions;
  expected: Expected;
}

const c = (pod: V1Pod, i = 0): V1Container => pod.spec!.containers[i];
const ic = (pod: V1Pod, i = 0): V1Container => pod.spec!.initContainers![i];
const sidecar = { name: 'sidecar', restartPolicy: 'Always' } as const;

function check(t: Test, actions: PodActions, expected: Expected): void {
  t.equal(actions.killPod, expected.killPod ?? false, 'killPod');
  t.equal(actions.createSandbox, expected.createSandbox ?? false, 'createSandbox');
  if (expected.sandboxId !== undefined) t.equal(actions.sandboxId, expected.sandboxId, 'sandboxId');
  if (expected.attempt !== undefined) t.equal(actions.attempt, expected.attempt, 'attempt');
  t.same(actions.initContainersToStart, expected.initContainersToStart ?? [], 'initContainersToStart');
  t.equal(actions.nextInitContainerToStart?.name, expected.nextInitContainerToStart, 'nextInitContainerToStart');
  t.same(actions.containersToStart, expected.containersToStart ?? [], 'containersToStart');
  const kills = Object.fromEntries([...actions.containersToKill.values()].map((k) => [k.name, k.message]));
  const wanted = expected.containersToKill ?? {};
  t.same(Object.keys(kills).sort(), Object.keys(wanted).sort(), 'containers to kill');
  for (const [name, fragment] of Object.entries(wanted)) t.match(kills[name], fragment, `kill message of ${name}`);
}

const twoContainers = (restartPolicy: 'Always' | 'OnFailure' | 'Never') =>
  makePod({ restartPolicy, containers: [{ name: 'a' }, { name: 'b' }] });

const cases: Case[] = [
  {
    name: 'fresh pod: create a sandbox and start every container',
    pod: twoContainers('Always'),
    status: (pod) => podStatus(pod, [], []),
    expected: { killPod: true, createSandbox: true, sandboxId: '', attempt: 0, containersToStart: [0, 1] },
  },
  {
    name: 'running pod: nothing to do',
    pod: twoContainers('Always'),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(c(pod, 0)), containerStatus(c(pod, 1))]),
    expected: { sandboxId: 'sandbox-1', attempt: 0 },
  },
  {
    name: 'sandbox not ready: kill the pod and recreate with the next attempt',
    pod: twoContainers('Always'),
    status: (pod) =>
      podStatus(pod, [sandboxStatus({ state: 'SANDBOX_NOTREADY', attempt: 2 })], [containerStatus(c(pod, 0)), containerStatus(c(pod, 1), { state: 'exited' })]),
    expected: { killPod: true, createSandbox: true, sandboxId: 'sandbox-1', attempt: 3, containersToStart: [0, 1] },
  },
  {
    name: 'sandbox network namespace changed (hostNetwork pod, POD sandbox): recreate without reusing the id',
    pod: makePod({ hostNetwork: true }),
    status: (pod) => podStatus(pod, [sandboxStatus({ networkNamespace: 'POD' })], [containerStatus(c(pod))]),
    expected: { killPod: true, createSandbox: true, sandboxId: '', attempt: 1, containersToStart: [0] },
  },
  {
    name: 'hostNetwork pod with a NODE sandbox: kept',
    pod: makePod({ hostNetwork: true }),
    status: (pod) => podStatus(pod, [sandboxStatus({ networkNamespace: 'NODE', ip: '' })], [containerStatus(c(pod))]),
    expected: { sandboxId: 'sandbox-1' },
  },
  {
    name: 'sandbox without an IP: recreate',
    pod: makePod(),
    status: (pod) => podStatus(pod, [sandboxStatus({ ip: '' })], [containerStatus(c(pod))]),
    expected: { killPod: true, createSandbox: true, sandboxId: 'sandbox-1', attempt: 1, containersToStart: [0] },
  },
  {
    name: 'two ready sandboxes: reconcile by recreating from the newest',
    pod: makePod(),
    status: (pod) =>
      podStatus(pod, [sandboxStatus({ id: 'old', createdAt: 1, attempt: 0 }), sandboxStatus({ id: 'new', createdAt: 5, attempt: 1 })], [containerStatus(c(pod))]),
    expected: { killPod: true, createSandbox: true, sandboxId: 'new', attempt: 2, containersToStart: [0] },
  },
  {
    name: 'restartPolicy Never, all exited: kill the pod, start nothing',
    pod: twoContainers('Never'),
    status: (pod) =>
      podStatus(pod, [sandboxStatus()], [containerStatus(c(pod, 0), { state: 'exited', exitCode: 0 }), containerStatus(c(pod, 1), { state: 'exited', exitCode: 1 })]),
    expected: { killPod: true, sandboxId: 'sandbox-1' },
  },
  {
    name: 'restartPolicy Never with a dead sandbox and exited containers: no new sandbox',
    pod: twoContainers('Never'),
    status: (pod) =>
      podStatus(pod, [sandboxStatus({ state: 'SANDBOX_NOTREADY', attempt: 0 })], [containerStatus(c(pod, 0), { state: 'exited', exitCode: 0 })]),
    expected: { killPod: true, createSandbox: false, attempt: 1 },
  },
  {
    name: 'restartPolicy OnFailure: only the non-zero exit restarts',
    pod: twoContainers('OnFailure'),
    status: (pod) =>
      podStatus(pod, [sandboxStatus()], [containerStatus(c(pod, 0), { state: 'exited', exitCode: 0 }), containerStatus(c(pod, 1), { state: 'exited', exitCode: 2 })]),
    expected: { containersToStart: [1] },
  },
  {
    name: 'restartPolicy OnFailure, sandbox dead: the succeeded container is not started again',
    pod: twoContainers('OnFailure'),
    status: (pod) =>
      podStatus(
        pod,
        [sandboxStatus({ state: 'SANDBOX_NOTREADY' })],
        [containerStatus(c(pod, 0), { state: 'exited', exitCode: 0 }), containerStatus(c(pod, 1), { state: 'exited', exitCode: 3 })],
      ),
    expected: { killPod: true, createSandbox: true, attempt: 1, containersToStart: [1] },
  },
  {
    name: 'restartPolicy Always: every exited container restarts',
    pod: twoContainers('Always'),
    status: (pod) =>
      podStatus(pod, [sandboxStatus()], [containerStatus(c(pod, 0), { state: 'exited', exitCode: 0 }), containerStatus(c(pod, 1), { state: 'exited', exitCode: 1 })]),
    expected: { containersToStart: [0, 1] },
  },
  {
    name: 'created but never started: start again',
    pod: makePod(),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(c(pod), { state: 'created' })]),
    expected: { containersToStart: [0] },
  },
  {
    name: 'unknown state: kill before restarting',
    pod: makePod(),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(c(pod), { state: 'unknown' })]),
    expected: { containersToStart: [0], containersToKill: { app: 'try killing it before restart' } },
  },
  {
    name: 'spec hash changed: kill and start, even with restartPolicy Never',
    pod: makePod({ restartPolicy: 'Never' }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(c(pod), { hash: 'deadbeef' })]),
    expected: { containersToStart: [0], containersToKill: { app: 'Container app definition changed, will be restarted' } },
  },
  {
    name: 'liveness failure: kill and start',
    pod: makePod({ containers: [{ name: 'a' }, { name: 'b' }] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(c(pod, 0)), containerStatus(c(pod, 1))]),
    opts: { livenessResults: (id) => (id === 'fakeRuntime://a-id' ? 'failure' : 'success') },
    expected: { containersToStart: [0], containersToKill: { a: 'Container a failed liveness probe, will be restarted' } },
  },
  {
    name: 'liveness failure with restartPolicy Never: kill only; nothing left keeps the pod',
    pod: makePod({ restartPolicy: 'Never' }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(c(pod))]),
    opts: { livenessResults: () => 'failure' },
    expected: { killPod: true, containersToKill: { app: 'Container app failed liveness probe' } },
  },
  {
    name: 'startup probe failure: kill and start',
    pod: makePod(),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(c(pod))]),
    opts: { startupResults: () => 'failure' },
    expected: { containersToStart: [0], containersToKill: { app: 'Container app failed startup probe, will be restarted' } },
  },
  {
    name: 'init containers, fresh pod: the first init container only',
    pod: makePod({ initContainers: [{ name: 'i1' }, { name: 'i2' }] }),
    status: (pod) => podStatus(pod, [], []),
    expected: { killPod: true, createSandbox: true, initContainersToStart: [0], nextInitContainerToStart: 'i1' },
  },
  {
    name: 'init containers: the first succeeded, the second is next',
    pod: makePod({ initContainers: [{ name: 'i1' }, { name: 'i2' }] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0), { state: 'exited', exitCode: 0 })]),
    expected: { initContainersToStart: [1], nextInitContainerToStart: 'i2' },
  },
  {
    name: 'init containers: one running, wait',
    pod: makePod({ initContainers: [{ name: 'i1' }, { name: 'i2' }] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0), { state: 'exited' }), containerStatus(ic(pod, 1))]),
    expected: {},
  },
  {
    name: 'init containers all done: start the app containers',
    pod: makePod({ initContainers: [{ name: 'i1' }, { name: 'i2' }] }),
    status: (pod) =>
      podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0), { state: 'exited' }), containerStatus(ic(pod, 1), { state: 'exited' })]),
    expected: { containersToStart: [0] },
  },
  {
    name: 'failed init container with restartPolicy Never: kill the pod',
    pod: makePod({ restartPolicy: 'Never', initContainers: [{ name: 'i1' }] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0), { state: 'exited', exitCode: 1 })]),
    expected: { killPod: true },
  },
  {
    name: 'failed init container with restartPolicy OnFailure: run it again',
    pod: makePod({ restartPolicy: 'OnFailure', initContainers: [{ name: 'i1' }, { name: 'i2' }] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0), { state: 'exited', exitCode: 0 }), containerStatus(ic(pod, 1), { state: 'exited', exitCode: 1 })]),
    expected: { initContainersToStart: [1], nextInitContainerToStart: 'i2' },
  },
  {
    name: 'OOMKilled init container counts as failed',
    pod: makePod({ restartPolicy: 'Never', initContainers: [{ name: 'i1' }] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0), { state: 'exited', exitCode: 0, reason: 'OOMKilled' })]),
    expected: { killPod: true },
  },
  {
    name: 'sidecar started: the next init container starts while it keeps running',
    pod: makePod({ initContainers: [sidecar, { name: 'i2' }] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0))]),
    expected: { initContainersToStart: [1], nextInitContainerToStart: 'i2' },
  },
  {
    name: 'sidecar as the last init container, running: app containers start',
    pod: makePod({ initContainers: [{ name: 'i1' }, sidecar] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0), { state: 'exited' }), containerStatus(ic(pod, 1))]),
    expected: { containersToStart: [0] },
  },
  {
    name: 'sidecar exited after initialization: restarted, app kept',
    pod: makePod({ initContainers: [sidecar] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0), { state: 'exited', exitCode: 1 }), containerStatus(c(pod))]),
    expected: { initContainersToStart: [0] },
  },
  {
    name: 'sidecar with a startup probe not run yet: wait before the next init container',
    pod: makePod({ initContainers: [{ ...sidecar, startupProbe: { exec: { command: ['true'] } } }, { name: 'i2' }] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0))]),
    expected: {},
  },
  {
    name: 'sidecar failing its startup probe: killed and started again',
    pod: makePod({ initContainers: [{ ...sidecar, startupProbe: { exec: { command: ['true'] } } }] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0))]),
    opts: { startupResults: () => 'failure' },
    expected: { initContainersToStart: [0], containersToKill: { sidecar: 'Init container sidecar failed startup probe' } },
  },
  {
    name: 'sidecar failing liveness after initialization: killed and restarted, app kept',
    pod: makePod({ initContainers: [{ ...sidecar, livenessProbe: { exec: { command: ['true'] } } }] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0)), containerStatus(c(pod))]),
    opts: { livenessResults: (id) => (id.endsWith('sidecar-id') ? 'failure' : undefined) },
    expected: { initContainersToStart: [0], containersToKill: { sidecar: 'Init container sidecar failed liveness probe' } },
  },
  {
    name: 'sidecar spec changed: killed and restarted',
    pod: makePod({ initContainers: [sidecar] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0), { hash: '0' }), containerStatus(c(pod))]),
    expected: { initContainersToStart: [0], containersToKill: { sidecar: 'Init container sidecar definition changed' } },
  },
  {
    name: 'restartPolicy Never, app done, sidecar running: kill the pod, do not restart the sidecar',
    pod: makePod({ restartPolicy: 'Never', initContainers: [sidecar] }),
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0)), containerStatus(c(pod), { state: 'exited', exitCode: 0 })]),
    expected: { killPod: true },
  },
  {
    name: 'deleted pod: exited containers are not restarted',
    pod: { ...makePod(), metadata: { ...makePod().metadata, deletionTimestamp: new Date() } },
    status: (pod) => podStatus(pod, [sandboxStatus()], [containerStatus(c(pod), { state: 'exited', exitCode: 1 })]),
    expected: { killPod: true },
  },
];

for (const tc of cases) {
  t.test(tc.name, async (t) => {
    check(t, computePodActions(tc.pod, tc.status(tc.pod), tc.opts), tc.expected);
  });
}

t.test('ephemeral containers start once, even before initialization completes', async (t) => {
  const pod = makePod({ initContainers: [{ name: 'i1' }] });
  pod.spec!.ephemeralContainers = [{ name: 'debug', image: 'busybox:1.36' }];
  const status = podStatus(pod, [sandboxStatus()], [containerStatus(ic(pod, 0))]);
  t.same(computePodActions(pod, status).ephemeralContainersToStart, [0]);
  status.containerStatuses.push(containerStatus(pod.spec!.ephemeralContainers[0] as V1Container, { state: 'exited' }));
  t.same(computePodActions(pod, status).ephemeralContainersToStart, [], 'an ephemeral container is never restarted');
});

t.test('containersToKill is keyed by type://id and carries the spec', async (t) => {
  const pod = makePod();
  const actions = computePodActions(pod, podStatus(pod, [sandboxStatus()], [containerStatus(c(pod), { hash: 'x' })]));
  const [key, info] = [...actions.containersToKill][0];
  t.equal(key, 'fakeRuntime://app-id');
  t.same(info.id, { type: 'fakeRuntime', id: 'app-id' });
  t.equal(info.container, c(pod));
  t.equal(info.reason, '');
});

t.test('podSandboxChanged reads the newest sandbox whatever the order', async (t) => {
  const pod = makePod();
  const status = podStatus(pod, [sandboxStatus({ id: 'old', state: 'SANDBOX_NOTREADY', createdAt: 1, attempt: 0 }), sandboxStatus({ id: 'new', createdAt: 9, attempt: 1 })], []);
  t.same(podSandboxChanged(pod, status), [false, 1, 'new']);
});
