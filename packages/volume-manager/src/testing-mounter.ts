// An in-memory Mounter for tests and for running without privileges.
import path from 'node:path';
import { pathWithinBase } from './mounter.js';
import type { Mounter } from './types.js';

export type FakeMountOperation = 'mountTmpfs' | 'bindMount' | 'unmount' | 'isMountPoint' | 'mountPointsUnder';

export interface FakeMountCall {
  op: FakeMountOperation;
  target: string;
  sizeBytes?: number;
  /** A bind mount's source. */
  source?: string;
}

export interface FakeMount {
  target: string;
  fsType: string;
  sizeBytes?: number;
  /** A bind mount's source (fsType `bind`). */
  source?: string;
}

/**
 * Records every call and keeps a mount table in memory; nothing on disk changes. Paths are compared
 * after path.resolve (no symlink resolution). A second mount at the same target stacks, as the
 * kernel does, so tests can catch double mounts.
 */
export class FakeMounter implements Mounter {
  readonly calls: FakeMountCall[] = [];
  /** The mount table in mount order; a stacked mount appears twice. */
  readonly mounts: FakeMount[] = [];
  private readonly failures = new Map<FakeMountOperation, Error[]>();

  /** Starts with these targets mounted (e.g. a tmpfs left from before a kubelet restart). */
  constructor(initial: Array<string | FakeMount> = []) {
    for (const m of initial) this.mounts.push(typeof m === 'string' ? { target: path.resolve(m), fsType: 'tmpfs' } : { ...m, target: path.resolve(m.target) });
  }

  /** The next call of op rejects with err (queue several to fail several calls). */
  failNext(op: FakeMountOperation, err: Error): this {
    const queue = this.failures.get(op) ?? [];
    queue.push(err);
    this.failures.set(op, queue);
    return this;
  }

  /** Calls of one operation, in order. */
  callsOf(op: FakeMountOperation): FakeMountCall[] {
    return this.calls.filter((c) => c.op === op);
  }

  isMounted(target: string): boolean {
    const t = path.resolve(target);
    return this.mounts.some((m) => m.target === t);
  }

  async mountTmpfs(target: string, options: { sizeBytes?: number } = {}): Promise<void> {
    this.record({ op: 'mountTmpfs', target, ...(options.sizeBytes !== undefined ? { sizeBytes: options.sizeBytes } : {}) });
    this.maybeFail('mountTmpfs');
    this.mounts.push({ target: path.resolve(target), fsType: 'tmpfs', ...(options.sizeBytes !== undefined ? { sizeBytes: options.sizeBytes } : {}) });
  }

  /** Records a bind mount (fsType `bind`); the target on disk stays as it was. */
  async bindMount(source: string, target: string): Promise<void> {
    this.record({ op: 'bindMount', target, source });
    this.maybeFail('bindMount');
    this.mounts.push({ target: path.resolve(target), fsType: 'bind', source });
  }

  async unmount(target: string): Promise<void> {
    this.record({ op: 'unmount', target });
    this.maybeFail('unmount');
    const t = path.resolve(target);
    // The most recent mount at a path is the one an unmount removes.
    for (let i = this.mounts.length - 1; i >= 0; i--) {
      if (this.mounts[i].target === t) {
        this.mounts.splice(i, 1);
        return;
      }
    }
  }

  async isMountPoint(target: string): Promise<boolean> {
    this.record({ op: 'isMountPoint', target });
    this.maybeFail('isMountPoint');
    return this.isMounted(target);
  }

  async mountPointsUnder(prefix: string): Promise<string[]> {
    this.record({ op: 'mountPointsUnder', target: prefix });
    this.maybeFail('mountPointsUnder');
    const p = path.resolve(prefix);
    const found = new Set(this.mounts.map((m) => m.target).filter((t) => pathWithinBase(t, p)));
    const depth = (s: string): number => (s === '/' ? 0 : s.split('/').length - 1);
    return [...found].sort((a, b) => depth(b) - depth(a) || (a < b ? 1 : a > b ? -1 : 0));
  }

  private record(call: FakeMountCall): void {
    this.calls.push(call);
  }

  private maybeFail(op: FakeMountOperation): void {
    const err = this.failures.get(op)?.shift();
    if (err) throw err;
  }
}
