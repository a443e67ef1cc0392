// Scenario 5 (issue 33): the kubelet's wall clock jumps +10 min, back, -10 min, back (libfaketime) under churn.
// Not in the CI variant (a few minutes of holds and the backoff wait): run it with `npx tap test/clock-jump.test.ts`.
import t from 'tap';
import { runScenario, type ScenarioSettings } from '../src/index.js';
import { ClockJump, restartGaps } from '../src/scenarios/clock-jump.js';

const log = (line: string) => console.error(`${new Date().toISOString()} ${line}`);
const seed = Number(process.env.KUBELET_CHAOS_SEED ?? Date.now() % 100000);

t.test('restartGaps: the gaps within each phase, none across phases', async (t) => {
  t.same(restartGaps([{ restarts: [0, 10_000, 30_000] }, { restarts: [31_000] }, { restarts: [] }]), [10_000, 20_000]);
});

t.test(`chaos clock-jump (seed ${seed})`, async (t) => {
  const settings: ScenarioSettings = {
    iterations: 1,
    maxReplicas: Number(process.env.KUBELET_CHAOS_REPLICAS ?? 10),
    settleReplicas: 5,
    syncPeriodMs: 60_000,
    gcWaitMs: 90_000,
    faultMs: Number(process.env.KUBELET_CHAOS_FAULT_MS ?? 45_000),
    log,
  };
  const result = await runScenario(new ClockJump(), settings, { seed });
  console.log(result.line);
  for (const invariant of result.invariants) t.ok(invariant.held, `${invariant.name}: ${invariant.detail}`);
  t.ok(result.recoveriesMs.length > 0, `recovered after every return to +0: ${result.recoveriesMs.map((ms) => `${(ms / 1000).toFixed(1)}s`).join(', ')}`);
});
