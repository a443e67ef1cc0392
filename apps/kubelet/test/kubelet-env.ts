import 'reflect-metadata';
import { container } from 'tsyringe';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PodCache } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { PodConfig } from '@kubelet-ts/pod-config';
import { FakePodSource } from '@kubelet-ts/pod-config/testing';
import { FakePLEG } from '@kubelet-ts/pleg/testing';
import { FakeContainerRuntime } from '@kubelet-ts/runtime-manager/testing';
import { FakeMounter } from '@kubelet-ts/volume-manager/testing';
import type { DependencyContainer } from 'tsyringe';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { EvictionManagerLike } from '../src/index.js';
import type { PodAdmitAttributes, PodAdmitResult } from '../src/lifecycle/index.js';
import { Kubelet, Tokens, parseFlags, registerKubeletDeps, resolveConfig } from '../src/index.js';

/** The eviction manager as the kubelet sees it: admits what `admitResult` says, records starts and stops. */
export class FakeEvictionManager implements EvictionManagerLike {
  admitResult: PodAdmitResult = { admit: true };
  admitted: V1Pod[] = [];
  started = 0;
  stopped = 0;
  start(): void {
    this.started++;
  }
  async stop(): Promise<void> {
    this.stopped++;
  }
  admit(attrs: PodAdmitAttributes): PodAdmitResult {
    this.admitted.push(attrs.pod);
    return this.admitResult;
  }
}

/** The kubelet with every dependency replaced by a fake in a child container, as a test author would. */
/** The Node pods are admitted against in these tests: 4 CPUs, 8 GiB, 110 pods. */
export function testNode(): V1Node {
  const resources = { cpu: '4', memory: '8Gi', pods: '110', 'ephemeral-storage': '100Gi' };
  return { metadata: { name: 'node1', labels: { 'kubernetes.io/hostname': 'node1' } }, spec: {}, status: { capacity: resources, allocatable: resources } };
}

export function setupKubelet(opts: { flags?: string[]; runtime?: FakeContainerRuntime; register?: (c: DependencyContainer, clock: FakeClock) => void } = {}) {
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const runtime = opts.runtime ?? new FakeContainerRuntime({ simulate: true, now: () => clock.now() });
  const runtimeService = new FakeRuntimeService(clock);
  const podConfig = new PodConfig({ clock, logger });
  const source = new FakePodSource(podConfig, 'file');
  const pleg = new FakePLEG();
  const rootDir = mkdtempSync(join(tmpdir(), 'kubelet-sync-loop-'));
  const config = resolveConfig(parseFlags([`--root-dir=${rootDir}`, '--hostname-override=node1', '--container-runtime-endpoint=unix:///nonexistent.sock', '--cgroups-per-qos=false', ...(opts.flags ?? [])]));
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  c.register(Tokens.Clock, { useValue: clock });
  c.register(Tokens.Logger, { useValue: logger });
  c.register(Tokens.ContainerRuntime, { useValue: runtime });
  c.register(Tokens.RuntimeService, { useValue: runtimeService });
  c.register(Tokens.PodCache, { useValue: new PodCache({ clock }) });
  c.register(Tokens.PLEG, { useValue: pleg });
  c.register(Tokens.PodSourceConfig, { useValue: { podConfig, stop: async () => podConfig.close() } });
  c.register(Tokens.NodeAnyWay, { useValue: async () => testNode() });
  // Volumes are set up for real under rootDir; only mounting (tmpfs, root only) is faked.
  c.register(Tokens.Mounter, { useValue: new FakeMounter() });
  // No stats to evict on: an eviction manager that admits everything (tests of eviction register their own).
  c.register(Tokens.EvictionManager, { useValue: new FakeEvictionManager() });
  opts.register?.(c, clock);
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
  // Lets the kubelet's promises run until cond holds; the bound is generous (a loaded CI machine), not a timing check.
  const settle = async (cond: () => boolean, realMs = 10_000) => {
    const deadline = Date.now() + realMs;
    while (!cond() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
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
  return { clock, logger, runtime, runtimeService, source, pleg, kubelet, stop, advance, settle, relist, cache, container: c };
}
