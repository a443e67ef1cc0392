import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PodCache } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { PodConfig } from '@kubelet-ts/pod-config';
import { FakePodSource, makeTestPod } from '@kubelet-ts/pod-config/testing';
import { FakePLEG } from '@kubelet-ts/pleg/testing';
import { FakeContainerRuntime } from '@kubelet-ts/runtime-manager/testing';
import { Kubelet, Tokens, parseFlags, registerKubeletDeps, resolveConfig } from '../src/index.js';

/** The kubelet with every dependency replaced by a fake in a child container, as a test author would. */
function setup() {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const runtime = new FakeContainerRuntime({ simulate: true, now: () => clock.now() });
  const runtimeService = new FakeRuntimeService(clock);
  const podConfig = new PodConfig({ clock, logger });
  const source = new FakePodSource(podConfig, 'file');
  const pleg = new FakePLEG();
  const rootDir = mkdtempSync(join(tmpdir(), 'kubelet-sync-loop-'));
  const config = resolveConfig(parseFlags([`--root-dir=${rootDir}`, '--hostname-override=node1', '--container-runtime-endpoint=unix:///nonexistent.sock']));
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  c.register(Tokens.Clock, { useValue: clock });
  c.register(Tokens.Logger, { useValue: logger });
  c.register(Tokens.ContainerRuntime, { useValue: runtime });
  c.register(Tokens.RuntimeService, { useValue: runtimeService });
  c.register(Tokens.PodCache, { useValue: new PodCache({ clock }) });
  c.register(Tokens.PLEG, { useValue: pleg });
  c.register(Tokens.PodSourceConfig, { useValue: { podConfig, stop: async () => podConfig.close() } });
  const kubelet = c.resolve<Kubelet>(Tokens.Kubelet);
  const controller = new AbortController();
  const done = kubelet.run(controller.signal);
  const stop = async () => {
    controller.abort();
    await done;
    podConfig.close();
  };
  /**
   * Moves fake time in small steps. After each, the event loop gets a real turn (1 ms): a pod sync
   * makes its data directories with real fs calls, which no amount of microtask flushing completes.
   */
  const advance = async (ms: number) => {
    for (let elapsed = 0; elapsed < ms; elapsed += 100) {
      await clock.advance(100);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  };
  /** Gives real event loop turns (1 ms each, at most 200) until cond holds; fake time stands still. */
  const settle = async (cond: () => boolean) => {
    for (let i = 0; i < 200 && !cond(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
  };
  const cache = c.resolve<PodCache>(Tokens.PodCache);
  /** The PLEG would write fresh statuses to the cache after each relist; do what it would. */
  const relist = async () => {
    for (const pod of kubelet.podManager.getPods()) {
      const uid = pod.metadata!.uid!;
      cache.set(uid, await runtime.getPodStatus(uid, pod.metadata!.name!, 'default'), undefined, clock.now());
    }
    cache.updateTime(clock.now());
  };
  return { clock, logger, runtime, runtimeService, source, pleg, kubelet, stop, advance, settle, relist, cache };
}

t.test('pods added by a source are synced, resynced and killed when removed', async (t) => {
  const env = setup();
  t.teardown(env.stop);
  const pod = makeTestPod({ name: 'web', containers: ['app'] });
  await env.source.add(pod);
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.runtime.syncPodCalls.length >= 1);
  t.equal(env.runtime.syncPodCalls.length, 1, 'the new pod is synced once');
  t.equal(env.runtime.syncPodCalls[0].pod.metadata?.name, 'web');
  await env.relist();
  await env.advance(300);
  t.equal(env.kubelet.getPodStatus(pod.metadata!.uid!)?.phase, 'Pending', 'status computed before the first sync');

  // A PLEG event for the pod triggers a sync with fresh status.
  env.pleg.push({ id: pod.metadata!.uid!, type: 'ContainerStarted', data: 'x' });
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.kubelet.getPodStatus(pod.metadata!.uid!)?.phase === 'Running');
  t.equal(env.runtime.syncPodCalls.length, 2, 'PLEG events sync the pod');
  t.equal(env.kubelet.getPodStatus(pod.metadata!.uid!)?.phase, 'Running');

  await env.source.remove(pod);
  await env.relist();
  await env.advance(500);
  await env.relist();
  await env.advance(500);
  await env.settle(() => env.runtime.killPodCalls.length >= 1);
  t.equal(env.runtime.killPodCalls.length, 1, 'a removed pod is killed');
  t.equal(env.runtime.killPodCalls[0].pod?.metadata?.name, 'web');
});

t.test('the syncLoop skips pod syncs with growing backoff while the runtime reports errors', async (t) => {
  const env = setup();
  t.teardown(env.stop);
  env.runtime.runtimeStatus = { conditions: [{ type: 'RuntimeReady', status: false, reason: 'NotReady', message: 'runtime is starting' }] };
  await env.source.add(makeTestPod({ name: 'web' }));
  await env.relist();
  await env.advance(3000);
  t.equal(env.runtime.syncPodCalls.length, 0, 'no sync while the runtime is not ready');
  const skips = env.logger.entries.filter((e) => e.msg === 'Skipping pod synchronization');
  t.ok(skips.length >= 3 && skips.length <= 8, `backoff doubles from 100 ms: ${skips.length} skips in 3 s`);
  t.match(String(skips[0].err), /container runtime/);
  env.runtime.runtimeStatus = { conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }] };
  await env.advance(6000);
  await env.relist();
  await env.advance(1000);
  t.ok(env.runtime.syncPodCalls.length >= 1, 'syncing resumes once the runtime is ready');
});

t.test('housekeeping terminates runtime pods that no source wants', async (t) => {
  const env = setup();
  t.teardown(env.stop);
  env.runtime.setPods([
    {
      id: 'orphan-uid',
      name: 'orphan',
      namespace: 'default',
      createdAt: env.clock.now(),
      containers: [{ id: { type: 'fake', id: 'c1' }, name: 'app', image: 'busybox', imageId: 'i', hash: 'h', state: 'running', createdAt: env.clock.now() }],
      sandboxes: [{ id: { type: 'fake', id: 's1' }, state: 'running', createdAt: env.clock.now() }],
    },
  ]);
  await env.source.set();
  await env.advance(3000);
  await env.relist();
  await env.advance(3000);
  const kill = env.runtime.killPodCalls.find((k) => k.runningPod.id === 'orphan-uid');
  t.ok(kill, 'the orphan is killed');
  t.equal(kill?.pod, undefined, 'with no spec');
  t.equal(kill?.gracePeriodOverrideSeconds, 1, 'and the orphan grace period');
});
