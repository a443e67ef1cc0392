import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { processResources } from '@kubelet-ts/core';
import { condition, type KubeObject } from '@kubelet-ts/cluster-e2e';
import type { ChaosNode } from './node.js';

/** One invariant checked at the end of a scenario. */
export interface InvariantResult {
  name: string;
  held: boolean;
  /** What was seen; for a broken invariant, what broke it. */
  detail: string;
}

const uidLabel = 'io.kubernetes.pod.uid';
const containerNameLabel = 'io.kubernetes.container.name';

/** What containerd holds for the node's namespace, by pod uid. */
export interface RuntimeView {
  readySandboxes: Map<string, string[]>;
  sandboxes: Map<string, string[]>;
  /** uid -> container name -> ids of RUNNING containers. */
  running: Map<string, Map<string, string[]>>;
  /** Every container of the namespace, any state: uid -> ids. */
  containers: Map<string, string[]>;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

export async function runtimeView(node: ChaosNode): Promise<RuntimeView> {
  const selector = { labelSelector: { 'io.kubernetes.pod.namespace': node.namespace } };
  const [sandboxes, containers] = await Promise.all([node.runtime.listPodSandbox(selector), node.runtime.listContainers(selector)]);
  const view: RuntimeView = { readySandboxes: new Map(), sandboxes: new Map(), running: new Map(), containers: new Map() };
  for (const sandbox of sandboxes) {
    const uid = sandbox.labels?.[uidLabel] ?? sandbox.metadata?.uid ?? '';
    push(view.sandboxes, uid, sandbox.id);
    if (sandbox.state === 'SANDBOX_READY') push(view.readySandboxes, uid, sandbox.id);
  }
  for (const container of containers) {
    const uid = container.labels?.[uidLabel] ?? '';
    push(view.containers, uid, container.id);
    if (container.state !== 'CONTAINER_RUNNING') continue;
    const byName = view.running.get(uid) ?? new Map<string, string[]>();
    view.running.set(uid, byName);
    push(byName, container.labels?.[containerNameLabel] ?? container.metadata?.name ?? '', container.id);
  }
  return view;
}

export async function apiPods(node: ChaosNode): Promise<KubeObject[]> {
  return ((await node.get(`/api/v1/namespaces/${node.namespace}/pods`))?.items ?? []) as KubeObject[];
}

const terminal = (pod: KubeObject) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
const containerId = (id: string) => id.replace(/^[a-z]+:\/\//, '');

/**
 * Where the API's view of a pod and containerd's disagree: a status that says running for a container the runtime
 * does not run (or with another container's id), or a container the runtime runs that the status does not show
 * running. A pod the kubelet has not started yet (no container in the runtime, none in the status) agrees.
 */
export function statusDisagreements(pods: KubeObject[], view: RuntimeView): string[] {
  const problems: string[] = [];
  for (const pod of pods) {
    if (pod.metadata.deletionTimestamp) continue;
    const running = view.running.get(pod.metadata.uid) ?? new Map<string, string[]>();
    const statuses = new Map<string, KubeObject>((pod.status?.containerStatuses ?? []).map((s: KubeObject) => [s.name, s]));
    for (const spec of pod.spec.containers as KubeObject[]) {
      const ids = running.get(spec.name) ?? [];
      const status = statuses.get(spec.name);
      const says = status?.state?.running ? containerId(status.containerID ?? '') : undefined;
      if (ids.length === 0 && says) problems.push(`${pod.metadata.name}/${spec.name}: the status says running (${says.slice(0, 12)}), the runtime runs nothing`);
      else if (ids.length > 0 && !says) problems.push(`${pod.metadata.name}/${spec.name}: the runtime runs ${ids[0].slice(0, 12)}, the status says ${JSON.stringify(Object.keys(status?.state ?? {}))}`);
      else if (ids.length > 0 && says && !ids.includes(says)) problems.push(`${pod.metadata.name}/${spec.name}: the status names ${says.slice(0, 12)}, the runtime runs ${ids.map((id) => id.slice(0, 12)).join(',')}`);
    }
  }
  return problems;
}

/** Every pod bound to the node runs exactly once (one ready sandbox, one running container per spec container), or is terminal with nothing running. */
export function podsRunOnce(pods: KubeObject[], view: RuntimeView): InvariantResult {
  const problems: string[] = [];
  let running = 0;
  let terminated = 0;
  const known = new Set(pods.map((pod) => pod.metadata.uid as string));
  for (const pod of pods) {
    const uid = pod.metadata.uid as string;
    const sandboxes = view.readySandboxes.get(uid) ?? [];
    const containers = view.running.get(uid) ?? new Map<string, string[]>();
    if (terminal(pod)) {
      terminated++;
      const still = [...containers.values()].flat();
      if (still.length > 0) problems.push(`${pod.metadata.name} is ${pod.status.phase} but ${still.length} container(s) still run`);
      continue;
    }
    if (pod.status?.phase !== 'Running') {
      problems.push(`${pod.metadata.name} is ${pod.status?.phase ?? 'without a phase'}, not Running`);
      continue;
    }
    running++;
    if (sandboxes.length !== 1) problems.push(`${pod.metadata.name}: ${sandboxes.length} ready sandboxes`);
    for (const spec of pod.spec.containers as KubeObject[]) {
      const ids = containers.get(spec.name) ?? [];
      if (ids.length !== 1) problems.push(`${pod.metadata.name}/${spec.name}: ${ids.length} running containers`);
    }
  }
  for (const [uid, ids] of view.readySandboxes) {
    if (!known.has(uid)) problems.push(`a ready sandbox ${ids[0].slice(0, 12)} of pod uid ${uid}, which the API server does not have`);
  }
  for (const [uid, byName] of view.running) {
    if (!known.has(uid)) problems.push(`${[...byName.values()].flat().length} running container(s) of pod uid ${uid}, which the API server does not have`);
  }
  return {
    name: 'pods run exactly once',
    held: problems.length === 0,
    detail: problems.length === 0 ? `${running} running, ${terminated} terminal` : problems.join('; '),
  };
}

/** Mounts under the kubelet's pods dir whose pod is gone. */
export function leakedMounts(node: ChaosNode, liveUids: Set<string>): string[] {
  const prefix = `${join(node.rootDir, 'pods')}/`;
  return readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[1]?.replace(/\\040/g, ' '))
    .filter((target): target is string => target !== undefined && target.startsWith(prefix))
    .filter((target) => !liveUids.has(target.slice(prefix.length).split('/')[0]));
}

/** Pod directories of the kubelet whose pod is gone (Go's cleanupOrphanedPodDirs removes them). */
export function leakedPodDirs(node: ChaosNode, liveUids: Set<string>): string[] {
  const dir = join(node.rootDir, 'pods');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((uid) => !liveUids.has(uid));
}

/** Pod cgroups (pod<uid>, any QoS class) under the node's cgroup root, in every v1 hierarchy, whose pod is gone. */
export function leakedCgroups(node: ChaosNode, liveUids: Set<string>): string[] {
  const leaked: string[] = [];
  const base = '/sys/fs/cgroup';
  if (!existsSync(base)) return leaked;
  for (const controller of readdirSync(base)) {
    const root = join(base, controller, node.cgroupRoot);
    if (!existsSync(root)) continue;
    const walk = (dir: string, depth: number) => {
      if (depth > 4) return;
      for (const entry of readdirSync(dir)) {
        const path = join(dir, entry);
        if (!statSync(path).isDirectory()) continue;
        const match = /^pod([0-9a-f-]{36})$/.exec(entry);
        if (match) {
          if (!liveUids.has(match[1])) leaked.push(path.slice(base.length));
        } else {
          walk(path, depth + 1);
        }
      }
    };
    walk(root, 0);
  }
  return leaked;
}

/** Nothing of a deleted pod left: no container or sandbox in containerd, no mount, no pod dir, no cgroup. Waits up to `waitMs` for the kubelet's garbage collection. */
export async function nothingLeaked(node: ChaosNode, waitMs: number): Promise<InvariantResult[]> {
  const started = Date.now();
  let last: { containers: string[]; mounts: string[]; dirs: string[]; cgroups: string[] } | undefined;
  for (;;) {
    const [pods, view] = await Promise.all([apiPods(node), runtimeView(node)]);
    const live = new Set(pods.map((pod) => pod.metadata.uid as string));
    const containers = [...new Set([...view.sandboxes.keys(), ...view.containers.keys()])]
      .filter((uid) => !live.has(uid))
      .map((uid) => `${uid}: ${(view.sandboxes.get(uid) ?? []).length} sandbox(es), ${(view.containers.get(uid) ?? []).length} container(s)`);
    last = { containers, mounts: leakedMounts(node, live), dirs: leakedPodDirs(node, live), cgroups: leakedCgroups(node, live) };
    const clean = Object.values(last).every((list) => list.length === 0);
    if (clean || Date.now() - started > waitMs) break;
    await sleep(2000);
  }
  const took = `${((Date.now() - started) / 1000).toFixed(0)} s`;
  const result = (name: string, list: string[]): InvariantResult => ({
    name,
    held: list.length === 0,
    detail: list.length === 0 ? `none (after ${took})` : `${list.length} after ${took}: ${list.slice(0, 5).join('; ')}`,
  });
  return [
    result('no container leaked in containerd', last.containers),
    result('no mount leaked', last.mounts),
    result('no pod directory leaked', last.dirs),
    result('no cgroup leaked', last.cgroups),
  ];
}

/**
 * Watches the node's pods during a scenario (every `intervalMs`): the restart count of every container must never
 * go down, but for one exception Go has too: a restart the kubelet inferred (ContainerStatusUnknown, +1) for a
 * container the runtime reported in an unknown state is withdrawn when the runtime reports it again.
 */
export class PodObserver {
  private readonly restarts = new Map<string, number>();
  private readonly resets: string[] = [];
  /** Containers whose highest count was an inferred restart (ContainerStatusUnknown), and such counts withdrawn. */
  private readonly inferred = new Set<string>();
  private readonly withdrawn: string[] = [];
  private timer?: NodeJS.Timeout;
  private polling?: Promise<void>;
  private stopped = false;
  samples = 0;

  constructor(
    private readonly node: ChaosNode,
    private readonly intervalMs = 2000,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.polling ??= this.sample().finally(() => (this.polling = undefined));
    }, this.intervalMs);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    await this.polling;
    await this.sample();
  }

  async sample(): Promise<void> {
    let pods: KubeObject[];
    try {
      pods = await apiPods(this.node);
    } catch {
      return; // the API server is down: nothing to compare
    }
    this.samples++;
    for (const pod of pods) {
      for (const status of (pod.status?.containerStatuses ?? []) as KubeObject[]) {
        const key = `${pod.metadata.name}/${status.name} (${pod.metadata.uid})`;
        const before = this.restarts.get(key);
        if (before !== undefined && status.restartCount < before) {
          // Go's convertContainerStatus counts a restart it infers for a running container the runtime reports in an
          // unknown state (ContainerStatusUnknown, as containerd does while it restarts); the CRI's own count replaces
          // it once the runtime knows the container again. That one withdrawn inference is not a reset of the history.
          if (this.inferred.has(key) && status.restartCount === before - 1) this.withdrawn.push(`${key}: ${before} -> ${status.restartCount}`);
          else this.resets.push(`${key}: ${before} -> ${status.restartCount}`);
        }
        const unknown = [status.state?.terminated?.reason, status.lastState?.terminated?.reason].includes('ContainerStatusUnknown');
        if (status.restartCount > (before ?? 0)) {
          if (unknown) this.inferred.add(key);
          else this.inferred.delete(key);
        }
        this.restarts.set(key, Math.max(before ?? 0, status.restartCount));
      }
    }
  }

  result(): InvariantResult {
    return {
      name: 'no restart count reset',
      held: this.resets.length === 0,
      detail:
        (this.resets.length === 0 ? `${this.restarts.size} containers over ${this.samples} samples` : this.resets.join('; ')) +
        (this.withdrawn.length ? `; inferred restarts (ContainerStatusUnknown) withdrawn once the runtime knew the container again: ${this.withdrawn.join('; ')}` : ''),
    };
  }
}

/** The kubelet's RSS and open fds. */
export interface ResourceSample {
  rssBytes: number;
  fds: number;
}

export function sampleResources(pid: number): ResourceSample {
  return { rssBytes: processResources(pid).rssBytes, fds: readdirSync(`/proc/${pid}/fd`).length };
}

/**
 * RSS and fds back to the baseline taken in the same state (the same number of pods, settled) before the faults: RSS
 * within 25% or 16 MiB (V8 keeps heap it grew into for a while), fds within 10.
 */
export function resourcesBack(baseline: ResourceSample, now: ResourceSample): InvariantResult {
  const mib = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MiB`;
  const rssOk = now.rssBytes <= Math.max(baseline.rssBytes * 1.25, baseline.rssBytes + 16 * 1048576);
  const fdsOk = now.fds <= baseline.fds + 10;
  return {
    name: 'RSS and fds back to baseline',
    held: rssOk && fdsOk,
    detail: `RSS ${mib(baseline.rssBytes)} -> ${mib(now.rssBytes)}, fds ${baseline.fds} -> ${now.fds}`,
  };
}

/** The node Ready and its lease renewed after `since` (ms since the epoch). */
export async function nodeReadyAndRenewed(node: ChaosNode, since: number): Promise<boolean> {
  const [object, lease] = await Promise.all([
    node.get(`/api/v1/nodes/${node.name}`),
    node.get(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${node.name}`),
  ]);
  return condition(object, 'Ready')?.status === 'True' && Date.parse(lease?.spec?.renewTime ?? '0') >= since - 1000;
}
