// The systemd cgroup driver on a real systemd: tools/systemd-node boots systemd 252 in a container (systemd-nspawn,
// cgroup v1 controllers handed to it), runs containerd inside as a service with SystemdCgroup = true, and joins our
// kubelet to the real control plane (v1.20.2 from tools/kube) as kubeadm leaves a node: kubeadm 1.20's unit, drop-in,
// config.yaml (cgroupDriver: systemd), kubeadm-flags.env and a bootstrap token, then `systemctl start kubelet`.
// Checked as a cluster user (kubectl: Ready, qosClass, OOMKilled, allocatable, logs, exec) and as an operator on the
// node (systemctl show of the slices and scopes, the cgroup files under /sys/fs/cgroup inside the node). The limits
// are those tools/cluster-e2e/test/resources.test.ts checks on cgroupfs, here in systemd's slices. Cases run in order.
import t from 'tap';
import { createBootstrapToken, ensureCluster, Kubectl, waitFor } from '../src/index.js';
import { SystemdNode } from '../src/systemd-node.js';
import { boundPod, condition, memoryHog, sleepForever } from '../src/workloads.js';

type Json = Record<string, any>;

const NS = 'kts-systemd';
const MiB = 1024 * 1024;

const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const node = await SystemdNode.start('systemd');
const NODE = node.env.name;
const token = await createBootstrapToken(kubectl, { expiresInMs: 3_600_000 });

t.teardown(async () => {
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await kubectl.run(['delete', 'secret', '-n', 'kube-system', `bootstrap-token-${token.split('.')[0]}`, '--ignore-not-found']).catch(() => undefined);
  const csrs = ((await kubectl.json(['get', 'csr']).catch(() => ({ items: [] }))).items ?? []) as Json[];
  const ours = csrs.filter((csr) => [`system:node:${NODE}`, `system:bootstrap:${token.split('.')[0]}`].includes(csr.spec?.username)).map((csr) => csr.metadata.name);
  if (ours.length > 0) await kubectl.run(['delete', 'csr', ...ours]).catch(() => undefined);
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept the node ${NODE} (tools/systemd-node/stop.sh removes it)`);
  else await SystemdNode.stop();
});

const kubeletLog = () => `kubelet journal in ${NODE}:\n(run 'nsenter -t ${node.env.pid} -a journalctl -u kubelet' for all of it)`;
const journal = async () => `${kubeletLog()}\n${await node.journal('kubelet.service', 80)}`;
let lastJournal = '';
const describe = () => lastJournal;
const refreshJournal = async () => {
  lastJournal = await journal();
};
const getNode = () => kubectl.getOrUndefined(['node', NODE]);
const getPod = (name: string) => kubectl.getOrUndefined(['pod', '-n', NS, name]);
const createObject = (object: Json) => kubectl.run(['create', '-f', '-'], JSON.stringify(object));
/** systemd's escaping of a pod uid in a slice name (Go: ToSystemd; '-' separates slice levels). */
const escaped = (uid: string) => uid.replace(/-/g, '_');
/** A cgroup v1 file inside the node (the node's own view: its cgroup namespace root is /). */
const cgroupFile = (subsystem: string, path: string, file: string) => node.readFile(`/sys/fs/cgroup/${subsystem}/${path}/${file}`).trim();
const cgroupExists = (subsystem: string, path: string) => {
  try {
    node.readFile(`/sys/fs/cgroup/${subsystem}/${path}/cgroup.procs`);
    return true;
  } catch {
    return false;
  }
};

const pod = (name: string, container: Json, extra: Json = {}): Json => boundPod({ name, namespace: NS, node: NODE, image: node.env.busyboxImage }, container, extra);
const sleeper = (greeting: string) => ({ command: ['sh', '-c', `echo ${greeting}; ${sleepForever}`] });

async function running(name: string, timeoutMs = 90_000): Promise<Json> {
  return waitFor(`pod ${name} Running`, async () => {
    const p = await getPod(name);
    if (!(p?.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c: Json) => c.state?.running))) {
      await refreshJournal();
      return false;
    }
    return p;
  }, timeoutMs, describe);
}

async function ready(what: string, accept: (node: Json | undefined) => boolean = () => true): Promise<Json> {
  return waitFor(what, async () => {
    const n = await getNode();
    if (condition(n, 'Ready')?.status === 'True' && accept(n)) return n;
    await refreshJournal();
    return false;
  }, 120_000, describe);
}

await node.join(token);
const joined = await ready(`node ${NODE} Ready after systemctl start kubelet`);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);

await t.test('kubeadm\'s unit runs our kubelet and the node joins with its name and the node\'s address', async (t) => {
  t.equal(joined.metadata.name, NODE, 'kubectl: the node is named after the host');
  const internal = (joined.status.addresses as Json[]).find((a) => a.type === 'InternalIP');
  t.equal(internal?.address, node.env.ip, 'kubectl: InternalIP is the node\'s address (--node-ip from /etc/default/kubelet)');
  t.match(joined.status.nodeInfo.containerRuntimeVersion, /^containerd:\/\//, 'kubectl: the runtime is the node\'s containerd');
  const unit = await node.unit('kubelet.service', ['ActiveState', 'MainPID', 'DropInPaths', 'FragmentPath', 'Restart']);
  t.equal(unit.ActiveState, 'active', 'systemctl: kubelet.service active');
  t.equal(unit.FragmentPath, '/etc/systemd/system/kubelet.service', 'kubeadm\'s kubelet.service');
  t.match(unit.DropInPaths, /kubelet\.service\.d\/10-kubeadm\.conf/, 'with kubeadm\'s 10-kubeadm.conf drop-in');
  t.equal(unit.Restart, 'always', 'Restart=always');
  const argv = (await node.run(['cat', `/proc/${unit.MainPID}/cmdline`])).split('\0');
  for (const flag of ['--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf', '--kubeconfig=/etc/kubernetes/kubelet.conf', '--config=/var/lib/kubelet/config.yaml', '--container-runtime=remote', `--node-ip=${node.env.ip}`]) {
    t.ok(argv.includes(flag), `the kubelet runs with ${flag} (from the drop-in's environment files)`);
  }
  t.match(node.readFile('/var/lib/kubelet/config.yaml'), /^cgroupDriver: systemd$/m, 'config.yaml: cgroupDriver: systemd');
  t.match(node.readFile('/etc/kubernetes/kubelet.conf'), /kubelet-client-current\.pem/, 'TLS bootstrap wrote kubelet.conf with the rotated client certificate');
  const own = (await node.run(['cat', `/proc/${unit.MainPID}/cgroup`])).split('\n').find((line) => /:memory:/.test(line));
  t.match(own, /:memory:\/system\.slice\/kubelet\.service$/, 'the kubelet itself runs in system.slice/kubelet.service');
});

await t.test('the QoS cgroups are systemd slices: kubepods.slice, kubepods-burstable.slice, kubepods-besteffort.slice', async (t) => {
  for (const slice of ['kubepods.slice', 'kubepods-burstable.slice', 'kubepods-besteffort.slice']) {
    const unit = await node.unit(slice);
    t.equal(unit.LoadState, 'loaded', `systemctl show ${slice}: LoadState loaded`);
    t.equal(unit.ActiveState, 'active', `systemctl show ${slice}: ActiveState active`);
  }
  for (const subsystem of ['memory', 'cpu']) {
    for (const path of ['kubepods.slice', 'kubepods.slice/kubepods-burstable.slice', 'kubepods.slice/kubepods-besteffort.slice']) {
      t.ok(cgroupExists(subsystem, path), `/sys/fs/cgroup/${subsystem}/${path} exists`);
    }
  }
  const n = (await getNode())!;
  t.equal(cgroupFile('memory', 'kubepods.slice', 'memory.limit_in_bytes'), String(Number(String(n.status.capacity.memory).replace(/Ki$/, '')) * 1024), 'kubepods.slice: memory limited to the node\'s capacity (nothing reserved)');
  t.equal(cgroupFile('cpu', 'kubepods.slice', 'cpu.shares'), String(Number(n.status.capacity.cpu) * 1024), 'kubepods.slice: cpu.shares of the node\'s CPUs');
  t.equal(cgroupFile('cpu', 'kubepods.slice/kubepods-besteffort.slice', 'cpu.shares'), '2', 'kubepods-besteffort.slice: cpu.shares 2');
});

await t.test('Guaranteed, Burstable and BestEffort pods get pod slices with Go\'s limits; containers are cri-containerd scopes in them; logs and exec work', async (t) => {
  await createObject(pod('guaranteed', { ...sleeper('hello from guaranteed'), resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } } }));
  await createObject(pod('burstable', { ...sleeper('hello from burstable'), resources: { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '128Mi' } } }));
  await createObject(pod('besteffort', sleeper('hello from besteffort')));
  const guaranteed = await running('guaranteed');
  const burstable = await running('burstable');
  const besteffort = await running('besteffort');
  t.equal(guaranteed.status.qosClass, 'Guaranteed', 'kubectl: qosClass Guaranteed');
  t.equal(burstable.status.qosClass, 'Burstable', 'kubectl: qosClass Burstable');
  t.equal(besteffort.status.qosClass, 'BestEffort', 'kubectl: qosClass BestEffort');

  const g = `kubepods.slice/kubepods-pod${escaped(guaranteed.metadata.uid)}.slice`;
  const b = `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${escaped(burstable.metadata.uid)}.slice`;
  const be = `kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${escaped(besteffort.metadata.uid)}.slice`;
  for (const path of [g, b, be]) {
    const slice = path.split('/').pop()!;
    const unit = await node.unit(slice);
    t.equal(unit.ActiveState, 'active', `systemctl show ${slice}: active`);
  }
  t.equal(cgroupFile('memory', g, 'memory.limit_in_bytes'), String(64 * MiB), 'guaranteed pod slice (directly in kubepods.slice): memory limit 64Mi');
  t.equal(cgroupFile('cpu', g, 'cpu.shares'), '102', 'guaranteed: cpu.shares for 100m');
  t.equal(cgroupFile('cpu', g, 'cpu.cfs_quota_us'), '10000', 'guaranteed: CFS quota for 100m');
  t.equal(cgroupFile('cpu', g, 'cpu.cfs_period_us'), '100000', 'guaranteed: CFS period 100ms');
  t.equal(cgroupFile('memory', b, 'memory.limit_in_bytes'), String(128 * MiB), 'burstable pod slice: memory limit 128Mi');
  t.equal(cgroupFile('cpu', b, 'cpu.shares'), '51', 'burstable: cpu.shares for 50m');
  t.equal(cgroupFile('cpu', b, 'cpu.cfs_quota_us'), '-1', 'burstable without a cpu limit: no quota');
  t.equal(cgroupFile('cpu', 'kubepods.slice/kubepods-burstable.slice', 'cpu.shares'), '51', 'kubepods-burstable.slice: cpu.shares of the burstable requests (50m)');
  t.equal(cgroupFile('cpu', be, 'cpu.shares'), '2', 'besteffort pod slice: cpu.shares 2');

  for (const [p, path, greeting] of [[guaranteed, g, 'hello from guaranteed'], [burstable, b, 'hello from burstable'], [besteffort, be, 'hello from besteffort']] as const) {
    const id = String(p.status.containerStatuses[0].containerID).replace(/^containerd:\/\//, '');
    const scope = `cri-containerd-${id}.scope`;
    const own = (await kubectl.run(['exec', '-n', NS, p.metadata.name, '--', 'cat', '/proc/self/cgroup'])).split('\n');
    t.ok(own.some((line) => line.endsWith(`:memory:/${path}/${scope}`)), `kubectl exec ${p.metadata.name}: in memory:/${path}/${scope}`);
    t.ok(own.some((line) => line.endsWith(`:cpu:/${path}/${scope}`)), `kubectl exec ${p.metadata.name}: in cpu:/${path}/${scope}`);
    t.equal((await node.unit(scope)).ActiveState, 'active', `systemctl show ${scope}: active`);
    t.equal((await kubectl.run(['logs', '-n', NS, p.metadata.name])).trim(), greeting, `kubectl logs ${p.metadata.name}`);
  }

  for (const name of ['guaranteed', 'burstable', 'besteffort']) await kubectl.run(['delete', 'pod', '-n', NS, name, '--wait=true', '--timeout=60s']);
  await waitFor('the pod slices stopped and their cgroups removed once the pods are gone', async () => {
    for (const path of [g, b, be]) {
      if (cgroupExists('memory', path) || cgroupExists('cpu', path)) return false;
      const unit = await node.unit(path.split('/').pop()!);
      if (unit.ActiveState === 'active') return false;
    }
    return true;
  }, 90_000, describe);
  for (const path of [g, b, be]) {
    const slice = path.split('/').pop()!;
    const unit = await node.unit(slice);
    t.ok(unit.LoadState === 'not-found' || unit.ActiveState === 'inactive', `systemctl show ${slice}: ${unit.LoadState}/${unit.ActiveState}`);
    t.notOk(cgroupExists('memory', path), `memory:/${path} removed`);
  }
});

await t.test('a container that allocates past its memory limit is OOM-killed and restarted with reason OOMKilled', async (t) => {
  await createObject(pod('oom', { ...memoryHog(256 * MiB), resources: { requests: { memory: '32Mi' }, limits: { memory: '32Mi' } } }));
  const p = await waitFor('pod oom restarted after an OOM kill', async () => {
    const p = await getPod('oom');
    const status = p?.status?.containerStatuses?.[0];
    if (status && status.restartCount >= 1 && status.lastState?.terminated) return p;
    await refreshJournal();
    return false;
  }, 120_000, describe);
  const last = p.status.containerStatuses[0].lastState.terminated;
  t.equal(last.reason, 'OOMKilled', 'kubectl: lastState.terminated.reason OOMKilled');
  t.equal(last.exitCode, 137, 'exit code 137 (SIGKILL)');
  const podSlice = `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${escaped(p.metadata.uid)}.slice`;
  t.equal(cgroupFile('memory', podSlice, 'memory.limit_in_bytes'), String(32 * MiB), 'the pod slice holds the 32Mi limit');
  // /metrics/cadvisor: the kubelet reads the pod slice's OOM counter. On cgroup v2 memory.events is hierarchical, so
  // the pod's count keeps the kill after the killed container's scope is gone. On v1 (this node's memory hierarchy)
  // the kernel counts a kill only in the victim's memcg, the container's scope, which is removed with the container:
  // the pod series is there (read from the slice) but its count is what the live scopes and the slice still hold.
  const unified = (() => {
    try {
      node.readFile('/sys/fs/cgroup/cgroup.controllers');
      return true;
    } catch {
      return false;
    }
  })();
  const cadvisor = await kubectl.run(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/metrics/cadvisor`]);
  const oomSamples = [...cadvisor.matchAll(/^container_oom_events_total\{([^}]*)\} (\S+)/gm)].map(([, labels, value]) => ({
    labels: Object.fromEntries([...labels.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => [k, v])),
    value: Number(value),
  }));
  const podSeries = oomSamples.find((s) => s.labels.pod === 'oom' && s.labels.namespace === NS && s.labels.container === '');
  t.ok(podSeries, `/metrics/cadvisor has container_oom_events_total for the pod (container=""):\n${oomSamples.map((s) => JSON.stringify(s)).join('\n')}`);
  t.equal(podSeries?.labels.id, `/${podSlice}`, "the pod series' id is the pod slice it was read from");
  if (unified) t.ok((podSeries?.value ?? 0) >= 1, `cgroup v2: the pod's memory.events counts the kill (${podSeries?.value})`);
  else t.ok(Number.isInteger(podSeries?.value) && podSeries!.value >= 0, `cgroup v1: a count read from the slice and its scopes (${podSeries?.value})`);
  await kubectl.run(['delete', 'pod', '-n', NS, 'oom', '--wait=true', '--timeout=60s']);
});

await t.test('with --kube-reserved, --system-reserved and --eviction-hard in /etc/default/kubelet, kubepods.slice is limited to capacity minus the reservations (Go does not take the eviction threshold from the cgroup) and allocatable also less the threshold', async (t) => {
  const extra = ['--kube-reserved=cpu=100m,memory=100Mi', '--system-reserved=cpu=100m,memory=200Mi', '--eviction-hard=memory.available<150Mi'];
  await node.join(token, extra);
  const capacityBytes = Number(String(joined.status.capacity.memory).replace(/Ki$/, '')) * 1024;
  const cpus = Number(joined.status.capacity.cpu);
  // cpu has no eviction threshold: its allocatable changes only when the restarted kubelet reports the reservations
  const n = await ready('the node Ready with the reserved cpu taken from its allocatable', (n) => n?.status?.allocatable?.cpu !== n?.status?.capacity?.cpu);
  t.equal(n.status.allocatable.memory, `${(capacityBytes - 450 * MiB) / 1024}Ki`, 'kubectl: allocatable memory = capacity - 100Mi - 200Mi - 150Mi');
  t.equal(n.status.allocatable.cpu, `${cpus * 1000 - 200}m`, 'kubectl: allocatable cpu = capacity - 200m');
  await waitFor('kubepods.slice limited to capacity minus the reservations', async () => cgroupFile('memory', 'kubepods.slice', 'memory.limit_in_bytes') === String(capacityBytes - 300 * MiB), 60_000, () => `memory.limit_in_bytes ${cgroupFile('memory', 'kubepods.slice', 'memory.limit_in_bytes')}`);
  t.equal(cgroupFile('memory', 'kubepods.slice', 'memory.limit_in_bytes'), String(capacityBytes - 300 * MiB), 'kubepods.slice: memory.limit_in_bytes = capacity - kube-reserved - system-reserved');
  t.equal(cgroupFile('cpu', 'kubepods.slice', 'cpu.shares'), String(Math.floor(((cpus * 1000 - 200) * 1024) / 1000)), 'kubepods.slice: cpu.shares of capacity - reserved cpu');
  const unit = await node.unit('kubepods.slice', ['ActiveState', 'MemoryLimit']);
  t.equal(unit.ActiveState, 'active', 'kubepods.slice stays active');
  t.equal(unit.MemoryLimit, String(capacityBytes - 300 * MiB), 'systemctl show kubepods.slice: MemoryLimit set through systemd');
});

await t.test('a kubelet left on cgroupfs against containerd on systemd: the sandbox failure event names the fix', async (t) => {
  // containerd 1.6 has no CRI RuntimeConfig to say its driver (Unimplemented), so the kubelet keeps its own; containerd
  // hands runc the cgroupfs parent, and runc's systemd driver refuses it.
  await node.join(token, ['--cgroup-driver=cgroupfs']);
  await ready('the node Ready with the kubelet on cgroupfs');
  await createObject(pod('mismatch', sleeper('never')));
  const event = await waitFor('a FailedCreatePodSandBox event for pod mismatch', async () => {
    const events = (await kubectl.json(['get', 'events', '-n', NS, '--field-selector', 'involvedObject.name=mismatch'])).items as Json[];
    const failed = events.find((e) => e.reason === 'FailedCreatePodSandBox');
    if (failed) return failed;
    await refreshJournal();
    return false;
  }, 90_000, describe);
  t.equal(event.type, 'Warning');
  t.match(event.message, /expected cgroupsPath to be of format "slice:prefix:name" for systemd cgroups/, 'runc\'s refusal is in the event');
  t.match(event.message, /set cgroupDriver: systemd in the kubelet configuration \(--cgroup-driver=systemd\), or SystemdCgroup = false in containerd's runc options/, 'and the fix');
  t.not((await getPod('mismatch'))?.status?.phase, 'Running', 'the pod does not run');
  await kubectl.run(['delete', 'pod', '-n', NS, 'mismatch', '--wait=false']);
});
