// `npm run chaos` (tools/chaos): the full chaos runs and the soak, a benchmark (not part of the test command).
//   npm run chaos                                  every scenario, full variant
//   npm run chaos -- --scenarios=kubelet-kill,apiserver-outage [--variant=ci] [--seed=N] [--replicas=30]
//   npm run chaos -- --soak=60m                    the soak alone (one hour of churn, samples every minute)
// Needs containerd (tools/containerd/start.sh) and builds/starts the control plane itself (tools/kube/start.sh).
import { parseArgs } from 'node:util';
import { parseDuration } from '@kubelet-ts/core';
import { runScenario, type Scenario, type ScenarioResult } from './scenario.js';
import { scenarioSettings, SCENARIOS, type ScenarioName } from './settings.js';
import { runSoak } from './soak.js';

const { values } = parseArgs({
  options: {
    scenarios: { type: 'string' },
    variant: { type: 'string', default: 'full' },
    seed: { type: 'string' },
    replicas: { type: 'string' },
    soak: { type: 'string' },
  },
});

const log = (line: string) => console.error(`${new Date().toISOString()} ${line}`);

async function main(): Promise<number> {
  if (values.soak) {
    const durationMs = parseDuration(values.soak);
    const result = await runSoak({ durationMs, maxReplicas: values.replicas ? Number(values.replicas) : undefined, log });
    console.log(result.line);
    return 0;
  }
  const variant = values.variant === 'ci' ? 'ci' : 'full';
  const names = (values.scenarios?.split(',') ?? Object.keys(SCENARIOS)) as ScenarioName[];
  const unknown = names.filter((name) => !(name in SCENARIOS));
  if (unknown.length > 0) throw new Error(`unknown scenario(s) ${unknown.join(', ')}; known: ${Object.keys(SCENARIOS).join(', ')}`);
  const results: ScenarioResult[] = [];
  for (const name of names) {
    const scenario: Scenario = SCENARIOS[name]();
    const overrides = values.replicas ? { maxReplicas: Number(values.replicas) } : {};
    const result = await runScenario(scenario, scenarioSettings(name, variant, log, overrides), { seed: values.seed ? Number(values.seed) : undefined });
    console.log(result.line);
    for (const invariant of result.invariants) if (!invariant.held) console.log(`  broken: ${invariant.name}: ${invariant.detail}`);
    results.push(result);
  }
  console.log('\nchaos summary:');
  for (const result of results) console.log(result.line);
  return results.every((result) => result.ok) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
