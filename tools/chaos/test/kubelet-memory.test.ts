// Scenario 6 (issue 33): the kubelet in a memory cgroup limited close to its working set, under churn.
// Not in the CI variant: run it with `npx tap test/kubelet-memory.test.ts`.
import t from 'tap';
import { runScenario, type ScenarioSettings } from '../src/index.js';
import { KubeletMemory, memoryCgroupOf, parseMemoryStat, workingSet } from '../src/scenarios/kubelet-memory.js';

const log = (line: string) => console.error(`${new Date().toISOString()} ${line}`);
const seed = Number(process.env.KUBELET_CHAOS_SEED ?? Date.now() % 100000);

t.test('working set: usage minus inactive file; the memory cgroup of a process', async (t) => {
  const stat = parseMemoryStat('cache 100\ntotal_inactive_file 300\ninactive_file 200\n');
  t.equal(workingSet(1000, stat), 700);
  t.equal(workingSet(100, stat), 0);
  t.match(memoryCgroupOf('self'), /^\//);
});

t.test(`chaos kubelet-memory (seed ${seed})`, async (t) => {
  const settings: ScenarioSettings = {
    iterations: 1,
    maxReplicas: Number(process.env.KUBELET_CHAOS_REPLICAS ?? 10),
    settleReplicas: 5,
    syncPeriodMs: 60_000,
    gcWaitMs: 90_000,
    faultMs: Number(process.env.KUBELET_CHAOS_FAULT_MS ?? 180_000),
    log,
  };
  const result = await runScenario(new KubeletMemory({ limitFactor: Number(process.env.KUBELET_CHAOS_MEMORY_FACTOR ?? 1.15) }), settings, { seed });
  console.log(result.line);
  for (const invariant of result.invariants) t.ok(invariant.held, `${invariant.name}: ${invariant.detail}`);
  t.ok(result.recoveriesMs.length > 0, `recovered: ${result.recoveriesMs.map((ms) => `${(ms / 1000).toFixed(1)}s`).join(', ')}`);
});
