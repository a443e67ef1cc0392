// The CI variant of the chaos suite (issue 33): scenarios 1 to 3, one or two iterations each, against our kubelet on
// the real control plane and containerd. Every invariant is one assertion; each scenario prints its one line.
import t from 'tap';
import { runScenario, SCENARIOS, scenarioSettings, type ScenarioName } from '../src/index.js';

const log = (line: string) => console.error(`${new Date().toISOString()} ${line}`);
const seed = Number(process.env.KUBELET_CHAOS_SEED ?? Date.now() % 100000);
const only = process.env.KUBELET_CHAOS_SCENARIOS?.split(',');
const CI_SCENARIOS: ScenarioName[] = ['kubelet-kill', 'containerd-faults', 'apiserver-outage'];

for (const name of CI_SCENARIOS) {
  if (only && !only.includes(name)) continue;
  await t.test(`chaos ${name} (CI variant, seed ${seed})`, async (t) => {
    const overrides = process.env.KUBELET_CHAOS_REPLICAS ? { maxReplicas: Number(process.env.KUBELET_CHAOS_REPLICAS) } : {};
    const result = await runScenario(SCENARIOS[name](), scenarioSettings(name, 'ci', log, overrides), { seed });
    console.log(result.line);
    for (const invariant of result.invariants) t.ok(invariant.held, `${invariant.name}: ${invariant.detail}`);
    t.ok(result.recoveriesMs.length > 0, `recovered from every fault: ${result.recoveriesMs.map((ms) => `${(ms / 1000).toFixed(1)}s`).join(', ')}`);
  });
}
