// A size-bounded cache whose entries expire (Go: k8s.io/apimachinery's LRUExpireCache, and the
// token cache's expiring stripes). Expiry is read from the injected clock on access, so there is
// no timer to leak and FakeClock drives it in tests.
import type { Clock } from '@kubelet-ts/core';

interface Entry<V> {
  value: V;
  expiresAt: number;
}

export class ExpiringLRUCache<V> {
  // A Map iterates in insertion order; re-inserting on access keeps the least recently used first.
  private readonly entries = new Map<string, Entry<V>>();

  constructor(
    private readonly clock: Clock,
    private readonly maxSize: number,
  ) {
    if (!(maxSize > 0)) throw new Error(`cache size must be positive, got ${maxSize}`);
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (this.clock.now() >= entry.expiresAt) {
      this.entries.delete(key);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: this.clock.now() + ttlMs });
    if (this.entries.size > this.maxSize) this.evict();
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** Drops the least recently used entry (Go's LRUExpireCache does the same): O(1) per insert. */
  private evict(): void {
    const oldest = this.entries.keys().next();
    if (!oldest.done) this.entries.delete(oldest.value);
  }
}
