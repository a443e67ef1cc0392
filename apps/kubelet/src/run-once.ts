import type { V1Pod } from '@kubernetes/client-node';
import { findContainerStatusByName, podRef, type Clock, type Logger, type PodUpdate } from '@kubelet-ts/core';
import type { Kubelet, KubeletRuntime } from './kubelet.js';

/** Go: runOnceRetryDelay, runOnceRetryDelayBackoff, runOnceMaxRetries. */
export const RUN_ONCE_RETRY_DELAY_MS = 1000;
export const RUN_ONCE_RETRY_DELAY_BACKOFF = 2;
export const RUN_ONCE_MAX_RETRIES = 10;

export interface RunPodResult {
  pod: V1Pod;
  error?: Error;
  /** The pod finished (Succeeded or Failed) instead of running. */
  terminal: boolean;
}

export interface RunOnceDeps {
  kubelet: Kubelet;
  runtime: KubeletRuntime;
  clock: Clock;
  logger: Logger;
  retryDelayMs?: number;
}

/** All containers of the pod are running (Go: isPodRunning). */
async function isPodRunning(runtime: KubeletRuntime, pod: V1Pod): Promise<{ running: boolean; status: Awaited<ReturnType<KubeletRuntime['getPodStatus']>> }> {
  const status = await runtime.getPodStatus(pod.metadata!.uid!, pod.metadata!.name!, pod.metadata!.namespace!);
  for (const container of pod.spec?.containers ?? []) {
    if (findContainerStatusByName(status, container.name)?.state !== 'running') return { running: false, status };
  }
  return { running: true, status };
}

/** Go: runPod: sync until every container runs (or the pod is terminal), with growing delays. */
async function runPod(deps: RunOnceDeps, pod: V1Pod, signal: AbortSignal): Promise<RunPodResult> {
  let delay = deps.retryDelayMs ?? RUN_ONCE_RETRY_DELAY_MS;
  for (let retry = 0; ; retry++) {
    const { running, status } = await isPodRunning(deps.runtime, pod);
    if (running) {
      deps.kubelet.updateStatus(pod, status);
      deps.logger.info("Pod's containers running", { pod: podRef(pod) });
      return { pod, terminal: false };
    }
    deps.logger.info("Pod's containers not running: syncing", { pod: podRef(pod) });
    let terminal: boolean;
    try {
      terminal = await deps.kubelet.syncPod('update', pod, undefined, status);
    } catch (error) {
      return { pod, terminal: false, error: new Error(`error syncing pod ${JSON.stringify(podRef(pod))}: ${(error as Error).message}`) };
    }
    if (terminal) {
      deps.kubelet.updateStatus(pod, await deps.runtime.getPodStatus(pod.metadata!.uid!, pod.metadata!.name!, pod.metadata!.namespace!));
      return { pod, terminal: true };
    }
    if (retry >= RUN_ONCE_MAX_RETRIES) {
      return { pod, terminal: false, error: new Error(`timeout error: pod ${JSON.stringify(podRef(pod))} containers not running after ${RUN_ONCE_MAX_RETRIES} retries`) };
    }
    deps.logger.info("Pod's containers synced, waiting", { pod: podRef(pod), durationMs: delay });
    await deps.clock.sleep(delay, signal);
    delay *= RUN_ONCE_RETRY_DELAY_BACKOFF;
  }
}

/**
 * Go: Kubelet.RunOnce: takes the first update from the sources, runs its pods until their containers
 * run, reports each pod's result. Rejects when any pod failed, naming them.
 */
export async function runOnce(deps: RunOnceDeps, updates: AsyncIterable<PodUpdate>, signal: AbortSignal): Promise<RunPodResult[]> {
  let first: PodUpdate | undefined;
  for await (const update of updates) {
    first = update;
    break;
  }
  const pods = first?.pods ?? [];
  for (const pod of pods) deps.kubelet.podManager.addPod(pod);
  deps.logger.info('Waiting for pods', { numPods: pods.length });
  // The pods' volumes are set up by the volume manager's reconciler, which the sync loop would otherwise start.
  await deps.kubelet.volumeManager?.start(signal);
  let results: RunPodResult[];
  try {
    results = await Promise.all(pods.map((pod) => runPod(deps, pod, signal)));
  } finally {
    await deps.kubelet.volumeManager?.stop();
  }
  const failed: string[] = [];
  for (const result of results) {
    if (result.error) {
      deps.logger.info('Failed to start pod', { pod: podRef(result.pod), err: result.error.message });
      failed.push(podRef(result.pod));
    } else {
      deps.logger.info(result.terminal ? 'Pod finished' : 'Started pod', { pod: podRef(result.pod), phase: deps.kubelet.getPodStatus(result.pod.metadata!.uid!)?.phase });
    }
  }
  if (failed.length > 0) throw Object.assign(new Error(`error running pods: [${failed.join(' ')}]`), { results });
  deps.logger.info('Pods started', { numPods: pods.length });
  return results;
}
