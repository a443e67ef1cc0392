// Device plugins end to end: our kubelet (the built binary) against the real control plane (v1.20.2) on containerd,
// with the sample device plugin (tools/sample-device-plugin, a separate node process) registering over the real
// v1beta1 gRPC API. Checked as a cluster user would (kubectl: node capacity/allocatable, scheduling, kubectl logs of
// what the plugin's Allocate gave the container, the refusals) and as a node agent would (the pod resources API on
// the kubelet's socket), across a kubelet restart.
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { PodResourcesClient, podResourcesSocketPath } from '@kubelet-ts/device-manager';
import { ensureCluster, Kubectl, KubeletProcess, nodeKubeconfig, ourCgroupRoot, unmountAndRemove, waitFor } from '../src/index.js';
import { repoRoot } from '../src/cluster.js';
import { condition, sleepForever } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-dev-node';
const NS = 'kts-dev';
const RESOURCE = 'example.com/kts-dev';
const PORT = 10271;

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const dir = mkdtempSync(join(containerd.root, 'device-plugins-e2e-'));
const root = join(dir, 'root');
const kubeconfig = await nodeKubeconfig(NODE);
const startKubelet = () =>
  KubeletProcess.startOurs({
    node: NODE,
    kubeconfig,
    runtimeEndpoint: containerd.endpoint,
    dir,
    extraArgs: ['--sync-frequency=10s', `--client-ca-file=${cluster.caFile}`, `--port=${PORT}`, '--healthz-port=0'],
  });
let kubelet = await startKubelet();
const kubeletLog = () => kubelet.logTail(60);

// The sample plugin: two devices; Allocate gives SAMPLE_DEVICES, a read-only mount of a directory with one file per
// device at /sample-devices, and the host's /dev/zero as /dev/sample0.
let pluginOutput = '';
const plugin: ChildProcess = spawn(
  process.execPath,
  [join(repoRoot, 'tools/sample-device-plugin/sample-device-plugin.mjs'), '--resource', RESOURCE, '--devices', '2', '--socket-dir', join(root, 'device-plugins'), '--device-host-path', '/dev/zero'],
  { stdio: ['ignore', 'pipe', 'pipe'] },
);
plugin.stdout!.on('data', (chunk: Buffer) => (pluginOutput += chunk.toString()));
plugin.stderr!.on('data', (chunk: Buffer) => (pluginOutput += chunk.toString()));
const diagnostics = () => `${kubeletLog()}\n---- sample plugin:\n${pluginOutput.split('\n').slice(-15).join('\n')}`;

t.teardown(async () => {
  plugin.kill('SIGTERM');
  await kubelet.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS);
  await removeHostCgroup(ourCgroupRoot(NODE)).catch(() => undefined);
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

const getPod = (name: string) => kubectl.getOrUndefined(['pod', '-n', NS, name]);
const getNode = () => kubectl.getOrUndefined(['node', NODE]);
const createObject = (object: Json) => kubectl.run(['create', '-f', '-'], JSON.stringify(object));
const devicePod = (name: string, count: number, extra: Json = {}): Json => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS },
  spec: {
    // The scheduler places it; the selector keeps it off the other tests' nodes.
    nodeSelector: { 'kubernetes.io/hostname': NODE },
    terminationGracePeriodSeconds: 2,
    containers: [
      {
        name: 'app',
        image: containerd.busyboxImage,
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', `echo "devices=$SAMPLE_DEVICES"; cat /sample-devices/*; head -c 4 /dev/sample0 | od -An -tx1; ${sleepForever}`],
        resources: { limits: { [RESOURCE]: String(count) }, requests: { [RESOURCE]: String(count) } },
      },
    ],
    ...extra,
  },
});

async function running(name: string, timeoutMs = 60_000): Promise<Json> {
  return waitFor(`pod ${name} Running`, async () => {
    const p = await getPod(name);
    return p?.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c: Json) => c.state?.running) && p;
  }, timeoutMs, diagnostics);
}
const logsOf = (name: string) => kubectl.run(['logs', '-n', NS, name]);
async function podResources(): Promise<Json[]> {
  const client = new PodResourcesClient(podResourcesSocketPath(root));
  try {
    return (await client.list()).podResources.filter((p) => p.namespace === NS);
  } finally {
    client.close();
  }
}
const devicesOf = (list: Json[], name: string): string[] => list.find((p) => p.name === name)?.containers[0]?.devices.flatMap((d: Json) => d.deviceIds) ?? [];

await waitFor('node Ready', async () => condition(await getNode(), 'Ready')?.status === 'True', 60_000, diagnostics);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);

await t.test('the node advertises the plugin\'s devices in capacity and allocatable', async (t) => {
  const node = await waitFor(`${RESOURCE} on the node`, async () => {
    const n = await getNode();
    return n?.status?.allocatable?.[RESOURCE] === '2' && n;
  }, 60_000, diagnostics);
  t.equal(node.status.capacity[RESOURCE], '2', 'kubectl get node: capacity 2');
  t.equal(node.status.allocatable[RESOURCE], '2', 'kubectl get node: allocatable 2');
});

let firstDevice = '';
let firstContainer = '';
await t.test('a pod requesting one device is scheduled and runs with what Allocate returned', async (t) => {
  await createObject(devicePod('one', 1));
  const pod = await running('one');
  t.equal(pod.spec.nodeName, NODE, 'the scheduler placed it on our node');
  firstContainer = pod.status.containerStatuses[0].containerID;
  const logs = await waitFor('the container output', async () => {
    const l = await logsOf('one').catch(() => '');
    return l.includes('devices=') && l.split('\n').length >= 3 && l;
  }, 30_000, diagnostics);
  firstDevice = /devices=(\S+)/.exec(logs)![1];
  t.equal(firstDevice, 'kts-dev-1', 'kubectl logs: the env names the device the plugin preferred (the highest-numbered free one)');
  t.match(logs, /^kts-dev-1$/m, 'kubectl logs: the plugin\'s mount holds the device\'s file');
  t.match(logs, /00 00 00 00/, 'kubectl logs: /dev/sample0 is the host\'s /dev/zero');
  const list = await podResources();
  t.same(devicesOf(list, 'one'), [firstDevice], 'pod resources List: the pod\'s container has the device');
});

await t.test('more devices than are free: the scheduler does not place the pod; bound by hand, the kubelet refuses it as Go', async (t) => {
  await createObject(devicePod('too-many', 2));
  const pending = await waitFor('too-many unschedulable', async () => {
    const p = await getPod('too-many');
    const scheduled = condition(p, 'PodScheduled');
    return scheduled?.status === 'False' && scheduled.reason === 'Unschedulable' && p;
  }, 60_000, diagnostics);
  t.match(condition(pending, 'PodScheduled')?.message, /Insufficient example\.com\/kts-dev/, 'the scheduler: Insufficient example.com/kts-dev');
  await kubectl.run(['delete', 'pod', '-n', NS, 'too-many', '--wait=false']);

  await createObject(devicePod('bound', 2, { nodeName: NODE, nodeSelector: undefined }));
  const refused = await waitFor('bound Failed', async () => {
    const p = await getPod('bound');
    return p?.status?.phase === 'Failed' && p;
  }, 60_000, diagnostics);
  t.equal(refused.status.reason, 'UnexpectedAdmissionError');
  t.equal(refused.status.message, `Pod Allocate failed due to requested number of devices unavailable for ${RESOURCE}. Requested: 2, Available: 1, which is unexpected`);
});

await t.test('a restarted kubelet keeps the allocation: the pod keeps running and its device goes to no other pod', async (t) => {
  await kubelet.stop();
  kubelet = await startKubelet();
  // The kubelet cleans its device plugin directory on start; the plugin sees its new socket and registers again.
  await waitFor('the plugin registered again', async () => pluginOutput.includes('The kubelet restarted: serving and registering again'), 60_000, diagnostics);
  await waitFor('the pod resources API answers', async () => (await podResources().catch(() => undefined)) !== undefined, 60_000, diagnostics);
  await waitFor('node Ready with the devices', async () => {
    const n = await getNode();
    return condition(n, 'Ready')?.status === 'True' && n?.status?.allocatable?.[RESOURCE] === '2';
  }, 60_000, diagnostics);
  const pod = await running('one');
  t.equal(pod.status.containerStatuses[0].containerID, firstContainer, 'the same container still runs');
  t.equal(pod.status.containerStatuses[0].restartCount, 0);
  // List shows the kubelet's active pods: the restarted kubelet knows 'one' once the API source's first list is in.
  const listed = await waitFor('pod resources List with pod one', async () => {
    const devices = devicesOf(await podResources(), 'one');
    return devices.length > 0 && devices;
  }, 30_000, diagnostics);
  t.same(listed, [firstDevice], 'pod resources List after the restart: the same device');

  await createObject(devicePod('two', 1));
  await running('two');
  const logs = await waitFor('the second pod\'s output', async () => {
    const l = await logsOf('two').catch(() => '');
    return l.includes('devices=') && l;
  }, 30_000, diagnostics);
  t.equal(/devices=(\S+)/.exec(logs)![1], 'kts-dev-0', 'the second pod got the other device');
  const list = await podResources();
  t.same(devicesOf(list, 'two'), ['kts-dev-0']);
  t.same(devicesOf(list, 'one'), [firstDevice]);
});
