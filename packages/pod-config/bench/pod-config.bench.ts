// Benchmark: 1,000 static pod manifests in a directory.
//  - time from FileSource.start() to the first merged update (ADD of 1,000 pods), per pod;
//  - time from rewriting one manifest to the merged REMOVE+ADD for it (fs.watch path);
//  - re-list cost (unchanged directory, and a forced full re-read), per pod;
//  - the merge cost per update and per pod, for the operations the kubelet sees.
// Figures only, no thresholds. Run: npm run bench -w @kubelet-ts/pod-config
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { V1Pod } from '@kubernetes/client-node';
import { PodOperation, type PodUpdate } from '@kubelet-ts/core';
import { stringify } from 'yaml';
import { FileSource, PodConfig, decodeSinglePodManifest } from '../src/index.js';
import { makeTestManifest, makeTestPod } from '../src/testing.js';

const N = Number(process.env.PODS ?? 1000);
const CHANGES = Number(process.env.CHANGES ?? 20);
/** yaml (default) or json manifests: JSON skips the YAML parser (the main decode cost). */
const FORMAT = process.env.FORMAT === 'json' ? 'json' : 'yaml';

const fmt = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3));
const perPodUs = (ms: number, n = N): string => ((ms * 1000) / n).toFixed(1);
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

function manifest(i: number, image = 'busybox:1.36'): string {
  const m = makeTestManifest(`pod-${String(i).padStart(4, '0')}`, { image, labels: { app: 'bench', idx: String(i) } });
  (m.spec as Record<string, unknown>).containers = [
    { name: 'main', image, command: ['sh', '-c', 'sleep 3600'], ports: [{ containerPort: 8080 }], env: [{ name: 'I', value: String(i) }] },
    { name: 'sidecar', image: 'busybox:1.36', livenessProbe: { httpGet: { port: 9090 } } },
  ];
  return FORMAT === 'json' ? JSON.stringify(m) : stringify(m);
}

/** Resolves with the next update from the stream that satisfies pred. */
function nextUpdate(it: AsyncIterator<PodUpdate>, pred: (u: PodUpdate) => boolean): Promise<PodUpdate> {
  return (async () => {
    for (;;) {
      const r = await it.next();
      if (r.done) throw new Error('stream ended');
      if (pred(r.value)) return r.value;
    }
  })();
}

async function fileBench(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'pod-config-bench-'));
  try {
    const texts = Array.from({ length: N }, (_, i) => manifest(i));
    await Promise.all(texts.map((text, i) => writeFile(join(dir, `pod-${String(i).padStart(4, '0')}.${FORMAT}`), text)));

    // Decode alone (parse, defaults, static pod identity, validation, hash).
    let t0 = performance.now();
    for (let i = 0; i < N; i++) decodeSinglePodManifest(texts[i], { kind: 'file', location: join(dir, `pod-${i}.${FORMAT}`), nodeName: 'node-1' });
    const decodeMs = performance.now() - t0;

    const config = new PodConfig();
    const it = config.updates()[Symbol.asyncIterator]();
    const source = new FileSource({ path: dir, nodeName: 'node-1', sink: config.channel('file') });
    t0 = performance.now();
    source.start();
    const first = await nextUpdate(it, (u) => u.op === PodOperation.ADD);
    const firstMs = performance.now() - t0;
    if (first.pods.length !== N) throw new Error(`first update had ${first.pods.length} pods`);

    // One changed file, seen through fs.watch: REMOVE old + ADD new (new content, new UID).
    const detect: number[] = [];
    for (let k = 0; k < CHANGES; k++) {
      const i = (k * 37) % N;
      const name = `pod-${String(i).padStart(4, '0')}-node-1`;
      const start = performance.now();
      await writeFile(join(dir, `pod-${String(i).padStart(4, '0')}.${FORMAT}`), manifest(i, `busybox:1.${k}`));
      await nextUpdate(it, (u) => u.op === PodOperation.ADD && u.pods.some((p) => p.metadata?.name === name));
      detect.push(performance.now() - start);
      await new Promise((r) => setTimeout(r, 5));
    }

    // Re-list cost: nothing changed (stat only), then with every file re-read (cache dropped).
    const relists: number[] = [];
    for (let k = 0; k < 5; k++) {
      const s = performance.now();
      await source.relist();
      relists.push(performance.now() - s);
    }
    const stats0 = source.stats();
    const reread: number[] = [];
    for (let k = 0; k < 3; k++) {
      const s = performance.now();
      await source.relist({ reread: true });
      reread.push(performance.now() - s);
    }
    const rereadFiles = source.stats().fileReads - stats0.fileReads;
    await source.stop();
    config.close();

    console.log(`\n== file source: ${N} ${FORMAT} manifests in one directory ==`);
    console.log(`decode only (parse + defaults + validate + UID hash): ${fmt(decodeMs)} ms total, ${perPodUs(decodeMs)} us/pod`);
    console.log(`start -> first merged update (ADD of ${N}):         ${fmt(firstMs)} ms total, ${perPodUs(firstMs)} us/pod`);
    console.log(
      `one file rewritten -> merged REMOVE+ADD (fs.watch), ${CHANGES} runs: p50 ${fmt(pct(detect, 50))} ms, p90 ${fmt(pct(detect, 90))} ms, max ${fmt(Math.max(...detect))} ms` +
        ` (${perPodUs(pct(detect, 50))} us per pod in the directory at p50)`,
    );
    console.log(`re-list, nothing changed (stat only):             p50 ${fmt(pct(relists, 50))} ms, ${perPodUs(pct(relists, 50))} us/pod`);
    console.log(`re-list, every file re-read (${rereadFiles} reads): p50 ${fmt(pct(reread, 50))} ms, ${perPodUs(pct(reread, 50))} us/pod`);
    console.log(`ratio first SET / decode only: ${(firstMs / decodeMs).toFixed(2)} (I/O, merge and copy overhead on top of decoding)`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function time(fn: () => void, reps: number): number {
  fn(); // warm
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) fn();
  return (performance.now() - t0) / reps;
}

function mergeBench(): void {
  const pods: V1Pod[] = Array.from({ length: N }, (_, i) =>
    makeTestPod({ name: `p${i}`, labels: { app: 'bench' }, containers: ['main', { name: 'side', ports: [{ containerPort: 80, protocol: 'TCP' }] }] }),
  );
  const drain = (c: PodConfig): void => {
    while (c.tryNext() !== undefined);
  };
  const results: [string, number, number][] = [];
  for (const mode of ['incremental', 'snapshot'] as const) {
    // First SET of N pods into an empty source (ADD of N).
    const firstSet = time(() => {
      const c = new PodConfig({ mode, bufferSize: 1e9 });
      void c.merge('api', { op: PodOperation.SET, pods, source: 'api' });
      drain(c);
    }, 10);
    results.push([`${mode}: first SET of ${N} (all ADD)`, firstSet, N]);
    const c = new PodConfig({ mode, bufferSize: 1e9 });
    void c.merge('api', { op: PodOperation.SET, pods, source: 'api' });
    drain(c);
    const unchanged = time(() => {
      void c.merge('api', { op: PodOperation.SET, pods, source: 'api' });
      drain(c);
    }, 20);
    results.push([`${mode}: SET of ${N}, nothing changed`, unchanged, N]);
    let flip = 0;
    const oneChanged = time(() => {
      const next = pods.slice();
      const p = structuredClone(pods[7]);
      p.spec!.containers[0].image = `img:${flip++}`;
      next[7] = p;
      void c.merge('api', { op: PodOperation.SET, pods: next, source: 'api' });
      drain(c);
    }, 20);
    results.push([`${mode}: SET of ${N}, one spec changed (UPDATE)`, oneChanged, N]);
    const statusOnly = time(() => {
      const p = structuredClone(pods[9]);
      p.status = { phase: flip++ % 2 ? 'Running' : 'Pending' };
      void c.merge('api', { op: PodOperation.UPDATE, pods: [p], source: 'api' });
      drain(c);
    }, 2000);
    results.push([`${mode}: UPDATE delta of 1 pod, status only (RECONCILE)`, statusOnly, 1]);
    const addRemove = time(() => {
      const p = makeTestPod({ name: `extra-${flip++}` });
      void c.merge('api', { op: PodOperation.ADD, pods: [p], source: 'api' });
      void c.merge('api', { op: PodOperation.REMOVE, pods: [p], source: 'api' });
      drain(c);
    }, 2000);
    results.push([`${mode}: ADD then REMOVE delta of 1 pod (2 merges)`, addRemove / 2, 1]);
  }
  console.log(`\n== merge cost (PodConfig, ${N} pods in the source) ==`);
  for (const [what, ms, n] of results) {
    console.log(`${what.padEnd(56)} ${fmt(ms).padStart(8)} ms/update  ${perPodUs(ms, n).padStart(8)} us/pod`);
  }
}

await fileBench();
mergeBench();
