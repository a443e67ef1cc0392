// The checks a cluster's Pod Security relies on the kubelet for, end to end: our kubelet against the real control
// plane (v1.20.2 from tools/kube) on containerd, driven with kubectl as a cluster user would.
// - runAsNonRoot on the busybox image (no USER: it runs as root): the container waits with
//   CreateContainerConfigError and Go's message, a Warning `Failed` event says the same, and the kubelet keeps
//   retrying; the same pod with runAsUser 1000 runs, as uid 1000.
// - AppArmor: this machine kind has AppArmor disabled, so a pod whose annotation asks for a profile is rejected:
//   phase Failed, reason AppArmor, Go's message, and a Warning `AppArmor` event.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { ensureCluster, Kubectl, KubeletProcess, nodeKubeconfig, ourCgroupRoot, unmountAndRemove, waitFor } from '../src/index.js';
import { condition, sleepForever } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-psec-node';
const NS = 'kts-psec';
const PORT = 10262;

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const dir = mkdtempSync(join(containerd.root, 'pod-security-e2e-'));
const kubeconfig = await nodeKubeconfig(NODE);
const kubelet = await KubeletProcess.startOurs({
  node: NODE,
  kubeconfig,
  runtimeEndpoint: containerd.endpoint,
  dir,
  extraArgs: ['--sync-frequency=10s', `--port=${PORT}`, `--client-ca-file=${cluster.caFile}`],
});
const kubeletLog = () => kubelet.logTail(60);

t.teardown(async () => {
  await kubelet.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS);
  await removeHostCgroup(ourCgroupRoot(NODE)).catch(() => undefined);
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

const image = containerd.busyboxImage;
const pod = (name: string, spec: Json, annotations?: Json): Json => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS, ...(annotations ? { annotations } : {}) },
  spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, hostNetwork: true, ...spec },
});
const getPod = (name: string) => kubectl.getOrUndefined(['pod', '-n', NS, name]);
/** The events of the namespace about one pod, as `kubectl get events` lists them. */
async function eventsOf(name: string): Promise<Json[]> {
  const list = await kubectl.json(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`]);
  return (list.items ?? []) as Json[];
}

await waitFor('node Ready', async () => condition(await kubectl.getOrUndefined(['node', NODE]), 'Ready')?.status === 'True', 60_000, kubeletLog);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);

await kubectl.apply(
  pod('nonroot', {
    securityContext: { runAsNonRoot: true },
    containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever] }],
  }),
  pod('nonroot-user', {
    securityContext: { runAsNonRoot: true },
    containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', securityContext: { runAsUser: 1000 }, command: ['sh', '-c', `echo "uid=$(id -u)"; ${sleepForever}`] }],
  }),
  pod(
    'apparmor',
    { containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever] }] },
    { 'container.apparmor.security.beta.kubernetes.io/app': 'runtime/default' },
  ),
);

t.test('runAsNonRoot on an image that runs as root: CreateContainerConfigError with Go\'s message, retried', async (t) => {
  const uid = (await getPod('nonroot'))!.metadata.uid as string;
  const message = `container has runAsNonRoot and image will run as root (pod: "nonroot_${NS}(${uid})", container: app)`;
  const waiting = await waitFor(
    'nonroot waiting with CreateContainerConfigError',
    async () => {
      const state = (await getPod('nonroot'))?.status?.containerStatuses?.[0]?.state?.waiting;
      return state?.reason === 'CreateContainerConfigError' && state;
    },
    60_000,
    kubeletLog,
  );
  t.equal(waiting.message, message, 'kubectl get pod -o json: the waiting state carries Go\'s message');
  const current = (await getPod('nonroot'))!;
  t.equal(current.status.phase, 'Pending');
  t.equal(current.status.containerStatuses[0].ready, false);

  // kubectl get events: a Warning Failed event on the container, counted up as the kubelet retries
  const failed = await waitFor(
    'a second Failed event (the kubelet retries)',
    async () => {
      const event = (await eventsOf('nonroot')).find((e) => e.reason === 'Failed');
      return (event?.count ?? 0) >= 2 && event;
    },
    90_000,
    kubeletLog,
  );
  t.equal(failed.type, 'Warning');
  t.equal(failed.message, `Error: ${message}`);
  t.equal(failed.involvedObject.fieldPath, 'spec.containers{app}');
  t.equal(failed.source.component, 'kubelet');
  t.equal(failed.source.host, NODE);
  const table = await kubectl.run(['get', 'events', '-n', NS, '--field-selector', 'involvedObject.name=nonroot,reason=Failed']);
  t.match(table, /Warning\s+Failed\s+pod\/nonroot\s+Error: container has runAsNonRoot and image will run as root/, 'as kubectl prints it');
});

t.test('runAsNonRoot with runAsUser 1000: the container runs as uid 1000', async (t) => {
  await waitFor(
    'nonroot-user Running',
    async () => (await getPod('nonroot-user'))?.status?.containerStatuses?.[0]?.state?.running !== undefined,
    60_000,
    kubeletLog,
  );
  const logs = await waitFor('its log', async () => {
    const text = await kubectl.run(['logs', '-n', NS, 'nonroot-user']);
    return text.includes('uid=') && text;
  });
  t.match(logs, /^uid=1000$/m, 'the process runs as uid 1000');
  t.equal((await getPod('nonroot-user'))!.status.phase, 'Running');
});

t.test('an AppArmor profile on a host without AppArmor: rejected with reason AppArmor', async (t) => {
  const failed = await waitFor(
    'apparmor Failed',
    async () => {
      const current = await getPod('apparmor');
      return current?.status?.phase === 'Failed' && current;
    },
    60_000,
    kubeletLog,
  );
  t.equal(failed.status.reason, 'AppArmor');
  t.equal(failed.status.message, 'Pod Cannot enforce AppArmor: AppArmor is not enabled on the host');
  const event = await waitFor('the AppArmor event', async () => (await eventsOf('apparmor')).find((e) => e.reason === 'AppArmor'));
  t.equal(event.type, 'Warning');
  t.equal(event.message, 'Cannot enforce AppArmor: AppArmor is not enabled on the host');
  t.notOk((await eventsOf('apparmor')).some((e) => e.reason === 'Started' || e.reason === 'Created'), 'no container was created');
});
