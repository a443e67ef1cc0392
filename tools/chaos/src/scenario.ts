import { setTimeout as sleep } from 'node:timers/promises';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { Churn } from './churn.js';
import {
  apiPods,
  nodeReadyAndRenewed,
  nothingLeaked,
  PodObserver,
  podsRunOnce,
  resourcesBack,
  runtimeView,
  sampleResources,
  statusDisagreements,
  type InvariantResult,
  type ResourceSample,
} from './invariants.js';
import { readContainerdEnv } from '@kubelet-ts/cri-conformance';
import { acquireRuntimeLock, ChaosNode, type ChaosNodeOptions } from './node.js';

export interface ScenarioSettings {
  /** Fault iterations (the CI variant runs one or two, the full run the issue's count). */
  iterations: number;
  /** The churn's top (the issue's 30). */
  maxReplicas: number;
  /** Pods the Deployment settles at before the faults (the baseline) and after (the invariants). */
  settleReplicas: number;
  /** The kubelet's sync period as the statuses must converge within it (Go's --sync-frequency, 1m). */
  syncPeriodMs: number;
  /** How long the kubelet's garbage collection may take to remove what deleted pods left. */
  gcWaitMs: number;
  /** A scenario-specific length (the API server's outage, a slow-down's duration). */
  faultMs: number;
  log: (line: string) => void;
}

export interface ScenarioContext {
  node: ChaosNode;
  churn: Churn;
  settings: ScenarioSettings;
  /** Waits until the kubelet is back: healthz answers ok, the node is Ready with its lease renewed since `since`, and every pod's API status agrees with containerd. Resolves with the ms since `since`. */
  recovered(since: number, timeoutMs?: number, options?: RecoveredOptions): Promise<number>;
  random(): number;
}

export interface RecoveredOptions {
  /** healthz checks that may still fail (e.g. `eventloop`, which stays failed for a minute after a stall, by design). */
  allowFailing?: string[];
}

export interface FaultReport {
  /** What was injected, e.g. "20 x SIGKILL". */
  faults: string;
  /** Recovery time of each fault, ms. */
  recoveriesMs: number[];
  /** The scenario's own invariants (adoption, request counts after a reconnect, ...). */
  invariants?: InvariantResult[];
  /** Figures worth printing beside the line. */
  figures?: string[];
}

export interface Scenario {
  name: string;
  /** Node options (a proxy endpoint, more flags) once setup() ran. */
  nodeOptions?(): Partial<ChaosNodeOptions>;
  setup?(settings: ScenarioSettings): Promise<void>;
  inject(context: ScenarioContext): Promise<FaultReport>;
  teardown?(): Promise<void>;
}

export interface ScenarioResult {
  scenario: string;
  faults: string;
  podsAffected: number;
  invariants: InvariantResult[];
  recoveriesMs: number[];
  figures: string[];
  /** The one line the issue asks for. */
  line: string;
  ok: boolean;
}

/** A broken invariant: the kubelet's logs (every generation) are copied out of the node's directory before it goes, and the last lines printed. */
function keepKubeletLogs(node: ChaosNode, scenario: string, seed: number, log: (line: string) => void): void {
  const dir = join(tmpdir(), 'kubelet-chaos-logs');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${scenario}-seed${seed}-${Date.now()}.log`);
  const current = node.kubelet?.logFile;
  if (current && existsSync(current)) copyFileSync(current, file);
  log(`${scenario}: an invariant broke; the kubelet's log (all generations) is kept in ${file}; its last lines:\n${node.kubelet?.logTail(40) ?? ''}`);
}

/** A loopback port free now (scenarios of different names can run side by side). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}


function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** A deterministic PRNG (mulberry32) so a failing run can be repeated with its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Runs one scenario on a node of its own: the kubelet started and Ready, the churn Deployment settled at
 * settleReplicas (the resource baseline), then the churn loop and the faults, then recovery, settling again and every
 * invariant. Never throws for a broken invariant: the result says which broke.
 */
export async function runScenario(scenario: Scenario, settings: ScenarioSettings, options: { seed?: number } = {}): Promise<ScenarioResult> {
  const seed = options.seed ?? Date.now() % 100000;
  const random = seededRandom(seed);
  const log = settings.log;
  const release = await acquireRuntimeLock(readContainerdEnv(), `chaos ${scenario.name}`, log);
  try {
    return await runLocked(scenario, settings, seed, random);
  } finally {
    release();
  }
}

async function runLocked(scenario: Scenario, settings: ScenarioSettings, seed: number, random: () => number): Promise<ScenarioResult> {
  const log = settings.log;
  await scenario.setup?.(settings);
  const node = await ChaosNode.create({ node: `chaos-${scenario.name}`, healthzPort: await freePort(), readOnlyPort: await freePort(), requestCounterPort: await freePort(), ...scenario.nodeOptions?.() });
  const churn = new Churn({ kubectl: node.kubectl, get: (path) => node.get(path), namespace: node.namespace, node: node.name, image: node.containerd.busyboxImage, maxReplicas: settings.maxReplicas, log });
  const observer = new PodObserver(node);
  const recovered = async (since: number, timeoutMs = 180_000, options: RecoveredOptions = {}): Promise<number> => {
    let last = '';
    const healthy = (health: { status: number; body: string } | undefined) =>
      health?.status === 200 ||
      (health !== undefined &&
        (options.allowFailing?.length ?? 0) > 0 &&
        health.body
          .split('\n')
          .filter((line) => line.startsWith('[-]'))
          .every((line) => options.allowFailing!.some((name) => line.startsWith(`[-]${name} `))));
    for (;;) {
      const health = await node.healthz();
      if (healthy(health)) {
        try {
          if (await nodeReadyAndRenewed(node, since)) {
            const [pods, view] = await Promise.all([apiPods(node), runtimeView(node)]);
            const problems = statusDisagreements(pods, view);
            if (problems.length === 0) return Date.now() - since;
            last = problems.slice(0, 3).join('; ');
          } else {
            last = 'node not Ready or lease not renewed';
          }
        } catch (error) {
          last = (error as Error).message.split('\n')[0];
        }
      } else {
        last = health ? `healthz ${health.status}: ${health.body.trim().split('\n').filter((l) => l.startsWith('[-]')).join(', ')}` : 'healthz does not answer';
      }
      if (Date.now() - since > timeoutMs) throw new Error(`${node.name} did not recover within ${seconds(timeoutMs)}: ${last}\n${node.kubelet.logTail(30)}`);
      await sleep(500);
    }
  };
  const context: ScenarioContext = { node, churn, settings, recovered, random };
  let report: FaultReport | undefined;
  const invariants: InvariantResult[] = [];
  let error: Error | undefined;
  try {
    const startedAt = Date.now();
    await node.start();
    await recovered(startedAt, 120_000);
    await churn.start({ loop: false });
    await churn.settle(settings.settleReplicas);
    await sleep(5000);
    const baseline: ResourceSample = sampleResources(node.kubelet.pid);
    log(`${scenario.name}: baseline with ${settings.settleReplicas} pods: RSS ${(baseline.rssBytes / 1048576).toFixed(0)} MiB, ${baseline.fds} fds (seed ${seed})`);
    observer.start();
    churn.resume();
    report = await scenario.inject(context);
    await churn.stop();
    const settledIn = await churn.settle(settings.settleReplicas);
    log(`${scenario.name}: settled at ${settings.settleReplicas} pods in ${seconds(settledIn)}`);
    await observer.stop();
    const [pods, view] = await Promise.all([apiPods(node), runtimeView(node)]);
    invariants.push(podsRunOnce(pods, view));
    const slowest = Math.max(...report.recoveriesMs);
    invariants.push({
      name: 'statuses converge within one sync period',
      held: report.recoveriesMs.length > 0 && slowest <= settings.syncPeriodMs,
      detail: `slowest recovery ${seconds(slowest)} (sync period ${seconds(settings.syncPeriodMs)})`,
    });
    invariants.push(observer.result());
    invariants.push(...(await nothingLeaked(node, settings.gcWaitMs)));
    invariants.push(...(report.invariants ?? []));
    await sleep(5000);
    invariants.push(resourcesBack(baseline, sampleResources(node.kubelet.pid)));
  } catch (caught) {
    error = caught as Error;
    invariants.push({ name: 'the scenario ran to its end', held: false, detail: error.message });
  } finally {
    await observer.stop().catch(() => undefined);
    await churn.stop().catch(() => undefined);
    await scenario.teardown?.().catch(() => undefined);
    if (invariants.some((invariant) => !invariant.held)) keepKubeletLogs(node, scenario.name, seed, log);
    if (!error || !process.env.KUBELET_CHAOS_KEEP) await node.destroy();
  }
  const recoveries = report?.recoveriesMs ?? [];
  const held = invariants.filter((invariant) => invariant.held).length;
  const ok = held === invariants.length;
  const line =
    `chaos ${scenario.name}: faults ${report?.faults ?? 'none'}; pods affected ${churn.stats.podsSeen.size} (${churn.stats.cycles} churn cycles); ` +
    `invariants ${held}/${invariants.length} held${ok ? '' : ` (broken: ${invariants.filter((i) => !i.held).map((i) => i.name).join(', ')})`}; ` +
    `recovery p50 ${seconds(percentile(recoveries, 50))} max ${seconds(percentile(recoveries, 100))}` +
    `${report?.figures?.length ? `; ${report.figures.join('; ')}` : ''}`;
  return { scenario: scenario.name, faults: report?.faults ?? 'none', podsAffected: churn.stats.podsSeen.size, invariants, recoveriesMs: recoveries, figures: report?.figures ?? [], line, ok };
}
