// The composed kubelet does what the Go kubelet does where a review found it did not: probe gating, UID reuse of
// static pods, host IPs, runtime network readiness, readiness reaching the status manager, pod CIDR, backoff GC.
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, type V1Pod, type V1PodStatus } from '@kubernetes/client-node';
import type { NodeStatusManager } from '@kubelet-ts/node-status';
import type { RuntimePod } from '@kubelet-ts/core';
import { RecordingEventRecorder } from '@kubelet-ts/core/testing';
import { makeTestPod } from '@kubelet-ts/pod-config/testing';
import { ProbeManager } from '@kubelet-ts/prober';
import { FakeProber } from '@kubelet-ts/prober/testing';
import { FakeContainerRuntime } from '@kubelet-ts/runtime-manager/testing';
import { Tokens, type StatusManagerLike } from '../src/index.js';
import { setupKubelet } from './kubelet-env.js';
import type { DependencyContainer } from 'tsyringe';

const statusOf = (env: ReturnType<typeof setupKubelet>, pod: V1Pod) => env.kubelet.getPodStatus(pod.metadata!.uid!);
const containerStatus = (status: V1PodStatus | undefined, name: string) => status?.containerStatuses?.find((c) => c.name === name);

/** Syncs a pod to Running: add, relist, PLEG event, relist. */
async function startPod(env: ReturnType<typeof setupKubelet>, pod: V1Pod): Promise<void> {
  await env.source.add(pod);
  await env.relist();
  await env.advance(300);
  await env.settle(() => env.runtime.syncPodCalls.some((c) => c.pod.metadata?.uid === pod.metadata?.uid));
  env.pleg.push({ id: pod.metadata!.uid!, type: 'ContainerStarted', data: 'x' });
  // The worker waits for a cached status newer than the end of its sync, which may still be running on a busy
  // machine: relist (as the PLEG would, periodically) until the pod shows Running.
  for (let i = 0; i < 30 && statusOf(env, pod)?.phase !== 'Running'; i++) {
    await env.relist();
    await env.advance(100);
    await env.settle(() => statusOf(env, pod)?.phase === 'Running', 200);
  }
}

/** The kubelet with a real ProbeManager whose probes the fake prober answers. */
function withProber(prober: FakeProber, register?: (c: DependencyContainer) => void) {
  return setupKubelet({
    register: (c, clock) => {
      c.register(Tokens.ProbeManagerFactory, {
        useValue: (getPodStatus: (uid: string) => V1PodStatus | undefined) => new ProbeManager({ getPodStatus, prober, clock }),
      });
      register?.(c);
    },
  });
}

t.test('a container whose readiness probe has not run yet is not Ready; once it passes, it is', async (t) => {
  const prober = new FakeProber();
  const env = withProber(prober);
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  pod.spec!.containers[0].readinessProbe = { exec: { command: ['true'] }, initialDelaySeconds: 30, periodSeconds: 10 };
  await startPod(env, pod);
  const before = statusOf(env, pod);
  t.equal(before?.phase, 'Running');
  t.equal(containerStatus(before, 'app')?.started, true, 'no startup probe: started once running');
  t.equal(containerStatus(before, 'app')?.ready, false, 'the readiness probe has not run: not ready');
  t.equal(before?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  t.equal(prober.count('readiness'), 0, 'the initial delay holds the probe back');

  await env.advance(31_000);
  await env.settle(() => prober.count('readiness') > 0);
  await env.relist();
  await env.advance(1_000);
  await env.settle(() => containerStatus(statusOf(env, pod), 'app')?.ready === true);
  t.equal(containerStatus(statusOf(env, pod), 'app')?.ready, true, 'ready after the first success');
  t.equal(statusOf(env, pod)?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
});

t.test('a container with a startup probe that has not run is neither started nor ready, and liveness waits for it', async (t) => {
  const prober = new FakeProber();
  const env = withProber(prober);
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'slow', containers: ['app'] });
  pod.spec!.containers[0].startupProbe = { exec: { command: ['true'] }, initialDelaySeconds: 30, periodSeconds: 10 };
  pod.spec!.containers[0].livenessProbe = { exec: { command: ['true'] }, periodSeconds: 1 };
  await startPod(env, pod);
  t.equal(containerStatus(statusOf(env, pod), 'app')?.started, false, 'not started');
  t.equal(containerStatus(statusOf(env, pod), 'app')?.ready, false, 'not ready');
  await env.advance(5_000);
  t.equal(prober.count('liveness'), 0, 'liveness does not probe a container that has not started');
});

/** A runtime whose kills wait until the test lets them finish. */
class HeldKillRuntime extends FakeContainerRuntime {
  private release?: () => void;
  held = false;
  hold(): void {
    this.held = true;
  }
  letGo(): void {
    this.held = false;
    this.release?.();
  }
  /** The signal of every killPod call, held ones included. */
  readonly killSignals: Array<AbortSignal | undefined> = [];
  override async killPod(pod: V1Pod | undefined, runningPod: RuntimePod, grace?: number, options?: { signal?: AbortSignal }): Promise<void> {
    this.killSignals.push(options?.signal);
    if (this.held) await new Promise<void>((resolve) => (this.release = resolve));
    options?.signal?.throwIfAborted();
    return super.killPod(pod, runningPod, grace, options);
  }
}

t.test('a static pod removed and added back with the same UID while it terminates is started again', async (t) => {
  const runtime = new HeldKillRuntime({ simulate: true });
  const env = setupKubelet({ runtime });
  t.teardown(async () => {
    runtime.letGo();
    await env.stop();
  });
  const pod = makeTestPod({ name: 'etcd', containers: ['etcd'], uid: 'static-uid' });
  await env.source.set(); // the source has been seen: housekeeping runs
  await startPod(env, pod);
  const syncsBefore = runtime.syncedPodUids().filter((uid) => uid === 'static-uid').length;
  runtime.hold();
  await env.source.remove(pod);
  await env.advance(300);
  await env.settle(() => runtime.killPodCalls.length > 0 || runtime.held);
  await env.source.add(pod); // moved back while its kill is still in progress
  await env.advance(300);
  runtime.letGo();
  await env.relist();
  for (let i = 0; i < 10; i++) {
    await env.relist();
    await env.advance(1_000);
  }
  await env.settle(() => runtime.syncedPodUids().filter((uid) => uid === 'static-uid').length > syncsBefore);
  t.ok(runtime.killPodCalls.some((k) => k.runningPod.id === 'static-uid'), 'the old instance was killed');
  t.ok(runtime.syncedPodUids().filter((uid) => uid === 'static-uid').length > syncsBefore, 'and the pod is synced (started) again');
  t.ok(env.logger.find('Pod will be restarted because it is in the desired set and not known to the pod workers (likely due to UID reuse)'));
});

t.test('host IPs: status.hostIP(s) is set, and a host-network pod reports the node IP as its pod IP', async (t) => {
  const env = setupKubelet({
    register: (c) => c.register(Tokens.HostIPs, { useValue: { get: () => ['192.0.2.10', 'fd00::10'], detect: async () => undefined } }),
  });
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  const hostNet = makeTestPod({ name: 'agent', containers: ['app'] });
  hostNet.spec!.hostNetwork = true;
  await startPod(env, pod);
  await startPod(env, hostNet);
  t.equal(statusOf(env, pod)?.hostIP, '192.0.2.10');
  t.same(statusOf(env, pod)?.hostIPs, [{ ip: '192.0.2.10' }, { ip: 'fd00::10' }]);
  t.equal(statusOf(env, pod)?.podIP, '10.0.0.1', 'a pod-network pod keeps its sandbox IP');
  t.equal(statusOf(env, hostNet)?.podIP, '192.0.2.10', 'a host-network pod has the node IP');
  t.same(statusOf(env, hostNet)?.podIPs, [{ ip: '192.0.2.10' }, { ip: 'fd00::10' }]);
});

t.test('the runtime\'s NetworkReady=false keeps pod-network pods from starting, host-network pods run', async (t) => {
  const recorder = new RecordingEventRecorder();
  const env = setupKubelet({ register: (c) => c.register(Tokens.EventRecorder, { useValue: recorder }) });
  t.teardown(env.stop);
  env.runtime.runtimeStatus = {
    conditions: [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' },
    ],
  };
  await env.advance(6_000);
  const networkError = 'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized';
  t.same(
    env.kubelet.runtimeState.networkErrors().map((e) => e.message),
    [networkError],
    'the error the node\'s Ready condition carries',
  );
  t.same(env.kubelet.runtimeState.runtimeErrors(), [], 'the runtime itself is fine: pods still sync');
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  const hostNet = makeTestPod({ name: 'agent', containers: ['app'] });
  hostNet.spec!.hostNetwork = true;
  await env.source.add(pod, hostNet);
  await env.relist();
  await env.advance(1_000);
  await env.settle(() => env.runtime.syncedPodUids().includes(hostNet.metadata!.uid!));
  t.same(env.runtime.syncedPodUids(), [hostNet.metadata!.uid!], 'only the host-network pod reaches the runtime');
  const event = recorder.events.find((e) => e.reason === 'NetworkNotReady');
  t.equal(event?.type, 'Warning');
  t.equal(event?.message, `network is not ready: ${networkError}`);

  env.runtime.runtimeStatus = {
    conditions: [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ],
  };
  await env.advance(6_000);
  t.same(env.kubelet.runtimeState.networkErrors(), [], 'network ready again');
  for (let i = 0; i < 15 && !env.runtime.syncedPodUids().includes(pod.metadata!.uid!); i++) {
    await env.relist();
    await env.advance(1_000);
  }
  t.ok(env.runtime.syncedPodUids().includes(pod.metadata!.uid!), 'the pod-network pod starts once the network is ready');
});

t.test('probe results reach the status manager at once (Go: SetContainerReadiness/SetContainerStartup)', async (t) => {
  const calls: string[] = [];
  const statusManager: StatusManagerLike = {
    setPodStatus: () => undefined,
    terminatePod: () => undefined,
    removeOrphanedStatuses: () => undefined,
    setContainerReadiness: (uid, id, ready) => calls.push(`readiness ${uid} ${id} ${ready}`),
    setContainerStartup: (uid, id, started) => calls.push(`startup ${uid} ${id} ${started}`),
  };
  const prober = new FakeProber();
  prober.set('readiness', 'failure');
  const env = withProber(prober, (c) => c.register(Tokens.StatusManager, { useValue: statusManager }));
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  pod.spec!.containers[0].readinessProbe = { exec: { command: ['true'] }, periodSeconds: 1 };
  pod.spec!.containers[0].startupProbe = { exec: { command: ['true'] }, periodSeconds: 1 };
  await startPod(env, pod);
  await env.advance(3_000);
  await env.relist();
  await env.advance(3_000);
  await env.settle(() => calls.some((c) => c.startsWith('readiness')));
  const id = containerStatus(statusOf(env, pod), 'app')?.containerID;
  t.ok(id, 'the container has an id');
  t.ok(calls.includes(`startup ${pod.metadata!.uid} ${id} true`), 'startup success set at once');
  t.ok(calls.includes(`readiness ${pod.metadata!.uid} ${id} false`), 'readiness failure set at once');
});

t.test('a readiness gate a controller sets syncs the pod (Go: HandlePodReconcile)', async (t) => {
  const env = setupKubelet();
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'gated', containers: ['app'] });
  pod.spec!.readinessGates = [{ conditionType: 'example.com/lb' }];
  await startPod(env, pod);
  const syncs = env.runtime.syncPodCalls.length;
  const reconciled: V1Pod = structuredClone(pod);
  reconciled.status = {
    phase: 'Running',
    containerStatuses: [{ name: 'app', image: 'busybox', imageID: '', ready: true, restartCount: 0, state: { running: {} } }],
    conditions: [
      { type: 'Ready', status: 'False', reason: 'ReadinessGatesNotReady', message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.' },
      { type: 'example.com/lb', status: 'True' },
    ],
  };
  await env.kubelet.syncLoopIteration({ kind: 'config', update: { op: 'RECONCILE' as never, source: 'api', pods: [reconciled] } });
  const ready = () => statusOf(env, pod)?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  // A sync dispatched before the reconcile may still run with the old pod; the one after it brings the new Ready.
  for (let i = 0; i < 5 && !ready(); i++) {
    await env.relist();
    await env.advance(500);
    await env.settle(ready, 200);
  }
  t.ok(env.runtime.syncPodCalls.length > syncs, 'the pod synced');
  t.equal(statusOf(env, pod)?.conditions?.find((c) => c.type === 'Ready')?.status, 'True', 'and Ready follows the gate');
});

t.test('the pod CIDR is handed to the runtime once per change', async (t) => {
  class CidrRuntime extends FakeContainerRuntime {
    readonly cidrs: string[] = [];
    failNext = false;
    async updatePodCIDR(cidr: string): Promise<void> {
      if (this.failNext) {
        this.failNext = false;
        throw new Error('rpc error: code = Unavailable');
      }
      this.cidrs.push(cidr);
    }
  }
  const runtime = new CidrRuntime({ simulate: true });
  const env = setupKubelet({ runtime });
  t.teardown(env.stop);
  t.equal(await env.kubelet.updatePodCIDR('10.244.1.0/24'), true);
  t.equal(await env.kubelet.updatePodCIDR('10.244.1.0/24'), false, 'unchanged: no call');
  runtime.failNext = true;
  await t.rejects(env.kubelet.updatePodCIDR('10.244.2.0/24'), { message: 'failed to update pod CIDR: rpc error: code = Unavailable' });
  t.equal(await env.kubelet.updatePodCIDR('10.244.2.0/24'), true, 'retried on the next node status sync');
  t.same(runtime.cidrs, ['10.244.1.0/24', '10.244.2.0/24']);
  t.ok(env.logger.find('Updating Pod CIDR'));
});

t.test('failing to make the pod directories never overlaps a runtime sync still running', async (t) => {
  let inFlight = 0;
  let maxInFlight = 0;
  let release: (() => void) | undefined;
  const runtime = new FakeContainerRuntime({ simulate: true });
  runtime.syncPodResult = async () => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await new Promise<void>((resolve) => (release = resolve));
    inFlight--;
    return { syncResults: [] };
  };
  const recorder = new RecordingEventRecorder();
  // A root dir whose "pods" is a file: the pod's data directories cannot be made.
  const rootDir = mkdtempSync(join(tmpdir(), 'kubelet-no-pod-dirs-'));
  writeFileSync(join(rootDir, 'pods'), '');
  const env = setupKubelet({ runtime, flags: [`--root-dir=${rootDir}`], register: (c) => c.register(Tokens.EventRecorder, { useValue: recorder }) });
  t.teardown(async () => {
    release?.();
    await env.stop();
  });
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  await env.source.add(pod);
  await env.relist();
  await env.advance(300);
  await env.settle(() => inFlight === 1);
  t.equal(inFlight, 1, 'the runtime sync is running');
  // The directories fail at once; the worker must not retry (after its backoff) while the runtime still syncs.
  await env.advance(15_000);
  t.equal(maxInFlight, 1, 'no second SyncPod while the first runs');
  release?.();
  await env.settle(() => recorder.events.some((e) => e.reason === 'Failed'));
  const event = recorder.events.find((e) => e.reason === 'Failed');
  t.match(event?.message, /^error making pod data directories: /);
});

t.test('housekeeping forgets the crash-loop backoff of containers not seen for a while (Go: backOff.GC)', async (t) => {
  const env = setupKubelet();
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  await startPod(env, pod);
  const backoff = env.runtime.syncPodCalls[0].backoff;
  backoff.next('web_default_app', env.clock.now());
  t.ok(backoff.isInBackOffSince('web_default_app', env.clock.now()), 'in backoff');
  await env.kubelet.handlePodCleanups();
  t.equal(backoff.get('web_default_app'), 10_000, 'a fresh entry stays');
  // Go's maxDuration is 2 * maxContainerBackOff (300 s).
  env.clock.step(600_001);
  await env.kubelet.handlePodCleanups();
  t.equal(backoff.get('web_default_app'), 0, 'an entry idle for longer is gone');
});


t.test('admission: a pod that does not fit is rejected Failed with Go\'s reason and event; the others run', async (t) => {
  const recorder = new RecordingEventRecorder();
  const env = setupKubelet({ register: (c) => c.register(Tokens.EventRecorder, { useValue: recorder }) });
  t.teardown(env.stop);
  const small = makeTestPod({ name: 'small', containers: [{ name: 'app', resources: { requests: { cpu: '1' } } }] });
  const huge = makeTestPod({ name: 'huge', containers: [{ name: 'app', resources: { requests: { cpu: '3500m' } } }] });
  const unsafe = makeTestPod({ name: 'unsafe', containers: ['app'] });
  unsafe.spec!.securityContext = { sysctls: [{ name: 'kernel.msgmax', value: '1' }] };
  const picky = makeTestPod({ name: 'picky', containers: ['app'] });
  picky.spec!.nodeSelector = { disk: 'ssd' };
  await env.source.add(small);
  await env.source.add(huge, unsafe, picky);
  await env.relist();
  await env.advance(500);
  // Admission goes pod by pod: wait for the small pod's sync and for every rejection.
  await env.settle(() => env.runtime.syncedPodUids().includes(small.metadata!.uid!) && [huge, unsafe, picky].every((p) => statusOf(env, p)?.phase === 'Failed'));
  t.same(env.runtime.syncedPodUids(), [small.metadata!.uid!], 'only the pod that fits reaches the runtime');
  t.same(statusOf(env, huge), { phase: 'Failed', reason: 'OutOfcpu', message: 'Pod Node didn\'t have enough resource: cpu, requested: 3500, used: 1000, capacity: 4000' });
  t.equal(statusOf(env, unsafe)?.reason, 'SysctlForbidden');
  t.equal(statusOf(env, unsafe)?.message, 'Pod forbidden sysctl: "kernel.msgmax" not whitelisted');
  t.equal(statusOf(env, picky)?.reason, 'NodeAffinity');
  t.same(recorder.lines().filter((l) => l.startsWith('Warning')), [
    'Warning OutOfcpu Node didn\'t have enough resource: cpu, requested: 3500, used: 1000, capacity: 4000',
    'Warning SysctlForbidden forbidden sysctl: "kernel.msgmax" not whitelisted',
    'Warning NodeAffinity Predicate NodeAffinity failed',
  ]);
  // A rejected pod stays rejected: housekeeping does not start it as an unknown desired pod.
  await env.source.set(small, huge, unsafe, picky);
  await env.advance(5_000);
  t.same(env.runtime.syncedPodUids().filter((uid) => uid !== small.metadata!.uid!), [], 'rejected pods never start');
});

t.test('activeDeadlineSeconds: the pod fails with DeadlineExceeded and is killed', async (t) => {
  const recorder = new RecordingEventRecorder();
  const env = setupKubelet({ register: (c) => c.register(Tokens.EventRecorder, { useValue: recorder }) });
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'job', containers: ['app'] });
  pod.spec!.activeDeadlineSeconds = 5;
  await startPod(env, pod);
  t.equal(statusOf(env, pod)?.phase, 'Running');
  for (let i = 0; i < 10 && env.runtime.killPodCalls.length === 0; i++) {
    await env.relist();
    await env.advance(1_000);
  }
  await env.settle(() => env.runtime.killPodCalls.length > 0);
  t.ok(env.runtime.killPodCalls.some((k) => k.runningPod.id === pod.metadata!.uid), 'the pod is killed once its deadline passed');
  const status = statusOf(env, pod);
  t.equal(status?.phase, 'Failed');
  t.equal(status?.reason, 'DeadlineExceeded');
  t.equal(status?.message, 'Pod was active on the node longer than the specified deadline');
  t.ok(recorder.find('DeadlineExceeded'), 'with Go\'s event');
});

t.test('a second delete with a shorter grace period cancels the kill in progress and kills again with it', async (t) => {
  const runtime = new HeldKillRuntime({ simulate: true });
  const env = setupKubelet({ runtime });
  t.teardown(async () => {
    runtime.letGo();
    await env.stop();
  });
  const pod = makeTestPod({ name: 'stubborn', containers: ['app'] });
  await startPod(env, pod);
  runtime.hold();
  const deleting = (grace: number): V1Pod => ({ ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(env.clock.now() + grace * 1000), deletionGracePeriodSeconds: grace } });
  await env.source.delete(deleting(30));
  for (let i = 0; i < 10 && runtime.killSignals.length === 0; i++) {
    await env.relist();
    await env.advance(300);
  }
  t.equal(runtime.killSignals.length, 1, 'the 30 s kill is in progress');
  await env.source.delete(deleting(1));
  await env.advance(300);
  await env.settle(() => runtime.killSignals.some((s) => s?.aborted));
  t.equal(runtime.killSignals[0]?.aborted, true, 'the kill with the 30 s grace period is cancelled');
  runtime.letGo();
  for (let i = 0; i < 10 && runtime.killPodCalls.length === 0; i++) {
    await env.relist();
    await env.advance(500);
  }
  t.same(
    runtime.killPodCalls.map((k) => k.gracePeriodOverrideSeconds),
    [1],
    'the runtime is asked to kill again, with the shorter grace period (the cancelled call never reached it)',
  );
});

t.test('node status lists the images image GC keeps, not a ListImages of its own (Go: imageManager.GetImageList)', async (t) => {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const env = setupKubelet({
    register: (c) => {
      c.register(Tokens.KubeConfig, { useValue: kubeConfig });
      c.register(Tokens.ImageGC, {
        useValue: {
          start: () => undefined,
          stop: async () => undefined,
          getImageList: () => [{ id: 'sha256:aaa', repoTags: ['busybox:1.36'], repoDigests: [], size: 1000, pinned: false }],
        },
      });
    },
  });
  t.teardown(env.stop);
  const nodeStatus = env.container.resolve<NodeStatusManager>(Tokens.NodeStatus);
  const node = await nodeStatus.initialNode();
  // The image service here is a CRI client of a socket that does not exist: a ListImages of its own would fail.
  t.same(node.status?.images, [{ names: ['busybox:1.36'], sizeBytes: 1000 }], 'the images of image GC\'s cache');
});
