import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeletProcess } from '@kubelet-ts/cluster-e2e';
import type { InvariantResult } from '../invariants.js';
import type { ChaosNodeOptions } from '../node.js';
import type { FaultReport, Scenario, ScenarioContext } from '../scenario.js';

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MiB`;

/** The memory cgroup (v1) the kubelet runs in: ours (kts-*), created and removed by the scenario. */
export const KUBELET_MEMORY_CGROUP = '/sys/fs/cgroup/memory/kts-chaos-kubelet-mem';

/** The v1 memory cgroup (relative to the hierarchy's root) of a process. */
export function memoryCgroupOf(pid: number | 'self'): string {
  const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  return line ? line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1) : '/';
}

/** memory.stat as a map. */
export function parseMemoryStat(text: string): Map<string, number> {
  const stat = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value] = line.split(' ');
    if (key && value !== undefined) stat.set(key, Number(value));
  }
  return stat;
}

/** The cgroup's working set as the kubelet's own eviction manager reads it: usage minus inactive file. */
export function workingSet(usage: number, stat: Map<string, number>): number {
  return Math.max(0, usage - (stat.get('total_inactive_file') ?? stat.get('inactive_file') ?? 0));
}

export interface KubeletMemoryOptions {
  /** The limit as a multiple of the working set measured at the settled baseline (the issue's "close to"). */
  limitFactor?: number;
}

/**
 * Scenario 6: memory pressure on the kubelet itself. The kubelet (each process the node starts) runs in a v1 memory
 * cgroup of its own; once the churn's baseline is settled, the cgroup's limit is set to limitFactor x the kubelet's
 * working set, and the churn runs on for faultMs x iterations. The kubelet must degrade, not crash-loop: a process
 * that exits (the kernel's OOM killer: exit by SIGKILL, memory.oom_control's oom_kill going up) is started again and
 * counted; more than one OOM kill is a crash loop.
 */
export class KubeletMemory implements Scenario {
  readonly name = 'kubelet-memory';
  private readonly limitFactor: number;
  private readonly origins = new Map<number, string>();

  constructor(options: KubeletMemoryOptions = {}) {
    this.limitFactor = options.limitFactor ?? 1.15;
  }

  async setup(): Promise<void> {
    if (!existsSync('/sys/fs/cgroup/memory')) throw new Error('no v1 memory cgroup hierarchy at /sys/fs/cgroup/memory');
    await this.removeCgroup();
    mkdirSync(KUBELET_MEMORY_CGROUP);
    // The kubelet is born in the cgroup, so every page it has is charged to it: this kernel (6.x) refuses
    // memory.move_charge_at_immigrate, and a process moved in later leaves its pages charged where they were. This
    // process joins the cgroup until the first kubelet has started (onStart), the kubelet inherits it at fork.
    this.enter();
  }

  /** This (the test's) process into the cgroup: what it spawns next is born there. */
  private enter(): void {
    this.origins.set(process.pid, memoryCgroupOf(process.pid));
    this.write('cgroup.procs', String(process.pid));
  }

  /** This process back where it was. */
  private leave(): void {
    writeFileSync(join('/sys/fs/cgroup/memory', this.origins.get(process.pid) ?? '/', 'cgroup.procs'), String(process.pid));
  }

  /** Starts a kubelet for the node inside the cgroup (a restart after the kubelet exited). */
  private async startInside(context: ScenarioContext): Promise<void> {
    this.enter();
    try {
      await context.node.start();
    } finally {
      this.leave();
    }
  }

  nodeOptions(): Partial<ChaosNodeOptions> {
    return { onStart: (kubelet) => this.confine(kubelet) };
  }

  /** After a kubelet started: this process leaves the cgroup (the kubelet stays; one started elsewhere is moved in). */
  async confine(kubelet: KubeletProcess): Promise<void> {
    if (this.read('cgroup.procs').split('\n').includes(String(process.pid))) this.leave();
    if (!this.read('cgroup.procs').split('\n').includes(String(kubelet.pid))) {
      this.origins.set(kubelet.pid, memoryCgroupOf(kubelet.pid));
      this.write('cgroup.procs', String(kubelet.pid));
    }
  }

  async inject(context: ScenarioContext): Promise<FaultReport> {
    const { node, settings, churn } = context;
    const usage = this.readNumber('memory.usage_in_bytes');
    const stat = parseMemoryStat(this.read('memory.stat'));
    const rss = node.kubelet.resources().rssBytes;
    const measured = Math.max(workingSet(usage, stat), rss);
    const limit = Math.ceil((measured * this.limitFactor) / 4096) * 4096;
    this.write('memory.limit_in_bytes', String(limit));
    const oomKillsBefore = this.oomKills();
    const failcntBefore = this.readNumber('memory.failcnt');
    const stepsBefore = churn.stats.steps;
    const timedOutBefore = churn.stats.stepsTimedOut;
    settings.log(`kubelet-memory: working set ${mib(workingSet(usage, stat))}, RSS ${mib(rss)}: limit ${mib(limit)} (${this.limitFactor}x)`);

    const exits: string[] = [];
    const recoveriesMs: number[] = [];
    let maxRss = 0;
    let notReadySamples = 0;
    let samples = 0;
    const until = Date.now() + settings.faultMs * settings.iterations;
    while (Date.now() < until) {
      if (!node.kubelet.running) {
        const code = await node.kubelet.exited;
        const diedAt = Date.now();
        exits.push(`exit ${code ?? 'by signal'} (${this.oomKills() - oomKillsBefore} OOM kills so far)`);
        settings.log(`kubelet-memory: the kubelet exited (${exits.at(-1)}); starting it again\n${node.kubelet.logTail(15)}`);
        await this.startInside(context);
        recoveriesMs.push(await context.recovered(diedAt));
        continue;
      }
      try {
        maxRss = Math.max(maxRss, node.kubelet.resources().rssBytes);
      } catch {
        // exited between the check and the read
      }
      const ready = await node.kubectl.getOrUndefined(['node', node.name]).catch(() => undefined);
      samples++;
      if (!(ready?.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True')) notReadySamples++;
      await sleep(2000);
    }
    const oomKills = this.oomKills() - oomKillsBefore;
    const failcnt = this.readNumber('memory.failcnt') - failcntBefore;
    const maxUsage = this.readNumber('memory.max_usage_in_bytes');
    // The recovery the harness reports: healthz, Ready, the lease and the statuses, as they are at the end.
    recoveriesMs.push(await context.recovered(Date.now() - 1000));
    const stepsDone = churn.stats.steps - stepsBefore;
    const stepsTimedOut = churn.stats.stepsTimedOut - timedOutBefore;
    // The limit stays until teardown; later invariants (the settle, RSS back) run under it too.
    const invariants: InvariantResult[] = [
      {
        name: 'no crash loop (at most one OOM kill, the kubelet not restarted more than once)',
        held: oomKills <= 1 && exits.length <= 1,
        detail: `${oomKills} OOM kills, ${exits.length} exits${exits.length ? `: ${exits.join('; ')}` : ''}`,
      },
      {
        name: 'the node stays Ready under the limit',
        held: notReadySamples === 0,
        detail: `${notReadySamples}/${samples} samples not Ready`,
      },
      {
        name: 'pods keep starting (the churn completes its steps)',
        held: stepsDone > 0 && stepsTimedOut === 0,
        detail: `${stepsDone} churn steps, ${stepsTimedOut} timed out`,
      },
      {
        // What the cgroup charges the kubelet is what the limit bounds. RSS also counts shared file pages (node's binary,
        // the bundle) charged to the cgroup that first read them: the full run saw RSS 117 MiB, usage 78 MiB, limit 115.
        name: 'the memory charged to the kubelet stays under the limit',
        held: maxUsage <= limit,
        detail: `max RSS ${mib(maxRss)}, cgroup max usage ${mib(maxUsage)}, limit ${mib(limit)}, failcnt +${failcnt}`,
      },
    ];
    return {
      faults: `the kubelet under a ${mib(limit)} memory limit (${this.limitFactor}x its ${mib(measured)} working set) for ${((settings.faultMs * settings.iterations) / 1000).toFixed(0)} s`,
      recoveriesMs,
      invariants,
      figures: [`limit ${mib(limit)}`, `max RSS ${mib(maxRss)}`, `failcnt +${failcnt}`, `${oomKills} OOM kills`, `${exits.length} kubelet restarts`],
    };
  }

  async teardown(): Promise<void> {
    await this.removeCgroup();
  }

  /** Moves what is left in the cgroup back where it came from (the kubelet still runs until the node is destroyed) and removes it. */
  private async removeCgroup(): Promise<void> {
    if (!existsSync(KUBELET_MEMORY_CGROUP)) return;
    for (let attempt = 0; attempt < 20; attempt++) {
      const pids = this.read('cgroup.procs').split('\n').filter(Boolean).map(Number);
      for (const pid of pids) {
        const origin = this.origins.get(pid) ?? this.origins.get(process.pid) ?? '/';
        try {
          writeFileSync(join('/sys/fs/cgroup/memory', origin, 'cgroup.procs'), String(pid));
        } catch {
          // gone already
        }
      }
      try {
        rmdirSync(KUBELET_MEMORY_CGROUP);
        return;
      } catch {
        await sleep(100);
      }
    }
    throw new Error(`could not remove ${KUBELET_MEMORY_CGROUP}`);
  }

  private oomKills(): number {
    return parseMemoryStat(this.read('memory.oom_control')).get('oom_kill') ?? 0;
  }

  private read(file: string): string {
    return readFileSync(join(KUBELET_MEMORY_CGROUP, file), 'utf8');
  }

  private readNumber(file: string): number {
    return Number(this.read(file).trim());
  }

  private write(file: string, value: string): void {
    writeFileSync(join(KUBELET_MEMORY_CGROUP, file), value);
  }
}
