import { setTimeout as sleep } from 'node:timers/promises';
import { apiPods, type InvariantResult, runtimeView } from '../invariants.js';
import { metricValue } from '../soak.js';
import type { FaultReport, Scenario, ScenarioContext } from '../scenario.js';


/**
 * Scenario 1: the kubelet SIGKILLed at random points of its syncs (the churn keeps it starting and stopping pods),
 * `iterations` times, and started again at once (harsher than systemd's RestartSec). It must adopt the running
 * containers: a container that ran before a kill, of a pod that still exists and is not being deleted, still runs
 * afterwards with the same id and the same restart count.
 */
export const kubeletKill: Scenario = {
  name: 'kubelet-kill',
  async inject(context: ScenarioContext): Promise<FaultReport> {
    const { node, settings } = context;
    const recoveriesMs: number[] = [];
    const restarted: string[] = [];
    const recounted: string[] = [];
    let adopted = 0;
    for (let i = 0; i < settings.iterations; i++) {
      // A random point: 2-12 s into whatever the churn is doing.
      await sleep(2000 + context.random() * 10_000);
      const before = await runtimeView(node);
      // The API's restart count of a container, where the API's status already names the container running in the
      // runtime (a status the killed kubelet had not written yet says nothing about what the next one adopts).
      const restartsBefore = new Map<string, number>();
      for (const pod of await apiPods(node).catch(() => [])) {
        for (const status of pod.status?.containerStatuses ?? []) {
          const running = before.running.get(pod.metadata.uid)?.get(status.name) ?? [];
          if (running.length === 1 && String(status.containerID ?? '').endsWith(`://${running[0]}`)) {
            restartsBefore.set(`${pod.metadata.uid}/${status.name}`, status.restartCount);
          }
        }
      }
      await node.kubelet.kill();
      const killedAt = Date.now();
      settings.log(`kubelet-kill: SIGKILL ${i + 1}/${settings.iterations} with ${[...before.running.values()].reduce((n, m) => n + m.size, 0)} containers running`);
      await node.start();
      recoveriesMs.push(await context.recovered(killedAt));
      // Adoption: the containers that ran before the kill, of pods still there and not being deleted.
      const [pods, after] = await Promise.all([apiPods(node), runtimeView(node)]);
      for (const pod of pods) {
        if (pod.metadata.deletionTimestamp) continue;
        const uid = pod.metadata.uid as string;
        for (const [name, ids] of before.running.get(uid) ?? []) {
          const now = after.running.get(uid)?.get(name) ?? [];
          const status = (pod.status?.containerStatuses ?? []).find((s: { name: string }) => s.name === name);
          const countBefore = restartsBefore.get(`${uid}/${name}`);
          if (now.includes(ids[0])) {
            adopted++;
            // The same container runs on: a count that moved is the new kubelet's reading of the container's
            // annotations against what the API had, not a restart; reported, not counted as one.
            if (countBefore !== undefined && status?.restartCount !== countBefore) recounted.push(`${pod.metadata.name}/${name} ${countBefore} -> ${status?.restartCount}`);
          } else restarted.push(`${pod.metadata.name}/${name} (${ids[0].slice(0, 12)} -> ${now[0]?.slice(0, 12) ?? 'none'}, restarts ${restartsBefore.get(`${uid}/${name}`)} -> ${status?.restartCount})`);
        }
      }
    }
    const stall = await stalledLoop(context);
    recoveriesMs.push(stall.recoveryMs);
    return {
      faults: `${settings.iterations} x SIGKILL of the kubelet + its event loop stalled ${STALL_MS / 1000}s (SIGSTOP)`,
      recoveriesMs,
      invariants: [
        stall.invariant,
        {
          name: 'running containers adopted, not restarted',
          held: restarted.length === 0,
          detail: restarted.length === 0 ? `${adopted} containers adopted across ${settings.iterations} kills` : `${restarted.length} restarted: ${restarted.slice(0, 5).join('; ')}`,
        },
      ],
      figures: [`${adopted} containers adopted`, ...(recounted.length ? [`restart counts changed on adopted containers: ${recounted.join(', ')}`] : [])],
    };
  },
};

/** Longer than the EventLoopMonitor's 10 s threshold. */
const STALL_MS = 12_000;

/**
 * Scenario 8's check on a real kubelet: its event loop stalled (the process SIGSTOPped for 12 s, as a loop blocked by
 * a long synchronous task would be) must show in healthz (`[-]eventloop failed`) and in /metrics
 * (nodejs_eventloop_lag_max_seconds over the threshold), and the kubelet must recover by itself.
 */
async function stalledLoop(context: ScenarioContext): Promise<{ invariant: InvariantResult; recoveryMs: number }> {
  const { node, settings } = context;
  await node.metrics(); // resets the delay statistics: the next scrape covers the stall
  process.kill(node.kubelet.pid, 'SIGSTOP');
  settings.log(`kubelet-kill: SIGSTOP the kubelet for ${STALL_MS / 1000} s`);
  await sleep(STALL_MS);
  process.kill(node.kubelet.pid, 'SIGCONT');
  const resumedAt = Date.now();
  const health = await node.healthz();
  const metrics = (await node.metrics()) ?? '';
  const lagMax = metricValue(metrics, 'nodejs_eventloop_lag_max_seconds');
  const failed = health?.status === 500 && /\[-\]eventloop failed/.test(health.body);
  const recoveryMs = await context.recovered(resumedAt, undefined, { allowFailing: ['eventloop'] });
  return {
    recoveryMs,
    invariant: {
      name: 'a stalled event loop shows in healthz and /metrics',
      held: failed && lagMax >= 10,
      detail: `healthz ${health?.status} ${health?.body.split('\n').filter((line) => line.includes('eventloop')).join(' ')}; nodejs_eventloop_lag_max_seconds ${lagMax}`,
    },
  };
}
