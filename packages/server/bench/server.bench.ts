/**
 * Kubelet server (@kubelet-ts/server): what KubeletServer costs on its three heavy routes, each figure
 * printed as a ratio against a reference measured in the same run, with the process RSS next to it.
 *
 * 1. stats: GET /stats/summary with 110 pods. The embedded local runtime in simulated mode (its own
 *    process; it answers ListPodSandboxStats with full CPU/memory/process figures, zero-valued since
 *    nothing runs) holds 110 ready sandboxes with one running container each; the SummaryProvider of
 *    @kubelet-ts/stats over RemoteRuntimeService/RemoteImageService (plus this machine's cgroup, /proc and
 *    statfs figures, and du of each container's log dir) answers through KubeletServer over HTTP, as the
 *    kubelet wires it (provider.get(true)). The HTTP client is a separate process, so the CPU figure
 *    (process.cpuUsage delta / request) is the kubelet side only. Figures: latency p50/p99 over N
 *    sequential requests, kubelet CPU ms per request, body size, RSS. Reference: the bare CRI calls the
 *    provider makes on its critical path (ListContainers, ListPodSandbox, ListPodSandboxStats, with
 *    ImageFsInfo alongside), timed the same way from this process.
 * 2. logs: a ~50 MB CRI-format log file (appendCriLog lines, stdout and stderr, F and P tags). Reference:
 *    fs.createReadStream of the file into a discarding Writable (MB/s of file bytes); also shown: the same
 *    file sent raw by a plain node:http server to the same client (what HTTP alone costs). Ours: GET
 *    /containerLogs/<ns>/<pod>/<container> through KubeletServer, whose host calls readLogs on the file
 *    (no follow), as the kubelet's host does. Median of R rounds; kubelet CPU per read; peak RSS while
 *    streaming. Then 1,000 concurrent follow=true streams on an idle log, held a few seconds, then every
 *    client disconnects: RSS, heap and open file descriptors before, with the streams, and after they are
 *    gone, the kubelet CPU the idle streams cost per second, and how many aborts and finished calls the
 *    host saw (each stream must be released).
 * 3. exec: on the real containerd (tools/containerd/start.sh), one sandbox of our own (`srvbench-exec`,
 *    host network, busybox `sleep 3600`), exec `cat` with stdin+stdout over WebSocket
 *    (v4.channel.k8s.io). Reference: the client calls CRI Exec itself and connects straight to the
 *    runtime's streaming URL. Ours: the client connects to KubeletServer's
 *    /exec/<ns>/<pod>/<container>?command=cat&input=1&output=1, whose host calls CRI Exec and which proxies
 *    the upgrade. Figures: connection setup (until the 101; and until the first echo came back) over S
 *    setups, echo round trips (one stdin frame out, its stdout frame back) p50/p99 over M, and the
 *    kubelet's CPU per setup and per proxied round trip. The sandbox is stopped and removed at the end,
 *    even on failure (one left by a killed run is removed at the next start); only sandboxes named
 *    `srvbench-*` are ever touched. Skipped when containerd is not running.
 *
 * Each part runs in its own process (so the RSS figures do not carry over), and each part's clients in
 * another. No thresholds: figures only.
 *
 *   tsx bench/server.bench.ts [--parts stats,logs,exec] [--pods 110] [--requests 100] [--log-mb 50]
 *     [--rounds 3] [--follow 1000] [--follow-seconds 3] [--setups 20] [--round-trips 1000]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { Agent, createServer, get as httpGet, type ClientRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import WebSocket from 'ws';
import { noopLogger, pollUntil } from '@kubelet-ts/core';
import { RemoteImageService, RemoteRuntimeService, runtimeapi } from '@kubelet-ts/cri-client';
import { readLogs } from '@kubelet-ts/container-logs';
import { appendCriLog, type CriLogLineInit } from '@kubelet-ts/container-logs/testing';
import { readContainerdEnv } from '@kubelet-ts/cri-conformance';
import { SummaryProvider } from '@kubelet-ts/stats';
import { HostNotFoundError, KubeletServer, type RequestGate, type ServerHost } from '../src/index.js';

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    parts: { type: 'string', default: 'stats,logs,exec' },
    pods: { type: 'string', default: '110' },
    requests: { type: 'string', default: '100' },
    'log-mb': { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    follow: { type: 'string', default: '1000' },
    'follow-seconds': { type: 'string', default: '3' },
    setups: { type: 'string', default: '20' },
    'round-trips': { type: 'string', default: '1000' },
  },
});
const PODS = Number(values.pods);
const REQUESTS = Number(values.requests);
const LOG_MB = Number(values['log-mb']);
const ROUNDS = Number(values.rounds);
const FOLLOW = Number(values.follow);
const FOLLOW_SECONDS = Number(values['follow-seconds']);
const SETUPS = Number(values.setups);
const ROUND_TRIPS = Number(values['round-trips']);

const SELF = fileURLToPath(import.meta.url);
const localRuntimeCli = new URL('../../local-runtime/dist/cli.js', import.meta.url).pathname;
const SIM_IMAGE = 'localhost/kubelet-ts/busybox:1';
const EXEC_NAMESPACE = 'srvbench';
const EXEC_POD = 'srvbench-exec';
const WS_PROTOCOL = 'v4.channel.k8s.io';

const fmt = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(1) : ms.toFixed(3));
const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(0);
const rss = (): string => `RSS ${mib(process.memoryUsage.rss())} MiB`;
const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const median = (xs: number[]): number => pct(xs, 50);
const ratio = (ours: number, reference: number): string => `${(ours / reference).toFixed(2)}x`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const cpuMs = (since: NodeJS.CpuUsage): number => {
  const d = process.cpuUsage(since);
  return (d.user + d.system) / 1000;
};
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const openFds = (): number => readdirSync('/proc/self/fd').length;

/** Runs this file again with another role; the child talks over IPC. */
function spawnSelf(args: string[], stdio: 'inherit' | 'ignore'): ChildProcess {
  return spawn(process.execPath, ['--expose-gc', ...process.execArgv, SELF, ...args], { stdio: [stdio, 'inherit', 'inherit', 'ipc'] });
}

// ---------------------------------------------------------------------------------------------------
// The client process: HTTP and WebSocket requests on behalf of a part, so their cost is not the kubelet's.

type ClientRequestMessage =
  | { kind: 'get'; url: string; count: number; warmup: number }
  | { kind: 'follow-open'; url: string; streams: number; bytesPerStream: number }
  | { kind: 'follow-close' }
  | { kind: 'exec-setup'; target: ExecTarget; count: number }
  | { kind: 'exec-round-trips'; target: ExecTarget; count: number };

/** Where an exec connects: straight to the runtime (after calling CRI Exec itself) or through the kubelet. */
type ExecTarget = { via: 'runtime'; endpoint: string; containerId: string } | { via: 'kubelet'; url: string };

interface GetResult {
  latenciesMs: number[];
  bytes: number;
}

interface ExecSetupResult {
  openMs: number[];
  firstEchoMs: number[];
}

const ECHO_PAYLOAD = Buffer.from(`${'0123456789abcdef'.repeat(4)}\n`);

async function clientRole(): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const follows: Array<{ req: ClientRequest; closed: Promise<void> }> = [];
  const runtimes = new Map<string, RemoteRuntimeService>();

  const fetchOnce = (url: string): Promise<{ ms: number; bytes: number }> => {
    const start = performance.now();
    return new Promise((resolve, reject) => {
      httpGet(url, { agent }, (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.once('error', reject);
        res.once('end', () => (res.statusCode === 200 ? resolve({ ms: performance.now() - start, bytes }) : reject(new Error(`GET ${url}: ${res.statusCode}`))));
      }).once('error', reject);
    });
  };

  const execSocket = async (target: ExecTarget): Promise<Echo> => {
    let url: string;
    if (target.via === 'runtime') {
      let runtime = runtimes.get(target.endpoint);
      if (!runtime) runtimes.set(target.endpoint, (runtime = new RemoteRuntimeService({ endpoint: target.endpoint })));
      url = (await runtime.exec({ containerId: target.containerId, cmd: ['cat'], stdin: true, stdout: true, stderr: false, tty: false })).url;
    } else {
      url = target.url;
    }
    const echo = new Echo(new WebSocket(url, [WS_PROTOCOL], { perMessageDeflate: false }));
    await echo.opened;
    return echo;
  };

  const handle = async (message: ClientRequestMessage): Promise<unknown> => {
    switch (message.kind) {
      case 'get': {
        for (let i = 0; i < message.warmup; i++) await fetchOnce(message.url);
        const latenciesMs: number[] = [];
        let bytes = 0;
        for (let i = 0; i < message.count; i++) {
          const r = await fetchOnce(message.url);
          latenciesMs.push(r.ms);
          bytes = r.bytes;
        }
        return { latenciesMs, bytes } satisfies GetResult;
      }
      case 'follow-open': {
        // Batches of 100, so the listen backlog never drops a SYN (which would add a 1 s retransmit).
        let received = 0;
        for (let batch = 0; batch < message.streams; batch += 100) {
          const size = Math.min(100, message.streams - batch);
          await new Promise<void>((resolve, reject) => {
            let ready = 0;
            for (let i = 0; i < size; i++) {
              let got = 0;
              let counted = false;
              const req = httpGet(message.url, { agent: false }, (res) => {
                if (res.statusCode !== 200) reject(new Error(`follow GET: ${res.statusCode}`));
                res.on('data', (chunk: Buffer) => {
                  got += chunk.length;
                  received += chunk.length;
                  if (!counted && got >= message.bytesPerStream) {
                    counted = true;
                    if (++ready === size) resolve();
                  }
                });
                res.on('error', () => undefined);
              });
              // Once the batch is ready a rejection is a no-op: the errors of destroy() at close are ignored.
              req.on('error', reject);
              follows.push({ req, closed: new Promise<void>((resolve) => req.once('close', () => resolve())) });
            }
          });
        }
        return { streams: follows.length, bytes: received };
      }
      case 'follow-close': {
        const all = follows.splice(0);
        for (const { req } of all) req.destroy();
        await Promise.all(all.map((f) => f.closed));
        return { closed: all.length };
      }
      case 'exec-setup': {
        const openMs: number[] = [];
        const firstEchoMs: number[] = [];
        for (let i = 0; i < message.count; i++) {
          const start = performance.now();
          const echo = await execSocket(message.target);
          openMs.push(performance.now() - start);
          await echo.roundTrip(ECHO_PAYLOAD);
          firstEchoMs.push(performance.now() - start);
          await echo.close();
        }
        return { openMs, firstEchoMs } satisfies ExecSetupResult;
      }
      case 'exec-round-trips': {
        const echo = await execSocket(message.target);
        for (let i = 0; i < 20; i++) await echo.roundTrip(ECHO_PAYLOAD); // warm-up
        const latenciesMs: number[] = [];
        for (let i = 0; i < message.count; i++) {
          const start = performance.now();
          await echo.roundTrip(ECHO_PAYLOAD);
          latenciesMs.push(performance.now() - start);
        }
        await echo.close();
        return { latenciesMs, bytes: ECHO_PAYLOAD.length } satisfies GetResult;
      }
    }
  };

  process.on('message', (message: ClientRequestMessage) => {
    handle(message).then(
      (result) => process.send!({ ok: true, result }),
      (error: unknown) => process.send!({ ok: false, error: error instanceof Error ? error.stack : String(error) }),
    );
  });
  process.once('disconnect', () => {
    for (const runtime of runtimes.values()) runtime.close();
    agent.destroy();
    process.exit(0);
  });
}

/** A v4.channel.k8s.io WebSocket: channel 0 is stdin, 1 stdout, 3 the error (status) channel. */
class Echo {
  readonly opened: Promise<void>;
  private stdout = 0;
  private waiter?: { until: number; resolve: () => void; reject: (error: Error) => void };
  private failure?: Error;

  constructor(private readonly ws: WebSocket) {
    this.opened = new Promise((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res: IncomingMessage) => reject(new Error(`exec upgrade answered ${res.statusCode} ${res.statusMessage}`)));
      ws.once('error', reject);
    });
    ws.on('message', (data: Buffer) => {
      if (data.length === 0) return;
      if (data[0] === 1) {
        this.stdout += data.length - 1;
        if (this.waiter && this.stdout >= this.waiter.until) {
          const { resolve } = this.waiter;
          this.waiter = undefined;
          resolve();
        }
      } else if (data[0] === 3 && data.length > 1) {
        this.fail(new Error(`exec status: ${data.subarray(1).toString()}`));
      }
    });
    ws.on('close', () => this.fail(new Error('the exec connection closed')));
    ws.on('error', (error) => this.fail(error));
  }

  roundTrip(payload: Buffer): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiter = { until: this.stdout + payload.length, resolve, reject };
      this.ws.send(Buffer.concat([Buffer.from([0]), payload]));
    });
  }

  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.terminate();
    });
  }

  private fail(error: Error): void {
    this.failure ??= error;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(error);
  }
}

/** The parent's handle on a client process: one request at a time. */
class Client {
  private constructor(private readonly child: ChildProcess) {}

  static start(): Client {
    return new Client(spawnSelf(['--role', 'client'], 'ignore'));
  }

  ask<T>(message: ClientRequestMessage): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the client process exited (${code}) during ${message.kind}`));
      this.child.once('exit', onExit);
      this.child.once('message', (reply: { ok: boolean; result?: T; error?: string }) => {
        this.child.off('exit', onExit);
        if (reply.ok) resolve(reply.result as T);
        else reject(new Error(`client ${message.kind}: ${reply.error}`));
      });
      this.child.send(message);
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    if (this.child.connected) this.child.disconnect();
    else this.child.kill();
    await exited;
  }
}

// ---------------------------------------------------------------------------------------------------
// The kubelet side: a ServerHost with only what each part needs, and an allow-all gate.

const allowAll: RequestGate = { checkRequest: async () => true };

class BenchHost implements ServerHost {
  readonly healthChecks = [];
  readonly pods = new Map<string, V1Pod>();
  getStatsSummary?: ServerHost['getStatsSummary'];
  getContainerLogs: ServerHost['getContainerLogs'] = async () => {
    throw new HostNotFoundError('no logs here');
  };
  getExec: ServerHost['getExec'] = async () => {
    throw new HostNotFoundError('no exec here');
  };

  addPod(namespace: string, name: string, containers: string[]): void {
    this.pods.set(`${namespace}/${name}`, { metadata: { namespace, name, uid: `${name}-uid` }, spec: { containers: containers.map((c) => ({ name: c, image: SIM_IMAGE })) } });
  }
  getPods(): object[] {
    return [];
  }
  async getRunningPods(): Promise<object[]> {
    return [];
  }
  getPodByName(namespace: string, name: string): V1Pod | undefined {
    return this.pods.get(`${namespace}/${name}`);
  }
  getConfigz(): unknown {
    return {};
  }
  async getMachineInfo(): Promise<unknown> {
    return {};
  }
  async getAttach(): Promise<string> {
    throw new HostNotFoundError('no attach here');
  }
  async getPortForward(): Promise<string> {
    throw new HostNotFoundError('no port-forward here');
  }
  async runInContainer(): Promise<Buffer> {
    throw new HostNotFoundError('no run here');
  }
}

async function startServer(host: ServerHost): Promise<{ server: KubeletServer; base: string }> {
  const server = new KubeletServer({ host, address: '127.0.0.1', port: 0, gate: allowAll, logger: noopLogger });
  const port = await server.start();
  return { server, base: `http://127.0.0.1:${port}` };
}

// ---------------------------------------------------------------------------------------------------
// 1. /stats/summary

async function startSimulatedRuntime(dir: string): Promise<{ endpoint: string; child: ChildProcess }> {
  const socket = join(dir, 'sim.sock');
  const child = spawn(process.execPath, [localRuntimeCli, '--socket', socket, '--root-dir', join(dir, 'sim-root'), '--mode', 'simulated'], { stdio: 'ignore' });
  await pollUntil(() => existsSync(socket), 20, 10_000);
  return { endpoint: `unix://${socket}`, child };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await exited;
}

async function statsPart(dir: string): Promise<void> {
  console.log(`\n== 1. GET /stats/summary, ${PODS} pods (simulated local runtime in its own process), ${REQUESTS} sequential requests after 10 warm-up ==`);
  console.log(`modules loaded (@kubernetes/client-node, which the server's auth needs, is ~130 MiB of it): ${rss()}`);
  const { endpoint, child } = await startSimulatedRuntime(dir);
  const runtime = new RemoteRuntimeService({ endpoint });
  const images = new RemoteImageService({ endpoint });
  const client = Client.start();
  let server: KubeletServer | undefined;
  try {
    const podLogsDir = join(dir, 'pod-logs');
    await images.pullImage({ image: SIM_IMAGE });
    await Promise.all(
      Array.from({ length: PODS }, async (_, i) => {
        const name = `stats-${i}`;
        const uid = `stats-uid-${i}`;
        const logDirectory = join(podLogsDir, `bench_${name}_${uid}`);
        await mkdir(join(logDirectory, 'app'), { recursive: true });
        await writeFile(join(logDirectory, 'app', '0.log'), `2026-01-01T00:00:00.000000000Z stdout F started ${name}\n`);
        const config: runtimeapi.PodSandboxConfigInit = {
          metadata: { name, namespace: 'bench', uid, attempt: 0 },
          hostname: name,
          logDirectory,
          labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'bench', 'io.kubernetes.pod.uid': uid },
          linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
        };
        const sandboxId = await runtime.runPodSandbox(config);
        const containerId = await runtime.createContainer(
          sandboxId,
          {
            metadata: { name: 'app', attempt: 0 },
            image: { image: SIM_IMAGE },
            command: ['sleep', '3600'],
            logPath: 'app/0.log',
            labels: { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'bench', 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': 'app' },
          },
          config,
        );
        await runtime.startContainer(containerId);
      }),
    );
    console.log(`${PODS} sandboxes + ${PODS} running containers created; ${rss()}`);

    // Reference: the CRI calls on the provider's critical path, in its order, timed from this process.
    const bareOnce = () =>
      Promise.all([
        (async () => {
          await runtime.listContainers({});
          await runtime.listPodSandbox({});
          return runtime.listPodSandboxStats({});
        })(),
        images.imageFsInfo(),
      ]);
    const provider = new SummaryProvider({ runtimeService: runtime, imageService: images, nodeName: 'bench-node', rootDir: join(dir, 'kubelet-root'), podLogsDir, logger: noopLogger });
    await mkdir(join(dir, 'kubelet-root'), { recursive: true });
    const host = new BenchHost();
    host.getStatsSummary = (onlyCpuAndMemory) => (onlyCpuAndMemory ? provider.getCPUAndMemoryStats() : provider.get(true));
    const started = await startServer(host);
    server = started.server;
    const url = `${started.base}/stats/summary`;
    const summary = await provider.get(true);
    if (summary.pods.length !== PODS) console.log(`WARNING: the summary has ${summary.pods.length} pods, expected ${PODS}`);

    for (let i = 0; i < 10; i++) await bareOnce();
    await client.ask<GetResult>({ kind: 'get', url, count: 0, warmup: 10 });
    // Alternate blocks of 10, so a noisy moment on a small machine does not land on one side only.
    const bare: number[] = [];
    const ours: number[] = [];
    let bareCpu = 0;
    let oursCpu = 0;
    let sandboxStats = 0;
    let body = 0;
    gc();
    for (let done = 0; done < REQUESTS; done += 10) {
      const n = Math.min(10, REQUESTS - done);
      let cpu = process.cpuUsage();
      for (let i = 0; i < n; i++) {
        const start = performance.now();
        const [stats] = await bareOnce();
        bare.push(performance.now() - start);
        sandboxStats = stats.length;
      }
      bareCpu += cpuMs(cpu);
      cpu = process.cpuUsage();
      const r = await client.ask<GetResult>({ kind: 'get', url, count: n, warmup: 0 });
      oursCpu += cpuMs(cpu);
      ours.push(...r.latenciesMs);
      body = r.bytes;
    }
    bareCpu /= bare.length;
    oursCpu /= ours.length;
    console.log(
      `reference, bare CRI ListContainers -> ListPodSandbox -> ListPodSandboxStats (+ ImageFsInfo alongside), ${sandboxStats} sandbox stats: p50 ${fmt(pct(bare, 50))} ms  p99 ${fmt(pct(bare, 99))} ms  CPU ${fmt(bareCpu)} ms/req  ${rss()}`,
    );
    const l = ours;
    console.log(`ours, GET /stats/summary via KubeletServer + SummaryProvider (${summary.pods.length} pods, body ${(body / 1024).toFixed(0)} KiB): p50 ${fmt(pct(l, 50))} ms  p99 ${fmt(pct(l, 99))} ms  kubelet CPU ${fmt(oursCpu)} ms/req  ${rss()}`);
    console.log(`ratio summary / bare CRI: p50 ${ratio(pct(l, 50), pct(bare, 50))}  p99 ${ratio(pct(l, 99), pct(bare, 99))}  kubelet CPU ${ratio(oursCpu, bareCpu)}`);
  } finally {
    await client.stop();
    await server?.stop();
    runtime.close();
    images.close();
    await stopChild(child);
  }
}

// ---------------------------------------------------------------------------------------------------
// 2. /containerLogs

/** A log of about `bytes` bytes in CRI format; returns the bytes readLogs should write (the texts and their newlines). */
async function writeCriLog(path: string, bytes: number): Promise<number> {
  let written = 0;
  let output = 0;
  let n = 0;
  let time = Date.parse('2026-01-01T00:00:00Z');
  while (written < bytes) {
    const lines: CriLogLineInit[] = [];
    for (let i = 0; i < 10_000; i++, n++) {
      // A pseudo-random length between 20 and 180 characters; every 50th line split in a partial and its rest.
      const text = `line ${n} ${'lorem ipsum dolor sit amet '.repeat(7).slice(0, 20 + ((n * 7919) % 160))}`;
      const stream = n % 10 === 0 ? 'stderr' : 'stdout';
      time += 1;
      if (n % 50 === 0) {
        lines.push({ time, stream, tag: 'P', text: text.slice(0, 10) }, { time, stream, tag: 'F', text: text.slice(10) });
      } else {
        lines.push({ time, stream, text });
      }
      output += text.length + 1;
    }
    await appendCriLog(path, lines);
    written = (await stat(path)).size;
  }
  return output;
}

/** Samples the RSS every 20 ms while `work` runs; returns its result and the peak. */
async function withPeakRss<T>(work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  try {
    const result = await work();
    return { result, peak: Math.max(peak, process.memoryUsage.rss()) };
  } finally {
    clearInterval(timer);
  }
}

async function logsPart(dir: string): Promise<void> {
  console.log(`\n== 2a. /containerLogs throughput: a ${LOG_MB} MB CRI log, no follow, median of ${ROUNDS} rounds ==`);
  const client = Client.start();
  const host = new BenchHost();
  let aborts = 0;
  let started = 0;
  let settled = 0;
  const logPaths = new Map<string, string>();
  const running = { containerStatus: async (containerId: string) => ({ status: { id: containerId, state: runtimeapi.ContainerState.CONTAINER_RUNNING } }) as runtimeapi.ContainerStatusResponse };
  // As the kubelet's host: zero bytes first (the head goes out), then readLogs on the container's file.
  host.getContainerLogs = async (pod, container, options, out, signal) => {
    const path = logPaths.get(`${pod.metadata!.name}/${container}`);
    if (!path) throw new HostNotFoundError('no such log');
    started++;
    signal.addEventListener('abort', () => aborts++, { once: true });
    try {
      out.write(Buffer.alloc(0));
      await readLogs(path, `${pod.metadata!.name}-${container}`, options, { runtime: running, stdout: out, stderr: out, logger: noopLogger, signal });
    } finally {
      settled++;
    }
  };
  const { server, base } = await startServer(host);
  const raw = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    createReadStream(logPaths.get('logger/app')!).pipe(res);
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', () => resolve()));
  try {
    const big = join(dir, 'logger', 'app', '0.log');
    await mkdir(join(dir, 'logger', 'app'), { recursive: true });
    let t = performance.now();
    const expectedOutput = await writeCriLog(big, LOG_MB * 1e6);
    const size = (await stat(big)).size;
    console.log(`wrote ${(size / 1e6).toFixed(1)} MB of CRI log in ${fmt(performance.now() - t)} ms (readLogs output: ${(expectedOutput / 1e6).toFixed(1)} MB); ${rss()}`);
    logPaths.set('logger/app', big);
    host.addPod('bench', 'logger', ['app']);
    const mbps = (ms: number) => size / 1e6 / (ms / 1000);

    const fsMs: number[] = [];
    const fsCpu: number[] = [];
    const rawMs: number[] = [];
    const oursMs: number[] = [];
    const oursCpu: number[] = [];
    let oursPeak = 0;
    let fsPeak = 0;
    let oursBytes = 0;
    for (let round = 0; round < ROUNDS + 1; round++) {
      // Round 0 warms the page cache and the code paths; it is not counted.
      gc();
      let cpu = process.cpuUsage();
      t = performance.now();
      const fsRun = await withPeakRss(() => pipeline(createReadStream(big), new Writable({ write: (_chunk, _encoding, callback) => callback() })));
      if (round > 0) {
        fsMs.push(performance.now() - t);
        fsCpu.push(cpuMs(cpu));
        fsPeak = Math.max(fsPeak, fsRun.peak);
      }
      const rawRun = await client.ask<GetResult>({ kind: 'get', url: `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`, count: 1, warmup: 0 });
      if (round > 0) rawMs.push(rawRun.latenciesMs[0]!);
      gc();
      cpu = process.cpuUsage();
      const oursRun = await withPeakRss(() => client.ask<GetResult>({ kind: 'get', url: `${base}/containerLogs/bench/logger/app`, count: 1, warmup: 0 }));
      if (round > 0) {
        oursMs.push(oursRun.result.latenciesMs[0]!);
        oursCpu.push(cpuMs(cpu));
        oursPeak = Math.max(oursPeak, oursRun.peak);
      }
      oursBytes = oursRun.result.bytes;
    }
    if (oursBytes !== expectedOutput) console.log(`WARNING: /containerLogs sent ${oursBytes} bytes, expected ${expectedOutput}`);
    console.log(`reference, fs.createReadStream -> discarding Writable: ${mbps(median(fsMs)).toFixed(0)} MB/s  CPU ${fmt(median(fsCpu))} ms  peak RSS ${mib(fsPeak)} MiB`);
    console.log(`also, the raw file over plain node:http to the same client: ${mbps(median(rawMs)).toFixed(0)} MB/s`);
    console.log(
      `ours, GET /containerLogs via KubeletServer + readLogs: ${mbps(median(oursMs)).toFixed(0)} MB/s of log file (${(oursBytes / 1e6).toFixed(1)} MB sent)  kubelet CPU ${fmt(median(oursCpu))} ms  peak RSS ${mib(oursPeak)} MiB  ${rss()}`,
    );
    console.log(
      `ratio ours / reference: throughput ${(mbps(median(oursMs)) / mbps(median(fsMs))).toFixed(3)}x of fs read (${(mbps(median(oursMs)) / mbps(median(rawMs))).toFixed(2)}x of raw HTTP)  CPU ${ratio(median(oursCpu), median(fsCpu))}`,
    );
    console.log(`  rounds (ms): fs ${fsMs.map(fmt).join(', ')}; raw HTTP ${rawMs.map(fmt).join(', ')}; ours ${oursMs.map(fmt).join(', ')}`);

    console.log(`\n== 2b. ${FOLLOW} concurrent follow=true streams on an idle log, held ${FOLLOW_SECONDS} s, then every client disconnects ==`);
    const idle = join(dir, 'idler', 'app', '0.log');
    await mkdir(join(dir, 'idler', 'app'), { recursive: true });
    const idleLines: CriLogLineInit[] = Array.from({ length: 10 }, (_, i) => ({ time: Date.parse('2026-01-01T00:00:00Z') + i, text: `idle line ${i}` }));
    await appendCriLog(idle, idleLines);
    const idleBytes = idleLines.reduce((sum, line) => sum + line.text.length + 1, 0);
    logPaths.set('idler/app', idle);
    host.addPod('bench', 'idler', ['app']);
    started = aborts = settled = 0;
    await sleep(200);
    gc();
    const before = { rss: process.memoryUsage.rss(), heap: process.memoryUsage().heapUsed, fds: openFds() };
    t = performance.now();
    const opened = await client.ask<{ streams: number; bytes: number }>({ kind: 'follow-open', url: `${base}/containerLogs/bench/idler/app?follow=true`, streams: FOLLOW, bytesPerStream: idleBytes });
    const openMs = performance.now() - t;
    const cpu = process.cpuUsage();
    const held = await withPeakRss(() => sleep(FOLLOW_SECONDS * 1000));
    const idleCpuPerSecond = cpuMs(cpu) / FOLLOW_SECONDS;
    const during = { rss: process.memoryUsage.rss(), heap: process.memoryUsage().heapUsed, fds: openFds() };
    t = performance.now();
    await client.ask({ kind: 'follow-close' });
    await pollUntil(() => aborts >= FOLLOW && settled >= FOLLOW, 10, 15_000).catch(() => undefined);
    const releaseMs = performance.now() - t;
    await sleep(500);
    gc();
    const after = { rss: process.memoryUsage.rss(), heap: process.memoryUsage().heapUsed, fds: openFds() };
    const row = (what: string, m: { rss: number; heap: number; fds: number }) => `${what}: RSS ${mib(m.rss)} MiB  heap ${mib(m.heap)} MiB  open fds ${m.fds}`;
    console.log(row('before', before));
    console.log(
      `${row(`with ${opened.streams} streams`, during)}  (peak RSS ${mib(held.peak)} MiB; all open and caught up in ${fmt(openMs)} ms; idle kubelet CPU ${fmt(idleCpuPerSecond)} ms/s)`,
    );
    console.log(`${row('after they are gone', after)}  (the host saw ${started} streams start, ${aborts} aborts, ${settled} calls return, within ${fmt(releaseMs)} ms)`);
    console.log(
      `ratio with streams / before: RSS ${ratio(during.rss, before.rss)} (+${((during.rss - before.rss) / 1024 / FOLLOW).toFixed(1)} KiB/stream)  after / before: RSS ${ratio(after.rss, before.rss)}  heap ${ratio(after.heap, before.heap)}  fds ${after.fds - before.fds >= 0 ? '+' : ''}${after.fds - before.fds}`,
    );
  } finally {
    await client.stop();
    await server.stop();
    await new Promise<void>((resolve) => raw.close(() => resolve()));
  }
}

// ---------------------------------------------------------------------------------------------------
// 3. exec on containerd

/** Stops and removes our own sandboxes (named srvbench-*), and nothing else. */
async function removeOurSandboxes(runtime: RemoteRuntimeService): Promise<number> {
  const ours = (await runtime.listPodSandbox({})).filter((s) => s.metadata?.name.startsWith('srvbench-'));
  for (const sandbox of ours) {
    for (const container of await runtime.listContainers({ podSandboxId: sandbox.id })) {
      await runtime.stopContainer(container.id, 0).catch(() => undefined);
      await runtime.removeContainer(container.id).catch(() => undefined);
    }
    await runtime.stopPodSandbox(sandbox.id).catch(() => undefined);
    await runtime.removePodSandbox(sandbox.id).catch(() => undefined);
  }
  return ours.length;
}

async function execPart(dir: string): Promise<void> {
  console.log(`\n== 3. exec \`cat\` over WebSocket (${WS_PROTOCOL}) on containerd: ${SETUPS} setups, ${ROUND_TRIPS} echo round trips of ${ECHO_PAYLOAD.length} bytes ==`);
  let env;
  try {
    env = readContainerdEnv();
  } catch (error) {
    console.log(`skipped: ${(error as Error).message}`);
    return;
  }
  const runtime = new RemoteRuntimeService({ endpoint: env.endpoint });
  const client = Client.start();
  let server: KubeletServer | undefined;
  try {
    const leftovers = await removeOurSandboxes(runtime);
    if (leftovers > 0) console.log(`removed ${leftovers} srvbench-* sandbox(es) left from an earlier run`);
    const uid = `srvbench-exec-${process.pid}`;
    const logDirectory = join(dir, 'exec-logs');
    await mkdir(logDirectory, { recursive: true });
    const namespaceOptions = { network: runtimeapi.NamespaceMode.NODE, pid: runtimeapi.NamespaceMode.CONTAINER, ipc: runtimeapi.NamespaceMode.POD };
    const config: runtimeapi.PodSandboxConfigInit = {
      metadata: { name: EXEC_POD, namespace: EXEC_NAMESPACE, uid, attempt: 0 },
      // A host-network pod needs an empty hostname: without a private UTS namespace runc cannot set one.
      hostname: '',
      logDirectory,
      labels: { 'io.kubernetes.pod.name': EXEC_POD, 'io.kubernetes.pod.namespace': EXEC_NAMESPACE, 'io.kubernetes.pod.uid': uid },
      linux: { securityContext: { namespaceOptions } },
    };
    const t = performance.now();
    const sandboxId = await runtime.runPodSandbox(config);
    const containerId = await runtime.createContainer(
      sandboxId,
      {
        metadata: { name: 'app', attempt: 0 },
        image: { image: env.busyboxImage },
        command: ['sleep', '3600'],
        logPath: 'app/0.log',
        labels: { 'io.kubernetes.container.name': 'app' },
        linux: { securityContext: { namespaceOptions } },
      },
      config,
    );
    await runtime.startContainer(containerId);
    console.log(`sandbox ${EXEC_POD} and its container started in ${fmt(performance.now() - t)} ms; ${rss()}`);

    const host = new BenchHost();
    host.addPod(EXEC_NAMESPACE, EXEC_POD, ['app']);
    host.getExec = async (_pod, _uid, _container, cmd, streams) => (await runtime.exec({ containerId, cmd, ...streams })).url;
    const started = await startServer(host);
    server = started.server;
    const direct: ExecTarget = { via: 'runtime', endpoint: env.endpoint, containerId };
    const kubelet: ExecTarget = { via: 'kubelet', url: `${started.base.replace('http:', 'ws:')}/exec/${EXEC_NAMESPACE}/${EXEC_POD}/app?command=cat&input=1&output=1` };

    // Warm both paths, then alternate in blocks so neither always runs on a warmer machine.
    await client.ask<ExecSetupResult>({ kind: 'exec-setup', target: direct, count: 2 });
    await client.ask<ExecSetupResult>({ kind: 'exec-setup', target: kubelet, count: 2 });
    const setups = { direct: { openMs: [] as number[], firstEchoMs: [] as number[] }, kubelet: { openMs: [] as number[], firstEchoMs: [] as number[] } };
    let setupCpu = 0;
    for (let done = 0; done < SETUPS; done += 5) {
      const n = Math.min(5, SETUPS - done);
      for (const [name, target] of [['direct', direct], ['kubelet', kubelet]] as const) {
        const cpu = process.cpuUsage();
        const r = await client.ask<ExecSetupResult>({ kind: 'exec-setup', target, count: n });
        if (name === 'kubelet') setupCpu += cpuMs(cpu);
        setups[name].openMs.push(...r.openMs);
        setups[name].firstEchoMs.push(...r.firstEchoMs);
      }
    }
    const trips = { direct: [] as number[], kubelet: [] as number[] };
    let proxyCpu = 0;
    for (let half = 0; half < 2; half++) {
      trips.direct.push(...(await client.ask<GetResult>({ kind: 'exec-round-trips', target: direct, count: Math.ceil(ROUND_TRIPS / 2) })).latenciesMs);
      const cpu = process.cpuUsage();
      trips.kubelet.push(...(await client.ask<GetResult>({ kind: 'exec-round-trips', target: kubelet, count: Math.ceil(ROUND_TRIPS / 2) })).latenciesMs);
      proxyCpu += cpuMs(cpu);
    }
    const s = setups;
    console.log(
      `reference, CRI Exec + WebSocket straight to containerd's streaming URL: setup (to 101) p50 ${fmt(pct(s.direct.openMs, 50))} ms  p99 ${fmt(pct(s.direct.openMs, 99))} ms; to first echo p50 ${fmt(pct(s.direct.firstEchoMs, 50))} ms; round trip p50 ${fmt(pct(trips.direct, 50))} ms  p99 ${fmt(pct(trips.direct, 99))} ms  ${rss()}`,
    );
    console.log(
      `ours, WebSocket to KubeletServer /exec (host calls CRI Exec, server proxies): setup (to 101) p50 ${fmt(pct(s.kubelet.openMs, 50))} ms  p99 ${fmt(pct(s.kubelet.openMs, 99))} ms; to first echo p50 ${fmt(pct(s.kubelet.firstEchoMs, 50))} ms, kubelet CPU ${fmt(setupCpu / s.kubelet.openMs.length)} ms/setup; round trip p50 ${fmt(pct(trips.kubelet, 50))} ms  p99 ${fmt(pct(trips.kubelet, 99))} ms  kubelet CPU ${fmt((proxyCpu / trips.kubelet.length) * 1000)} us/round trip  ${rss()}`,
    );
    console.log(
      `ratio ours / direct: setup p50 ${ratio(pct(s.kubelet.openMs, 50), pct(s.direct.openMs, 50))}  first echo p50 ${ratio(pct(s.kubelet.firstEchoMs, 50), pct(s.direct.firstEchoMs, 50))}  round trip p50 ${ratio(pct(trips.kubelet, 50), pct(trips.direct, 50))}  p99 ${ratio(pct(trips.kubelet, 99), pct(trips.direct, 99))}`,
    );
  } finally {
    await client.stop();
    await server?.stop();
    const removed = await removeOurSandboxes(runtime).catch((error: unknown) => {
      console.log(`WARNING: could not remove the srvbench-* sandboxes: ${(error as Error).message}`);
      return 0;
    });
    console.log(`removed ${removed} srvbench-* sandbox(es)`);
    runtime.close();
  }
}

// ---------------------------------------------------------------------------------------------------

const PARTS: Record<string, (dir: string) => Promise<void>> = { stats: statsPart, logs: logsPart, exec: execPart };

async function partRole(): Promise<void> {
  const part = PARTS[values.parts];
  if (!part) throw new Error(`unknown part ${JSON.stringify(values.parts)}: want one of ${Object.keys(PARTS).join(', ')}`);
  const dir = await mkdtemp(join(tmpdir(), `srvbench-${values.parts}-`));
  try {
    await part(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  // Everything the part started must be released: a process still alive now has a leaked handle.
  setTimeout(() => {
    console.log(`WARNING: part ${values.parts} left handles open: ${JSON.stringify(process.getActiveResourcesInfo())}`);
    process.exit(0);
  }, 3000).unref();
}

async function mainRole(): Promise<void> {
  const parts = values.parts.split(',').filter(Boolean);
  console.log(`Kubelet server benchmark: node ${process.version}, ${cpus().length} CPUs; parts ${parts.join(', ')}`);
  console.log('Each part runs in its own process (RSS = that process: server, host, CRI clients); HTTP and WebSocket clients run in another.');
  const forwarded = process.argv.slice(2).filter((_, i, all) => !['--parts', '--role'].includes(all[i]!) && !['--parts', '--role'].includes(all[i - 1]!) && !/^--(parts|role)=/.test(all[i]!));
  const start = performance.now();
  let failed = 0;
  for (const part of parts) {
    const child = spawnSelf(['--role', 'part', '--parts', part, ...forwarded], 'inherit');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    if (code !== 0) {
      failed++;
      console.log(`part ${part} failed (exit ${code})`);
    }
  }
  console.log(`\ndone in ${((performance.now() - start) / 1000).toFixed(0)} s`);
  if (failed > 0) process.exitCode = 1;
}

const roles: Record<string, () => Promise<void>> = { main: mainRole, part: partRole, client: clientRole };
const role = roles[values.role];
if (!role) throw new Error(`unknown role ${JSON.stringify(values.role)}`);
await role().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
