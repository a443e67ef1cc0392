import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { pollUntil } from '@kubelet-ts/core';

/** A temp dir removed at teardown (short: unix socket paths are limited to 107 bytes). */
export function tempDir(t: Test, prefix = 'csi-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Waits (polling every 10 ms of real time, up to 10 s) for gRPC traffic or file events to land. */
export function eventually(cond: () => boolean | Promise<boolean>): Promise<void> {
  return pollUntil(cond, 10, 10_000);
}

/** The rejection of p (fails the test when p resolves). */
export async function rejection(t: Test, p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  t.fail('expected a rejection');
  return new Error('resolved');
}
