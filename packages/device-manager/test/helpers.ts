import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { pollUntil } from '@kubelet-ts/core';

export function tempDir(t: Test, prefix = 'dm-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function pod(uid: string, containers: Array<{ name: string; limits?: Record<string, string> }>, init: Array<{ name: string; limits?: Record<string, string> }> = []): V1Pod {
  const spec = (c: { name: string; limits?: Record<string, string> }) => ({ name: c.name, image: 'busybox', resources: { limits: c.limits ?? {}, requests: c.limits ?? {} } });
  return {
    metadata: { uid, name: `pod-${uid}`, namespace: 'default' },
    spec: { containers: containers.map(spec), initContainers: init.length > 0 ? init.map(spec) : undefined },
  };
}

/** Waits (polling every 10 ms, up to 10 s) for gRPC traffic to land. */
export function eventually(cond: () => boolean | Promise<boolean>): Promise<void> {
  return pollUntil(cond, 10, 10_000);
}

/** Asserts that a gRPC call fails with exactly these details (the server's error text). */
export async function rejectsWithDetails(t: Test, p: Promise<unknown>, details: string): Promise<void> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e as { details?: string },
  );
  t.equal(err?.details, details, details);
}
