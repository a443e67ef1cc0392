import { setTimeout as sleep } from 'node:timers/promises';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { boundPod, isPodReady, repoRoot, type KubeObject } from '@kubelet-ts/cluster-e2e';
import type { InvariantResult } from '../invariants.js';
import type { ChaosNodeOptions } from '../node.js';
import type { FaultReport, Scenario, ScenarioContext, ScenarioSettings } from '../scenario.js';

const execFileAsync = promisify(execFile);

/** Debian's libfaketime (package libfaketime). */
export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/** The offsets the kubelet's wall clock takes, in order (libfaketime's relative syntax), each held for faultMs. */
export const CLOCK_JUMPS = ['+10m', '+0', '-10m', '+0'] as const;

/** Go's default --node-lease-duration-seconds (40): the node must be Ready again within it after a jump. */
const LEASE_DURATION_MS = 40_000;
/** Go's MaxContainerBackOff (5 min): a crash-looping container is restarted within it, or the backoff wedged. */
const MAX_BACKOFF_MS = 300_000;

const CRASHER = 'clock-crashloop';
const PROBED = 'clock-probed';

interface Phase {
  offset: string;
  startedAt: number;
  endedAt: number;
  /** Lease writes seen (resourceVersion changes). */
  leaseRenewals: number;
  /** Real ms the node's Ready condition was not True (first to last sample). */
  notReadyMs: number;
  /** Real times (harness clock) the crash-looping container's restartCount went up. */
  restarts: number[];
  /** Readiness transitions of the probed pod (its container flips its ready file every 10 s). */
  readinessFlips: number;
}

/**
 * Scenario 5: the clock jumps. Only the kubelet's wall clock jumps: libfaketime (LD_PRELOAD) moves its
 * CLOCK_REALTIME (Date.now(), OpenSSL's time(), its children's) by the offset in a file it re-reads on every call,
 * +10 min, back, -10 min, back; CLOCK_MONOTONIC (Node's timers) stays true, as in a real step of the system clock.
 * The control plane, etcd and containerd share this machine's one clock with the other runs, so they do not jump:
 * this is a node whose clock jumped away from everyone else's (containerd included, so the container's
 * finishedAt is in real time while the kubelet's now() is off by the jump).
 *
 * While the churn runs, a crash-looping pod (restart backoff) and a pod whose readiness probe flips every 10 s run on
 * the node; the scenario samples the node's Ready condition, its lease, the restarts and the probe's transitions in
 * each phase, and after each return to +0 waits for recovered().
 */
export class ClockJump implements Scenario {
  readonly name = 'clock-jump';
  private dir = '';
  private offsetFile = '';

  async setup(_settings: ScenarioSettings): Promise<void> {
    if (!existsSync(LIBFAKETIME)) {
      await execFileAsync('bash', ['-c', `. ${join(repoRoot, 'tools/lib/common.sh')} && kts_ensure_packages libfaketime`], { maxBuffer: 16 << 20 });
    }
    if (!existsSync(LIBFAKETIME)) throw new Error(`libfaketime is not at ${LIBFAKETIME} after installing it`);
    this.dir = mkdtempSync(join(tmpdir(), 'kts-chaos-clock-'));
    this.offsetFile = join(this.dir, 'offset');
    this.jump('+0');
  }

  nodeOptions(): Partial<ChaosNodeOptions> {
    return {
      env: {
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME_TIMESTAMP_FILE: this.offsetFile,
        // Re-read the file on every call (the default caches it for 10 s).
        FAKETIME_NO_CACHE: '1',
        // A step of the system clock moves CLOCK_REALTIME only.
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
      },
    };
  }

  /** Sets the kubelet's clock offset (libfaketime's "+10m", "-10m", "+0"). */
  jump(offset: string): void {
    writeFileSync(this.offsetFile, `${offset}\n`);
  }

  async inject(context: ScenarioContext): Promise<FaultReport> {
    const { node, settings } = context;
    const image = node.containerd.busyboxImage;
    const where = (name: string) => ({ name, namespace: node.namespace, node: node.name, image });
    await node.kubectl.apply(
      boundPod(where(CRASHER), { command: ['sh', '-c', 'sleep 2; exit 1'] }),
      boundPod(where(PROBED), {
        command: ['sh', '-c', "trap 'exit 0' TERM; while true; do touch /tmp/ready; sleep 10; rm -f /tmp/ready; sleep 10; done"],
        readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1, failureThreshold: 1 },
      }),
    );
    // Both pods started, the crasher restarted once (its backoff exists) before the first jump.
    await this.until(async () => (await this.restartCount(context)) >= 1 && !!(await this.pod(context, PROBED))?.status?.containerStatuses?.[0]?.state?.running, 180_000);

    const phases: Phase[] = [];
    const recoveriesMs: number[] = [];
    const readyAgainMs: number[] = [];
    for (let i = 0; i < settings.iterations; i++) {
      for (const offset of CLOCK_JUMPS) {
        this.jump(offset);
        settings.log(`clock-jump: the kubelet's clock at ${offset}`);
        const phase = await this.observe(context, offset, settings.faultMs);
        phases.push(phase);
        settings.log(
          `clock-jump: ${offset} for ${(settings.faultMs / 1000).toFixed(0)} s: ${phase.leaseRenewals} lease renewals, not Ready ${(phase.notReadyMs / 1000).toFixed(1)} s, ` +
            `${phase.restarts.length} restarts, ${phase.readinessFlips} readiness flips`,
        );
        readyAgainMs.push(phase.notReadyMs);
        if (offset === '+0') recoveriesMs.push(await context.recovered(phase.startedAt));
      }
    }

    // The backoff must not have wedged: the crasher restarts again within the longest backoff (plus a sync).
    const before = await this.restartCount(context);
    const waitedFrom = Date.now();
    const restartedAgain = await this.until(async () => (await this.restartCount(context)) > before, MAX_BACKOFF_MS + settings.syncPeriodMs).catch(() => false);
    const restartWaitMs = Date.now() - waitedFrom;

    await node.kubectl.run(['delete', 'pod', '-n', node.namespace, CRASHER, PROBED, '--wait=true', '--timeout=120s']).catch(() => undefined);

    const invariants: InvariantResult[] = [];
    const slowestReady = Math.max(...readyAgainMs);
    invariants.push({
      name: 'the node stays Ready (or is Ready again within the lease duration) across the jumps',
      held: slowestReady <= LEASE_DURATION_MS,
      detail: phases.map((p) => `${p.offset}: not Ready ${(p.notReadyMs / 1000).toFixed(1)} s`).join(', '),
    });
    // The kubelet renews every 10 s (a quarter of the lease duration): a phase of faultMs must see renewals.
    const expectedRenewals = Math.max(1, Math.floor(settings.faultMs / 10_000) - 2);
    invariants.push({
      name: 'the lease keeps being renewed in every phase',
      held: phases.every((p) => p.leaseRenewals >= expectedRenewals),
      detail: `${phases.map((p) => `${p.offset}: ${p.leaseRenewals}`).join(', ')} renewals (>= ${expectedRenewals} each)`,
    });
    // No storm: restarts at least 10 s (Go's initial backoff) apart, except the sleep-2 runs during +10m, where the
    // kubelet's now() is 10 min past containerd's finishedAt (see restartGaps).
    const gaps = restartGaps(phases.filter((p) => p.offset !== '+10m'));
    const minGap = gaps.length ? Math.min(...gaps) : Number.POSITIVE_INFINITY;
    invariants.push({
      name: 'no restart storm after the backward jump (restarts >= 10 s apart outside +10m)',
      held: minGap >= 9_000,
      detail: `restarts per phase ${phases.map((p) => `${p.offset}: ${p.restarts.length}`).join(', ')}; smallest gap outside +10m ${Number.isFinite(minGap) ? `${(minGap / 1000).toFixed(1)} s` : 'none'}`,
    });
    invariants.push({
      name: 'the restart backoff does not wedge',
      held: restartedAgain,
      detail: restartedAgain ? `restarted again ${(restartWaitMs / 1000).toFixed(0)} s after the last jump back` : `no restart within ${(MAX_BACKOFF_MS + settings.syncPeriodMs) / 1000} s`,
    });
    invariants.push({
      name: 'probes keep running in every phase',
      held: phases.every((p) => p.readinessFlips >= 1),
      detail: phases.map((p) => `${p.offset}: ${p.readinessFlips} flips`).join(', '),
    });
    return {
      faults: `${settings.iterations} x kubelet clock ${CLOCK_JUMPS.join(' -> ')} (libfaketime, ${(settings.faultMs / 1000).toFixed(0)} s each)`,
      recoveriesMs,
      invariants,
      figures: [
        `lease renewals per phase ${phases.map((p) => p.leaseRenewals).join('/')}`,
        `crash-loop restarts per phase ${phases.map((p) => p.restarts.length).join('/')}`,
        `probe flips per phase ${phases.map((p) => p.readinessFlips).join('/')}`,
      ],
    };
  }

  async teardown(): Promise<void> {
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  /** Samples the node, its lease and the two pods every second for ms (real time). */
  private async observe(context: ScenarioContext, offset: string, ms: number): Promise<Phase> {
    const { node } = context;
    const phase: Phase = { offset, startedAt: Date.now(), endedAt: 0, leaseRenewals: 0, notReadyMs: 0, restarts: [], readinessFlips: 0 };
    let leaseVersion: string | undefined;
    let restarts = await this.restartCount(context).catch(() => undefined);
    let ready: boolean | undefined;
    let notReadySince: number | undefined;
    while (Date.now() - phase.startedAt < ms) {
      const now = Date.now();
      const [object, lease, crasher, probed] = await Promise.all([
        node.kubectl.getOrUndefined(['node', node.name]).catch(() => undefined),
        node.kubectl.getOrUndefined(['lease', '-n', 'kube-node-lease', node.name]).catch(() => undefined),
        this.pod(context, CRASHER).catch(() => undefined),
        this.pod(context, PROBED).catch(() => undefined),
      ]);
      const version = lease?.metadata?.resourceVersion as string | undefined;
      if (version && leaseVersion && version !== leaseVersion) phase.leaseRenewals++;
      if (version) leaseVersion = version;
      if (object) {
        const isReady = (object.status?.conditions ?? []).some((c: KubeObject) => c.type === 'Ready' && c.status === 'True');
        if (!isReady && notReadySince === undefined) notReadySince = now;
        if (isReady && notReadySince !== undefined) {
          phase.notReadyMs += now - notReadySince;
          notReadySince = undefined;
        }
      }
      const count = crasher?.status?.containerStatuses?.[0]?.restartCount as number | undefined;
      if (count !== undefined && restarts !== undefined && count > restarts) for (let n = restarts; n < count; n++) phase.restarts.push(now);
      if (count !== undefined) restarts = count;
      if (probed) {
        const podReady = isPodReady(probed);
        if (ready !== undefined && podReady !== ready) phase.readinessFlips++;
        ready = podReady;
      }
      await sleep(1000);
    }
    if (notReadySince !== undefined) phase.notReadyMs += Date.now() - notReadySince;
    phase.endedAt = Date.now();
    return phase;
  }

  private pod(context: ScenarioContext, name: string): Promise<KubeObject | undefined> {
    return context.node.kubectl.getOrUndefined(['pod', '-n', context.node.namespace, name]);
  }

  private async restartCount(context: ScenarioContext): Promise<number> {
    return ((await this.pod(context, CRASHER))?.status?.containerStatuses?.[0]?.restartCount as number | undefined) ?? 0;
  }

  private async until(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
    const started = Date.now();
    for (;;) {
      if (await check().catch(() => false)) return true;
      if (Date.now() - started > timeoutMs) throw new Error(`clock-jump: not done within ${timeoutMs / 1000} s`);
      await sleep(1000);
    }
  }
}

/**
 * The gaps between consecutive restarts seen within each phase. (During +10m the kubelet's now() is 10 min past the
 * finishedAt containerd, whose clock did not jump, reports, so Go's IsInBackOffSince(finishedAt) is false and every
 * exit is restarted at once: an artefact of jumping the kubelet's clock alone, which a whole-node jump does not have.)
 */
export function restartGaps(phases: Array<Pick<Phase, 'restarts'>>): number[] {
  const gaps: number[] = [];
  for (const phase of phases) for (let i = 1; i < phase.restarts.length; i++) gaps.push(phase.restarts[i] - phase.restarts[i - 1]);
  return gaps;
}
