import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';

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
