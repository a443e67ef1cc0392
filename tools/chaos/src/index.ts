// The chaos and soak suite: each scenario injects faults into a kubelet on the real control plane and containerd
// while a Deployment churns, then checks the invariants (nothing lost, nothing leaked, nothing stuck).
export * from './cri-proxy.js';
export { Churn, CHURN_DEPLOYMENT, type ChurnOptions, type ChurnStats } from './churn.js';
export * from './invariants.js';
export { acquireRuntimeLock, apiGet, ChaosNode, containerdPid, containerdTool, type ChaosNodeOptions, type RequestCounts } from './node.js';
export { freePort, runScenario, seededRandom, type FaultReport, type RecoveredOptions, type Scenario, type ScenarioContext, type ScenarioResult, type ScenarioSettings } from './scenario.js';
export { kubeletKill } from './scenarios/kubelet-kill.js';
export { ContainerdFaults } from './scenarios/containerd-faults.js';
export { apiserverOutage, countsSince, noRelistStorm, MAX_LISTS_PER_RESOURCE_AFTER_RECONNECT } from './scenarios/apiserver-outage.js';
export { CI_SETTINGS, FULL_SETTINGS, SCENARIOS, scenarioSettings, type ScenarioName } from './settings.js';
export { metricValue, runSoak, slope, type SoakOptions, type SoakResult, type SoakSample } from './soak.js';
export { ClockJump, CLOCK_JUMPS, LIBFAKETIME, restartGaps } from './scenarios/clock-jump.js';
export { KubeletMemory, KUBELET_MEMORY_CGROUP, type KubeletMemoryOptions } from './scenarios/kubelet-memory.js';
export { DiskPressure } from './scenarios/disk-pressure.js';
