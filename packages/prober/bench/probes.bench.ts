// 1,000 HTTP probe workers at a 1 s period against a local HTTP server: CPU per probe and probe
// latency, each as a ratio against bare undici requests to the same server at the same rate, in one run.
//
//   npm run bench -w @kubelet-ts/prober        (PROBES=1000 SECONDS=10 to change the load)
import { fork } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { request } from 'undici';
import { createProbeAgent, Prober, ProbeManager, type ContainerProber } from '../src/index.js';

const WORKERS = Number(process.env.PROBES ?? 1000);
const SECONDS = Number(process.env.SECONDS ?? 10);

// The server runs in its own process so its CPU is not counted as the prober's.
const dir = mkdtempSync(join(tmpdir(), 'prober-bench-'));
const serverScript = join(dir, 'server.mjs');
writeFileSync(
  serverScript,
  `import { createServer } from 'node:http';
   const server = createServer((req, res) => res.end('ok'));
   server.listen(0, '127.0.0.1', () => process.send(server.address().port));
   process.on('message', () => server.close(() => process.exit(0)));`,
);
const child = fork(serverScript, { stdio: 'inherit' });
const port = await new Promise<number>((resolve) => child.once('message', (p) => resolve(p as number)));
const url = `http://127.0.0.1:${port}/healthz`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}
function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length * 0.99)] ?? Number.NaN;
}
const cpuMicros = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

// --- Warm-up: both code paths get JIT-compiled before anything is measured.
const agent = createProbeAgent();
const prober = new Prober();
{
  const warmPod: V1Pod = { metadata: { name: 'warm', namespace: 'bench', uid: 'warm' }, spec: { containers: [] } };
  const warmContainer: V1Container = { name: 'app', readinessProbe: { httpGet: { port, path: '/healthz' }, timeoutSeconds: 1 } };
  for (let round = 0; round < 20; round++) {
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        const res = await request(url, { dispatcher: agent, reset: true });
        await res.body.text();
        await prober.probe('readiness', warmPod, { podIP: '127.0.0.1' }, warmContainer, 'bench://warm');
      }),
    );
  }
}

// The machine may be shared, so the two kinds of load alternate in short windows and the figures
// are summed over all windows: a change in background load hits both alike.
const ROUNDS = Math.max(1, Math.round(SECONDS / 2));
const WINDOW_MS = (SECONDS * 1000) / ROUNDS;

const bareLatencies: number[] = [];
let bareDone = 0;
let bareErrors = 0;
let bareCpu = 0;
let bareWall = 0;

/** WORKERS timers at 1 s with random offsets, each a bare undici GET with the probe's connection handling. */
async function bareWindow(): Promise<void> {
  const timers: NodeJS.Timeout[] = [];
  const inFlight = new Set<Promise<void>>();
  const tick = (): void => {
    const run = (async () => {
      const start = performance.now();
      try {
        const res = await request(url, { dispatcher: agent, reset: true, headers: { 'user-agent': 'bare', accept: '*/*' } });
        await res.body.text();
        bareLatencies.push(performance.now() - start);
        bareDone++;
      } catch {
        bareErrors++;
      }
    })();
    inFlight.add(run);
    void run.finally(() => inFlight.delete(run));
  };
  const cpu0 = cpuMicros();
  const t0 = performance.now();
  for (let i = 0; i < WORKERS; i++) {
    timers.push(
      setTimeout(() => {
        tick();
        timers.push(setInterval(tick, 1000));
      }, Math.random() * 1000),
    );
  }
  await sleep(WINDOW_MS);
  for (const timer of timers) clearInterval(timer);
  await Promise.all(inFlight);
  bareCpu += cpuMicros() - cpu0;
  bareWall += (performance.now() - t0) / 1000;
}

const probeLatencies: number[] = [];
let probes = 0;
let failures = 0;
let probeCpu = 0;
let probeWall = 0;
const timed: ContainerProber = {
  async probe(type, pod, status, container, containerId) {
    const start = performance.now();
    const result = await prober.probe(type, pod, status, container, containerId);
    probeLatencies.push(performance.now() - start);
    probes++;
    if (result !== 'success') failures++;
    return result;
  },
};
const statuses = new Map<string, V1PodStatus>();
const pods: V1Pod[] = [];
const startedAt = new Date();
for (let i = 0; i < WORKERS; i++) {
  const uid = `uid-${i}`;
  const container: V1Container = { name: 'app', readinessProbe: { httpGet: { port, path: '/healthz' }, periodSeconds: 1, timeoutSeconds: 1 } };
  pods.push({ metadata: { name: `pod-${i}`, namespace: 'bench', uid }, spec: { containers: [container] } });
  statuses.set(uid, {
    phase: 'Running',
    podIP: '127.0.0.1',
    containerStatuses: [
      { name: 'app', image: 'x', imageID: '', restartCount: 0, ready: false, started: true, containerID: `bench://${i}`, state: { running: { startedAt } } },
    ],
  });
}

/** A fresh probe manager with WORKERS readiness workers (httpGet, period 1 s); its start jitter spreads them over the first second. */
async function probeWindow(): Promise<void> {
  const manager = new ProbeManager({ getPodStatus: (uid) => statuses.get(uid), prober: timed });
  const cpu0 = cpuMicros();
  const t0 = performance.now();
  for (const pod of pods) manager.addPod(pod);
  await sleep(WINDOW_MS);
  await manager.stop();
  probeCpu += cpuMicros() - cpu0;
  probeWall += (performance.now() - t0) / 1000;
}

for (let round = 0; round < ROUNDS; round++) {
  await bareWindow();
  await probeWindow();
}
await prober.close();
await agent.close();
child.send('stop');
rmSync(dir, { recursive: true, force: true });

const cpuPerProbe = probeCpu / probes;
const cpuPerBare = bareCpu / bareDone;
const fmt = (n: number): string => n.toFixed(1);
console.log(`prober bench: ${WORKERS} HTTP probe workers, period 1 s, ${SECONDS} s of probes alternating with ${SECONDS} s of bare undici requests at the same rate (${ROUNDS} rounds)`);
console.log(`  bare undici: ${bareDone} requests (${fmt(bareDone / bareWall)}/s, ${bareErrors} errors), CPU ${fmt(cpuPerBare)} us/request, latency p50 ${bareLatencies.length ? median(bareLatencies).toFixed(2) : 'n/a'} ms p99 ${p99(bareLatencies).toFixed(2)} ms`);
console.log(`  probes:      ${probes} probes (${fmt(probes / probeWall)}/s, ${failures} failed), CPU ${fmt(cpuPerProbe)} us/probe, latency p50 ${median(probeLatencies).toFixed(2)} ms p99 ${p99(probeLatencies).toFixed(2)} ms`);
console.log(`  ratio CPU per probe / CPU per bare request: ${(cpuPerProbe / cpuPerBare).toFixed(2)}`);
console.log(`  ratio probe latency p50 / bare request latency p50: ${(median(probeLatencies) / median(bareLatencies)).toFixed(2)}`);
