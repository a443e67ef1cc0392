/**
 * cri-client overhead: median latency of Version and of a full sandbox + container start/stop cycle
 * through RemoteRuntimeService, against the same calls through a bare @grpc/grpc-js client built from
 * the same service definitions and codec (no typed errors, no promise wrapper, no cancellation plumbing). The bare calls carry the
 * same deadline as the wrapped ones, because the deadline is part of the call on the wire (grpc-timeout),
 * not of the wrapper; the cost of the deadline itself is printed separately against a bare call without one.
 * Calls alternate between the clients so all see the same machine state. Runs against containerd when tools/containerd/start.sh has run,
 * and against the local runtime in simulated mode.
 *
 * First, the codec alone: what one call's messages cost to encode and decode at both ends (client request
 * serialize, server request deserialize, server response serialize, client response deserialize) with
 * @grpc/proto-loader (fromObject + encode, decode + toObject) and with cri-client's generated codec, for typical
 * kubelet calls, wall and CPU time per call, alternating in the same run.
 *
 *   tsx bench/cri-overhead.bench.ts [--version-calls N] [--cycles N] [--codec-ms N]
 */
import * as grpc from '@grpc/grpc-js';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
  RemoteRuntimeService,
  grpcTarget,
  loadCriPackage,
  loadCriServices,
  type runtimeapi,
} from '@kubelet-ts/cri-client';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { readContainerdEnv } from '../src/index.js';
import { containerConfig, containers, listContainerStats, listPodSandboxStats, podSandboxConfig } from './cri-samples.js';

const { values } = parseArgs({
  options: {
    'version-calls': { type: 'string', default: '2000' },
    cycles: { type: 'string', default: '30' },
    'codec-ms': { type: 'string', default: '1500' },
  },
});
const codecMs = Number(values['codec-ms']);
const versionCalls = Number(values['version-calls']);
const cycles = Number(values.cycles);

type Call = (method: string, request: unknown) => Promise<any>;

function bareClient(endpoint: string, deadlineMs: number): { call: Call; close(): void } {
  const Client = loadCriServices().RuntimeService;
  const client = new Client(grpcTarget(endpoint), grpc.credentials.createInsecure()) as unknown as Record<string, any> & grpc.Client;
  return {
    call: (method, request) =>
      new Promise((resolve, reject) => {
        const options: grpc.CallOptions = deadlineMs > 0 ? { deadline: Date.now() + deadlineMs } : {};
        client[method](request, options, (error: Error | null, response: unknown) => (error ? reject(error) : resolve(response)));
      }),
    close: () => client.close(),
  };
}

function wrappedClient(runtime: RemoteRuntimeService): Call {
  return (method, request: any) => {
    switch (method) {
      case 'Version': return runtime.version(request.version);
      case 'RunPodSandbox': return runtime.runPodSandbox(request.config).then((podSandboxId) => ({ podSandboxId }));
      case 'CreateContainer': return runtime.createContainer(request.podSandboxId, request.config, request.sandboxConfig).then((containerId) => ({ containerId }));
      case 'StartContainer': return runtime.startContainer(request.containerId);
      case 'StopContainer': return runtime.stopContainer(request.containerId, request.timeout);
      case 'RemoveContainer': return runtime.removeContainer(request.containerId);
      case 'StopPodSandbox': return runtime.stopPodSandbox(request.podSandboxId);
      case 'RemovePodSandbox': return runtime.removePodSandbox(request.podSandboxId);
      default: throw new Error(`no wrapper mapping for ${method}`);
    }
  };
}

let podCounter = 0;
async function podCycle(call: Call, image: string, logRoot: string): Promise<number> {
  const uid = `bench-${process.pid}-${++podCounter}`;
  const logDirectory = join(logRoot, uid);
  mkdirSync(logDirectory, { recursive: true });
  const config: runtimeapi.PodSandboxConfigInit = {
    metadata: { name: `bench-${podCounter}`, namespace: 'bench', uid, attempt: 0 },
    hostname: '',
    logDirectory,
    linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
  };
  const start = performance.now();
  const { podSandboxId } = await call('RunPodSandbox', { config });
  const { containerId } = await call('CreateContainer', {
    podSandboxId,
    sandboxConfig: config,
    config: { metadata: { name: 'c', attempt: 0 }, image: { image }, command: ['sleep', '3600'], logPath: 'c/0.log', linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } } },
  });
  await call('StartContainer', { containerId });
  await call('StopContainer', { containerId, timeout: 0 });
  await call('RemoveContainer', { containerId });
  await call('StopPodSandbox', { podSandboxId });
  await call('RemovePodSandbox', { podSandboxId });
  return performance.now() - start;
}

const median = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function measure(name: string, endpoint: string, image: string, logRoot: string, cycleCount: number) {
  const runtime = new RemoteRuntimeService({ endpoint });
  const bare = bareClient(endpoint, DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS);
  const bareNoDeadline = bareClient(endpoint, 0);
  const wrapped = wrappedClient(runtime);
  try {
    // Warm both channels and the runtime.
    for (let i = 0; i < 50; i++) {
      await wrapped('Version', { version: 'v1' });
      await bare.call('Version', { version: 'v1' });
    }
    await podCycle(wrapped, image, logRoot);
    await podCycle(bare.call, image, logRoot);

    const versionWrapped: number[] = [];
    const versionBare: number[] = [];
    const versionBareNoDeadline: number[] = [];
    const versionClients = [[wrapped, versionWrapped], [bare.call, versionBare], [bareNoDeadline.call, versionBareNoDeadline]] as const;
    for (let i = 0; i < versionCalls; i++) {
      // Rotate which goes first so none always runs on a warmer path.
      const order = [...versionClients.slice(i % 3), ...versionClients.slice(0, i % 3)];
      for (const [call, samples] of order) {
        const start = performance.now();
        await call('Version', { version: 'v1' });
        samples.push(performance.now() - start);
      }
    }
    const cycleWrapped: number[] = [];
    const cycleBare: number[] = [];
    for (let i = 0; i < cycleCount; i++) {
      if (i % 2 === 0) {
        cycleWrapped.push(await podCycle(wrapped, image, logRoot));
        cycleBare.push(await podCycle(bare.call, image, logRoot));
      } else {
        cycleBare.push(await podCycle(bare.call, image, logRoot));
        cycleWrapped.push(await podCycle(wrapped, image, logRoot));
      }
    }
    const row = (what: string, w: number[], b: number[]) =>
      console.log(
        `${name.padEnd(22)} ${what.padEnd(34)} cri-client p50 ${median(w).toFixed(3).padStart(9)} ms   bare grpc-js p50 ${median(b).toFixed(3).padStart(9)} ms   ratio ${(median(w) / median(b)).toFixed(3)}`,
      );
    row(`Version (${versionCalls} calls)`, versionWrapped, versionBare);
    console.log(
      `${name.padEnd(22)} ${'  of which the deadline itself'.padEnd(34)} bare with deadline p50 ${median(versionBare).toFixed(3)} ms vs without ${median(versionBareNoDeadline).toFixed(3)} ms   ratio ${(median(versionBare) / median(versionBareNoDeadline)).toFixed(3)}`,
    );
    row(`sandbox+container cycle (${cycleCount})`, cycleWrapped, cycleBare);
  } finally {
    runtime.close();
    bare.close();
    bareNoDeadline.close();
  }
}

type MethodCodec = {
  requestSerialize(value: unknown): Buffer;
  requestDeserialize(bytes: Buffer): unknown;
  responseSerialize(value: unknown): Buffer;
  responseDeserialize(bytes: Buffer): unknown;
};

/** One call's messages through a codec, at both ends. */
function roundTrip(codec: MethodCodec, request: unknown, response: unknown): void {
  codec.requestDeserialize(codec.requestSerialize(request));
  codec.responseDeserialize(codec.responseSerialize(response));
}

/** Wall and CPU µs per call of each codec, alternating blocks of calls for about `ms` each in all. */
function codecCost(codecs: MethodCodec[], request: unknown, response: unknown, ms: number): { wall: number; cpu: number }[] {
  for (const codec of codecs) for (let i = 0; i < 50; i++) roundTrip(codec, request, response); // warm up
  let block = 1;
  const probe = performance.now();
  while (performance.now() - probe < 5) {
    for (let i = 0; i < block; i++) roundTrip(codecs[0], request, response);
    block *= 2;
  }
  const totals = codecs.map(() => ({ wall: 0, cpu: 0, calls: 0 }));
  const end = performance.now() + ms;
  for (let round = 0; performance.now() < end || round < 4; round++) {
    for (let k = 0; k < codecs.length; k++) {
      const index = (k + round) % codecs.length;
      const cpu = process.cpuUsage();
      const start = performance.now();
      for (let i = 0; i < block; i++) roundTrip(codecs[index], request, response);
      totals[index].wall += performance.now() - start;
      const used = process.cpuUsage(cpu);
      totals[index].cpu += (used.user + used.system) / 1000;
      totals[index].calls += block;
    }
  }
  return totals.map((total) => ({ wall: (total.wall * 1000) / total.calls, cpu: (total.cpu * 1000) / total.calls }));
}

function measureCodecs() {
  const before = loadCriPackage().RuntimeService.service as unknown as Record<string, MethodCodec>;
  const after = loadCriServices().RuntimeService.service as unknown as Record<string, MethodCodec>;
  const sandbox = podSandboxConfig(1);
  const calls: [string, string, unknown, unknown][] = [
    ['Version', 'Version', { version: 'v1' }, { version: '0.1.0', runtimeName: 'containerd', runtimeVersion: 'v2.1.4', runtimeApiVersion: 'v1' }],
    ['RunPodSandbox', 'RunPodSandbox', { config: sandbox, runtimeHandler: '' }, { podSandboxId: 'a'.repeat(64) }],
    ['CreateContainer', 'CreateContainer', { podSandboxId: 'a'.repeat(64), config: containerConfig(1), sandboxConfig: sandbox }, { containerId: 'b'.repeat(64) }],
    ['ListContainers (110)', 'ListContainers', { filter: {} }, { containers: containers(110) }],
    ['ListContainerStats (110)', 'ListContainerStats', { filter: {} }, { stats: listContainerStats(110) }],
    ['ListPodSandboxStats (110)', 'ListPodSandboxStats', { filter: {} }, { stats: listPodSandboxStats(110) }],
  ];
  console.log('CRI codec per call (both ends: request and response, each encoded and decoded), proto-loader vs generated codec, alternating');
  for (const [label, method, request, response] of calls) {
    const [old, now] = codecCost([before[method], after[method]], request, response, codecMs);
    const bytes = before[method].requestSerialize(request).length + before[method].responseSerialize(response).length;
    console.log(
      `codec  ${label.padEnd(26)} ${String(bytes).padStart(7)} B   proto-loader ${old.wall.toFixed(1).padStart(8)} µs (CPU ${old.cpu.toFixed(1).padStart(8)} µs)   generated ${now.wall.toFixed(1).padStart(8)} µs (CPU ${now.cpu.toFixed(1).padStart(8)} µs)   ratio ${(now.wall / old.wall).toFixed(3)} (CPU ${(now.cpu / old.cpu).toFixed(3)})`,
    );
  }
}

measureCodecs();
console.log('cri-client overhead vs bare @grpc/grpc-js (same service definitions and codec, same runtime, alternating calls); target ratio <= 1.05');
const dir = mkdtempSync(join(tmpdir(), 'cri-bench-'));
const local = new LocalRuntime({ socketPath: join(dir, 'sim.sock'), mode: 'simulated', rootDir: join(dir, 'root') });
await local.start();
try {
  await measure('local-runtime (sim)', local.endpoint, 'localhost/kubelet-ts/busybox:1', join(dir, 'logs'), cycles * 10);
} finally {
  await local.stop();
}
let containerd;
try {
  containerd = readContainerdEnv();
} catch (error) {
  console.log(`containerd: not measured (${(error as Error).message})`);
}
if (containerd) {
  const logRoot = mkdtempSync(join(containerd.root, 'bench-logs-'));
  try {
    await measure('containerd', containerd.endpoint, containerd.busyboxImage, logRoot, cycles);
  } finally {
    rmSync(logRoot, { recursive: true, force: true });
  }
}
rmSync(dir, { recursive: true, force: true });
