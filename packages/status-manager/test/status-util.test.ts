// The status manager's rules: transitions refused, merge with the API server's status, patches.
import t from 'tap';
import type { V1PodStatus } from '@kubernetes/client-node';
import { applyStrategicMergePatch, canonicalJson } from '@kubelet-ts/core';
import {
  checkContainerStateTransition,
  isPodStatusByKubeletEqual,
  mergePodStatus,
  normalizeStatus,
  podStatusToJson,
  podStatusPatchSchema,
  preparePodStatusPatch,
} from '../src/index.js';
import { T0, makePod } from './helpers.js';

const term = (name: string, exitCode: number, containerID = `containerd://${name}-1`) => ({ name, image: 'i', imageID: '', ready: false, restartCount: 0, containerID, state: { terminated: { exitCode, containerID } } });
const run = (name: string, containerID = `containerd://${name}-1`) => ({ name, image: 'i', imageID: '', ready: true, restartCount: 0, containerID, state: { running: {} } });

t.test('checkContainerStateTransition: terminated containers stay terminated unless the policy restarts them', async (t) => {
  const never = makePod('p', { containers: ['a'], restartPolicy: 'Never' });
  t.match(checkContainerStateTransition({ containerStatuses: [term('a', 0)] }, { containerStatuses: [run('a')] }, never), /terminated container a attempted illegal transition/);
  t.equal(checkContainerStateTransition({ containerStatuses: [term('a', 0)] }, { containerStatuses: [run('a', 'containerd://a-2')] }, never), undefined, 'a new container ID is a new container');
  t.match(checkContainerStateTransition({ containerStatuses: [term('a', 0)] }, { containerStatuses: [{ ...run('a'), containerID: undefined, state: { waiting: {} } }] }, never), /illegal/, 'back to waiting without an id');
  t.equal(checkContainerStateTransition({ containerStatuses: [term('a', 1)] }, { containerStatuses: [run('a')] }, makePod('p', { restartPolicy: 'OnFailure' })), undefined, 'OnFailure restarts failures');
  t.match(checkContainerStateTransition({ containerStatuses: [term('a', 0)] }, { containerStatuses: [run('a')] }, makePod('p', { restartPolicy: 'OnFailure' })), /illegal/, 'OnFailure does not restart successes');
  t.equal(checkContainerStateTransition({ containerStatuses: [term('a', 0)] }, { containerStatuses: [run('a')] }, makePod('p')), undefined, 'Always restarts everything');
  const init = makePod('i', { restartPolicy: 'Never', initContainers: ['setup', { name: 'side', image: 'i', restartPolicy: 'Always' }] });
  t.match(checkContainerStateTransition({ initContainerStatuses: [term('setup', 0)] }, { initContainerStatuses: [run('setup')] }, init), /setup/);
  t.equal(checkContainerStateTransition({ initContainerStatuses: [term('side', 0)] }, { initContainerStatuses: [run('side')] }, init), undefined, 'sidecars may restart');
});

t.test('mergePodStatus keeps foreign conditions, delays terminal phases, never reports a terminal pod ready', async (t) => {
  const api: V1PodStatus = {
    phase: 'Running',
    conditions: [
      { type: 'Ready', status: 'True' },
      { type: 'example.com/gate', status: 'True' },
      { type: 'DisruptionTarget', status: 'True', reason: 'old' },
    ],
  };
  const mine: V1PodStatus = {
    phase: 'Succeeded',
    conditions: [
      { type: 'Ready', status: 'True' },
      { type: 'ContainersReady', status: 'True', lastTransitionTime: new Date(T0) },
      { type: 'DisruptionTarget', status: 'True', reason: 'new' },
    ],
  };
  const merged = mergePodStatus(api, mine, false, T0 + 5000);
  t.equal(merged.phase, 'Succeeded');
  t.same(merged.conditions!.map((c) => [c.type, c.status, c.reason]), [
    ['example.com/gate', 'True', undefined],
    ['DisruptionTarget', 'True', 'new'],
    ['Ready', 'False', 'PodCompleted'],
    ['ContainersReady', 'False', 'PodCompleted'],
  ]);
  t.equal((merged.conditions![3].lastTransitionTime as Date).getTime(), T0 + 5000, 'status changed: new transition time');
  const delayed = mergePodStatus(api, mine, true);
  t.equal(delayed.phase, 'Running', 'containers could still run: the terminal phase waits');
  t.equal(delayed.conditions!.find((c) => c.type === 'DisruptionTarget')!.reason, 'old', 'and so does DisruptionTarget');
});

t.test('isPodStatusByKubeletEqual and normalizeStatus', async (t) => {
  const a: V1PodStatus = { phase: 'Running', startTime: new Date(T0 + 123), conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(T0) }] };
  const b: V1PodStatus = { phase: 'Running', startTime: new Date(T0 + 123), conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(T0 + 9000) }] };
  t.ok(isPodStatusByKubeletEqual(a, b), 'condition times do not count');
  t.notOk(isPodStatusByKubeletEqual(a, { ...b, conditions: [{ type: 'Ready', status: 'False' }] }));
  t.notOk(isPodStatusByKubeletEqual(a, { ...b, phase: 'Failed' }));
  const pod = makePod('p', { containers: ['b', 'a'] });
  const n = normalizeStatus(pod, { startTime: new Date(T0 + 999), containerStatuses: [{ ...term('b', 1), state: { terminated: { exitCode: 1, message: 'x'.repeat(20_000) } } }, run('a')] });
  t.equal((n.startTime as Date).getTime(), T0, 'whole seconds');
  t.same(n.containerStatuses!.map((c) => c.name), ['a', 'b'], 'sorted by name');
  t.equal(n.containerStatuses![1].state!.terminated!.message!.length, 12 * 1024 / 2, 'termination message cut to its share');
});

t.test('status patches: only what changed, keyed lists merged, atomic lists whole, uid precondition', async (t) => {
  const before = podStatusToJson({
    phase: 'Pending',
    conditions: [
      { type: 'Initialized', status: 'True', lastTransitionTime: new Date(T0) },
      { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [a]', lastTransitionTime: new Date(T0) },
    ],
    containerStatuses: [{ ...run('a'), ready: false }, run('b')],
    podIPs: [{ ip: '10.0.0.1' }],
    podIP: '10.0.0.1',
  });
  const after = podStatusToJson({
    phase: 'Running',
    conditions: [
      { type: 'Initialized', status: 'True', lastTransitionTime: new Date(T0) },
      { type: 'Ready', status: 'True', lastTransitionTime: new Date(T0 + 2000) },
    ],
    containerStatuses: [run('a'), run('b')],
    podIPs: [{ ip: '10.0.0.1' }],
    podIP: '10.0.0.1',
  });
  const patch = preparePodStatusPatch('uid-1', before, after, '42');
  t.notOk(patch.unchanged);
  t.same(patch.body, {
    metadata: { uid: 'uid-1', resourceVersion: '42' },
    status: {
      phase: 'Running',
      '$setElementOrder/conditions': [{ type: 'Initialized' }, { type: 'Ready' }],
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:02Z', reason: null, message: null }],
      containerStatuses: after.containerStatuses,
    },
  });
  t.same(applyStrategicMergePatch(before, patch.body.status as never, podStatusPatchSchema), after, 'applying the patch gives the new status');
  t.equal(
    JSON.stringify(patch.body.status),
    '{"$setElementOrder/conditions":[{"type":"Initialized"},{"type":"Ready"}],"conditions":[{"lastTransitionTime":"2026-01-01T00:00:02Z","message":null,"reason":null,"status":"True","type":"Ready"}],' +
      `"containerStatuses":${canonicalJson(after.containerStatuses)},"phase":"Running"}`,
    'keys in Go\'s order, nested ones too',
  );
  t.same(preparePodStatusPatch('uid-1', after, after), { body: { metadata: { uid: 'uid-1' } }, unchanged: true }, 'nothing changed: no status');
  const dropped = preparePodStatusPatch('u', { ...after, nominatedNodeName: 'x', conditions: [...(after.conditions as never[]), { type: 'Gone', status: 'True' }] }, after);
  t.equal((dropped.body.status as Record<string, unknown>).nominatedNodeName, null, 'removed fields are nulled');
  t.same(((dropped.body.status as Record<string, unknown>).conditions as unknown[]).at(-1), { type: 'Gone', $patch: 'delete' });
  const reordered = preparePodStatusPatch('u', { ...after, podIPs: [{ ip: '10.0.0.1' }, { ip: 'fd00::1' }] }, { ...after, podIPs: [{ ip: 'fd00::1' }, { ip: '10.0.0.1' }] });
  t.same(reordered, { body: { metadata: { uid: 'u' }, status: { '$setElementOrder/podIPs': [{ ip: 'fd00::1' }, { ip: '10.0.0.1' }] } }, unchanged: false }, 'podIPs merge by ip: a new order alone is sent, as Go does');
});
