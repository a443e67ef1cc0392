import t from 'tap';
import {
  parseContainerID,
  formatContainerID,
  findContainerStatusByName,
  findRuntimeContainerByName,
  getRunningContainerStatuses,
  emptyPodStatus,
  type ContainerStatus,
  type PodStatus,
  type RuntimePod,
  type PodLifecycleEvent,
} from '../src/index.js';

const status = (name: string, createdAt: number, state: ContainerStatus['state'] = 'exited'): ContainerStatus => ({
  id: { type: 'containerd', id: `${name}-${createdAt}` },
  name,
  state,
  createdAt,
  exitCode: 0,
  image: 'busybox',
  imageId: 'sha256:1',
  hash: 'h',
  restartCount: 0,
});

t.test('container ids parse and format as type://id', async (t) => {
  t.same(parseContainerID('containerd://abc'), { type: 'containerd', id: 'abc' });
  t.same(parseContainerID('local://a://b'), { type: 'local', id: 'a://b' });
  t.equal(formatContainerID({ type: 'containerd', id: 'abc' }), 'containerd://abc');
  t.equal(formatContainerID({ type: '', id: '' }), '');
  t.equal(formatContainerID(parseContainerID('docker://x')), 'docker://x');
  for (const bad of ['abc', '://abc', 'containerd://', '']) {
    t.throws(() => parseContainerID(bad), /invalid container ID/, bad);
  }
});

t.test('emptyPodStatus carries only the uid', async (t) => {
  t.same(emptyPodStatus('u1'), { id: 'u1', name: '', namespace: '', ips: [], containerStatuses: [], sandboxStatuses: [], timestamp: 0 });
});

t.test('findContainerStatusByName returns the most recently created attempt', async (t) => {
  const pod: PodStatus = {
    ...emptyPodStatus('u1'),
    containerStatuses: [status('app', 100), status('sidecar', 500), status('app', 300, 'running'), status('app', 200)],
  };
  t.equal(findContainerStatusByName(pod, 'app')?.createdAt, 300);
  t.equal(findContainerStatusByName(pod, 'sidecar')?.createdAt, 500);
  t.equal(findContainerStatusByName(pod, 'missing'), undefined);
  t.same(
    getRunningContainerStatuses(pod).map((c) => c.id.id),
    ['app-300'],
  );
});

t.test('findRuntimeContainerByName returns the newest container of that name', async (t) => {
  const pod: RuntimePod = {
    id: 'u1',
    name: 'web',
    namespace: 'default',
    createdAt: 0,
    sandboxes: [{ id: { type: 'containerd', id: 's1' }, state: 'running', createdAt: 0 }],
    containers: [
      { id: { type: 'containerd', id: 'c1' }, name: 'app', image: 'i', imageId: 'sha', hash: 'h', state: 'exited', createdAt: 1 },
      { id: { type: 'containerd', id: 'c2' }, name: 'app', image: 'i', imageId: 'sha', hash: 'h', state: 'running', createdAt: 2 },
    ],
  };
  t.equal(findRuntimeContainerByName(pod, 'app')?.id.id, 'c2');
  t.equal(findRuntimeContainerByName(pod, 'x'), undefined);
  const event: PodLifecycleEvent = { id: 'u1', type: 'ContainerStarted', data: 'c2' };
  t.equal(event.type, 'ContainerStarted');
});
