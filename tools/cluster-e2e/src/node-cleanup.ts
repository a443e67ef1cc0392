import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';

/**
 * Removes the pod sandboxes (and so their containers) a test left in the runtime: kubelets, ours and Go's, leave
 * pods running when they stop, by design.
 */
export async function removeRuntimePods(endpoint: string, matches: (metadata: { name: string; namespace: string }) => boolean): Promise<number> {
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

/** Unmounts everything mounted under `dir` (deepest first; the Go kubelet mounts secret volumes as tmpfs), then removes it. */
export function unmountAndRemove(dir: string): void {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1]?.replace(/\\040/g, ' '))
    .filter((target): target is string => target !== undefined && target.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
  for (const target of mounts) {
    try {
      execFileSync('umount', ['-l', target], { stdio: 'ignore' });
    } catch {
      // already gone with its parent
    }
  }
  rmSync(dir, { recursive: true, force: true });
}
