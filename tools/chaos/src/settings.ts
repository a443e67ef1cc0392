import type { Scenario, ScenarioSettings } from './scenario.js';
import { apiserverOutage } from './scenarios/apiserver-outage.js';
import { ClockJump } from './scenarios/clock-jump.js';
import { DiskPressure } from './scenarios/disk-pressure.js';
import { ContainerdFaults } from './scenarios/containerd-faults.js';
import { kubeletKill } from './scenarios/kubelet-kill.js';
import { KubeletMemory } from './scenarios/kubelet-memory.js';

/** Every scenario by name, each made fresh for a run. */
export const SCENARIOS = {
  'kubelet-kill': (): Scenario => kubeletKill,
  'containerd-faults': (): Scenario => new ContainerdFaults(),
  'apiserver-outage': (): Scenario => apiserverOutage,
  'disk-pressure': (): Scenario => new DiskPressure(),
  'clock-jump': (): Scenario => new ClockJump(),
  'kubelet-memory': (): Scenario => new KubeletMemory({ limitFactor: Number(process.env.KUBELET_CHAOS_MEMORY_FACTOR ?? 1.15) }),
} as const;

export type ScenarioName = keyof typeof SCENARIOS;

type Knobs = Pick<ScenarioSettings, 'iterations' | 'faultMs'> & Partial<Pick<ScenarioSettings, 'maxReplicas' | 'settleReplicas'>>;

/** Scenarios 4-6 churn 0 -> 10 -> 0 around 5 pods: a 384 MiB disk, a memory limit sized at the settled working set. */
const SMALL_CHURN = { maxReplicas: 10, settleReplicas: 5 };

/**
 * The short variant in the test command: one or two iterations of scenarios 1 to 3, churning 0 -> 15 -> 0 around 6
 * pods (the test command's time budget); the API server down 25 s, longer than the node monitor's grace period.
 */
const CI_CHURN = { maxReplicas: 15, settleReplicas: 6 };
export const CI_SETTINGS: Record<ScenarioName, Knobs> = {
  'kubelet-kill': { iterations: 2, faultMs: 0, ...CI_CHURN },
  'containerd-faults': { iterations: 1, faultMs: 10_000, ...CI_CHURN },
  'apiserver-outage': { iterations: 1, faultMs: 25_000, ...CI_CHURN },
  'disk-pressure': { iterations: 1, faultMs: 0, ...SMALL_CHURN },
  'clock-jump': { iterations: 1, faultMs: 45_000, ...SMALL_CHURN },
  'kubelet-memory': { iterations: 1, faultMs: 120_000, ...SMALL_CHURN },
};

/** The full runs (`npm run chaos`): the counts and durations. */
export const FULL_SETTINGS: Record<ScenarioName, Knobs> = {
  'kubelet-kill': { iterations: 20, faultMs: 0 },
  'containerd-faults': { iterations: 2, faultMs: 30_000 },
  'apiserver-outage': { iterations: 1, faultMs: 120_000 },
  'disk-pressure': { iterations: 1, faultMs: 0, ...SMALL_CHURN },
  'clock-jump': { iterations: 1, faultMs: 45_000, ...SMALL_CHURN },
  'kubelet-memory': { iterations: 1, faultMs: 300_000, ...SMALL_CHURN },
};

export function scenarioSettings(name: ScenarioName, variant: 'ci' | 'full', log: (line: string) => void, overrides: Partial<ScenarioSettings> = {}): ScenarioSettings {
  return {
    maxReplicas: 30,
    settleReplicas: 10,
    ...(variant === 'ci' ? CI_SETTINGS : FULL_SETTINGS)[name],
    // Go's --sync-frequency default.
    syncPeriodMs: 60_000,
    gcWaitMs: 90_000,
    log,
    ...overrides,
  };
}
