// Test doubles for container GC, published as `@kubelet-ts/container-gc/testing`.
import type { ContainerGarbageCollector } from './container-gc.js';
import type { PodStateProvider } from './evict.js';

export type FakeContainerGCMethod = 'garbageCollect' | 'deleteAllUnusedContainers' | 'start' | 'stop';

export interface FakeContainerGCCall {
  method: FakeContainerGCMethod;
  allSourcesReady?: boolean;
  evictNonDeletedPods?: boolean;
}

/** A ContainerGarbageCollector that records calls; set `errors` to make a method reject (once). */
export class FakeContainerGC implements ContainerGarbageCollector {
  readonly calls: FakeContainerGCCall[] = [];
  readonly errors = new Map<FakeContainerGCMethod, Error>();
  started = false;
  allSourcesReady: (() => boolean) | undefined;

  async garbageCollect(allSourcesReady: boolean, evictNonDeletedPods: boolean): Promise<void> {
    this.calls.push({ method: 'garbageCollect', allSourcesReady, evictNonDeletedPods });
    this.fail('garbageCollect');
  }

  async deleteAllUnusedContainers(): Promise<void> {
    this.calls.push({ method: 'deleteAllUnusedContainers' });
    this.fail('deleteAllUnusedContainers');
  }

  start(allSourcesReady?: () => boolean): void {
    this.calls.push({ method: 'start' });
    this.started = true;
    this.allSourcesReady = allSourcesReady;
  }

  async stop(): Promise<void> {
    this.calls.push({ method: 'stop' });
    this.started = false;
  }

  count(method: FakeContainerGCMethod): number {
    return this.calls.filter((c) => c.method === method).length;
  }

  private fail(method: FakeContainerGCMethod): void {
    const err = this.errors.get(method);
    if (!err) return;
    this.errors.delete(method);
    throw err;
  }
}

/**
 * A PodStateProvider over two sets: pods whose content may be removed (deleted) and pods whose
 * runtime may be removed (terminated). `unknownPodsRemovable` answers for UIDs in neither set
 * (the pod workers answer true for unknown pods once synced).
 */
export class FakePodStateProvider implements PodStateProvider {
  readonly deleted = new Set<string>();
  readonly terminated = new Set<string>();
  /** Pods the workers know and keep (neither deleted nor terminated). */
  readonly live = new Set<string>();
  unknownPodsRemovable = false;

  constructor(init: { live?: string[]; deleted?: string[]; terminated?: string[]; unknownPodsRemovable?: boolean } = {}) {
    for (const uid of init.live ?? []) this.live.add(uid);
    for (const uid of init.deleted ?? []) this.deleted.add(uid);
    for (const uid of init.terminated ?? []) this.terminated.add(uid);
    this.unknownPodsRemovable = init.unknownPodsRemovable ?? false;
  }

  private known(uid: string): boolean {
    return this.live.has(uid) || this.deleted.has(uid) || this.terminated.has(uid);
  }

  shouldPodContentBeRemoved(uid: string): boolean {
    if (!this.known(uid)) return this.unknownPodsRemovable;
    return this.deleted.has(uid);
  }

  shouldPodRuntimeBeRemoved(uid: string): boolean {
    if (!this.known(uid)) return this.unknownPodsRemovable;
    return this.deleted.has(uid) || this.terminated.has(uid);
  }
}
