import 'reflect-metadata';
import { container } from 'tsyringe';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { SystemMounter } from '@kubelet-ts/volume-manager';
import { basename, join } from 'node:path';
import { ensureHostCgroup, removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { noopLogger, pollUntil } from '@kubelet-ts/core';
import { RemoteRuntimeService, type runtimeapi } from '@kubelet-ts/cri-client';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet, type Kubelet } from '../../src/index.js';

export interface E2ETarget {
  name: string;
  endpoint: string;
  busyboxImage: string;
  /** A scratch directory the runtime may write pod logs under. */
  scratchRoot: string;
}

export interface TestKubelet {
  kubelet: Kubelet;
  stop(): Promise<void>;
}

/** A static pod manifest for the e2e tests. */
export function manifest(name: string, spec: Record<string, unknown>, image: string): Record<string, unknown> {
  const withImage = (containers: unknown) =>
    (containers as Array<Record<string, unknown>> | undefined)?.map((c) => ({ image, imagePullPolicy: 'IfNotPresent', ...c }));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { e2e: 'true' } },
    spec: { terminationGracePeriodSeconds: 5, ...spec, containers: withImage(spec.containers), initContainers: withImage(spec.initContainers) },
  };
}

/** A shell loop that ends promptly on SIGTERM even as PID 1 (which ignores signals it has no trap for). */
export const sleepForever = "trap 'exit 0' TERM; while true; do sleep 1; done";

export class E2EEnv {
  readonly dir: string;
  readonly manifests: string;
  readonly rootDir: string;
  readonly logsDir: string;
  readonly runtime: RemoteRuntimeService;
  readonly cgroupRoot: string;

  constructor(readonly target: E2ETarget) {
    this.dir = mkdtempSync(join(target.scratchRoot, 'kubelet-e2e-'));
    this.cgroupRoot = `/kts-${basename(this.dir)}`;
    this.manifests = join(this.dir, 'manifests');
    this.rootDir = join(this.dir, 'root');
    this.logsDir = join(this.dir, 'logs');
    mkdirSync(this.manifests, { recursive: true });
    this.runtime = new RemoteRuntimeService({ endpoint: target.endpoint });
  }

  writeManifest(name: string, spec: Record<string, unknown>): void {
    writeFileSync(join(this.manifests, `${name}.json`), JSON.stringify(manifest(name, spec, this.target.busyboxImage)));
  }

  removeManifest(name: string): void {
    rmSync(join(this.manifests, `${name}.json`), { force: true });
  }

  /** Starts a kubelet on this environment's manifests and root dir, as the binary would. */
  async startKubelet(): Promise<TestKubelet> {
    await ensureHostCgroup(this.cgroupRoot);
    const config = resolveConfig(
      parseFlags([
        `--pod-manifest-path=${this.manifests}`,
        `--root-dir=${this.rootDir}`,
        `--pod-logs-dir=${this.logsDir}`,
        `--container-runtime-endpoint=${this.target.endpoint}`,
        '--hostname-override=e2e-node',
        '--file-check-frequency=1s',
        '--sync-frequency=10s',
        '--healthz-port=0',
        // A cgroup root of its own (used on containerd, where pods get cgroups): no other kubelet's kubepods.
        `--cgroup-root=${this.cgroupRoot}`,
      ]),
    );
    const c = container.createChildContainer();
    registerKubeletDeps(c, config);
    if (!process.env.KUBELET_E2E_LOGS) c.register(Tokens.Logger, { useValue: noopLogger });
    const controller = new AbortController();
    const running = await startKubelet(c, controller.signal);
    return {
      kubelet: running.kubelet,
      stop: async () => {
        controller.abort();
        await running.done;
      },
    };
  }

  /** The kubelet's view of a static pod by manifest name. */
  static statusOf(kubelet: Kubelet, name: string): { pod: V1Pod; status?: V1PodStatus } | undefined {
    return kubelet.podStatuses().find((p) => p.pod.metadata?.name === `${name}-e2e-node`);
  }

  async waitForStatus(kubelet: Kubelet, name: string, what: string, test: (status: V1PodStatus) => boolean, timeoutMs = 30_000): Promise<V1PodStatus> {
    let last: V1PodStatus | undefined;
    try {
      await pollUntil(() => {
        last = E2EEnv.statusOf(kubelet, name)?.status;
        return last !== undefined && test(last);
      }, 100, timeoutMs);
    } catch {
      throw new Error(`pod ${name}: ${what} did not happen within ${timeoutMs} ms; last status: ${JSON.stringify(last)}`);
    }
    return last!;
  }

  /** The runtime's containers of a static pod (by the pod name label the kubelet sets). */
  async containersOf(name: string): Promise<runtimeapi.Container[]> {
    return this.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.name': `${name}-e2e-node` } });
  }

  async sandboxesOf(name: string): Promise<runtimeapi.PodSandbox[]> {
    return this.runtime.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.name': `${name}-e2e-node` } });
  }

  /**
   * Runs the kubelet's container GC until the pod's dead containers and sandboxes are gone (GC only
   * removes a pod once its worker has finished, which takes a housekeeping round or two).
   */
  async collectGarbage(kubelet: Kubelet, name: string, timeoutMs = 30_000): Promise<void> {
    await pollUntil(async () => {
      await kubelet.containerGC!.garbageCollect(true, false);
      return (await this.containersOf(name)).length === 0 && (await this.sandboxesOf(name)).length === 0;
    }, 200, timeoutMs);
  }

  /** Removes everything the tests created from the runtime, then the scratch directory. */
  async cleanup(): Promise<void> {
    const selector = { 'io.kubernetes.pod.namespace': 'default' };
    for (const sandbox of await this.runtime.listPodSandbox({ labelSelector: selector })) {
      if (!sandbox.metadata?.name.endsWith('-e2e-node')) continue;
      await this.runtime.stopPodSandbox(sandbox.id).catch(() => undefined);
      await this.runtime.removePodSandbox(sandbox.id).catch(() => undefined);
    }
    this.runtime.close();
    await removeScratchDir(this.dir);
    await removeHostCgroup(this.cgroupRoot);
  }
}

/**
 * Removes a test's scratch directory. A stopped kubelet leaves its pods' volumes mounted (as Go's does, so a
 * restart finds them), so what is mounted under the directory is unmounted first.
 */
export async function removeScratchDir(dir: string): Promise<void> {
  const mounter = new SystemMounter();
  for (const target of await mounter.mountPointsUnder(dir)) await mounter.unmount(target).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}

export const running = (name: string) => (status: V1PodStatus) =>
  status.phase === 'Running' && (status.containerStatuses ?? []).length > 0 && (status.containerStatuses ?? []).every((c) => c.state?.running) && name.length > 0;

/**
 * Polls `probe` every 100 ms until it returns a value (not undefined or false) and resolves with it; rejects naming
 * `what` after `timeoutMs`. KUBELET_E2E_TIMES=1 prints when each awaited thing happened.
 */
export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  let value: T | undefined | false;
  try {
    await pollUntil(async () => {
      value = await probe();
      return value !== undefined && value !== false;
    }, 100, timeoutMs);
  } catch {
    throw new Error(`${what} did not happen within ${timeoutMs} ms`);
  }
  if (process.env.KUBELET_E2E_TIMES) console.error(`${new Date().toISOString()} ${what}`);
  return value as T;
}
