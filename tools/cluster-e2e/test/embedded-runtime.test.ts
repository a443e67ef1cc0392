// Secure by default (issue 29): a node that joins the real control plane never silently runs pods as host processes.
// With --kubeconfig and no --container-runtime-endpoint our kubelet dials containerd's socket, as the Go kubelet does
// since 1.24; the embedded local runtime is used only when named, and then the node registers with a NoSchedule
// taint, says why in its log and in an event, and the scheduler keeps pods without a toleration off it.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { readContainerdEnv } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { ensureCluster, Kubectl, KubeletProcess, nodeKubeconfig, ourCgroupRoot, unmountAndRemove, waitFor } from '../src/index.js';
import { condition } from '../src/workloads.js';

type Json = Record<string, any>;

const EMBEDDED_NODE = 'kts-embedded-node';
const DEFAULT_NODE = 'kts-default-rt-node';
const NS = 'kts-embedded';
const TAINT_KEY = 'kubelet-ts.io/embedded-runtime';

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const dir = mkdtempSync(join(containerd.root, 'embedded-e2e-'));
const kubelets: KubeletProcess[] = [];

t.teardown(async () => {
  for (const kubelet of kubelets) await kubelet.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  for (const node of [EMBEDDED_NODE, DEFAULT_NODE]) {
    await kubectl.run(['delete', 'node', node, '--ignore-not-found']).catch(() => undefined);
    await removeHostCgroup(ourCgroupRoot(node)).catch(() => undefined);
  }
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

// Nodes left by an earlier run would keep their old taints (a kubelet may not change its node's taints).
for (const node of [EMBEDDED_NODE, DEFAULT_NODE]) await kubectl.run(['delete', 'node', node, '--ignore-not-found']);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);

const embedded = await KubeletProcess.startOurs({
  node: EMBEDDED_NODE,
  kubeconfig: await nodeKubeconfig(EMBEDDED_NODE),
  runtimeEndpoint: 'local',
  dir: join(dir, 'embedded'),
  extraArgs: ['--port=10266', '--healthz-port=0', '--read-only-port=0', '--register-with-taints=example.com/team=infra:PreferNoSchedule'],
});
kubelets.push(embedded);
const embeddedLog = () => embedded.logTail(60);

await t.test('a node on the embedded runtime registers with the NoSchedule taint, beside its own --register-with-taints', async (t) => {
  const node = await waitFor('the node registered', () => kubectl.getOrUndefined(['node', EMBEDDED_NODE]), 60_000, embeddedLog);
  const taints: Json[] = node.spec?.taints ?? [];
  t.same(
    taints.find((taint) => taint.key === TAINT_KEY),
    { key: TAINT_KEY, value: 'true', effect: 'NoSchedule' },
    'the embedded runtime taint',
  );
  t.ok(taints.some((taint) => taint.key === 'example.com/team' && taint.effect === 'PreferNoSchedule'), 'the operator\'s own taint is kept');
  await waitFor('node Ready', async () => condition(await kubectl.getOrUndefined(['node', EMBEDDED_NODE]), 'Ready')?.status === 'True', 60_000, embeddedLog);
});

await t.test('it says why, in its log and in a Warning event on the node', async (t) => {
  const events = await waitFor('the EmbeddedRuntime event', async () => {
    const list = await kubectl.json(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${EMBEDDED_NODE},reason=EmbeddedRuntime`]);
    return list.items.length > 0 && list.items;
  }, 30_000, embeddedLog);
  t.equal(events[0].type, 'Warning');
  t.match(events[0].message, /host processes without isolation/);
  t.match(events[0].message, `${TAINT_KEY}=true:NoSchedule`);
  t.match(embedded.logTail(400), /embedded local runtime.*host processes/, 'the log says it too');
});

await t.test('the scheduler keeps pods that do not tolerate it off the node; a pod that tolerates it runs', async (t) => {
  const pod = (name: string, tolerate: boolean): Json => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      nodeSelector: { 'kubernetes.io/hostname': EMBEDDED_NODE },
      terminationGracePeriodSeconds: 1,
      ...(tolerate ? { tolerations: [{ key: TAINT_KEY, operator: 'Exists', effect: 'NoSchedule' }] } : {}),
      containers: [{ name: 'app', image: containerd.busyboxImage, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
    },
  });
  await kubectl.apply(pod('intolerant', false), pod('tolerant', true));
  const running = await waitFor('the tolerant pod Running', async () => {
    const p = await kubectl.getOrUndefined(['pod', '-n', NS, 'tolerant']);
    return p?.status?.phase === 'Running' && p;
  }, 60_000, embeddedLog);
  t.equal(running.spec.nodeName, EMBEDDED_NODE, 'scheduled to the embedded node');
  const unschedulable = await waitFor('the intolerant pod unschedulable', async () => {
    const p = await kubectl.getOrUndefined(['pod', '-n', NS, 'intolerant']);
    const scheduled = condition(p, 'PodScheduled');
    return scheduled?.status === 'False' && scheduled;
  }, 30_000);
  t.equal(unschedulable.reason, 'Unschedulable');
  t.match(unschedulable.message, `had taint {${TAINT_KEY}: true}, that the pod didn't tolerate`, 'the scheduler names the taint');
  const intolerant = await kubectl.json(['get', 'pod', '-n', NS, 'intolerant']);
  t.notOk(intolerant.spec.nodeName, 'never bound to the node');
});

await t.test('with --kubeconfig and no --container-runtime-endpoint, the kubelet dials containerd\'s socket, not the embedded runtime', async (t) => {
  const kubelet = await KubeletProcess.startOurs({
    node: DEFAULT_NODE,
    kubeconfig: await nodeKubeconfig(DEFAULT_NODE),
    runtimeEndpoint: '',
    dir: join(dir, 'default'),
    extraArgs: ['--port=10267', '--healthz-port=0', '--read-only-port=0'],
  });
  kubelets.push(kubelet);
  const log = await waitFor('the start-up line', async () => {
    const text = kubelet.logTail(400);
    return /Starting kubelet/.test(text) && text;
  }, 30_000, () => kubelet.logTail(60));
  t.match(log, /containerRuntimeEndpoint="?unix:\/\/\/run\/containerd\/containerd\.sock/, 'the default endpoint is containerd\'s');
  t.notMatch(log, /Started the embedded local runtime/, 'the embedded runtime did not start');
  const node = await waitFor('the node registered', () => kubectl.getOrUndefined(['node', DEFAULT_NODE]), 60_000, () => kubelet.logTail(60));
  t.notOk((node.spec?.taints ?? []).some((taint: Json) => taint.key === TAINT_KEY), 'no embedded runtime taint');
});
