// Container GC decision cost: `npm run bench -w @kubelet-ts/container-gc`.
//
// 10,000 exited containers (1,000 pods x 2 containers x 5 dead instances) plus 1,000 running ones
// and 2,000 sandboxes. "plan" is the pure decision (grouping into evict units, per-unit limit,
// node limit, sandbox choice); "pass" is a whole garbageCollect() on FakeRuntimeService (listing,
// removal calls, containerStatus for log paths), i.e. the decision plus the fake's own cost.
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { FakeClock } from '@kubelet-ts/core/testing';
import { ContainerGC, evictableContainers, planContainerEviction, planSandboxEviction, type ContainerGCPolicy } from '../src/index.js';
import { FakePodStateProvider } from '../src/testing.js';

const PODS = 1_000;
const NAMES = ['app', 'sidecar'];
const DEAD_PER_CONTAINER = 5;
const NOW_MS = Date.parse('2026-01-01T00:00:00Z');

function world(): { containers: runtimeapi.Container[]; sandboxes: runtimeapi.PodSandbox[] } {
  const containers: runtimeapi.Container[] = [];
  const sandboxes: runtimeapi.PodSandbox[] = [];
  let t = NOW_MS - 3_600_000;
  for (let p = 0; p < PODS; p++) {
    const uid = `uid-${p}`;
    for (let s = 0; s < 2; s++) {
      sandboxes.push({
        id: `sb-${p}-${s}`, metadata: { name: `pod-${p}`, namespace: 'default', uid, attempt: s }, state: s === 1 ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
        createdAt: (t += 7) * 1e6, labels: {}, annotations: {}, runtimeHandler: '',
      });
    }
    for (const name of NAMES) {
      for (let a = 0; a <= DEAD_PER_CONTAINER; a++) {
        containers.push({
          id: `c-${p}-${name}-${a}`, podSandboxId: `sb-${p}-1`, metadata: { name, attempt: a }, image: null, imageRef: '',
          state: a === DEAD_PER_CONTAINER ? 'CONTAINER_RUNNING' : 'CONTAINER_EXITED', createdAt: (t += 13) * 1e6,
          labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': name }, annotations: {}, imageId: '',
        });
      }
    }
  }
  return { containers, sandboxes };
}

const pods = new FakePodStateProvider({ live: Array.from({ length: PODS }, (_, p) => `uid-${p}`) });
// Every 10th pod is deleted: all of its dead containers and its stopped sandbox go.
for (let p = 0; p < PODS; p += 10) {
  pods.live.delete(`uid-${p}`);
  pods.deleted.add(`uid-${p}`);
}

function plan(policy: ContainerGCPolicy): { ms: number; removed: number; sandboxes: number } {
  const { containers, sandboxes } = world();
  const start = performance.now();
  const units = evictableContainers(containers, policy.minAgeMs, NOW_MS);
  const removed = planContainerEviction(units, { policy, allSourcesReady: true, evictNonDeletedPods: false, podStateProvider: pods }).length;
  const sb = planSandboxEviction(containers, sandboxes, pods, false).length;
  return { ms: performance.now() - start, removed, sandboxes: sb };
}

async function pass(policy: ContainerGCPolicy): Promise<{ ms: number; removed: number }> {
  const clock = new FakeClock(NOW_MS - 3_600_000);
  const runtime = new FakeRuntimeService(clock);
  const { containers } = world();
  const sandboxIds = new Map<string, string>();
  for (let p = 0; p < PODS; p++) {
    const cfg = { metadata: { name: `pod-${p}`, namespace: 'default', uid: `uid-${p}`, attempt: 1 }, labels: { 'io.kubernetes.pod.uid': `uid-${p}` } };
    sandboxIds.set(`sb-${p}-1`, await runtime.runPodSandbox(cfg));
  }
  for (const c of containers) {
    clock.setTime(Number(c.createdAt) / 1e6);
    const sandboxId = sandboxIds.get(c.podSandboxId)!;
    const id = await runtime.createContainer(sandboxId, { metadata: c.metadata!, labels: c.labels, image: { image: 'busybox' } }, { metadata: { uid: c.labels['io.kubernetes.pod.uid'] } });
    if (c.state !== 'CONTAINER_RUNNING') runtime.containers.get(id)!.status.state = 'CONTAINER_EXITED';
    else runtime.containers.get(id)!.status.state = 'CONTAINER_RUNNING';
  }
  clock.setTime(NOW_MS);
  const gc = new ContainerGC({
    runtimeService: runtime,
    podStateProvider: pods,
    policy,
    podLogsRootDirectory: '/nonexistent/kubelet-ts-bench',
    clock,
    killContainer: (c) => runtime.stopContainer(c.id, 2),
  });
  const before = runtime.containers.size;
  const start = performance.now();
  await gc.garbageCollect(true, false);
  return { ms: performance.now() - start, removed: before - runtime.containers.size };
}

const exited = PODS * NAMES.length * DEAD_PER_CONTAINER;
const policies: [string, ContainerGCPolicy][] = [
  ['maxPerPodContainer=1', { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 }],
  ['maxPerPodContainer=-1, maxContainers=1000', { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 1_000 }],
  ['maxPerPodContainer=1, maxContainers=100', { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: 100 }],
];

plan(policies[0][1]); // warm-up
await pass(policies[0][1]);
console.log(`Container GC over ${exited} exited containers (+${PODS * NAMES.length} running, ${2 * PODS} sandboxes)`);
console.log(['policy', 'plan ms', 'µs/exited', 'pass ms', 'µs/exited', 'removed'].map((s, i) => (i === 0 ? s.padEnd(44) : s.padStart(11))).join(''));
for (const [name, policy] of policies) {
  const runs = [plan(policy), plan(policy), plan(policy)].sort((a, b) => a.ms - b.ms);
  const p = runs[1];
  const full = await pass(policy);
  console.log(
    [name.padEnd(44), p.ms.toFixed(1), ((p.ms * 1000) / exited).toFixed(2), full.ms.toFixed(1), ((full.ms * 1000) / exited).toFixed(2), String(full.removed)]
      .map((s, i) => (i === 0 ? s : s.padStart(11)))
      .join(''),
  );
}
