// CSI volumes on our kubelet against the real control plane (v1.20.2) on containerd, with the CSI driver of
// tools/csi-driver: N pods created at once, each with its own static CSI PV and claim, then N pods each with an inline
// CSI volume, then N pods without CSI (the reference for API requests). For each phase:
// - the kubelet's time per pod volume against the bare driver calls it makes: from the start of the pod's
//   NodeStageVolume to the end of its NodePublishVolume (the driver's call log: completion time and duration of each
//   call) over the sum of the two calls' durations (target <= 1.2); and from the creation of the pods to each pod's
//   NodePublishVolume end, and to all Ready;
// - API requests per pod (rest_client_requests_total of the kubelet's /metrics, up and down, less the idle rate of
//   node status and lease updates);
// - the kubelet's RSS and CPU seconds.
//
//   npm run bench                                   # every benchmark, this one included
//   npx tsx tools/cluster-e2e/bench/csi.bench.ts
//   KUBELET_BENCH_CSI_PODS=10 npx tsx tools/cluster-e2e/bench/csi.bench.ts
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import {
  CSI_E2E_LABEL,
  csiClaim,
  csiDriverObject,
  CsiDriverProcess,
  csiPersistentVolume,
  ensureCluster,
  inlineVolumeHandle,
  Kubectl,
  KubeletProcess,
  nodeKubeconfig,
  ourCgroupRoot,
  unmountAndRemove,
  waitFor,
  type CsiCall,
} from '../src/index.js';
import { condition, isPodReady, sleepForever } from '../src/workloads.js';

type Json = Record<string, any>;
type Mode = 'pv' | 'inline' | 'none';

const N = Number.parseInt(process.env.KUBELET_BENCH_CSI_PODS ?? '20', 10);
const NODE = 'bench-csi';
const NS = 'bench-csi';
const PORT = 10274;
const DRIVER = 'bench.csi.kts.example';
const PHASE_TIMEOUT_MS = 600_000;
const mib = (bytes: number) => bytes / (1 << 20);

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const dir = mkdtempSync(join(containerd.root, 'bench-csi-'));
const root = join(dir, 'root');
const kubeconfig = await nodeKubeconfig(NODE);
const kubelet = await KubeletProcess.startOurs({
  node: NODE,
  kubeconfig,
  runtimeEndpoint: containerd.endpoint,
  dir,
  extraArgs: ['--kube-api-qps=50', '--kube-api-burst=100', '--event-qps=50', '--event-burst=100', `--client-ca-file=${cluster.caFile}`, `--port=${PORT}`, '--healthz-port=0'],
});
const driver = CsiDriverProcess.start({ name: DRIVER, nodeId: NODE, kubeletDir: root, dir: join(dir, 'driver') });

/** The sum of rest_client_requests_total over every code, method and host. */
async function apiRequests(): Promise<number> {
  const metrics = await kubectl.run(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics`]);
  let sum = 0;
  for (const match of metrics.matchAll(/^rest_client_requests_total\{[^}]*\} ([0-9.e+]+)$/gm)) sum += Number(match[1]);
  return sum;
}

const STORAGE_RESOURCES = ['persistentvolumeclaims', 'persistentvolumes', 'csidrivers', 'volumeattachments', 'csinodes'];
/**
 * The API server's apiserver_request_total for the storage resources, by `resource verb`, JSON requests only: the
 * kubelet's (the controller-manager and scheduler speak protobuf; the bench's own kubectl calls touch only pods).
 */
async function storageRequests(): Promise<Map<string, number>> {
  const metrics = await kubectl.run(['get', '--raw', '/metrics']);
  const out = new Map<string, number>();
  for (const match of metrics.matchAll(/^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$/gm)) {
    const labels = Object.fromEntries([...match[1].matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (labels.contentType !== 'application/json' || !STORAGE_RESOURCES.includes(labels.resource)) continue;
    const key = `${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''} ${labels.verb}`;
    out.set(key, (out.get(key) ?? 0) + Number(match[2]));
  }
  return out;
}

function benchPod(i: number, mode: Mode): Json {
  const name = `${mode}-${i}`;
  const volume =
    mode === 'pv'
      ? { name: 'data', persistentVolumeClaim: { claimName: `claim-${i}` } }
      : mode === 'inline'
        ? { name: 'data', csi: { driver: DRIVER } }
        : { name: 'data', emptyDir: {} };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: { mode } },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'app', image: containerd.busyboxImage, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [volume],
    },
  };
}

interface PhaseResult {
  /** The mode, and `, 1 by 1` when the pods were created one after another (each waited for before the next). */
  label: string;
  mode: Mode;
  count: number;
  /** Per pod: (publish end - stage start, or the publish alone) / (stage + publish durations). */
  windowRatios: number[];
  /** Sum of the windows over the sum of the bare calls. */
  totalRatio: number;
  bareMs: number[];
  /** NodeStageVolume end -> NodePublishVolume start: the kubelet's own time between the two calls. */
  gapMs: number[];
  /** The pod created -> its NodePublishVolume end. */
  mountedMs: number[];
  readySeconds: number;
  goneSeconds: number;
  requestsPerPod: number;
  netRequestsPerPod: number;
  /** The storage requests (storageRequests) per pod, by `resource verb`. */
  storagePerPod: Map<string, number>;
  rssMiB: number;
  cpuSeconds: number;
}

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const endOf = (call: CsiCall) => Date.parse(call.ts);
const startOf = (call: CsiCall) => Date.parse(call.ts) - (call.durationMs ?? 0);

let idleRequestsPerSecond = 0;

async function phase(mode: Mode, serial = false): Promise<PhaseResult> {
  const count = serial ? Math.min(5, N) : N;
  const pods = Array.from({ length: count }, (_, i) => benchPod(i, mode));
  const callsBefore = driver.calls().length;
  const requestsBefore = await apiRequests();
  const storageBefore = await storageRequests();
  const cpuBefore = kubelet.resources().cpuSeconds;
  const created = Date.now();
  const createdAt = new Map<string, number>();
  const readyPods = async () => (await kubectl.json(['get', 'pods', '-n', NS, '-l', `mode=${mode}`])).items.filter((p: Json) => isPodReady(p)).length;
  if (serial) {
    for (const [i, pod] of pods.entries()) {
      createdAt.set(pod.metadata.name, Date.now());
      await kubectl.apply(pod);
      await waitFor(`${mode}: pod ${i + 1} of ${count} Ready`, async () => (await readyPods()) === i + 1, PHASE_TIMEOUT_MS, () => kubelet.logTail(10), 50);
    }
  } else {
    for (const pod of pods) createdAt.set(pod.metadata.name, created);
    await kubectl.apply(...pods);
    await waitFor(`${mode}: ${count} pods Ready`, async () => (await readyPods()) === count, PHASE_TIMEOUT_MS, () => kubelet.logTail(10), 100);
  }
  const readySeconds = (Date.now() - created) / 1000;
  const rssMiB = mib(kubelet.resources().rssBytes);
  const items = (await kubectl.json(['get', 'pods', '-n', NS, '-l', `mode=${mode}`])).items as Json[];
  const calls = driver.calls().slice(callsBefore).filter((c) => !c.error);
  const windowRatios: number[] = [];
  const bareMs: number[] = [];
  const mountedMs: number[] = [];
  const gapMs: number[] = [];
  let windows = 0;
  let bare = 0;
  if (mode !== 'none') {
    for (const pod of items) {
      const i = Number(pod.metadata.name.split('-').pop());
      const volumeId = mode === 'pv' ? `bench-vol-${i}` : inlineVolumeHandle(pod.metadata.uid, 'data');
      const stage = calls.find((c) => c.method === 'NodeStageVolume' && c.volumeId === volumeId);
      const publish = calls.find((c) => c.method === 'NodePublishVolume' && c.volumeId === volumeId);
      if (!publish || (mode === 'pv' && !stage)) throw new Error(`${pod.metadata.name}: no ${stage ? 'NodePublishVolume' : 'NodeStageVolume'} of ${volumeId} in the driver's log`);
      const callMs = (stage?.durationMs ?? 0) + (publish.durationMs ?? 0);
      const windowMs = endOf(publish) - startOf(stage ?? publish);
      bareMs.push(callMs);
      // An inline volume is published only: its window is the call itself.
      if (stage) {
        gapMs.push(startOf(publish) - endOf(stage));
        windows += windowMs;
        bare += callMs;
        windowRatios.push(windowMs / Math.max(callMs, 1));
      }
      mountedMs.push(endOf(publish) - createdAt.get(pod.metadata.name)!);
    }
  }
  const deleted = Date.now();
  await kubectl.run(['delete', 'pods', '-n', NS, '-l', `mode=${mode}`, '--wait=false']);
  await waitFor(`${mode}: all pods gone`, async () => (await kubectl.json(['get', 'pods', '-n', NS, '-l', `mode=${mode}`])).items.length === 0, PHASE_TIMEOUT_MS, () => kubelet.logTail(10), 100);
  if (mode !== 'none') {
    await waitFor(`${mode}: every volume unpublished`, async () => driver.calls().slice(callsBefore).filter((c) => c.method === 'NodeUnpublishVolume' && !c.error).length >= count, PHASE_TIMEOUT_MS, () => kubelet.logTail(10), 100);
  }
  const goneSeconds = (Date.now() - deleted) / 1000;
  const cpuSeconds = kubelet.resources().cpuSeconds - cpuBefore;
  const requests = (await apiRequests()) - requestsBefore;
  const storagePerPod = new Map<string, number>();
  for (const [key, n] of await storageRequests()) {
    const delta = n - (storageBefore.get(key) ?? 0);
    if (delta > 0) storagePerPod.set(key, delta / count);
  }
  const elapsedSeconds = (Date.now() - created) / 1000;
  return {
    label: serial ? `${mode}, 1 by 1` : mode,
    mode,
    count,
    windowRatios,
    gapMs,
    totalRatio: bare > 0 ? windows / bare : Number.NaN,
    bareMs,
    mountedMs,
    readySeconds,
    goneSeconds,
    requestsPerPod: requests / count,
    netRequestsPerPod: (requests - idleRequestsPerSecond * elapsedSeconds) / count,
    storagePerPod,
    rssMiB,
    cpuSeconds,
  };
}

const results: PhaseResult[] = [];
let idleRssMiB = 0;
try {
  await waitFor('node Ready', async () => condition(await kubectl.getOrUndefined(['node', NODE]), 'Ready')?.status === 'True', 120_000, () => kubelet.logTail());
  await waitFor(`${DRIVER} registered`, async () => ((await kubectl.getOrUndefined(['csinode', NODE]))?.spec?.drivers ?? []).some((d: Json) => d.name === DRIVER), 60_000, () => `${kubelet.logTail()}\n${driver.tail()}`);
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=300s']);
  await kubectl.run(['create', 'namespace', NS]);
  await waitFor('the namespace default service account', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);
  await kubectl.run(['delete', 'pv', '-l', `${CSI_E2E_LABEL}=bench`, '--ignore-not-found']);
  await kubectl.apply(
    { ...csiDriverObject(DRIVER, { attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ['Persistent', 'Ephemeral'] }), metadata: { name: DRIVER, labels: { [CSI_E2E_LABEL]: 'bench' } } },
    ...Array.from({ length: N }, (_, i) => {
      const pv = csiPersistentVolume({ name: `bench-csi-${i}`, driver: DRIVER, volumeHandle: `bench-vol-${i}` });
      return { ...pv, metadata: { name: pv.metadata.name, labels: { [CSI_E2E_LABEL]: 'bench' } } };
    }),
    ...Array.from({ length: N }, (_, i) => csiClaim(`claim-${i}`, NS, `bench-csi-${i}`)),
  );
  await waitFor(`${N} claims Bound`, async () => (await kubectl.json(['get', 'pvc', '-n', NS])).items.filter((c: Json) => c.status?.phase === 'Bound').length === N, 120_000);
  // The idle rate of the kubelet's own requests (node status, lease), to take out of each phase.
  await new Promise((resolve) => setTimeout(resolve, 5000));
  idleRssMiB = mib(kubelet.resources().rssBytes);
  const idleFrom = await apiRequests();
  const idleStart = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 20_000));
  idleRequestsPerSecond = ((await apiRequests()) - idleFrom) / ((Date.now() - idleStart) / 1000);
  for (const [mode, serial] of [['pv', true], ['pv', false], ['inline', true], ['inline', false], ['none', false]] as const) {
    const result = await phase(mode, serial);
    results.push(result);
    console.error(`${result.label}: ${result.count} pods Ready in ${result.readySeconds.toFixed(1)} s, gone in ${result.goneSeconds.toFixed(1)} s, ${result.requestsPerPod.toFixed(1)} API requests per pod`);
  }
} finally {
  await kubelet.stop();
  await driver.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'pv', '-l', `${CSI_E2E_LABEL}=bench`, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'csidriver', DRIVER, '--ignore-not-found']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await kubectl.run(['delete', 'csinode', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS);
  await removeHostCgroup(ourCgroupRoot(NODE)).catch(() => undefined);
  if (process.env.KUBELET_BENCH_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
}

const fmt = (v: number, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : '-');
const none = results.find((r) => r.mode === 'none');
const w = 16;
console.log(`\nCSI volumes on kubelet-ts (${cluster.version} control plane, containerd, tools/csi-driver): ${N} pods created at once, or ${Math.min(5, N)} one by one`);
console.log(`idle RSS ${fmt(idleRssMiB, 0)} MiB; idle API requests ${fmt(idleRequestsPerSecond)} /s (taken out of "net")`);
console.log(
  `${'phase'.padEnd(w)} ${'window/bare p50'.padStart(15)} ${'p90'.padStart(6)} ${'total'.padStart(6)} ${'bare ms p50'.padStart(11)} ${'gap ms p50'.padStart(10)} ${'mounted p50'.padStart(11)} ${'max'.padStart(7)} ${'Ready s'.padStart(8)} ${'gone s'.padStart(7)} ${'req/pod'.padStart(8)} ${'net'.padStart(6)} ${'- none'.padStart(7)} ${'RSS MiB'.padStart(8)} ${'CPU s'.padStart(6)}`,
);
for (const r of results) {
  console.log(
    [
      r.label.padEnd(w),
      fmt(percentile(r.windowRatios, 50)).padStart(15),
      fmt(percentile(r.windowRatios, 90)).padStart(6),
      fmt(r.totalRatio).padStart(6),
      fmt(percentile(r.bareMs, 50), 0).padStart(11),
      fmt(percentile(r.gapMs, 50), 0).padStart(10),
      `${fmt(percentile(r.mountedMs, 50) / 1000, 1)} s`.padStart(11),
      `${fmt(Math.max(...r.mountedMs) / 1000, 1)} s`.padStart(7),
      fmt(r.readySeconds, 1).padStart(8),
      fmt(r.goneSeconds, 1).padStart(7),
      fmt(r.requestsPerPod, 1).padStart(8),
      fmt(r.netRequestsPerPod, 1).padStart(6),
      (none && r !== none ? fmt(r.netRequestsPerPod - none.netRequestsPerPod, 1) : '-').padStart(7),
      fmt(r.rssMiB, 0).padStart(8),
      fmt(r.cpuSeconds).padStart(6),
    ].join(' '),
  );
}
console.log('the kubelet\'s storage requests per pod (apiserver_request_total, JSON):');
for (const r of results) console.log(`  ${r.label.padEnd(w)} ${[...r.storagePerPod].map(([key, n]) => `${key} ${fmt(n, 1)}`).join(', ') || '-'}`);
console.log('window/bare: per pod, NodeStageVolume start -> NodePublishVolume end over the two calls\' own durations (target <= 1.2; inline volumes are only published)');
console.log('gap: NodeStageVolume end -> NodePublishVolume start; mounted: pod created -> the pod\'s NodePublishVolume end; req/pod: rest_client_requests_total per pod, up and down; - none: CSI requests beyond a pod without CSI');
