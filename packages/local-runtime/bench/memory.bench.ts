// Memory of simulated runtimes in one process, as the fleet holds them: heapUsed delta (after GC) of 1,000 idle
// in-process runtimes, then of 10,000 running simulated containers on them (10 pods of one container each).
// Run: npm run bench (node --expose-gc --import tsx bench/memory.bench.ts) [runtimes] [podsPerRuntime]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { noopLogger } from '@kubelet-ts/core';
import { LocalRuntime } from '../src/index.js';

const runtimes = Number(process.argv[2] ?? 1000);
const podsPerRuntime = Number(process.argv[3] ?? 10);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

function heap(): number {
  for (let i = 0; i < 3; i++) gc!();
  return process.memoryUsage().heapUsed;
}

const dir = mkdtempSync(join(tmpdir(), 'lrt-mem-'));
try {
  // Load the code first (codec, cri-client), so the deltas are per runtime and per container only.
  const warm = new LocalRuntime({ mode: 'simulated', rootDir: join(dir, 'warm'), logger: noopLogger });
  const w = await warm.startInProcess();
  await w.runtimeService.version('v1');
  await warm.stop();

  const before = heap();
  const nodes = [];
  for (let i = 0; i < runtimes; i++) {
    const runtime = new LocalRuntime({ mode: 'simulated', rootDir: join(dir, `node-${i}`), logger: noopLogger });
    nodes.push({ runtime, ...(await runtime.startInProcess()) });
  }
  const idle = heap() - before;

  const startedAt = Date.now();
  for (const [n, node] of nodes.entries()) {
    await Promise.all(
      Array.from({ length: podsPerRuntime }, async (_, p) => {
        const name = `pod-${n}-${p}`;
        const sandbox = {
          metadata: { name, namespace: 'default', uid: `0c8f2b1e-5d7a-4c1b-9a3e-${String(n * podsPerRuntime + p).padStart(12, '0')}`, attempt: 0 },
          hostname: name,
          labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.uid': 'x', app: 'bench' },
          annotations: { 'kubernetes.io/config.seen': '2026-01-01T00:00:00Z', 'kubernetes.io/config.source': 'api' },
        };
        await node.imageService.pullImage({ image: 'registry.k8s.io/pause:3.10' }, undefined, sandbox);
        const sandboxId = await node.runtimeService.runPodSandbox(sandbox);
        const id = await node.runtimeService.createContainer(
          sandboxId,
          {
            metadata: { name: 'app', attempt: 0 },
            image: { image: 'registry.k8s.io/pause:3.10' },
            labels: { 'io.kubernetes.container.name': 'app', 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'default' },
            annotations: { 'io.kubernetes.container.hash': 'abcd1234', 'io.kubernetes.container.restartCount': '0' },
          },
          sandbox,
        );
        await node.runtimeService.startContainer(id);
      }),
    );
  }
  const createMs = Date.now() - startedAt;
  const running = heap() - before - idle;
  const containers = runtimes * podsPerRuntime;
  const usage = nodes.reduce((sum, node) => sum + node.runtime.simulatedUsage().memoryWorkingSetBytes, 0);
  console.log(
    JSON.stringify({
      runtimes,
      idleHeapBytes: idle,
      idleBytesPerRuntime: Math.round(idle / runtimes),
      containers,
      runningHeapBytes: running,
      bytesPerRunningContainer: Math.round(running / containers),
      simulatedWorkingSetBytes: usage,
      podsCreatedPerSecond: Math.round(containers / (createMs / 1000)),
      rssBytes: process.memoryUsage().rss,
    }),
  );
  await Promise.all(nodes.map((node) => node.runtime.stop()));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
