// The kubelet's use of the container manager and the eviction manager, with fakes of both: pod cgroups made before
// the sandbox and removed after termination, orphaned pod cgroups removed by housekeeping, the eviction manager
// first among the admit handlers, and evictions through the pod workers.
import t from 'tap';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { makeTestPod } from '@kubelet-ts/pod-config/testing';
import type { PodCgroupManager } from '@kubelet-ts/container-manager';
import { Tokens, type ContainerManagerLike } from '../src/index.js';
import { FakeEvictionManager, setupKubelet } from './kubelet-env.js';

type CgroupName = readonly string[];

/** A container manager whose pod cgroups live in a map, recording every call in order. */
class FakeContainerManager implements ContainerManagerLike, PodCgroupManager {
  readonly calls: string[] = [];
  readonly cgroups = new Map<string, CgroupName>();
  failEnsure?: Error;
  activePods?: () => V1Pod[];
  async start(activePods: () => V1Pod[]): Promise<void> {
    this.activePods = activePods;
    this.calls.push('start');
  }
  async stop(): Promise<void> {
    this.calls.push('stop');
  }
  newPodContainerManager(): PodCgroupManager {
    return this;
  }
  async updateQOSCgroups(): Promise<void> {
    this.calls.push('updateQOSCgroups');
  }
  getPodContainerName(pod: V1Pod): { name: CgroupName; literal: string } {
    const name = ['kubepods', 'besteffort', `pod${pod.metadata!.uid}`];
    return { name, literal: `/${name.join('/')}` };
  }
  async exists(pod: V1Pod): Promise<boolean> {
    return this.cgroups.has(pod.metadata!.uid!);
  }
  async ensureExists(pod: V1Pod): Promise<void> {
    this.calls.push(`ensureExists ${pod.metadata!.name}`);
    if (this.failEnsure) throw this.failEnsure;
    this.cgroups.set(pod.metadata!.uid!, this.getPodContainerName(pod).name);
  }
  async destroy(name: CgroupName): Promise<void> {
    this.calls.push(`destroy ${name.join('/')}`);
    for (const [uid, cgroup] of this.cgroups) if (cgroup.join('/') === name.join('/')) this.cgroups.delete(uid);
  }
  async reduceCpuLimits(name: CgroupName): Promise<void> {
    this.calls.push(`reduceCpuLimits ${name.join('/')}`);
  }
  async getAllPodsFromCgroups(): Promise<Map<string, CgroupName>> {
    return new Map(this.cgroups);
  }
  isPodCgroup(literal: string): { isPod: boolean; uid?: string } {
    const match = /\/pod([^/]+)$/.exec(literal);
    return match ? { isPod: true, uid: match[1] } : { isPod: false };
  }
}

function setup(register: { cm?: FakeContainerManager; eviction?: FakeEvictionManager } = {}) {
  const cm = register.cm ?? new FakeContainerManager();
  const eviction = register.eviction ?? new FakeEvictionManager();
  const env = setupKubelet({
    register: (c) => {
      c.register(Tokens.ContainerManager, { useValue: cm });
      c.register(Tokens.EvictionManager, { useValue: eviction });
    },
  });
  return { ...env, cm, eviction };
}

t.test('a pod gets its cgroup (after the QoS cgroups are updated) before the runtime syncs it, and loses it once terminated', async (t) => {
  const env = setup();
  t.teardown(env.stop);
  await env.settle(() => env.cm.calls.includes('start') && env.eviction.started > 0);
  t.equal(env.cm.calls[0], 'start', 'the container manager starts with the kubelet');
  t.equal(env.eviction.started, 1, 'the eviction manager starts with the kubelet');
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  await env.source.add(pod);
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.runtime.syncPodCalls.length >= 1);
  t.same(env.cm.calls.slice(1, 3), ['updateQOSCgroups', 'ensureExists web'], 'QoS cgroups updated, then the pod cgroup made');
  t.equal(env.runtime.syncPodCalls.length, 1, 'then the runtime syncs the pod');
  t.same(env.cm.activePods?.().map((p) => p.metadata?.name), ['web'], 'the container manager sees the active pods');

  // A resync finds the cgroup there: nothing more is made.
  env.pleg.push({ id: pod.metadata!.uid!, type: 'ContainerStarted', data: 'x' });
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.runtime.syncPodCalls.length >= 2);
  t.equal(env.cm.calls.filter((c) => c.startsWith('ensureExists')).length, 1, 'an existing pod cgroup is left as it is');

  await env.source.remove(pod);
  for (let i = 0; i < 4; i++) {
    await env.relist();
    await env.advance(500);
  }
  await env.settle(() => env.cm.calls.some((c) => c.startsWith('destroy')));
  const name = `kubepods/besteffort/pod${pod.metadata!.uid}`;
  t.ok(env.cm.calls.indexOf(`reduceCpuLimits ${name}`) >= 0, 'the killed pod\'s cgroup gets the minimum CPU');
  t.ok(env.cm.calls.indexOf(`destroy ${name}`) > env.cm.calls.indexOf(`reduceCpuLimits ${name}`), 'and is destroyed once the pod terminated');
  t.equal(env.cm.cgroups.size, 0, 'no pod cgroup left');
});

t.test('a pod cgroup that cannot be made fails the sync; the runtime is not called', async (t) => {
  const cm = new FakeContainerManager();
  cm.failEnsure = new Error('mkdir /sys/fs/cgroup/memory/kubepods/besteffort/podx: permission denied');
  const env = setup({ cm });
  t.teardown(env.stop);
  await env.source.add(makeTestPod({ name: 'web', containers: ['app'] }));
  await env.relist();
  await env.advance(500);
  await env.settle(() => cm.calls.some((c) => c.startsWith('ensureExists')));
  await env.advance(200);
  t.equal(env.runtime.syncPodCalls.length, 0, 'no sandbox without its cgroup');
  const failure = env.logger.entries.find((e) => /failed to ensure that the pod: uid-default-web cgroups exist/.test(String(e.err ?? '')));
  t.ok(failure, 'the sync error names the pod and the cgroup failure');
});

t.test('housekeeping removes the cgroups of pods no worker or runtime knows', async (t) => {
  const cm = new FakeContainerManager();
  cm.cgroups.set('orphan-uid', ['kubepods', 'burstable', 'podorphan-uid']);
  const env = setup({ cm });
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  // A SET marks the source ready: housekeeping runs only then.
  await env.source.set(pod);
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.runtime.syncPodCalls.length >= 1);
  await env.advance(2500);
  await env.settle(() => cm.calls.includes('destroy kubepods/burstable/podorphan-uid'));
  t.ok(cm.calls.includes('destroy kubepods/burstable/podorphan-uid'), 'the orphaned pod cgroup is destroyed');
  t.ok(cm.cgroups.has(pod.metadata!.uid!), 'the running pod\'s cgroup stays');
});

t.test('the eviction manager admits first: a pod it refuses fails with its reason and message', async (t) => {
  const eviction = new FakeEvictionManager();
  eviction.admitResult = { admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' };
  const env = setup({ eviction });
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'besteffort', containers: ['app'] });
  await env.source.add(pod);
  await env.advance(500);
  await env.settle(() => env.kubelet.getPodStatus(pod.metadata!.uid!)?.phase === 'Failed');
  const status = env.kubelet.getPodStatus(pod.metadata!.uid!);
  t.equal(status?.phase, 'Failed');
  t.equal(status?.reason, 'Evicted');
  t.equal(status?.message, 'Pod The node had condition: [MemoryPressure]. ', 'Go 1.20\'s rejectPod message: "Pod " and the handler\'s');
  t.equal(eviction.admitted.length, 1, 'the eviction manager was asked');
  t.equal(env.runtime.syncPodCalls.length, 0, 'a rejected pod never reaches the runtime');
});

t.test('an eviction kills the pod through its worker and leaves it Failed with the eviction\'s status', async (t) => {
  const env = setup();
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'hog', containers: ['app'] });
  await env.source.add(pod);
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.runtime.syncPodCalls.length >= 1);
  t.same(env.kubelet.getActivePods().map((p) => p.metadata?.name), ['hog'], 'the pod is active');

  const evicted = env.kubelet.killPodForEviction(pod, 0, (status: V1PodStatus) => {
    status.phase = 'Failed';
    status.reason = 'Evicted';
    status.message = 'The node was low on resource: memory. ';
  });
  let done = false;
  void evicted.then(() => (done = true));
  for (let i = 0; i < 10 && !done; i++) {
    await env.relist();
    await env.advance(500);
  }
  await evicted;
  // The eviction asks for 0; the pod workers never pass less than 1 s to the runtime, as Go's.
  t.same(env.runtime.killPodCalls.filter((k) => k.pod?.metadata?.name === 'hog').map((k) => k.gracePeriodOverrideSeconds), [1], 'killed at once (the hard eviction\'s 0, raised to the minimum of 1 s)');
  const status = env.kubelet.getPodStatus(pod.metadata!.uid!);
  t.equal(status?.phase, 'Failed');
  t.equal(status?.reason, 'Evicted');
  t.equal(status?.message, 'The node was low on resource: memory. ');
  t.same(env.kubelet.getActivePods(), [], 'an evicted pod is no longer active');
  t.ok(env.kubelet.podResourcesAreReclaimed(pod), 'and its resources count as reclaimed');
});
