// RuntimeClass end to end: our kubelet against the real control plane (v1.20.2 from tools/kube) on containerd, which
// has a second runtime handler `crun` (tools/containerd/start.sh). As a cluster user would: kubectl creates a
// node.k8s.io/v1 RuntimeClass (handler crun, with a pod overhead) and a pod naming it; the API server's RuntimeClass
// admission copies the overhead into spec.overhead; the kubelet looks the class up and hands `crun` to RunPodSandbox.
// Proved on the node: crun's own state lists the pod's containers (runc's does not), containerd reports the sandbox's
// handler and binary, the pod cgroup's limits include the overhead, and the container's processes are in it. A pod
// whose class disappeared before the kubelet saw it fails with Go's message and starts once the class is back.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { milliCpuToShares } from '@kubelet-ts/core';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { ensureCluster, Kubectl, KubectlError, KubeletProcess, nodeKubeconfig, ourCgroupRoot, unmountAndRemove, waitFor } from '../src/index.js';
import { condition, sleepForever } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-rc-node';
const NS = 'kts-rc';
const PORT = 10263;
const CLASS = 'kts-crun';
const LATE_CLASS = 'kts-late';
const CGROUP_ROOT = ourCgroupRoot(NODE);
const CGROUP_MOUNT = '/sys/fs/cgroup';
const MiB = 1024 * 1024;

const containerd = readContainerdEnv();
// crun's state root for containerd's k8s.io namespace (the runc v2 shim's Root option plus the namespace).
const crunRoot = join(containerd.root, 'state', 'crun', 'k8s.io');
const runcRoot = join(containerd.root, 'state', 'runc', 'k8s.io');
const config = readFileSync(join(containerd.root, 'config.toml'), 'utf8');
if (!config.includes('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]')) {
  throw new Error(`${containerd.root}/config.toml has no crun runtime handler: this containerd was started before tools/containerd/start.sh added it; restart it (tools/containerd/stop.sh, then start.sh)`);
}
execFileSync('crun', ['--version']); // crun must be installed (start.sh installs Debian's crun)

const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const cri = new RemoteRuntimeService({ endpoint: containerd.endpoint, timeoutMs: 30_000 });
const dir = mkdtempSync(join(containerd.root, 'runtime-class-e2e-'));
const kubeconfig = await nodeKubeconfig(NODE);
const startKubelet = () =>
  KubeletProcess.startOurs({
    node: NODE,
    kubeconfig,
    runtimeEndpoint: containerd.endpoint,
    dir,
    extraArgs: ['--sync-frequency=10s', `--port=${PORT}`, '--cgroups-per-qos=true', '--cgroup-driver=cgroupfs'],
  });
let kubelet = await startKubelet();
const kubeletLog = () => kubelet.logTail(60);

t.teardown(async () => {
  await kubelet.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'runtimeclass', CLASS, LATE_CLASS, '--ignore-not-found']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS);
  cri.close();
  await removeHostCgroup(CGROUP_ROOT).catch(() => undefined);
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

const runtimeClass = (name: string, overhead?: Json): Json => ({
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name },
  handler: 'crun',
  ...(overhead ? { overhead: { podFixed: overhead } } : {}),
});
const pod = (name: string, extra: Json = {}): Json => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS },
  spec: {
    nodeName: NODE,
    terminationGracePeriodSeconds: 2,
    containers: [
      {
        name: 'app',
        image: containerd.busyboxImage,
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', sleepForever],
        resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { memory: '64Mi' } },
      },
    ],
    ...extra,
  },
});
const create = (object: Json) => kubectl.run(['create', '-f', '-'], JSON.stringify(object));
const getPod = (name: string) => kubectl.getOrUndefined(['pod', '-n', NS, name]);
const eventsFor = async (name: string): Promise<Json[]> => (await kubectl.json(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`])).items;
const containerId = (p: Json) => String(p.status.containerStatuses[0].containerID).replace(/^containerd:\/\//, '');
/** The container ids in an OCI runtime's state root (`crun list` / `runc list`: ID first, header skipped). */
const listed = (binary: 'crun' | 'runc', root: string): string[] =>
  existsSync(root)
    ? execFileSync(binary, ['--root', root, 'list'], { encoding: 'utf8' })
        .split('\n')
        .slice(1)
        .map((line) => line.split(/\s+/)[0])
        .filter(Boolean)
    : [];
/** A cgroup v1 file under the kubelet's cgroup root. */
const cgroupFile = (subsystem: string, path: string, file: string) => readFileSync(join(CGROUP_MOUNT, subsystem, CGROUP_ROOT, path, file), 'utf8').trim();

async function running(name: string, timeoutMs = 90_000): Promise<Json> {
  return waitFor(`pod ${name} Running`, async () => {
    const p = await getPod(name);
    return p?.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c: Json) => c.state?.running) && p;
  }, timeoutMs, kubeletLog);
}

/** The sandbox of a pod as containerd reports it (verbose: its info names the runtime). */
async function sandboxOf(uid: string): Promise<{ runtimeHandler: string; info: Json }> {
  const sandboxes = await cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
  const ready = sandboxes.find((s) => String(s.state) === 'SANDBOX_READY');
  if (!ready) throw new Error(`no ready sandbox for pod uid ${uid} (sandboxes: ${JSON.stringify(sandboxes.map((s) => s.state))})`);
  const status = await cri.podSandboxStatus(ready.id, true);
  return { runtimeHandler: status.status?.runtimeHandler ?? '', info: JSON.parse(status.info?.info ?? '{}') as Json };
}

await waitFor('node Ready', async () => condition(await kubectl.getOrUndefined(['node', NODE]), 'Ready')?.status === 'True', 60_000, kubeletLog);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['delete', 'runtimeclass', CLASS, LATE_CLASS, '--ignore-not-found']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);

await t.test('a pod with RuntimeClass kts-crun runs under crun, its overhead in its pod cgroup', async (t) => {
  await create(runtimeClass(CLASS, { cpu: '250m', memory: '64Mi' }));
  await create(pod('on-crun', { runtimeClassName: CLASS }));
  await create(pod('on-default'));
  const onCrun = await running('on-crun');
  const onDefault = await running('on-default');
  t.same(onCrun.spec.overhead, { cpu: '250m', memory: '64Mi' }, 'the API server\'s RuntimeClass admission set spec.overhead from the class');
  t.equal(onCrun.status.qosClass, 'Burstable');

  const crunIds = listed('crun', crunRoot);
  const runcIds = listed('runc', runcRoot);
  t.ok(crunIds.includes(containerId(onCrun)), `crun --root ${crunRoot} list shows the pod's container`);
  t.notOk(runcIds.includes(containerId(onCrun)), 'runc does not know it');
  t.ok(runcIds.includes(containerId(onDefault)), 'the pod without a class runs under runc');
  t.notOk(crunIds.includes(containerId(onDefault)), 'and crun does not know that one');

  const sandbox = await sandboxOf(onCrun.metadata.uid);
  t.equal(sandbox.runtimeHandler, 'crun', 'containerd: the sandbox runs on the crun handler');
  t.match(String(sandbox.info.runtimeOptions?.binary_name), /crun$/, 'containerd: the runc v2 shim drives the crun binary');
  t.equal((await sandboxOf(onDefault.metadata.uid)).runtimeHandler, '', 'the other pod: the default handler');

  // Go: ResourceConfigForPod with PodRequestsAndLimits: the overhead added to the requests, and to the memory limit
  // every container sets: cpu.shares for 100m + 250m, memory 64Mi + 64Mi.
  const podCgroup = `kubepods/burstable/pod${onCrun.metadata.uid}`;
  t.equal(cgroupFile('cpu', podCgroup, 'cpu.shares'), String(milliCpuToShares(350)), 'pod cgroup cpu.shares include the 250m overhead');
  t.equal(cgroupFile('memory', podCgroup, 'memory.limit_in_bytes'), String(128 * MiB), 'pod cgroup memory limit is 64Mi + 64Mi overhead');
  const plainCgroup = `kubepods/burstable/pod${onDefault.metadata.uid}`;
  t.equal(cgroupFile('memory', plainCgroup, 'memory.limit_in_bytes'), String(64 * MiB), 'the pod without overhead: 64Mi');

  // crun put the container's process into that pod cgroup (the v1 hierarchies, as runc does).
  const status = await cri.containerStatus(containerId(onCrun), true);
  const pid = (JSON.parse(status.info?.info ?? '{}') as Json).pid as number;
  t.ok(pid > 0, 'containerd names the container\'s pid');
  const memoryLine = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((line) => /:memory:/.test(line));
  t.match(memoryLine, `${CGROUP_ROOT}/${podCgroup}/`, 'the crun container\'s process is in the pod\'s memory cgroup');
});

await t.test('a missing RuntimeClass: the API server rejects a new pod; a pod whose class is gone gets Go\'s message, then starts', async (t) => {
  const rejected = await create(pod('no-class', { runtimeClassName: 'kts-missing' })).catch((err: unknown) => err);
  t.type(rejected, KubectlError, 'kubectl create fails');
  t.match((rejected as KubectlError).stderr, 'pod rejected: RuntimeClass "kts-missing" not found', 'the API server\'s RuntimeClass admission');

  // The class goes away between the pod's admission and the kubelet seeing it: the kubelet is down meanwhile.
  await kubelet.stop();
  await create(runtimeClass(LATE_CLASS));
  await create(pod('late', { runtimeClassName: LATE_CLASS }));
  await kubectl.run(['delete', 'runtimeclass', LATE_CLASS]);
  kubelet = await startKubelet();

  const expected = `Failed to create pod sandbox: runtimeclass.node.k8s.io "${LATE_CLASS}" not found`;
  const event = await waitFor('a FailedCreatePodSandBox event', async () => (await eventsFor('late')).find((e) => e.reason === 'FailedCreatePodSandBox'), 90_000, kubeletLog);
  t.equal(event.type, 'Warning');
  t.equal(event.message, expected, 'Go\'s message');
  const pending = await getPod('late');
  t.equal(pending?.status?.phase, 'Pending', 'the pod stays Pending');
  t.equal(pending?.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating', 'its container waits in ContainerCreating, as Go reports a sandbox failure');
  const sandboxes = await cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.uid': pending!.metadata.uid } });
  t.same(sandboxes, [], 'the runtime was never asked for a sandbox');

  await create(runtimeClass(LATE_CLASS));
  const late = await running('late');
  t.ok(listed('crun', crunRoot).includes(containerId(late)), 'once the class exists the retry runs it, under crun');
  t.equal((await sandboxOf(late.metadata.uid)).runtimeHandler, 'crun');
});
