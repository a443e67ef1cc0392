// Resource management end to end: the kubelet against the real control plane (v1.20.2 from tools/kube) on containerd
// with cgroup v1 and the cgroupfs driver, checked as a cluster user and a node operator would: kubectl for the API
// side (qosClass, OOMKilled, Evicted, the node's pressure conditions and the taints the node lifecycle controller
// adds for them, events) and the host's cgroup files for what the container manager wrote. The cases run in order
// on one node; the eviction cases restart the kubelet with thresholds measured just before, so that only the pod
// they start can cross them.
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { parseMeminfo } from '@kubelet-ts/core';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { ensureCluster, Kubectl, KubeletProcess, nodeKubeconfig, ourCgroupRoot, unmountAndRemove, waitFor } from '../src/index.js';
import { boundPod, condition, memoryHog, sleepForever } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-res-node';
const NS = 'kts-res';
/** The kubelet's --cgroup-root: its own, so no other kubelet on this host (or test) shares its kubepods. */
const CGROUP_ROOT = ourCgroupRoot(NODE);
const CGROUP_MOUNT = '/sys/fs/cgroup';
const MiB = 1024 * 1024;

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const dir = mkdtempSync(join(containerd.root, 'resources-e2e-'));
const root = join(dir, 'root');
const kubeconfig = await nodeKubeconfig(NODE);
const cgroupV1 = !existsSync(join(CGROUP_MOUNT, 'cgroup.controllers'));

const baseArgs = ['--sync-frequency=10s', `--cgroup-root=${CGROUP_ROOT}`, '--cgroups-per-qos=true', '--cgroup-driver=cgroupfs'];
const startKubelet = (extraArgs: string[] = []) =>
  KubeletProcess.startOurs({ node: NODE, kubeconfig, runtimeEndpoint: containerd.endpoint, dir, extraArgs: [...baseArgs, ...extraArgs] });
let kubelet = await startKubelet();
const kubeletLog = () => kubelet.logTail(80);

t.teardown(async () => {
  await kubelet.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS);
  await removeHostCgroup(CGROUP_ROOT);
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

const getPod = (name: string) => kubectl.getOrUndefined(['pod', '-n', NS, name]);
const createObject = (object: Json) => kubectl.run(['create', '-f', '-'], JSON.stringify(object));
const eventsFor = async (name: string): Promise<Json[]> => (await kubectl.json(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`])).items;
const getNode = () => kubectl.getOrUndefined(['node', NODE]);

/** A busybox pod bound to the node (no scheduler: admission is the kubelet's alone). */
const pod = (name: string, container: Json, extra: Json = {}): Json => boundPod({ name, namespace: NS, node: NODE, image: containerd.busyboxImage }, container, extra);
const sleeper = { command: ['sh', '-c', sleepForever] };

async function running(name: string, timeoutMs = 60_000): Promise<Json> {
  return waitFor(`pod ${name} Running`, async () => {
    const p = await getPod(name);
    return p?.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c: Json) => c.state?.running) && p;
  }, timeoutMs, kubeletLog);
}

async function failed(name: string, timeoutMs: number): Promise<Json> {
  return waitFor(`pod ${name} Failed`, async () => {
    const p = await getPod(name);
    return p?.status?.phase === 'Failed' && p;
  }, timeoutMs, kubeletLog);
}

/** Restarts the kubelet with one hard eviction threshold and waits for the node Ready without that pressure. */
async function restartWithEvictionHard(threshold: string, pressure: 'MemoryPressure' | 'DiskPressure'): Promise<void> {
  await kubelet.stop();
  kubelet = await startKubelet([`--eviction-hard=${threshold}`, '--eviction-pressure-transition-period=30s']);
  await waitFor(`node Ready without ${pressure} after the restart`, async () => {
    const node = await getNode();
    return condition(node, 'Ready')?.status === 'True' && condition(node, pressure)?.status === 'False';
  }, 60_000, kubeletLog);
}

/** A cgroup v1 file of a subsystem, under the kubelet's cgroup root. */
const cgroupFile = (subsystem: string, path: string, file: string) => readFileSync(join(CGROUP_MOUNT, subsystem, CGROUP_ROOT, path, file), 'utf8').trim();
const cgroupExists = (subsystem: string, path: string) => existsSync(join(CGROUP_MOUNT, subsystem, CGROUP_ROOT, path));
const containerId = (p: Json) => String(p.status.containerStatuses[0].containerID).replace(/^containerd:\/\//, '');

/** Go's memory.available: MemTotal minus the root cgroup's working set (usage less inactive file pages). */
function memoryAvailableBytes(): number {
  const memTotal = parseMeminfo(readFileSync('/proc/meminfo', 'utf8')).get('MemTotal')!;
  const usage = Number(readFileSync(join(CGROUP_MOUNT, 'memory', 'memory.usage_in_bytes'), 'utf8'));
  const inactive = Number(/^total_inactive_file (\d+)$/m.exec(readFileSync(join(CGROUP_MOUNT, 'memory', 'memory.stat'), 'utf8'))?.[1] ?? 0);
  return memTotal - Math.max(0, usage - inactive);
}

await waitFor('node Ready', async () => condition(await getNode(), 'Ready')?.status === 'True', 60_000, kubeletLog);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);

await t.test('the node reports no pressure while nothing presses', async (t) => {
  const node = await getNode();
  for (const type of ['MemoryPressure', 'DiskPressure', 'PIDPressure']) {
    t.equal(condition(node, type)?.status, 'False', `${type} False`);
  }
  t.equal(condition(node, 'MemoryPressure')?.reason, 'KubeletHasSufficientMemory', 'MemoryPressure reason');
});

await t.test('Guaranteed, Burstable and BestEffort pods land in their QoS cgroups with Go\'s limits', { skip: !cgroupV1 && 'this host has cgroup v2; the files read here are v1\'s' }, async (t) => {
  await createObject(pod('guaranteed', { ...sleeper, resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } } }));
  await createObject(pod('burstable', { ...sleeper, resources: { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '128Mi' } } }));
  await createObject(pod('besteffort', sleeper));
  const guaranteed = await running('guaranteed');
  const burstable = await running('burstable');
  const besteffort = await running('besteffort');
  t.equal(guaranteed.status.qosClass, 'Guaranteed', 'kubectl: qosClass Guaranteed');
  t.equal(burstable.status.qosClass, 'Burstable', 'kubectl: qosClass Burstable');
  t.equal(besteffort.status.qosClass, 'BestEffort', 'kubectl: qosClass BestEffort');

  const node = await getNode();
  const capacityMemory = node!.status.capacity.memory as string;
  t.equal(cgroupFile('memory', 'kubepods', 'memory.limit_in_bytes'), String(Number(capacityMemory.replace(/Ki$/, '')) * 1024), 'kubepods: memory limited to node allocatable (capacity, nothing reserved)');
  t.equal(cgroupFile('cpu', 'kubepods', 'cpu.shares'), String(Number(node!.status.capacity.cpu) * 1024), 'kubepods: cpu.shares of the node\'s CPUs');
  t.equal(cgroupFile('cpu', 'kubepods/besteffort', 'cpu.shares'), '2', 'kubepods/besteffort: cpu.shares 2');
  t.equal(cgroupFile('cpu', 'kubepods/burstable', 'cpu.shares'), '51', 'kubepods/burstable: cpu.shares of the burstable requests (50m)');

  const g = `kubepods/pod${guaranteed.metadata.uid}`;
  t.equal(cgroupFile('memory', g, 'memory.limit_in_bytes'), String(64 * MiB), 'guaranteed pod cgroup (directly under kubepods): memory limit 64Mi');
  t.equal(cgroupFile('cpu', g, 'cpu.shares'), '102', 'guaranteed: cpu.shares for 100m');
  t.equal(cgroupFile('cpu', g, 'cpu.cfs_quota_us'), '10000', 'guaranteed: CFS quota for 100m');
  const b = `kubepods/burstable/pod${burstable.metadata.uid}`;
  t.equal(cgroupFile('memory', b, 'memory.limit_in_bytes'), String(128 * MiB), 'burstable pod cgroup: memory limit 128Mi');
  t.equal(cgroupFile('cpu', b, 'cpu.shares'), '51', 'burstable: cpu.shares for 50m');
  t.equal(cgroupFile('cpu', b, 'cpu.cfs_quota_us'), '-1', 'burstable without a cpu limit: no quota');
  const be = `kubepods/besteffort/pod${besteffort.metadata.uid}`;
  t.equal(cgroupFile('cpu', be, 'cpu.shares'), '2', 'besteffort pod cgroup: cpu.shares 2');

  // containerd put each container under its pod's cgroup (the sandbox's cgroupParent).
  const applied: string[] = [];
  for (const [p, path] of [[guaranteed, g], [burstable, b], [besteffort, be]] as const) {
    const id = containerId(p);
    t.ok(cgroupExists('memory', join(path, id)), `${p.metadata.name}: container ${id.slice(0, 12)} in ${path}`);
    const pid = cgroupFile('memory', join(path, id), 'cgroup.procs').split('\n')[0];
    applied.push(`${p.status.qosClass}=${readFileSync(`/proc/${pid}/oom_score_adj`, 'utf8').trim()}`);
  }
  // Go asks -997 (Guaranteed), 1000 (BestEffort) and 1000 - 1000*request/capacity (Burstable); containerd's
  // restrict_oom_score_adj (required on this VM) raises anything below its own score to it.
  t.comment(`oom_score_adj applied by the runtime: ${applied.join(' ')}`);
  t.ok(applied.includes('BestEffort=1000'), 'BestEffort containers get oom_score_adj 1000');
  const burstableScore = Number(applied.find((a) => a.startsWith('Burstable='))!.split('=')[1]);
  t.ok(burstableScore >= 2 && burstableScore <= 999, `Burstable containers get a score in [2, 999]: ${burstableScore}`);

  for (const name of ['guaranteed', 'burstable', 'besteffort']) await kubectl.run(['delete', 'pod', '-n', NS, name, '--wait=true', '--timeout=60s']);
  await waitFor('the pod cgroups removed once the pods are gone', async () => !cgroupExists('memory', g) && !cgroupExists('memory', b) && !cgroupExists('cpu', be), 60_000, kubeletLog);
  t.pass('pod cgroups removed');
});

await t.test('a container that allocates past its memory limit is OOM-killed and restarted with reason OOMKilled', async (t) => {
  await createObject(pod('oom', { ...memoryHog(256 * MiB), resources: { requests: { memory: '32Mi' }, limits: { memory: '32Mi' } } }));
  const p = await waitFor('pod oom restarted after an OOM kill', async () => {
    const p = await getPod('oom');
    const status = p?.status?.containerStatuses?.[0];
    return status && status.restartCount >= 1 && status.lastState?.terminated && p;
  }, 90_000, kubeletLog);
  const last = p.status.containerStatuses[0].lastState.terminated;
  t.equal(last.reason, 'OOMKilled', 'kubectl: lastState.terminated.reason OOMKilled');
  t.equal(last.exitCode, 137, 'exit code 137 (SIGKILL)');
  await kubectl.run(['delete', 'pod', '-n', NS, 'oom', '--wait=true', '--timeout=60s']);
});

await t.test('with memory.available just under what is free, a memory hog is evicted, the node reports MemoryPressure, and recovers', async (t) => {
  const available = memoryAvailableBytes();
  const threshold = Math.floor((available - 1024 * MiB) / MiB);
  t.comment(`memory.available ${Math.round(available / MiB)}Mi: --eviction-hard=memory.available<${threshold}Mi`);
  await restartWithEvictionHard(`memory.available<${threshold}Mi`, 'MemoryPressure');

  // Burstable, so admission does not refuse it should the node already be near the threshold.
  await createObject(pod('hog', { ...memoryHog(2048 * MiB), resources: { requests: { memory: '16Mi' } } }));
  const evicted = await failed('hog', 120_000);
  t.equal(evicted.status.reason, 'Evicted', 'kubectl: reason Evicted');
  t.match(evicted.status.message, /^The node was low on resource: memory\. /, `kubectl: Go's eviction message: ${evicted.status.message}`);
  const event = await waitFor('an Evicted event for hog', async () => (await eventsFor('hog')).find((e) => e.reason === 'Evicted'), 30_000, kubeletLog);
  t.equal(event.type, 'Warning', 'the Evicted event is a Warning');
  t.match(event.message, /The node was low on resource: memory/, 'the event carries the message');

  const pressured = await waitFor('node MemoryPressure True', async () => {
    const node = await getNode();
    return condition(node, 'MemoryPressure')?.status === 'True' && node;
  }, 60_000, kubeletLog);
  t.equal(condition(pressured, 'MemoryPressure')?.reason, 'KubeletHasInsufficientMemory', 'MemoryPressure reason');
  const tainted = await waitFor('the node lifecycle controller taints the node memory-pressure', async () => {
    const node = await getNode();
    return (node?.spec?.taints ?? []).find((taint: Json) => taint.key === 'node.kubernetes.io/memory-pressure') ?? false;
  }, 60_000, kubeletLog);
  t.equal(tainted.effect, 'NoSchedule', 'taint node.kubernetes.io/memory-pressure:NoSchedule');
  const events = (await kubectl.json(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${NODE}`])).items as Json[];
  t.ok(events.some((e) => e.reason === 'NodeHasInsufficientMemory'), 'a NodeHasInsufficientMemory node event');

  // Admission under memory pressure: a BestEffort pod is refused, a Burstable one is admitted.
  const pressureStill = condition(await getNode(), 'MemoryPressure')?.status === 'True';
  if (pressureStill) {
    await createObject(pod('besteffort-under-pressure', sleeper));
    const rejected = await failed('besteffort-under-pressure', 30_000);
    t.equal(rejected.status.reason, 'Evicted', 'rejected with reason Evicted');
    t.equal(rejected.status.message, 'Pod The node had condition: [MemoryPressure]. ', 'Go 1.20\'s rejection message');
  } else {
    t.comment('the pressure condition cleared before the admission check could run');
  }

  await waitFor('node MemoryPressure False again', async () => condition(await getNode(), 'MemoryPressure')?.status === 'False', 120_000, kubeletLog);
  await waitFor('the memory-pressure taint removed', async () => !(((await getNode())?.spec?.taints ?? []) as Json[]).some((taint) => taint.key === 'node.kubernetes.io/memory-pressure'), 60_000, kubeletLog);
  t.pass('the node recovered');
  await kubectl.run(['delete', 'pod', '-n', NS, '--all', '--wait=true', '--timeout=60s']);
});

await t.test('with nodefs.available just under what is free, a pod filling an emptyDir is evicted and the node reports DiskPressure', async (t) => {
  const fs = statfsSync(root);
  const free = fs.bavail * fs.bsize;
  const threshold = Math.floor((free - 1024 * MiB) / MiB);
  t.comment(`nodefs.available ${Math.round(free / MiB)}Mi: --eviction-hard=nodefs.available<${threshold}Mi`);
  await restartWithEvictionHard(`nodefs.available<${threshold}Mi`, 'DiskPressure');

  await createObject(
    pod(
      'filler',
      { command: ['sh', '-c', `dd if=/dev/zero of=/data/fill bs=1M count=2048 && echo filled; ${sleepForever}`], volumeMounts: [{ name: 'data', mountPath: '/data' }] },
      { volumes: [{ name: 'data', emptyDir: {} }] },
    ),
  );
  const evicted = await failed('filler', 120_000);
  t.equal(evicted.status.reason, 'Evicted', 'kubectl: reason Evicted, though the container exited 0 on SIGTERM');
  t.match(evicted.status.message, /^The node was low on resource: ephemeral-storage\. /, `kubectl: Go's eviction message: ${evicted.status.message}`);
  await waitFor('node DiskPressure True', async () => condition(await getNode(), 'DiskPressure')?.status === 'True', 60_000, kubeletLog);
  t.pass('DiskPressure reported');
  await waitFor('the emptyDir removed with the evicted pod', async () => !existsSync(join(root, 'pods', evicted.metadata.uid, 'volumes')) || readdirSync(join(root, 'pods', evicted.metadata.uid, 'volumes')).length === 0, 60_000, kubeletLog);
  await waitFor('node DiskPressure False again', async () => condition(await getNode(), 'DiskPressure')?.status === 'False', 120_000, kubeletLog);
  t.pass('the node recovered');
});
