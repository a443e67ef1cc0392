// Graceful node shutdown against the real control plane (v1.20.2) on containerd: our kubelet (the built binary) with
// shutdownGracePeriod 20s / shutdownGracePeriodCriticalPods 10s in its config file, no systemd on this machine kind,
// so the shutdown is signalled with SIGPWR. A regular pod and a system-node-critical pod (kube-system, where the
// Priority admission plugin allows that class) stop in that order and end Failed/Terminated as kubectl sees them;
// the node's Ready condition goes False with "node is shutting down"; a pod bound afterwards is rejected.
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { ensureCluster, Kubectl, KubeletProcess, nodeKubeconfig, ourCgroupRoot, unmountAndRemove, waitFor } from '../src/index.js';
import { condition } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-shutdown-node';
const NS = 'kts-shutdown';
const CRITICAL = 'kts-shutdown-critical';
/** Takes 1 s to stop once told, so the critical pod's stop visibly starts after the regular pod ended. */
const slowStop = "trap 'sleep 1; exit 0' TERM; while true; do sleep 1; done";

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const dir = mkdtempSync(join(containerd.root, 'shutdown-e2e-'));
const kubeconfig = await nodeKubeconfig(NODE);
const configFile = join(dir, 'kubelet-config.json');
writeFileSync(
  configFile,
  JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', shutdownGracePeriod: '20s', shutdownGracePeriodCriticalPods: '10s' }),
);
const kubelet = await KubeletProcess.startOurs({ node: NODE, kubeconfig, runtimeEndpoint: containerd.endpoint, dir, extraArgs: [`--config=${configFile}`, '--sync-frequency=10s'] });
const kubeletLog = () => kubelet.logTail(60);

t.teardown(async () => {
  await kubelet.stop();
  await kubectl.run(['delete', 'pod', '-n', 'kube-system', CRITICAL, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS || (pod.namespace === 'kube-system' && pod.name === CRITICAL));
  await removeHostCgroup(ourCgroupRoot(NODE));
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

function pod(name: string, namespace: string, extra: Json = {}): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 30,
      containers: [{ name: 'app', image: containerd.busyboxImage, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', slowStop] }],
      ...extra,
    },
  };
}
const getNode = () => kubectl.getOrUndefined(['node', NODE]);
const getPod = (namespace: string, name: string) => kubectl.getOrUndefined(['pod', '-n', namespace, name]);
const createObject = (object: Json) => kubectl.run(['create', '-f', '-'], JSON.stringify(object));
const failed = (namespace: string, name: string) =>
  waitFor(`pod ${namespace}/${name} Failed`, async () => {
    const p = await getPod(namespace, name);
    return p?.status?.phase === 'Failed' && p;
  }, 60_000, kubeletLog);

await waitFor('node Ready', async () => condition(await getNode(), 'Ready')?.status === 'True', 60_000, kubeletLog);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['delete', 'pod', '-n', 'kube-system', CRITICAL, '--ignore-not-found', '--wait=true', '--timeout=60s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);

await t.test('SIGPWR to the kubelet: regular pod first, then the critical one, both Failed/Terminated; node NotReady; new pods rejected', async (t) => {
  await createObject(pod('regular', NS));
  await createObject(pod(CRITICAL, 'kube-system', { priorityClassName: 'system-node-critical' }));
  for (const [namespace, name] of [[NS, 'regular'], ['kube-system', CRITICAL]]) {
    await waitFor(`pod ${name} Running`, async () => (await getPod(namespace, name))?.status?.phase === 'Running', 60_000, kubeletLog);
  }
  t.equal((await getPod('kube-system', CRITICAL))?.spec.priority, 2000001000, 'the API server gave the critical pod its priority');
  await waitFor('the kubelet watching for the shutdown signal', async () => /Watching for node shutdown events.*signal SIGPWR/.test(kubelet.output()), 30_000, kubeletLog);

  process.kill(kubelet.pid, 'SIGPWR');

  const ready = await waitFor('node Ready=False', async () => {
    const c = condition(await getNode(), 'Ready');
    return c?.status === 'False' && c;
  }, 30_000, kubeletLog);
  t.equal(ready.reason, 'KubeletNotReady', 'kubectl: Ready reason');
  t.equal(ready.message, 'node is shutting down', 'kubectl: Ready message');

  const regular = await failed(NS, 'regular');
  const critical = await failed('kube-system', CRITICAL);
  for (const p of [regular, critical]) {
    t.equal(p.status.reason, 'Terminated', `kubectl: ${p.metadata.name} reason`);
    t.equal(p.status.message, 'Pod was terminated in response to imminent node shutdown.', `kubectl: ${p.metadata.name} message`);
  }
  const finishedAt = (p: Json) => Date.parse(p.status.containerStatuses[0].state.terminated.finishedAt);
  const gap = finishedAt(critical) - finishedAt(regular);
  t.ok(gap >= 1000, `the critical pod's container ended ${gap} ms after the regular one's (it takes 1 s to stop once told)`);

  await createObject(pod('late', NS));
  const late = await failed(NS, 'late');
  t.equal(late.status.reason, 'NodeShutdown', 'kubectl: the late pod is rejected with NodeShutdown');
  t.equal(late.status.message, 'Pod Pod was rejected as the node is shutting down.', "kubectl: Go v1.21's message (rejectPod prefixes 'Pod ')");
  t.ok(kubelet.running, 'the kubelet itself keeps running (SIGPWR is not SIGTERM)');
  t.equal(await kubelet.stop(), 0, 'SIGTERM still stops the kubelet, cleanly');
});
