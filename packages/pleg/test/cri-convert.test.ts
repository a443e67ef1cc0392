import t from 'tap';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { nanosToMs, podStatusFromEvent, sandboxIPs, toContainerState, toContainerStatus, toSandboxStatus } from '../src/index.js';

const base: runtimeapi.ContainerStatus = {
  id: 'c1',
  metadata: { name: 'meta-name', attempt: 1 },
  state: 'CONTAINER_EXITED',
  createdAt: 1_000_000_000,
  startedAt: 2_000_000_000,
  finishedAt: 3_000_000_000,
  exitCode: 1,
  image: { image: 'nginx:1', annotations: {}, userSpecifiedImage: '', runtimeHandler: '' },
  imageRef: 'docker.io/library/nginx@sha256:aa',
  reason: 'Error',
  message: 'boom',
  labels: { 'io.kubernetes.container.name': 'web' },
  annotations: { 'io.kubernetes.container.hash': 'f00d', 'io.kubernetes.container.restartCount': '4' },
  mounts: [],
  logPath: '/var/log/pods/x/web/4.log',
  resources: null,
  imageId: 'sha256:aa',
  user: null,
  imageSource: '',
};

t.test('toContainerStatus', async (t) => {
  t.same(toContainerStatus(base, 'containerd'), {
    id: { type: 'containerd', id: 'c1' },
    name: 'web',
    state: 'exited',
    createdAt: 1000,
    startedAt: 2000,
    finishedAt: 3000,
    exitCode: 1,
    image: 'nginx:1',
    imageId: 'sha256:aa',
    imageRef: 'docker.io/library/nginx@sha256:aa',
    hash: 'f00d',
    restartCount: 4,
    reason: 'Error',
    message: 'boom',
    logPath: '/var/log/pods/x/web/4.log',
  });
  const created = toContainerStatus({ ...base, state: 'CONTAINER_CREATED', labels: {}, annotations: { 'io.kubernetes.container.restartCount': 'x' }, imageId: '', logPath: '' }, 'fake');
  t.same(created, {
    id: { type: 'fake', id: 'c1' },
    name: 'meta-name',
    state: 'created',
    createdAt: 1000,
    exitCode: 0,
    image: 'nginx:1',
    imageId: 'docker.io/library/nginx@sha256:aa',
    imageRef: 'docker.io/library/nginx@sha256:aa',
    hash: '',
    restartCount: 0,
  }, 'no start/exit details before it ran; bad restart count is 0');
  t.equal(toContainerStatus({ ...base, state: 'CONTAINER_RUNNING' }, 'x').finishedAt, undefined);
  t.equal(toContainerState('CONTAINER_UNKNOWN'), 'unknown');
  t.equal(nanosToMs(1_767_225_600_010 * 1e6), 1_767_225_600_010);
});

t.test('sandbox status, IPs and the pod status of an event', async (t) => {
  const sandbox: runtimeapi.PodSandboxStatus = {
    id: 'sb',
    metadata: { name: 'web', namespace: 'ns', uid: 'u', attempt: 2 },
    state: 'SANDBOX_NOTREADY',
    createdAt: 5_000_000,
    network: { ip: '10.0.0.2', additionalIps: [{ ip: '' }, { ip: 'fd00::2' }] },
    linux: null,
    labels: { a: 'b' },
    annotations: {},
    runtimeHandler: '',
  };
  t.same(toSandboxStatus(sandbox), {
    id: 'sb', name: 'web', namespace: 'ns', uid: 'u', attempt: 2, state: 'SANDBOX_NOTREADY', createdAt: 5,
    labels: { a: 'b' }, annotations: {}, ip: '10.0.0.2', additionalIps: ['fd00::2'],
  });
  t.same(sandboxIPs(sandbox), ['10.0.0.2', 'fd00::2']);
  t.same(sandboxIPs({ ...sandbox, network: null }), []);

  const status = podStatusFromEvent({
    containerId: 'c2',
    containerEventType: 'CONTAINER_STARTED_EVENT',
    createdAt: 9_000_000,
    podSandboxStatus: sandbox,
    containersStatuses: [base, { ...base, id: 'c2', createdAt: 4_000_000_000 }],
  }, 'containerd');
  t.equal(status?.id, 'u');
  t.equal(status?.timestamp, 9);
  t.same(status?.containerStatuses.map((c) => c.id.id), ['c2', 'c1'], 'newest first');
  t.same(status?.ips, ['10.0.0.2', 'fd00::2']);
  t.equal(podStatusFromEvent({ containerId: 'c', containerEventType: 'CONTAINER_STARTED_EVENT', createdAt: 0, podSandboxStatus: null, containersStatuses: [] }, 'x'), undefined);
});
