import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FakeClock } from '@kubelet-ts/core/testing';

export const T0 = Date.parse('2026-01-01T00:00:00Z');

export function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'container-logs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Collects everything written; with `hold`, each write completes only when release() is called. */
export class Sink extends Writable {
  readonly chunks: Buffer[] = [];
  private held: (() => void)[] = [];
  hold = false;

  constructor(opts: { highWaterMark?: number; hold?: boolean } = {}) {
    super({ highWaterMark: opts.highWaterMark });
    this.hold = opts.hold ?? false;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.chunks.push(Buffer.from(chunk));
    if (this.hold) this.held.push(() => callback());
    else callback();
  }

  /** Completes the held writes and stops holding. */
  release(): void {
    this.hold = false;
    const held = this.held;
    this.held = [];
    for (const cb of held) cb();
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

/**
 * Waits until cond holds, yielding real time in small steps and, with a fake clock, advancing it by
 * stepMs each round so clock-driven waits (poll, state checks) happen.
 */
export async function eventually(
  cond: () => boolean | Promise<boolean>,
  opts: { clock?: FakeClock; stepMs?: number; timeoutMs?: number; what?: string } = {},
): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 5000);
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${opts.what ?? 'condition'}`);
    if (opts.clock) await opts.clock.advance(opts.stepMs ?? 1000);
    await sleep(5);
  }
}

/** Tracks whether a promise settled. */
export function track<T>(promise: Promise<T>): { done: () => boolean; error: () => unknown; promise: Promise<T> } {
  let settled = false;
  let failure: unknown;
  promise.then(
    () => (settled = true),
    (err) => {
      settled = true;
      failure = err;
    },
  );
  return { done: () => settled, error: () => failure, promise };
}
