import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodUpdate } from '@kubelet-ts/core';
import { stringify } from 'yaml';
import { makeTestManifest } from '../src/testing.js';

/** A sink that records every update. */
export function recordingSink(): { updates: PodUpdate[]; sink: (u: PodUpdate) => Promise<void>; last: () => PodUpdate | undefined; names: () => string[] } {
  const updates: PodUpdate[] = [];
  return {
    updates,
    sink: async (u) => {
      updates.push(u);
    },
    last: () => updates[updates.length - 1],
    names: () => (updates[updates.length - 1]?.pods ?? []).map((p) => p.metadata?.name ?? ''),
  };
}

/** What a tap test offers for cleanup. */
export interface TeardownHost {
  teardown(fn: () => unknown): void;
}

export async function tempDir(t: TeardownHost, prefix = 'pod-config-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export function manifestYaml(name: string, opts: Parameters<typeof makeTestManifest>[1] = {}): string {
  return stringify(makeTestManifest(name, opts));
}

export async function writeManifest(dir: string, file: string, name: string, opts: Parameters<typeof makeTestManifest>[1] = {}): Promise<void> {
  await writeFile(join(dir, file), manifestYaml(name, opts));
}

/** Polls cond with short real waits (for fs.watch and sockets), failing after timeoutMs. */
export async function waitFor(cond: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export { captureStderr } from '@kubelet-ts/core/testing';
