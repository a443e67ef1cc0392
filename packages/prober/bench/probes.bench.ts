// 1,000 HTTP probe workers at a 1 s period against a local HTTP server: CPU per probe and probe
// latency, each as a ratio against two references sending the same requests at the same rate in the
// same run: bare undici requests (the probe's previous transport), and a raw exchange over node:net
// (connect, write the GET, read the response, close: what Go's prober does on the wire).
//
//   npm run bench -w @kubelet-ts/prober        (PROBES=1000 SECONDS=10 to change the load;
//                                               PROBER_SRC=<dir> runs another build's src/index.ts)
import { fork } from 'node:child_process';
import { connect } from 'node:net';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { request } from 'undici';
import type * as ProberModule from '../src/index.js';
import type { ContainerProber } from '../src/index.js';

const proberSrc = process.env.PROBER_SRC ? join(process.cwd(), process.env.PROBER_SRC, 'index.ts') : '../src/index.js';
const { createProbeAgent, Prober, ProbeManager } = (await import(proberSrc)) as typeof ProberModule;

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

const agent = createProbeAgent();
const prober = new Prober();

// The machine may be shared, so the three kinds of load alternate in short windows and the figures
// are summed over all windows: a change in background load hits both alike.
const ROUNDS = Math.max(1, Math.round(SECONDS / 2));
const WINDOW_MS = (SECONDS * 1000) / ROUNDS;

interface Reference {
  name: string;
  get(): Promise<void>;
  latencies: number[];
  done: number;
  errors: number;
  cpu: number;
  wall: number;
}
const reference = (name: string, get: () => Promise<void>): Reference => ({ name, get, latencies: [], done: 0, errors: 0, cpu: 0, wall: 0 });

/** A bare undici GET with the previous probe transport's connection handling (reset: a connection per request). */
const bareUndici = reference('bare undici', async () => {
  const res = await request(url, { dispatcher: agent, reset: true, headers: { 'user-agent': 'bare', accept: '*/*' } });
  await res.body.text();
});

/** What Go's prober does on the wire: connect, write one GET with Connection: close, read the response, close. */
const rawHead = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUser-Agent: raw\r\nAccept: */*\r\nConnection: close\r\n\r\n`;
const rawNet = reference(
  'raw node:net',
  () =>
    new Promise<void>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let first: Buffer | undefined;
      socket.on('data', (data: Buffer) => (first ??= data));
      socket.on('error', reject);
      socket.on('end', () => {
        socket.destroy();
        if (first && first.toString('latin1', 0, 12) === 'HTTP/1.1 200') resolve();
        else reject(new Error('unexpected response'));
      });
      socket.write(rawHead);
    }),
);

// --- Warm-up: both code paths get JIT-compiled before anything is measured.
{
  const warmPod: V1Pod = { metadata: { name: 'warm', namespace: 'bench', uid: 'warm' }, spec: { containers: [] } };
  const warmContainer: V1Container = { name: 'app', readinessProbe: { httpGet: { port, path: '/healthz' }, timeoutSeconds: 1 } };
  for (let round = 0; round < 20; round++) {
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        await bareUndici.get();
        await rawNet.get();
        await prober.probe('readiness', warmPod, { podIP: '127.0.0.1' }, warmContainer, 'bench://warm');
      }),
    );
  }
}

/** WORKERS timers at 1 s with random offsets, each a reference GET. */
async function bareWindow(ref: Reference): Promise<void> {
  const timers: NodeJS.Timeout[] = [];
  const inFlight = new Set<Promise<void>>();
  const tick = (): void => {
    const run = (async () => {
      const start = performance.now();
      try {
        await ref.get();
        ref.latencies.push(performance.now() - start);
        ref.done++;
      } catch {
        ref.errors++;
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
  ref.cpu += cpuMicros() - cpu0;
  ref.wall += (performance.now() - t0) / 1000;
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
  await bareWindow(bareUndici);
  await bareWindow(rawNet);
  await probeWindow();
}
await prober.close();
await agent.close();
child.send('stop');
rmSync(dir, { recursive: true, force: true });

const cpuPerProbe = probeCpu / probes;
const fmt = (n: number): string => n.toFixed(1);
console.log(`prober bench: ${WORKERS} HTTP probe workers, period 1 s, ${SECONDS} s of probes alternating with ${SECONDS} s each of bare undici requests and raw node:net exchanges at the same rate (${ROUNDS} rounds)${process.env.PROBER_SRC ? `, prober from ${process.env.PROBER_SRC}` : ''}`);
for (const ref of [bareUndici, rawNet]) {
  console.log(`  ${`${ref.name}:`.padEnd(14)} ${ref.done} requests (${fmt(ref.done / ref.wall)}/s, ${ref.errors} errors), CPU ${fmt(ref.cpu / ref.done)} us/request, latency p50 ${ref.latencies.length ? median(ref.latencies).toFixed(2) : 'n/a'} ms p99 ${p99(ref.latencies).toFixed(2)} ms`);
}
console.log(`  ${'probes:'.padEnd(14)} ${probes} probes (${fmt(probes / probeWall)}/s, ${failures} failed), CPU ${fmt(cpuPerProbe)} us/probe, latency p50 ${median(probeLatencies).toFixed(2)} ms p99 ${p99(probeLatencies).toFixed(2)} ms`);
for (const ref of [bareUndici, rawNet]) {
  console.log(`  ratio CPU per probe / CPU per ${ref.name} request: ${(cpuPerProbe / (ref.cpu / ref.done)).toFixed(2)}`);
}
for (const ref of [bareUndici, rawNet]) {
  console.log(`  ratio probe latency p50 / ${ref.name} latency p50: ${(median(probeLatencies) / median(ref.latencies)).toFixed(2)}`);
}
