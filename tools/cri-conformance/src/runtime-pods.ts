import { RemoteRuntimeService } from '@kubelet-ts/cri-client';

/**
 * Removes the pod sandboxes (and so their containers) a test or benchmark left in the runtime, all or those that
 * match: kubelets, ours and Go's, leave pods running when they stop, by design.
 */
export async function removeRuntimePods(endpoint: string, matches: (metadata: { name: string; namespace: string }) => boolean = () => true): Promise<number> {
  const runtime = new RemoteRuntimeService({ endpoint });
  let removed = 0;
  try {
    for (const sandbox of await runtime.listPodSandbox()) {
      const metadata = { name: sandbox.metadata?.name ?? '', namespace: sandbox.metadata?.namespace ?? '' };
      if (!matches(metadata)) continue;
      await runtime.stopPodSandbox(sandbox.id).catch(() => undefined);
      await runtime.removePodSandbox(sandbox.id).catch(() => undefined);
      removed++;
    }
  } finally {
    runtime.close();
  }
  return removed;
}
