// The CI variant of the chaos suite (issue 33): scenarios 1 to 3, one or two iterations each, against our kubelet on
// the real control plane and containerd. Every invariant is one assertion; each scenario prints its one line.
import t from 'tap';
import { apiserverOutage, ContainerdFaults, kubeletKill, runScenario, scenarioSettings, type Scenario, type ScenarioName } from '../src/index.js';

const log = (line: string) => console.error(`${new Date().toISOString()} ${line}`);
const seed = Number(process.env.KUBELET_CHAOS_SEED ?? Date.now() % 100000);
const only = process.env.KUBELET_CHAOS_SCENARIOS?.split(',');

const scenarios: Array<[ScenarioName, () => Scenario]> = [
  ['kubelet-kill', () => kubeletKill],
  ['containerd-faults', () => new ContainerdFaults()],
  ['apiserver-outage', () => apiserverOutage],
];

for (const [name, make] of scenarios) {
  if (only && !only.includes(name)) continue;
  await t.test(`chaos ${name} (CI variant, seed ${seed})`, async (t) => {
    const result = await runScenario(make(), scenarioSettings(name, 'ci', log, { maxReplicas: Number(process.env.KUBELET_CHAOS_REPLICAS ?? 30) }), { seed });
    console.log(result.line);
    for (const invariant of result.invariants) t.ok(invariant.held, `${invariant.name}: ${invariant.detail}`);
    t.ok(result.recoveriesMs.length > 0, `recovered from every fault: ${result.recoveriesMs.map((ms) => `${(ms / 1000).toFixed(1)}s`).join(', ')}`);
  });
}
