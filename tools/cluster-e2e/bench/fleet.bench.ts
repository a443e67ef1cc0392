// `kubelet fleet` (N real kubelets in one process on the simulated runtime) against the real control plane, beside one
// Go kubelet v1.20.2 process on the same simulated runtime over CRI (local-runtime --mode simulated; the Go kubelet
// speaks CRI v1alpha2, relayed byte for byte to the runtime's v1): the kubemark comparison. In one run:
//   - per-node cost: idle RSS per node ((RSS(N) - RSS(1)) / (N - 1)), idle CPU per node, CPU per pod start, API requests
//     per node per minute and per pod start, each as fleet / Go, with the targets (<= 2 MiB and <= 0.5 millicore per
//     idle node). API requests are each agent's own: the Go kubelet's rest_client_requests_total, and for the fleet
//     bench/fleet-request-counter.mjs preloaded into it (node --import; Node's HTTP diagnostics channels), since the API
//     server's apiserver_request_total has no client label and other sessions share the control plane;
//   - scale, per fleet size: time to all nodes Ready, 10 pods per node created and scheduled by the real scheduler,
//     pods per second from first scheduled to last Running, scheduled -> Running and created -> Running p50/p99 (as this
//     bench's one pod watch sees them), the fleet's, kube-apiserver's and etcd's CPU idle and under the pod load (which
//     saturates first), the fleet's RSS idle and with its pods;
//   - the moonshot lines: 1,000 nodes and 10,000 pods within 4 GiB, pod start p99 at 100 nodes within the 5 s SLO,
//     measured as the SLO is (ClusterLoader2's latency pods): after the 10 per node, 100 more created at 5 per second.
//
//   npx tsx tools/cluster-e2e/bench/fleet.bench.ts                       # quick: 20 nodes
//   FLEET_BENCH_SIZES=100,500,1000 npx tsx tools/cluster-e2e/bench/fleet.bench.ts
// Env: FLEET_BENCH_SIZES (default 20), FLEET_BENCH_PODS_PER_NODE (10), FLEET_BENCH_IDLE_SECONDS (idle window, 60),
// FLEET_BENCH_SETTLE_SECONDS (15), FLEET_BENCH_LATENCY_PODS (100), FLEET_BENCH_LATENCY_QPS (5), FLEET_BENCH_KEEP=1
// (keep each run's directory and logs), FLEET_BENCH_GO=0 (no Go kubelet), FLEET_BENCH_FLEET=0 (the Go kubelet alone,
// its figures on stderr), FLEET_BENCH_FLEET_ARGS (more flags for every fleet node), KUBELET_TS_BIN (the kubelet
// binary, default apps/kubelet/dist/kubelet.mjs).
//
// The control plane is used as it runs (started only when it is not); the fleet's nodes carry a taint and a label of
// this bench's own, so other clients' pods stay off them, and are deleted with their pods after each size.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { processResources, type ProcessResources } from '@kubelet-ts/core';
import { KubeletProcess, ensureCluster, nodeKubeconfig, readClusterEnv, repoRoot, unmountAndRemove, waitFor, type ClusterEnv } from '../src/index.js';
import { startCriAlphaRelay } from '../src/fleet-bench-cri-alpha.js';
import {
  AdminApi,
  BenchProcess,
  PodTimeline,
  apiserverRequests,
  benchPod,
  componentPid,
  counterSum,
  delta,
  forEachLimited,
  percentile,
  readyNodes,
  total,
} from '../src/fleet-bench.js';

const envInt = (name: string, fallback: number) => Number.parseInt(process.env[name] ?? String(fallback), 10);
const sizes = (process.env.FLEET_BENCH_SIZES ?? '20').split(',').map((n) => Number.parseInt(n, 10)).filter((n) => n > 0);
const podsPerNode = envInt('FLEET_BENCH_PODS_PER_NODE', 10);
const idleSeconds = envInt('FLEET_BENCH_IDLE_SECONDS', 60);
const settleSeconds = envInt('FLEET_BENCH_SETTLE_SECONDS', 15);
const latencyPods = envInt('FLEET_BENCH_LATENCY_PODS', 100);
const latencyQps = envInt('FLEET_BENCH_LATENCY_QPS', 5);
const withGo = process.env.FLEET_BENCH_GO !== '0';
const fleetExtraArgs = (process.env.FLEET_BENCH_FLEET_ARGS ?? '').split(' ').filter(Boolean);
const kubeletBin = process.env.KUBELET_TS_BIN ?? join(repoRoot, 'apps/kubelet/dist/kubelet.mjs');
const localRuntimeCli = join(repoRoot, 'packages/local-runtime/dist/cli.js');
// The same API rates for both (the Go kubelet's 1.20 defaults of 5 and 10 alone make it several times slower).
const rates = ['--kube-api-qps=50', '--kube-api-burst=100', '--event-qps=50', '--event-burst=100'];
const BENCH_LABEL = 'kubelet-ts.io/bench';
const FLEET_BASE_PORT = 26000; // nodes on 26000..26999 at 1,000 (the fleet e2e uses 24249 and up)
const GO_PORT = 10350;
const COUNTER_PORT = 25999;
const counterModule = pathToFileURL(join(repoRoot, 'tools/cluster-e2e/bench/fleet-request-counter.mjs')).href;

const mib = (bytes: number) => bytes / (1 << 20);
/** Pod creations the API server refused with 5xx/429 and that were retried. */
let apiServerRefusals = 0;
const log = (text: string) => console.error(`${new Date().toISOString().slice(11, 19)} ${text}`);

/** CPU seconds of several processes over a window. */
class CpuWindow {
  private readonly before: Map<string, ProcessResources>;
  private readonly started = performance.now();

  constructor(private readonly pids: Record<string, number | undefined>) {
    this.before = new Map(Object.entries(pids).flatMap(([name, pid]) => (pid === undefined ? [] : [[name, processResources(pid)]])));
  }

  /** Seconds elapsed, and per process CPU seconds used and cores (CPU seconds per second). */
  end(): { seconds: number; cpu: Map<string, number>; cores: Map<string, number>; rss: Map<string, number> } {
    const seconds = (performance.now() - this.started) / 1000;
    const cpu = new Map<string, number>();
    const cores = new Map<string, number>();
    const rss = new Map<string, number>();
    for (const [name, before] of this.before) {
      const after = processResources(this.pids[name]!);
      cpu.set(name, after.cpuSeconds - before.cpuSeconds);
      cores.set(name, (after.cpuSeconds - before.cpuSeconds) / seconds);
      rss.set(name, after.rssBytes);
    }
    return { seconds, cpu, cores, rss };
  }
}

interface Idle {
  rssMiB: number;
  /** CPU seconds per second of the node agent (the Go kubelet, or the whole fleet). */
  cores: number;
  apiserverCores?: number;
  etcdCores?: number;
  /** Requests the API server counted (watches excluded) per minute: every client's, this bench's and other sessions'. */
  apiserverPerMinute: number;
  /** The agent's own requests to the API server per minute (the Go kubelet's rest_client_requests_total, the fleet's counter). */
  clientPerMinute?: number;
  /** The same by method (Go) or by verb and resource (the fleet). */
  clientByKeyPerMinute: Map<string, number>;
}

/** The agent's own API requests so far, by key. */
type ClientCounts = () => Promise<Map<string, number> | undefined>;

interface PodLoad {
  pods: number;
  seconds: number;
  /** CPU seconds of the agent during the load, minus its idle rate for as long. */
  agentCpuSeconds: number;
  /** The agent's own API requests during the load, and by key. */
  clientRequests?: number;
  clientByKey: Map<string, number>;
  cores: Map<string, number>;
  rssMiB: number;
  scheduledToRunning: number[];
  createdToRunning: number[];
  /** first scheduled -> last Running */
  spanSeconds: number;
}

interface FleetRun {
  nodes: number;
  startedSeconds: number;
  readySeconds: number;
  idle: Idle;
  load: PodLoad;
  latency?: LatencyPhase;
}

let background = { perMinute: 0, apiserverCores: 0, etcdCores: 0 };

/** The Go kubelet's rest_client_requests_total by method, from its /metrics (the admin token authorizes it). */
const goClientCounts =
  (api: AdminApi, base: string): ClientCounts =>
  async () => {
    const res = await api.insecureGet(base, '/metrics').catch(() => undefined);
    if (res?.status !== 200) return undefined;
    const sums = counterSum(res.text, 'rest_client_requests_total', {}, 'method');
    return sums.size === 0 ? undefined : sums;
  };

/** The fleet's requests by verb and resource, from bench/fleet-request-counter.mjs preloaded into it. */
const fleetClientCounts = (): ClientCounts => async () => {
  const res = await fetch(`http://127.0.0.1:${COUNTER_PORT}/`).catch(() => undefined);
  if (!res?.ok) return undefined;
  return new Map(Object.entries((await res.json()) as Record<string, number>));
};

/** An idle window of `idleSeconds`: the agent's CPU and RSS, the control plane's CPU, the requests counted. */
async function idleWindow(api: AdminApi, cluster: ClusterEnv, agentPid: number, clientCounts: ClientCounts): Promise<Idle> {
  const pids = { agent: agentPid, apiserver: componentPid(cluster, 'kube-apiserver'), etcd: componentPid(cluster, 'etcd') };
  const requestsBefore = await apiserverRequests(api);
  const clientBefore = await clientCounts();
  const window = new CpuWindow(pids);
  await sleep(idleSeconds * 1000);
  const cpu = window.end();
  const requests = delta(requestsBefore, await apiserverRequests(api));
  const clientAfter = await clientCounts();
  const minutes = cpu.seconds / 60;
  const client = clientBefore && clientAfter ? delta(clientBefore, clientAfter) : undefined;
  return {
    rssMiB: mib(cpu.rss.get('agent')!),
    cores: cpu.cores.get('agent')!,
    apiserverCores: cpu.cores.get('apiserver'),
    etcdCores: cpu.cores.get('etcd'),
    apiserverPerMinute: total(requests) / minutes,
    // a scrape is a request to the agent's server, not one of its client's: no correction
    clientPerMinute: client && total(client) / minutes,
    clientByKeyPerMinute: new Map([...(client ?? [])].filter(([, count]) => count > 0).map(([key, count]) => [key, count / minutes])),
  };
}

/** The API server's background: requests per minute and CPU with none of this bench's nodes. */
async function measureBackground(api: AdminApi, cluster: ClusterEnv): Promise<void> {
  const seconds = Math.min(idleSeconds, 30);
  const before = await apiserverRequests(api);
  const window = new CpuWindow({ apiserver: componentPid(cluster, 'kube-apiserver'), etcd: componentPid(cluster, 'etcd') });
  await sleep(seconds * 1000);
  const cpu = window.end();
  const requests = delta(before, await apiserverRequests(api));
  const minutes = cpu.seconds / 60;
  background = {
    perMinute: total(requests) / minutes,
    apiserverCores: cpu.cores.get('apiserver') ?? 0,
    etcdCores: cpu.cores.get('etcd') ?? 0,
  };
  log(`background: ${background.perMinute.toFixed(0)} API requests/min, kube-apiserver ${(background.apiserverCores * 1000).toFixed(0)} mcores, etcd ${(background.etcdCores * 1000).toFixed(0)} mcores`);
}

/** Removes a run's directory, or keeps it (its logs) when the run failed. */
function keepOnFailure(dir: string, ok: boolean): void {
  if (ok && !process.env.FLEET_BENCH_KEEP) unmountAndRemove(dir);
  else log(`kept ${dir} (its logs) for a look`);
}

async function freshNamespace(api: AdminApi, namespace: string): Promise<void> {
  await waitFor(`namespace ${namespace} gone`, async () => (await api.call('GET', `/api/v1/namespaces/${namespace}`)).status === 404, 300_000, undefined, 1000);
  await api.json('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  await waitFor(`namespace ${namespace}'s default service account`, async () => (await api.call('GET', `/api/v1/namespaces/${namespace}/serviceaccounts/default`)).status === 200, 60_000);
}

/**
 * Removes what a run left: its pods at once (grace 0), the namespace, its nodes and their leases (left to the garbage
 * collector, a lease could still be there when the next run's node of the same name starts: that node would renew it,
 * and the collector then delete it for its old owner).
 */
async function cleanUp(api: AdminApi, namespace: string, nodeSelector: string): Promise<void> {
  const force = { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 };
  await api.call('DELETE', `/api/v1/namespaces/${namespace}/pods`, force, { timeoutMs: 600_000 }).catch(() => undefined);
  await api.call('DELETE', `/api/v1/namespaces/${namespace}`).catch(() => undefined);
  const nodes = await readyNodes(api, nodeSelector).catch(() => ({ names: [] as string[] }));
  await api.call('DELETE', `/api/v1/nodes?labelSelector=${encodeURIComponent(nodeSelector)}`, undefined, { timeoutMs: 600_000 }).catch(() => undefined);
  await forEachLimited(nodes.names, 16, async (name) => {
    await api.call('DELETE', `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`).catch(() => undefined);
  });
}

/**
 * A first batch of pods, started and deleted before anything is measured: a fresh Node.js process compiles its pod
 * start paths on the first pods (the Go kubelet has its own first-time work), which 10 measured pods would not amortize.
 */
async function warmUp(api: AdminApi, namespace: string, count: number, make: (i: number) => Record<string, unknown>, describe: () => string): Promise<void> {
  for (let i = 0; i < count; i++) await api.json('POST', `/api/v1/namespaces/${namespace}/pods`, make(i));
  await waitFor(`${count} warm-up pods Running`, async () => {
    const pods: any[] = (await api.json('GET', `/api/v1/namespaces/${namespace}/pods`)).items;
    return pods.filter((pod) => pod.status?.phase === 'Running').length >= count;
  }, 120_000, describe, 200);
  await api.json('DELETE', `/api/v1/namespaces/${namespace}/pods`);
  await waitFor(`warm-up pods gone`, async () => (await api.json('GET', `/api/v1/namespaces/${namespace}/pods`)).items.length === 0, 120_000, describe, 200);
  await sleep(settleSeconds * 1000);
}

/** Creates `count` pods (`make(i)`), 16 POSTs at a time, then waits until the timeline saw them all Running. */
async function podLoad(
  api: AdminApi,
  cluster: ClusterEnv,
  namespace: string,
  count: number,
  make: (i: number) => Record<string, unknown>,
  agentPid: number,
  idleCores: number,
  clientCounts: ClientCounts,
  describe: () => string,
): Promise<PodLoad> {
  const timeline = new PodTimeline(cluster, api, namespace);
  await timeline.start();
  const clientBefore = await clientCounts();
  const window = new CpuWindow({ agent: agentPid, apiserver: componentPid(cluster, 'kube-apiserver'), etcd: componentPid(cluster, 'etcd') });
  try {
    await forEachLimited(
      Array.from({ length: count }, (_, i) => i),
      16,
      async (i) => {
        const pod = make(i);
        // A saturated API server answers 5xx or 429 (e.g. "resource quota evaluation timed out" at 500 nodes on two
        // cores): retried as a client would, and counted, since it says who the limit is.
        for (let attempt = 0; ; attempt++) {
          const res = await api.call('POST', `/api/v1/namespaces/${namespace}/pods`, pod);
          if (res.status < 300) break;
          if ((res.status < 500 && res.status !== 429) || attempt >= 20) throw new Error(`POST pods: ${res.status} ${res.text.slice(0, 300)}`);
          apiServerRefusals++;
          await sleep(Math.min(5_000, 250 * 2 ** attempt));
        }
        timeline.created((pod.metadata as { name: string }).name, performance.now());
      },
    );
    await waitFor(
      `${count} pods Running`,
      async () => timeline.runningCount() >= count,
      120_000 + count * 200,
      () => `${timeline.runningCount()} of ${count} Running\n${describe()}`,
      100,
    );
  } finally {
    timeline.stop();
  }
  const cpu = window.end();
  const clientAfter = await clientCounts();
  const summary = timeline.summary();
  return {
    pods: count,
    seconds: cpu.seconds,
    agentCpuSeconds: cpu.cpu.get('agent')! - idleCores * cpu.seconds,
    clientRequests: clientBefore && clientAfter ? total(delta(clientBefore, clientAfter)) : undefined,
    clientByKey: clientBefore && clientAfter ? delta(clientBefore, clientAfter) : new Map(),
    cores: cpu.cores,
    rssMiB: mib(cpu.rss.get('agent')!),
    scheduledToRunning: summary.scheduledToRunning,
    createdToRunning: summary.createdToRunning,
    spanSeconds: (summary.lastRunning - summary.firstScheduled) / 1000,
  };
}

interface LatencyPhase {
  pods: number;
  createdToRunning: number[];
  scheduledToRunning: number[];
}

/**
 * Pod start latency as the Kubernetes SLO measures it (ClusterLoader2's latency pods): after the saturating load, pods
 * created one at a time at `latencyQps`, created -> Running as watched (no image pulls: simulated ones are instant).
 */
async function latencyPhase(api: AdminApi, cluster: ClusterEnv, namespace: string, make: (i: number) => Record<string, unknown>, describe: () => string): Promise<LatencyPhase> {
  const timeline = new PodTimeline(cluster, api, namespace);
  await timeline.start();
  try {
    const started = performance.now();
    for (let i = 0; i < latencyPods; i++) {
      const due = started + (i * 1000) / latencyQps;
      if (due > performance.now()) await sleep(due - performance.now());
      const pod = make(i);
      const at = performance.now();
      await api.json('POST', `/api/v1/namespaces/${namespace}/pods`, pod);
      timeline.created((pod.metadata as { name: string }).name, at);
    }
    await waitFor(`${latencyPods} latency pods Running`, async () => timeline.runningCountOf('lat-') >= latencyPods, 300_000, describe, 100);
  } finally {
    timeline.stop();
  }
  const summary = timeline.summary('lat-');
  return { pods: latencyPods, createdToRunning: summary.createdToRunning, scheduledToRunning: summary.scheduledToRunning };
}

interface GoRun {
  readySeconds: number;
  idle: Idle;
  load: PodLoad;
  runtimeRssMiB: number;
}

/** One Go kubelet v1.20.2 on local-runtime --mode simulated (over the v1alpha2 relay), a node of its own. */
async function benchGo(api: AdminApi, cluster: ClusterEnv): Promise<GoRun> {
  const node = 'fleet-bench-go';
  const namespace = 'fleet-bench-go';
  const selector = `${BENCH_LABEL}=go`;
  const taint = { key: BENCH_LABEL, value: 'go', effect: 'NoSchedule' };
  const dir = mkdtempSync('/tmp/fleet-bench-go-');
  await cleanUp(api, namespace, selector);
  const runtime = BenchProcess.start('local-runtime', process.execPath, [localRuntimeCli, '--socket', join(dir, 'runtime.sock'), '--root-dir', join(dir, 'runtime'), '--mode', 'simulated'], join(dir, 'local-runtime.log'));
  let relay: Awaited<ReturnType<typeof startCriAlphaRelay>> | undefined;
  let kubelet: KubeletProcess | undefined;
  let ok = false;
  try {
    await waitFor('local-runtime listening', async () => existsSync(join(dir, 'runtime.sock')), 30_000, () => runtime.logTail());
    relay = await startCriAlphaRelay(join(dir, 'alpha.sock'), join(dir, 'runtime.sock'));
    const started = performance.now();
    kubelet = KubeletProcess.startGo(
      {
        node,
        kubeconfig: await nodeKubeconfig(node),
        runtimeEndpoint: relay.endpoint,
        dir: join(dir, 'kubelet'),
        extraArgs: [
          '--cgroups-per-qos=false',
          '--enforce-node-allocatable=',
          `--port=${GO_PORT}`,
          '--healthz-port=10348',
          '--read-only-port=0',
          `--node-labels=${selector}`,
          `--register-with-taints=${taint.key}=${taint.value}:${taint.effect}`,
        ],
      },
      cluster,
    );
    const go = kubelet;
    await waitFor('the Go kubelet node Ready', async () => (await readyNodes(api, selector)).ready === 1, 180_000, () => go.logTail(), 200);
    const readySeconds = (performance.now() - started) / 1000;
    log(`Go kubelet: node Ready in ${readySeconds.toFixed(1)} s; settling ${settleSeconds} s, idle window ${idleSeconds} s`);
    await sleep(settleSeconds * 1000);
    const counts = goClientCounts(api, `https://127.0.0.1:${GO_PORT}`);
    const idle = await idleWindow(api, cluster, go.pid, counts);
    log(`Go kubelet idle: RSS ${idle.rssMiB.toFixed(1)} MiB, ${(idle.cores * 1000).toFixed(1)} mcores, ${idle.clientPerMinute?.toFixed(1) ?? '-'} requests/min`);
    await freshNamespace(api, namespace);
    await warmUp(api, namespace, podsPerNode, (i) => benchPod(`warm-${i}`, namespace, { nodeName: node, taint }), () => go.logTail(10));
    const load = await podLoad(api, cluster, namespace, podsPerNode, (i) => benchPod(`go-${i}`, namespace, { nodeName: node, taint }), go.pid, idle.cores, counts, () => go.logTail(10));
    log(`Go kubelet: ${podsPerNode} pods Running in ${load.seconds.toFixed(1)} s, CPU per pod start ${((load.agentCpuSeconds / podsPerNode) * 1000).toFixed(1)} ms; CRI calls ${JSON.stringify(Object.fromEntries(relay.calls))}`);
    const run = { readySeconds, idle, load, runtimeRssMiB: mib(runtime.resources().rssBytes) };
    ok = true;
    return run;
  } finally {
    await kubelet?.stop();
    await cleanUp(api, namespace, selector);
    await relay?.close();
    await runtime.stop();
    keepOnFailure(dir, ok);
  }
}

/** `kubelet fleet` with `nodes` nodes (one group of this bench's own), idle, then `podsPerNode` pods per node. */
async function benchFleet(api: AdminApi, cluster: ClusterEnv, nodes: number): Promise<FleetRun> {
  const namespace = `fleet-bench-${nodes}`;
  const selector = `${BENCH_LABEL}=fleet`;
  const taint = { key: BENCH_LABEL, value: 'fleet', effect: 'NoSchedule' };
  const dir = mkdtempSync(`/tmp/fleet-bench-${nodes}-`);
  await cleanUp(api, namespace, selector);
  const config = join(dir, 'fleet.json');
  writeFileSync(
    config,
    JSON.stringify({ groups: [{ name: 'bench', count: nodes, cpu: '4', memory: '8Gi', pods: 110, labels: { [BENCH_LABEL]: 'fleet' }, taints: [`${taint.key}=${taint.value}:${taint.effect}`] }] }),
  );
  mkdirSync(join(dir, 'root'));
  const started = performance.now();
  let ok = false;
  // Run as its shebang runs it (the bundle's V8 flags), with the request counter preloaded.
  const shebang = /^#!.*\bnode\b(.*)$/m.exec(readFileSync(kubeletBin, 'utf8').slice(0, 300).split('\n')[0])?.[1] ?? '';
  const fleet = BenchProcess.start(
    'kubelet fleet',
    process.execPath,
    [
      ...shebang.split(' ').filter(Boolean),
      '--import',
      counterModule,
      kubeletBin,
      'fleet',
      `--kubeconfig=${cluster.kubeconfig}`,
      `--fleet-config=${config}`,
      '--node-name-prefix=fbench',
      `--fleet-root-dir=${join(dir, 'root')}`,
      `--fleet-base-port=${FLEET_BASE_PORT}`,
      '--fleet-control-port=0',
      ...rates,
      ...fleetExtraArgs,
    ],
    join(dir, 'fleet.log'),
    { FLEET_COUNT_API: new URL(cluster.server).host, FLEET_COUNT_PORT: String(COUNTER_PORT) },
  );
  try {
    const exited = fleet.exited.then((code) => Promise.reject(new Error(`the fleet exited (${code}) before it started\n${fleet.logTail()}`)));
    exited.catch(() => undefined);
    await Promise.race([waitFor(`fleet: ${nodes} nodes started`, async () => /fleet: \d+ nodes started/.test(fleet.output()), 120_000 + nodes * 500, () => fleet.logTail(), 100), exited]);
    const startedSeconds = (performance.now() - started) / 1000;
    let seen = { total: 0, ready: 0 };
    await waitFor(`${nodes} fleet nodes Ready`, async () => (seen = await readyNodes(api, selector)).ready === nodes, 120_000 + nodes * 500, () => `${seen.ready} of ${nodes} Ready (${seen.total} registered)\n${fleet.logTail()}`, Math.max(250, nodes));
    const readySeconds = (performance.now() - started) / 1000;
    log(`fleet ${nodes}: started in ${startedSeconds.toFixed(1)} s, all Ready in ${readySeconds.toFixed(1)} s; settling ${settleSeconds} s, idle window ${idleSeconds} s`);
    await sleep(settleSeconds * 1000);
    const idle = await idleWindow(api, cluster, fleet.pid, fleetClientCounts());
    log(`fleet ${nodes} idle: RSS ${idle.rssMiB.toFixed(1)} MiB, ${(idle.cores * 1000).toFixed(1)} mcores, ${((idle.clientPerMinute ?? Number.NaN) / nodes).toFixed(1)} API requests/node/min`);
    await freshNamespace(api, namespace);
    // The 1-node figures compare with the Go kubelet's, warmed up as it is; a larger fleet's many pods amortize it.
    if (nodes === 1) await warmUp(api, namespace, podsPerNode, (i) => benchPod(`warm-${i}`, namespace, { nodeSelector: { [BENCH_LABEL]: 'fleet' }, taint }), () => fleet.logTail(10));
    const count = nodes * podsPerNode;
    const load = await podLoad(api, cluster, namespace, count, (i) => benchPod(`p-${i}`, namespace, { nodeSelector: { [BENCH_LABEL]: 'fleet' }, taint }), fleet.pid, idle.cores, fleetClientCounts(), () => fleet.logTail(10));
    log(`fleet ${nodes}: ${count} pods Running in ${load.seconds.toFixed(1)} s, RSS ${load.rssMiB.toFixed(0)} MiB, scheduled -> Running p99 ${(percentile(load.scheduledToRunning, 99) / 1000).toFixed(2)} s; pod creations the API server refused (retried) so far: ${apiServerRefusals}`);
    let latency: LatencyPhase | undefined;
    if (nodes > 1 && latencyPods > 0) {
      latency = await latencyPhase(api, cluster, namespace, (i) => benchPod(`lat-${i}`, namespace, { nodeSelector: { [BENCH_LABEL]: 'fleet' }, taint }), () => fleet.logTail(10));
      log(`fleet ${nodes}: ${latencyPods} latency pods at ${latencyQps}/s, created -> Running p50 ${(percentile(latency.createdToRunning, 50) / 1000).toFixed(2)} s, p99 ${(percentile(latency.createdToRunning, 99) / 1000).toFixed(2)} s`);
    }
    ok = true;
    return { nodes, startedSeconds, readySeconds, idle, load, latency };
  } finally {
    await fleet.stop();
    await cleanUp(api, namespace, selector);
    keepOnFailure(dir, ok);
  }
}

async function controlPlane(): Promise<ClusterEnv> {
  // A running control plane is used as it is: start.sh would restart a component another session started with
  // other flags.
  try {
    const env = readClusterEnv();
    const api = new AdminApi(env, 1);
    const ok = (await api.call('GET', '/readyz').catch(() => undefined))?.status === 200;
    api.destroy();
    if (ok) return env;
  } catch {
    // not started
  }
  return ensureCluster();
}

const cluster = await controlPlane();
const api = new AdminApi(cluster);
log(`control plane ${cluster.version} at ${cluster.server}; fleet sizes ${sizes.join(', ')}, ${podsPerNode} pods per node, idle windows of ${idleSeconds} s`);
await measureBackground(api, cluster);
const go = withGo ? await benchGo(api, cluster) : undefined;
if (process.env.FLEET_BENCH_FLEET === '0') {
  api.destroy();
  process.exit(0);
}
const one = await benchFleet(api, cluster, 1);
const runs: FleetRun[] = [];
for (const nodes of sizes) runs.push(await benchFleet(api, cluster, nodes));
api.destroy();

// ---- report
const fmt = (v: number | undefined, digits = 1) => (v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(digits));
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !Number.isFinite(a) || !(b > 0) ? '-' : (a / b).toFixed(2));
const row = (cells: string[], widths: number[]) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[0]) : cell.padStart(widths[i]))).join(' ');
const perPodMs = (load: PodLoad) => (load.agentCpuSeconds / load.pods) * 1000;
const clientPerNode = (run: { idle: Idle }, nodes: number) => (run.idle.clientPerMinute === undefined ? undefined : run.idle.clientPerMinute / nodes);

console.log(`\nkubelet fleet vs one Go kubelet ${cluster.version} process on local-runtime --mode simulated (over CRI), the real ${cluster.version} control plane; one run, only ratios within it count`);
console.log(`\nper-node cost (fleet marginal per node = (fleet(N) - fleet(1)) / (N - 1); CPU per pod start = agent CPU during the start minus its idle rate)`);
const widths = [44, 12, 12, 10, 10];
console.log(row(['figure', 'fleet', 'Go kubelet', 'fleet/Go', 'target'], widths));
if (go) console.log(row(['Go kubelet: idle RSS / + local-runtime', '', `${fmt(go.idle.rssMiB)}/${fmt(go.runtimeRssMiB, 0)} MiB`, '', ''], widths));
console.log(row([`1 node: process start -> node Ready (s)`, fmt(one.readySeconds), fmt(go?.readySeconds), ratio(one.readySeconds, go?.readySeconds), ''], widths));
console.log(row([`1 node: idle RSS (MiB)`, fmt(one.idle.rssMiB), fmt(go?.idle.rssMiB), ratio(one.idle.rssMiB, go?.idle.rssMiB), ''], widths));
console.log(row([`1 node: idle CPU (millicores)`, fmt(one.idle.cores * 1000, 2), fmt(go && go.idle.cores * 1000, 2), ratio(one.idle.cores, go?.idle.cores), ''], widths));
console.log(row([`1 node: CPU per pod start (ms, ${podsPerNode} pods)`, fmt(perPodMs(one.load)), fmt(go && perPodMs(go.load)), ratio(perPodMs(one.load), go && perPodMs(go.load)), ''], widths));
const clientPerPod = (load: PodLoad) => (load.clientRequests === undefined ? undefined : load.clientRequests / load.pods);
console.log(row([`1 node: API requests/min (its own, idle)`, fmt(clientPerNode(one, 1)), fmt(go && clientPerNode(go, 1)), ratio(clientPerNode(one, 1), go && clientPerNode(go, 1)), ''], widths));
console.log(row([`1 node: API requests per pod start`, fmt(clientPerPod(one.load)), fmt(go && clientPerPod(go.load)), ratio(clientPerPod(one.load), go && clientPerPod(go.load)), ''], widths));
for (const run of runs) {
  const n = run.nodes;
  const rssPerNode = n > 1 ? (run.idle.rssMiB - one.idle.rssMiB) / (n - 1) : undefined;
  const mcPerNode = n > 1 ? ((run.idle.cores - one.idle.cores) / (n - 1)) * 1000 : undefined;
  console.log(row([`${n} nodes: idle RSS per node (MiB)`, fmt(rssPerNode, 2), fmt(go?.idle.rssMiB), ratio(rssPerNode, go?.idle.rssMiB), '<= 2'], widths));
  console.log(row([`${n} nodes: idle CPU per node (millicores)`, fmt(mcPerNode, 3), fmt(go && go.idle.cores * 1000, 2), ratio(mcPerNode, go && go.idle.cores * 1000), '<= 0.5'], widths));
  console.log(row([`${n} nodes: idle CPU / N (millicores)`, fmt((run.idle.cores / n) * 1000, 3), fmt(go && go.idle.cores * 1000, 2), ratio(run.idle.cores / n, go?.idle.cores), ''], widths));
  console.log(row([`${n} nodes: CPU per pod start (ms)`, fmt(perPodMs(run.load)), fmt(go && perPodMs(go.load)), ratio(perPodMs(run.load), go && perPodMs(go.load)), ''], widths));
  console.log(row([`${n} nodes: API requests/node/min (idle)`, fmt(clientPerNode(run, n)), fmt(go && clientPerNode(go, 1)), ratio(clientPerNode(run, n), go && clientPerNode(go, 1)), ''], widths));
  console.log(row([`${n} nodes: API requests per pod start`, fmt(clientPerPod(run.load)), fmt(go && clientPerPod(go.load)), ratio(clientPerPod(run.load), go && clientPerPod(go.load)), ''], widths));
}

console.log(`\nscale (${podsPerNode} pods per node, plain pods scheduled by kube-scheduler; latencies as this bench's pod watch sees them)`);
const sizeWidths = [46, ...runs.map(() => 12)];
console.log(row(['nodes', ...runs.map((r) => String(r.nodes))], sizeWidths));
const scaleRows: Array<[string, (r: FleetRun) => string]> = [
  ['fleet start -> "N nodes started" (s)', (r) => fmt(r.startedSeconds)],
  ['fleet start -> all nodes Ready (s)', (r) => fmt(r.readySeconds)],
  ['pods', (r) => String(r.load.pods)],
  ['first scheduled -> last Running (s)', (r) => fmt(r.load.spanSeconds)],
  ['pods per second, scheduled -> Running', (r) => fmt(r.load.pods / r.load.spanSeconds)],
  ['scheduled -> Running p50 / p99 (s)', (r) => `${fmt(percentile(r.load.scheduledToRunning, 50) / 1000, 2)}/${fmt(percentile(r.load.scheduledToRunning, 99) / 1000, 2)}`],
  ['created -> Running p50 / p99 (s)', (r) => `${fmt(percentile(r.load.createdToRunning, 50) / 1000, 2)}/${fmt(percentile(r.load.createdToRunning, 99) / 1000, 2)}`],
  [`then ${latencyPods} pods at ${latencyQps}/s: created -> Running p50 / p99 (s)`, (r) => (r.latency ? `${fmt(percentile(r.latency.createdToRunning, 50) / 1000, 2)}/${fmt(percentile(r.latency.createdToRunning, 99) / 1000, 2)}` : '-')],
  ['API requests/node/min idle (the fleet\'s own)', (r) => fmt(clientPerNode(r, r.nodes))],
  ['  Go kubelet, one node', () => fmt(go && clientPerNode(go, 1))],
  ['API requests/min idle, all clients (API server)', (r) => fmt(r.idle.apiserverPerMinute, 0)],
  ['idle CPU, millicores: fleet', (r) => fmt(r.idle.cores * 1000, 0)],
  ['  kube-apiserver', (r) => fmt((r.idle.apiserverCores ?? Number.NaN) * 1000, 0)],
  ['  etcd', (r) => fmt((r.idle.etcdCores ?? Number.NaN) * 1000, 0)],
  ['CPU under the pod load, millicores: fleet', (r) => fmt((r.load.cores.get('agent') ?? Number.NaN) * 1000, 0)],
  ['  kube-apiserver', (r) => fmt((r.load.cores.get('apiserver') ?? Number.NaN) * 1000, 0)],
  ['  etcd', (r) => fmt((r.load.cores.get('etcd') ?? Number.NaN) * 1000, 0)],
  ['fleet RSS idle (MiB)', (r) => fmt(r.idle.rssMiB, 0)],
  ['fleet RSS with its pods (MiB)', (r) => fmt(r.load.rssMiB, 0)],
];
for (const [name, cell] of scaleRows) console.log(row([name, ...runs.map(cell)], sizeWidths));
const busiest = runs.at(-1);
if (busiest) {
  const byKey = (counts: Map<string, number>, nodes: number) =>
    [...counts]
      .filter(([, perMinute]) => perMinute / nodes >= 0.05)
      .sort((a, b) => b[1] - a[1])
      .map(([key, perMinute]) => `${key} ${fmt(perMinute / nodes, 2)}`)
      .join(', ');
  console.log(`idle API requests/node/min at ${busiest.nodes} nodes, the fleet's: ${byKey(busiest.idle.clientByKeyPerMinute, busiest.nodes)}`);
  if (go) console.log(`  the Go kubelet's, by method: ${byKey(go.idle.clientByKeyPerMinute, 1)}`);
  console.log(`API requests per pod start at ${busiest.nodes} nodes, the fleet's: ${byKey(busiest.load.clientByKey, busiest.load.pods)}`);
  if (go) console.log(`  the Go kubelet's, by method: ${byKey(go.load.clientByKey, go.load.pods)}`);
}
console.log(`before the runs (no bench node): ${fmt(background.perMinute, 0)} API requests/min from other clients, kube-apiserver ${fmt(background.apiserverCores * 1000, 0)} mcores, etcd ${fmt(background.etcdCores * 1000, 0)} mcores`);

console.log('\nmoonshot');
const big = runs.find((r) => r.nodes >= 1000);
console.log(
  big
    ? `  ${big.nodes} nodes and ${big.load.pods} pods in one process: RSS ${fmt(big.load.rssMiB / 1024, 2)} GiB (target <= 4 GiB): ${big.load.rssMiB <= 4096 ? 'met' : 'NOT met'}`
    : '  1,000 nodes and 10,000 pods within 4 GiB: not run (FLEET_BENCH_SIZES=...,1000)',
);
const hundred = runs.find((r) => r.nodes === 100);
const sloP99 = hundred?.latency && percentile(hundred.latency.createdToRunning, 99);
console.log(
  hundred && sloP99 !== undefined
    ? `  pod start p99 at 100 nodes (${latencyPods} pods at ${latencyQps}/s after the ${hundred.load.pods}): created -> Running ${fmt(sloP99 / 1000, 2)} s (SLO 5 s): ${sloP99 <= 5000 ? 'met' : 'NOT met'}; all ${hundred.load.pods} at once: p99 ${fmt(percentile(hundred.load.createdToRunning, 99) / 1000, 2)} s`
    : '  pod start p99 at 100 nodes vs the 5 s SLO: not run (FLEET_BENCH_SIZES=100,...)',
);
