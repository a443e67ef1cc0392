// CSI volumes end to end: our kubelet (the built binary) against the real control plane (v1.20.2 from tools/kube, with
// GenericEphemeralVolume on and the controller-manager's attach/detach and ephemeral-volume controllers) on
// containerd, with the CSI driver of tools/csi-driver (a separate node process serving the CSI v1 Identity and Node
// services over gRPC and registering through the kubelet's plugin watcher). Checked as a cluster user would (kubectl:
// CSINode, node labels and status, pod phases and events, VolumeAttachments, claims; CRI ExecSync for what the
// container sees), as a driver author would (the driver's call log: which calls, with which paths and volume context,
// in which order) and on the host (the mount table, loop devices). The cases run in order on one node.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import {
  attachmentName,
  CSI_E2E_LABEL,
  csiClaim,
  csiDriverObject,
  CsiDriverProcess,
  csiPaths,
  csiPersistentVolume,
  csiUniqueVolumeName,
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
import { condition, containerStatus, execThroughCri, isPodReady, sleepForever } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-csi-node';
const NS = 'kts-csi';
const PORT = 10273;
/** attachRequired: false, podInfoOnMount: true, Persistent and Ephemeral; topology zone-a. */
const DRIVER = 'hostpath.csi.kts.example';
/** No CSIDriver object: attach required (the controller-manager makes VolumeAttachments; the driver's attacher marks them). */
const ATTACH_DRIVER = 'attach.csi.kts.example';
/** Registered only once a pod already waits for it. */
const LATE_DRIVER = 'late.csi.kts.example';
const TOPOLOGY_KEY = 'topology.kts.example/zone';
const MiB = 1 << 20;

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const runtime = new RemoteRuntimeService({ endpoint: containerd.endpoint });
const dir = mkdtempSync(join(containerd.root, 'csi-e2e-'));
const root = join(dir, 'root');
const paths = csiPaths(root);
const kubeconfig = await nodeKubeconfig(NODE);

const startKubelet = () =>
  KubeletProcess.startOurs({
    node: NODE,
    kubeconfig,
    runtimeEndpoint: containerd.endpoint,
    dir,
    extraArgs: ['--sync-frequency=10s', `--client-ca-file=${cluster.caFile}`, `--port=${PORT}`, '--healthz-port=0', '--feature-gates=GenericEphemeralVolume=true'],
  });
let kubelet = await startKubelet();

const drivers = new Map<string, CsiDriverProcess>();
function startDriver(name: string, options: { attacher?: boolean; topology?: string[] } = {}): CsiDriverProcess {
  const driver = CsiDriverProcess.start({
    name,
    nodeId: NODE,
    kubeletDir: root,
    dir: join(dir, 'drivers', name),
    kubeconfig: options.attacher ? cluster.kubeconfig : undefined,
    topology: options.topology,
  });
  drivers.set(name, driver);
  return driver;
}
const calls = (name: string): CsiCall[] => drivers.get(name)?.calls() ?? [];
const callsFor = (name: string, method: string, volumeId?: string) => calls(name).filter((c) => c.method === method && (volumeId === undefined || c.volumeId === volumeId));
const diagnostics = () => `${kubelet.logTail(60)}\n${[...drivers.values()].map((d) => d.tail(8)).join('\n')}`;

t.teardown(async () => {
  // Pods first (the Deployment's before it makes new ones), while the kubelet and the drivers still run, so their
  // volumes are torn down through CSI.
  await kubectl.run(['delete', 'deployments', '-n', NS, '--all', '--wait=true', '--timeout=30s']).catch(() => undefined);
  await kubectl.run(['delete', 'pods', '-n', NS, '--all', '--wait=true', '--timeout=60s']).catch(() => undefined);
  await kubelet.stop();
  for (const driver of drivers.values()) await driver.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  for (const va of (await kubectl.json(['get', 'volumeattachments']).catch(() => ({ items: [] }))).items as Json[]) {
    if (va.spec?.nodeName !== NODE) continue;
    await kubectl.run(['patch', 'volumeattachment', va.metadata.name, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']).catch(() => undefined);
    await kubectl.run(['delete', 'volumeattachment', va.metadata.name, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  }
  await kubectl.run(['delete', 'pv', '-l', `${CSI_E2E_LABEL}=true`, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'csidriver', '-l', `${CSI_E2E_LABEL}=true`, '--ignore-not-found']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await kubectl.run(['delete', 'csinode', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS);
  await removeHostCgroup(ourCgroupRoot(NODE)).catch(() => undefined);
  runtime.close();
  if (process.env.KUBELET_E2E_KEEP) {
    console.error(`kept ${dir}`);
    return;
  }
  for (const loop of loopDevicesUnder(dir)) execFileSync('losetup', ['-d', loop.device], { stdio: 'ignore' });
  unmountAndRemove(dir);
});

const getPod = (name: string) => kubectl.getOrUndefined(['pod', '-n', NS, name]);
const getNode = () => kubectl.getOrUndefined(['node', NODE]);
const createObject = (object: Json) => kubectl.run(['create', '-f', '-'], JSON.stringify(object));
const eventsFor = async (name: string): Promise<Json[]> => (await kubectl.json(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`])).items;
async function eventFor(name: string, reason: string, pattern: RegExp, timeoutMs = 60_000): Promise<Json> {
  return waitFor(`a ${reason} event for ${name} matching ${pattern}`, async () => (await eventsFor(name)).find((e) => e.reason === reason && pattern.test(e.message ?? '')), timeoutMs, diagnostics);
}
const exec = (pod: Json, cmd: string[], container = 'app') => execThroughCri(runtime, pod, cmd, container, 10);
const sh = (pod: Json, script: string) => exec(pod, ['sh', '-c', script]);
const containersOf = (pod: string) => runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.name': pod, 'io.kubernetes.pod.namespace': NS } });

async function runningAndReady(name: string, timeoutMs = 90_000): Promise<Json> {
  return waitFor(`pod ${name} Running and Ready`, async () => {
    const pod = await getPod(name);
    return pod?.status?.phase === 'Running' && isPodReady(pod) && pod;
  }, timeoutMs, diagnostics);
}
async function gone(name: string, timeoutMs = 90_000): Promise<void> {
  await kubectl.run(['delete', 'pod', '-n', NS, name, '--ignore-not-found', '--wait=false']);
  await waitFor(`pod ${name} gone from the API`, async () => (await getPod(name)) === undefined, timeoutMs, diagnostics);
}
async function waitingInContainerCreating(name: string): Promise<Json> {
  return waitFor(`${name} reported ContainerCreating`, async () => {
    const pod = await getPod(name);
    return containerStatus(pod, 'app')?.state?.waiting?.reason === 'ContainerCreating' && pod;
  }, 60_000, diagnostics);
}

/** The host's mount points (this process's /proc/self/mountinfo), one entry per mount, stacked ones repeated. */
function hostMountPoints(): string[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => unescape(line.split(' ')[4]));
}
const mountCount = (path: string) => hostMountPoints().filter((m) => m === path).length;
const mountsUnder = (prefix: string) => hostMountPoints().filter((m) => m.startsWith(prefix));

/** Loop devices whose backing file is under `prefix`. */
function loopDevicesUnder(prefix: string): { device: string; file: string }[] {
  let out = '';
  try {
    out = execFileSync('losetup', ['-nl', '-O', 'NAME,BACK-FILE'], { encoding: 'utf8' });
  } catch {
    return [];
  }
  return out
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields.length >= 2 && fields[1].startsWith(prefix))
    .map(([device, file]) => ({ device, file }));
}

function pod(name: string, spec: Json, options: { nodeName?: boolean } = {}): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: { suite: 'csi' } },
    spec: {
      ...(options.nodeName ? { nodeName: NODE } : { nodeSelector: { 'kubernetes.io/hostname': NODE } }),
      terminationGracePeriodSeconds: 2,
      ...spec,
    },
  };
}
/** A pod with one container `app` mounting the claim at /data (or, for a Block claim, its device at /dev/xvda). */
function claimPod(name: string, claim: string, script = '', block = false): Json {
  return pod(name, {
    containers: [
      {
        name: 'app',
        image: containerd.busyboxImage,
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', `${script}${script ? '; ' : ''}${sleepForever}`],
        ...(block ? { volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] } : { volumeMounts: [{ name: 'data', mountPath: '/data' }] }),
      },
    ],
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
  });
}
async function boundClaim(name: string): Promise<Json> {
  return waitFor(`claim ${name} Bound`, async () => {
    const pvc = await kubectl.getOrUndefined(['pvc', '-n', NS, name]);
    return pvc?.status?.phase === 'Bound' && pvc;
  }, 60_000, diagnostics);
}
async function registered(name: string): Promise<Json> {
  return waitFor(`CSINode ${NODE} lists ${name}`, async () => {
    const csinode = await kubectl.getOrUndefined(['csinode', NODE]);
    return (csinode?.spec?.drivers as Json[] | undefined)?.find((d) => d.name === name);
  }, 60_000, diagnostics);
}
/** The proxy of the API server to the kubelet's port, as `kubectl get --raw` uses it. */
const raw = (path: string) => kubectl.run(['get', '--raw', `/api/v1/nodes/${NODE}/proxy${path}`]);
/** The position of the first call matching in the driver's log (-1 when there is none). */
const indexOf = (list: CsiCall[], method: string, volumeId: string, from = 0) => list.findIndex((c, i) => i >= from && c.method === method && c.volumeId === volumeId);

await waitFor('node Ready', async () => condition(await getNode(), 'Ready')?.status === 'True', 60_000, diagnostics);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);
// Objects of an earlier, interrupted run would bind or attach the wrong things.
await kubectl.run(['delete', 'pv', '-l', `${CSI_E2E_LABEL}=true`, '--ignore-not-found']);
await kubectl.run(['delete', 'csidriver', '-l', `${CSI_E2E_LABEL}=true`, '--ignore-not-found']);
await kubectl.apply(
  csiDriverObject(DRIVER, { attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ['Persistent', 'Ephemeral'] }),
  csiDriverObject(LATE_DRIVER, { attachRequired: false, podInfoOnMount: false }),
);
startDriver(DRIVER, { topology: [`${TOPOLOGY_KEY}=zone-a`] });
// The attach-required driver starts without its attacher: nothing marks its VolumeAttachments attached yet.
startDriver(ATTACH_DRIVER);

await t.test('the drivers register through the plugin watcher: CSINode has them with their node ID and topology keys, the Node the topology label', async (t) => {
  const entry = await registered(DRIVER);
  await registered(ATTACH_DRIVER);
  t.same(entry, { name: DRIVER, nodeID: NODE, topologyKeys: [TOPOLOGY_KEY] }, 'the CSINode entry: name, nodeID, topologyKeys (no allocatable: the driver sets no limit)');
  const yaml = await kubectl.run(['get', 'csinode', NODE, '-o', 'yaml']);
  t.match(yaml, new RegExp(`- name: ${DRIVER.replace(/\./g, '\\.')}\\n\\s+nodeID: ${NODE}\\n\\s+topologyKeys:\\n\\s+- ${TOPOLOGY_KEY.replace(/\./g, '\\.')}`), 'kubectl get csinode -o yaml shows the driver, its nodeID and topology key');
  const csinode = await kubectl.json(['get', 'csinode', NODE]);
  const node = (await getNode())!;
  t.same(
    (csinode.metadata.ownerReferences ?? []).map((o: Json) => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.name, uid: o.uid })),
    [{ apiVersion: 'v1', kind: 'Node', name: NODE, uid: node.metadata.uid }],
    'the CSINode is owned by the Node (removed with it)',
  );
  t.same((csinode.spec.drivers as Json[]).find((d) => d.name === ATTACH_DRIVER), { name: ATTACH_DRIVER, nodeID: NODE, topologyKeys: null }, 'the driver without topology: no keys');
  // Both registrations update the Node (label, annotation) at about the same time: Go serializes them (the node
  // info manager's lock), so neither driver's entry is lost.
  const nodeIds = (n: Json | undefined) => JSON.parse(n?.metadata?.annotations?.['csi.volume.kubernetes.io/nodeid'] ?? '{}') as Json;
  const labelled = await waitFor('the topology label and both node IDs on the Node', async () => {
    const n = await getNode();
    return n?.metadata?.labels?.[TOPOLOGY_KEY] === 'zone-a' && nodeIds(n)[DRIVER] && nodeIds(n)[ATTACH_DRIVER] && n;
  }, 30_000, diagnostics).catch(() => getNode());
  t.equal(labelled?.metadata?.labels?.[TOPOLOGY_KEY], 'zone-a', `the Node is labelled ${TOPOLOGY_KEY}=zone-a`);
  t.same(nodeIds(labelled), { [ATTACH_DRIVER]: NODE, [DRIVER]: NODE }, 'the csi.volume.kubernetes.io/nodeid annotation maps each driver to its node ID');
  t.equal(labelled?.metadata?.annotations?.['volumes.kubernetes.io/controller-managed-attach-detach'], 'true', 'the node leaves attach/detach to the controller');
  for (const name of [DRIVER, ATTACH_DRIVER]) {
    const methods = calls(name).map((c) => c.method);
    t.ok(methods.includes('GetInfo') && methods.includes('NodeGetInfo'), `${name}: the kubelet called GetInfo and NodeGetInfo (${methods.join(', ')})`);
    const status = calls(name).find((c) => c.method === 'NotifyRegistrationStatus');
    t.equal(status?.registered, true, `${name}: NotifyRegistrationStatus registered: true`);
  }
});

const DATA_PV = 'kts-csi-data';
const DATA_HANDLE = 'vol-data';
let writerPod: Json = {};

async function deploymentPods(): Promise<Json[]> {
  return (await kubectl.json(['get', 'pods', '-n', NS, '-l', 'app=writer'])).items;
}

await t.test('a static CSI PV and its claim in a Deployment: staged and published at Go\'s paths with the pod info in the volume context', async (t) => {
  await kubectl.apply(
    csiPersistentVolume({ name: DATA_PV, driver: DRIVER, volumeHandle: DATA_HANDLE, volumeAttributes: { 'kts.example/tier': 'gold' } }),
    csiClaim('data', NS, DATA_PV),
  );
  await boundClaim('data');
  const labels = { app: 'writer' };
  await kubectl.apply({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'writer', namespace: NS },
    spec: {
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: claimPod('x', 'data', 'hostname >> /data/writers').spec,
      },
    },
  });
  const name = await waitFor('the writer pod Running and Ready', async () => {
    const p = (await deploymentPods()).find((p) => p.status?.phase === 'Running' && isPodReady(p));
    return p?.metadata?.name as string | undefined;
  }, 90_000, diagnostics);
  writerPod = (await getPod(name))!;
  const uid = writerPod.metadata.uid as string;

  const stage = callsFor(DRIVER, 'NodeStageVolume', DATA_HANDLE);
  t.equal(stage.length, 1, 'one NodeStageVolume');
  t.equal(stage[0]?.stagingTargetPath, paths.globalMount(DATA_PV), 'staged at plugins/kubernetes.io/csi/pv/<pv>/globalmount');
  t.same(stage[0]?.volumeContext, { 'kts.example/tier': 'gold' }, 'NodeStageVolume gets the PV\'s volumeAttributes only');
  t.equal(stage[0]?.capability?.accessType, 'mount', 'a mount capability');
  t.equal(stage[0]?.capability?.fsType, 'ext4', 'with the PV\'s fsType');
  t.equal(stage[0]?.capability?.accessMode, 'SINGLE_NODE_WRITER', 'ReadWriteOnce as SINGLE_NODE_WRITER');
  const publish = callsFor(DRIVER, 'NodePublishVolume', DATA_HANDLE);
  t.equal(publish.length, 1, 'one NodePublishVolume');
  t.equal(publish[0]?.targetPath, paths.podMount(uid, DATA_PV), 'published at pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount');
  t.equal(publish[0]?.stagingTargetPath, paths.globalMount(DATA_PV), 'from the staging path');
  t.same(
    publish[0]?.volumeContext,
    {
      'kts.example/tier': 'gold',
      'csi.storage.k8s.io/pod.name': name,
      'csi.storage.k8s.io/pod.namespace': NS,
      'csi.storage.k8s.io/pod.uid': uid,
      'csi.storage.k8s.io/serviceAccount.name': 'default',
      'csi.storage.k8s.io/ephemeral': 'false',
    },
    'podInfoOnMount: the pod name, namespace, uid, service account and ephemeral=false are added',
  );
  t.equal(publish[0]?.readonly, false, 'not read-only');
  t.ok(indexOf(calls(DRIVER), 'NodeStageVolume', DATA_HANDLE) < indexOf(calls(DRIVER), 'NodePublishVolume', DATA_HANDLE), 'stage before publish');
  t.equal(mountCount(paths.globalMount(DATA_PV)), 1, 'the staging path is mounted once on the host');
  t.equal(mountCount(paths.podMount(uid, DATA_PV)), 1, 'the pod\'s target path is mounted once on the host');
  t.ok(existsSync(join(paths.podMount(uid, DATA_PV), '..', 'vol_data.json')), 'the pod volume\'s vol_data.json is beside mount/');
  const inContainer = await exec(writerPod, ['cat', '/proc/mounts']);
  t.ok(inContainer.split('\n').some((line) => line.split(' ')[1] === '/data'), '/data is a mount in the container');
  t.equal(await sh(writerPod, `echo handoff-${name} > /data/handoff && dd if=/dev/zero of=/data/blob bs=1024 count=1024 2>/dev/null && cat /data/handoff`), `handoff-${name}\n`, 'the container writes to the volume');
  const driverData = join(drivers.get(DRIVER)!.dataDir, DATA_HANDLE);
  t.equal(readFileSync(join(driverData, 'handoff'), 'utf8'), `handoff-${name}\n`, 'the data lands in the driver\'s directory for the volume');
});

await t.test('a kubelet restart keeps the CSI mount, does not stage again, and the drivers are registered again', async (t) => {
  const uid = writerPod.metadata.uid as string;
  const stagesBefore = callsFor(DRIVER, 'NodeStageVolume', DATA_HANDLE).length;
  const publishesBefore = callsFor(DRIVER, 'NodePublishVolume', DATA_HANDLE).length;
  const callsBefore = calls(DRIVER).length;
  await kubelet.stop();
  kubelet = await startKubelet();
  await waitFor('the node Ready again', async () => condition(await getNode(), 'Ready')?.status === 'True' && kubelet.output().includes('Starting Kubelet Volume Manager'), 60_000, diagnostics);
  const registrations = await waitFor('both drivers registered again', async () => {
    const done = [DRIVER, ATTACH_DRIVER].every((name) => calls(name).filter((c) => c.method === 'NotifyRegistrationStatus' && c.registered === true).length >= 2);
    return done;
  }, 60_000, diagnostics).catch(() => false);
  t.ok(registrations, 'the restarted kubelet registered both drivers again from their existing sockets');
  // A second pod of the same claim: once it runs, the restarted kubelet's volume manager has been through the volume.
  await createObject(claimPod('reader', 'data'));
  const reader = await runningAndReady('reader');
  t.equal(await exec(reader, ['cat', '/data/handoff']), `handoff-${writerPod.metadata.name}\n`, 'a second pod of the claim reads the data');
  const writerMount = paths.podMount(uid, DATA_PV);
  t.same(
    calls(DRIVER).slice(callsBefore).filter((c) => (c.method === 'NodeUnpublishVolume' && c.targetPath === writerMount) || c.method === 'NodeUnstageVolume').map((c) => `${c.method} ${c.targetPath ?? c.stagingTargetPath}`),
    [],
    'the restarted kubelet tore nothing of the running pod\'s volume down (no NodeUnpublishVolume of its target, no NodeUnstageVolume)',
  );
  t.equal(callsFor(DRIVER, 'NodeStageVolume', DATA_HANDLE).length, stagesBefore, `no second NodeStageVolume (${stagesBefore} before the restart)`);
  const publishedAgain = callsFor(DRIVER, 'NodePublishVolume', DATA_HANDLE).slice(publishesBefore).map((c) => c.targetPath);
  t.same(publishedAgain, [paths.podMount(reader.metadata.uid, DATA_PV)], 'after the restart only the new pod was published');
  t.equal(mountCount(paths.podMount(uid, DATA_PV)), 1, 'the writer\'s target path is still mounted, once');
  t.equal(mountCount(paths.globalMount(DATA_PV)), 1, 'the staging path is still mounted, once');
  const writer = await getPod(writerPod.metadata.name);
  t.equal(containerStatus(writer, 'app')?.containerID, containerStatus(writerPod, 'app')?.containerID, 'the writer runs the same container');
  t.equal(containerStatus(writer, 'app')?.restartCount, 0, 'not restarted');
  t.equal(await exec(writer!, ['cat', '/data/handoff']), `handoff-${writerPod.metadata.name}\n`, 'and still sees its volume');

  await gone('reader');
  const readerMount = paths.podMount(reader.metadata.uid, DATA_PV);
  const unmounted = await waitFor('the reader\'s target path unmounted', async () => mountCount(readerMount) === 0, 30_000, diagnostics).catch(() => false);
  t.ok(unmounted, 'the reader\'s mount is gone after the pod is deleted');
  t.ok(callsFor(DRIVER, 'NodeUnpublishVolume', DATA_HANDLE).some((c) => c.targetPath === readerMount), 'NodeUnpublishVolume for the reader\'s target path');
  t.equal(callsFor(DRIVER, 'NodeUnstageVolume', DATA_HANDLE).length, 0, 'no NodeUnstageVolume while the writer still uses the volume');
  t.equal(mountCount(paths.podMount(uid, DATA_PV)), 1, 'the writer\'s mount stays');
});

await t.test('a rollout: the next pod reads what the first wrote; the first pod\'s mount is gone', async (t) => {
  const first = writerPod;
  const firstMount = paths.podMount(first.metadata.uid, DATA_PV);
  await kubectl.run(['rollout', 'restart', 'deployment/writer', '-n', NS]);
  const name = await waitFor('a new writer pod Running and Ready, the old one gone', async () => {
    const pods = await deploymentPods();
    const next = pods.find((p) => p.metadata.name !== first.metadata.name && p.status?.phase === 'Running' && isPodReady(p));
    return next && !pods.some((p) => p.metadata.name === first.metadata.name) && (next.metadata.name as string);
  }, 120_000, diagnostics);
  writerPod = (await getPod(name))!;
  t.equal(await exec(writerPod, ['cat', '/data/handoff']), `handoff-${first.metadata.name}\n`, 'the new pod reads the first pod\'s file');
  t.same((await exec(writerPod, ['cat', '/data/writers'])).trim().split('\n'), [first.metadata.name, name], 'both pods appended their names');
  const unmounted = await waitFor('the first pod\'s target path unmounted', async () => mountCount(firstMount) === 0, 30_000, diagnostics).catch(() => false);
  t.ok(unmounted, `no mount of the first pod left (${hostMountPoints().filter((m) => m.includes(first.metadata.uid)).join(', ')})`);
  const dirGone = await waitFor('the first pod\'s directory removed', async () => !existsSync(join(root, 'pods', first.metadata.uid)), 30_000, diagnostics).catch(() => false);
  t.ok(dirGone, 'the first pod\'s directory is removed');
  const list = calls(DRIVER);
  const unpublish = list.findIndex((c) => c.method === 'NodeUnpublishVolume' && c.targetPath === firstMount);
  const unstage = indexOf(list, 'NodeUnstageVolume', DATA_HANDLE);
  t.ok(unpublish >= 0, 'NodeUnpublishVolume for the first pod');
  t.ok(unstage > unpublish, 'then NodeUnstageVolume (Recreate: no pod used the volume in between)');
  t.equal(callsFor(DRIVER, 'NodeUnstageVolume', DATA_HANDLE)[0]?.stagingTargetPath, paths.globalMount(DATA_PV), 'unstaged from the staging path');
  t.ok(indexOf(list, 'NodeStageVolume', DATA_HANDLE, unstage + 1) > unstage, 'and staged again for the new pod');
  t.equal(mountCount(paths.podMount(writerPod.metadata.uid, DATA_PV)), 1, 'the new pod\'s target path is mounted');
});

await t.test('a kubelet restart while the driver is down: the running pod keeps its mount; a new pod waits for the driver; nothing is unstaged under the running pod', async (t) => {
  const uid = writerPod.metadata.uid as string;
  const unstagesBefore = callsFor(DRIVER, 'NodeUnstageVolume', DATA_HANDLE).length;
  const stagesBefore = callsFor(DRIVER, 'NodeStageVolume', DATA_HANDLE).length;
  const callsBefore = calls(DRIVER).length;
  await kubelet.stop();
  await drivers.get(DRIVER)!.stop();
  kubelet = await startKubelet();
  await waitFor('the node Ready again', async () => condition(await getNode(), 'Ready')?.status === 'True' && kubelet.output().includes('Starting Kubelet Volume Manager'), 60_000, diagnostics);
  await createObject(claimPod('reader2', 'data'));
  const event = await eventFor('reader2', 'FailedMount', /not found in the list of registered CSI drivers/).catch((error: Error) => ({ message: error.message }) as Json);
  t.match(event.message, `driver name ${DRIVER} not found in the list of registered CSI drivers`, 'the new pod waits for the driver (FailedMount)');
  t.equal(mountCount(paths.podMount(uid, DATA_PV)), 1, 'the running pod\'s target path stays mounted while the driver is down');
  startDriver(DRIVER, { topology: [`${TOPOLOGY_KEY}=zone-a`] });
  const reader = await runningAndReady('reader2', 180_000);
  t.equal(await exec(reader, ['cat', '/data/handoff']), (await exec(writerPod, ['cat', '/data/handoff'])), 'the new pod reads the volume once the driver is back');
  t.equal(mountCount(paths.podMount(uid, DATA_PV)), 1, 'the running pod\'s target path is mounted once (nothing stacked)');
  t.equal(mountCount(paths.globalMount(DATA_PV)), 1, 'the staging path is mounted once');
  t.comment(`NodeStageVolume calls for the volume across the restart: ${callsFor(DRIVER, 'NodeStageVolume', DATA_HANDLE).length - stagesBefore}`);
  await gone('reader2');
  await waitFor('the second reader unpublished', async () => mountCount(paths.podMount(reader.metadata.uid, DATA_PV)) === 0, 30_000, diagnostics).catch(() => undefined);
  t.equal(callsFor(DRIVER, 'NodeUnstageVolume', DATA_HANDLE).length, unstagesBefore, 'no NodeUnstageVolume while the running pod still uses the volume');
  t.notOk(calls(DRIVER).slice(callsBefore).some((c) => c.method === 'NodeUnpublishVolume' && c.targetPath === paths.podMount(uid, DATA_PV)), 'the running pod\'s target was never unpublished');
  t.equal(mountCount(paths.globalMount(DATA_PV)), 1, 'the staging path is still mounted');
  const writer = await getPod(writerPod.metadata.name);
  t.equal(containerStatus(writer, 'app')?.restartCount, 0, 'the running pod was not restarted');
  t.equal(await sh(writer!, 'echo after-restart > /data/after-restart && cat /data/after-restart'), 'after-restart\n', 'and still writes to its volume');
  t.equal(readFileSync(join(drivers.get(DRIVER)!.dataDir, DATA_HANDLE, 'after-restart'), 'utf8'), 'after-restart\n', 'which lands in the driver\'s directory');
});

await t.test('/stats/summary has the CSI volume with its pvcRef and usage; /metrics has kubelet_volume_stats_*', async (t) => {
  const name = writerPod.metadata.name as string;
  const volume = await waitFor('the writer\'s volume in /stats/summary with at least 1 MiB used', async () => {
    const summary = JSON.parse(await raw('/stats/summary')) as Json;
    const stats = (summary.pods as Json[]).find((p) => p.podRef?.name === name && p.podRef?.namespace === NS);
    const v = (stats?.volume as Json[] | undefined)?.find((v) => v.name === 'data');
    return v?.usedBytes >= MiB && v;
  }, 150_000, diagnostics).catch((error: Error) => {
    t.fail(error.message);
    return {} as Json;
  });
  t.same(volume.pvcRef, { name: 'data', namespace: NS }, 'pvcRef names the claim');
  t.ok(volume.usedBytes >= MiB, `usedBytes ${volume.usedBytes} (the container wrote 1 MiB)`);
  t.ok(volume.capacityBytes > 0 && volume.availableBytes > 0, `capacityBytes ${volume.capacityBytes}, availableBytes ${volume.availableBytes}`);
  t.ok(volume.inodes > 0 && volume.inodesFree >= 0, `inodes ${volume.inodes}, inodesFree ${volume.inodesFree}`);
  t.ok(callsFor(DRIVER, 'NodeGetVolumeStats', DATA_HANDLE).some((c) => c.volumePath === paths.podMount(writerPod.metadata.uid, DATA_PV)), 'from NodeGetVolumeStats on the pod\'s volume path');
  const metrics = await raw('/metrics');
  const labels = `namespace="${NS}",persistentvolumeclaim="data"`;
  for (const metric of ['capacity_bytes', 'available_bytes', 'used_bytes', 'inodes', 'inodes_free', 'inodes_used']) {
    t.match(metrics, new RegExp(`^kubelet_volume_stats_${metric}\\{${labels}\\} [0-9.e+]+$`, 'm'), `kubelet_volume_stats_${metric}{${labels}}`);
  }
  const used = Number(new RegExp(`^kubelet_volume_stats_used_bytes\\{${labels}\\} ([0-9.e+]+)$`, 'm').exec(metrics)?.[1]);
  t.ok(used >= MiB, `kubelet_volume_stats_used_bytes ${used} >= 1 MiB`);
});

await t.test('attach required: the pod waits for the VolumeAttachment; once attached it runs; detach only after unmount', async (t) => {
  const PV = 'kts-csi-attach';
  const HANDLE = 'vol-attach';
  const uniqueName = csiUniqueVolumeName(ATTACH_DRIVER, HANDLE);
  const vaName = attachmentName(HANDLE, ATTACH_DRIVER, NODE);
  await kubectl.apply(csiPersistentVolume({ name: PV, driver: ATTACH_DRIVER, volumeHandle: HANDLE }), csiClaim('attach-data', NS, PV));
  await boundClaim('attach-data');
  await createObject(claimPod('attached', 'attach-data', 'echo attached > /data/hello'));
  const va = await waitFor(`VolumeAttachment ${vaName}`, () => kubectl.getOrUndefined(['volumeattachment', vaName]), 60_000, diagnostics);
  t.same(va.spec, { attacher: ATTACH_DRIVER, nodeName: NODE, source: { persistentVolumeName: PV } }, 'the controller-manager made the VolumeAttachment (Go\'s name: csi-<sha256(handle, driver, node)>)');
  t.notOk(va.status?.attached, 'not attached: the driver runs without its attacher');
  const waiting = await waitingInContainerCreating('attached');
  t.equal(waiting.status.phase, 'Pending', 'the pod is Pending');
  // The controller-manager gives up after its 2 minute wait; the kubelet reports after its own 2 minutes.
  const [attachFailed, mountFailed] = await Promise.all([
    eventFor('attached', 'FailedAttachVolume', /^AttachVolume\.Attach failed/, 200_000).catch((error: Error) => ({ message: error.message }) as Json),
    eventFor('attached', 'FailedMount', /^Unable to attach or mount volumes/, 200_000).catch((error: Error) => ({ message: error.message }) as Json),
  ]);
  t.equal(attachFailed.source?.component, 'attachdetach-controller', `FailedAttachVolume from the attach/detach controller: ${attachFailed.message}`);
  t.match(attachFailed.message, `AttachVolume.Attach failed for volume "${PV}" : `, 'Go\'s FailedAttachVolume text');
  t.equal(mountFailed.source?.component, 'kubelet', 'FailedMount from the kubelet');
  // Go lists every volume of the pod as unattached (it looks the volumes' names up as unique names), in map order.
  t.match(
    mountFailed.message,
    /^Unable to attach or mount volumes: unmounted volumes=\[data\], unattached volumes=\[(data default-token-[a-z0-9]{5}|default-token-[a-z0-9]{5} data)\]: timed out waiting for the condition$/,
    'Go\'s FailedMount text',
  );
  t.equal(callsFor(ATTACH_DRIVER, 'NodeStageVolume', HANDLE).length, 0, 'nothing staged before the attachment');
  t.equal((await containersOf('attached')).length, 0, 'no container created');

  // The attacher: the driver again, now with --kubeconfig.
  await drivers.get(ATTACH_DRIVER)!.stop();
  const deregistered = await waitFor(`${ATTACH_DRIVER} gone from CSINode`, async () => {
    const csinode = await kubectl.getOrUndefined(['csinode', NODE]);
    return !(csinode?.spec?.drivers as Json[] | undefined)?.some((d) => d.name === ATTACH_DRIVER);
  }, 30_000, diagnostics).catch(() => false);
  t.ok(deregistered, 'a driver that stops (its registration socket removed) is deregistered: gone from CSINode');
  startDriver(ATTACH_DRIVER, { attacher: true });
  const pod = await runningAndReady('attached', 180_000);
  t.equal(await exec(pod, ['cat', '/data/hello']), 'attached\n', 'the container writes and reads its volume');
  const attached = await kubectl.json(['get', 'volumeattachment', vaName]);
  t.equal(attached.status?.attached, true, 'the VolumeAttachment is attached');
  const list = calls(ATTACH_DRIVER);
  const publishAt = indexOf(list, 'ControllerPublishVolume', HANDLE);
  t.ok(publishAt >= 0 && publishAt < indexOf(list, 'NodeStageVolume', HANDLE), 'ControllerPublishVolume before NodeStageVolume');
  t.same(callsFor(ATTACH_DRIVER, 'NodeStageVolume', HANDLE)[0]?.publishContext, attached.status?.attachmentMetadata ?? {}, 'NodeStageVolume gets the attachment metadata as publish_context');
  t.same(callsFor(ATTACH_DRIVER, 'NodePublishVolume', HANDLE)[0]?.volumeContext ?? {}, {}, 'no CSIDriver object: no pod info in the volume context');
  const inUse = await waitFor('volumesInUse lists the volume', async () => {
    const node = await getNode();
    return (node?.status?.volumesInUse as string[] | undefined)?.includes(uniqueName) && node;
  }, 60_000, diagnostics).catch(() => getNode());
  t.ok(inUse?.status?.volumesInUse?.includes(uniqueName), `node.status.volumesInUse has ${uniqueName} (${JSON.stringify(inUse?.status?.volumesInUse)})`);
  t.ok((inUse?.status?.volumesAttached as Json[] | undefined)?.some((v) => v.name === uniqueName), `node.status.volumesAttached has ${uniqueName}`);

  await gone('attached');
  const detached = await waitFor('the VolumeAttachment deleted', async () => (await kubectl.getOrUndefined(['volumeattachment', vaName])) === undefined, 120_000, diagnostics).catch(() => false);
  t.ok(detached, 'the controller-manager detached the volume: the VolumeAttachment is gone');
  const after = calls(ATTACH_DRIVER);
  const unpublish = indexOf(after, 'NodeUnpublishVolume', HANDLE);
  const unstage = indexOf(after, 'NodeUnstageVolume', HANDLE);
  const detach = indexOf(after, 'ControllerUnpublishVolume', HANDLE);
  t.ok(unpublish >= 0 && unstage > unpublish && detach > unstage, `NodeUnpublishVolume (${unpublish}), NodeUnstageVolume (${unstage}), then ControllerUnpublishVolume (${detach})`);
  const node = await getNode();
  t.notOk(node?.status?.volumesInUse?.includes(uniqueName), 'no longer in volumesInUse');
});

await t.test('an inline ephemeral CSI volume: published (never staged) with Go\'s handle and ephemeral=true; unpublished with the pod', async (t) => {
  await createObject(
    pod('inline', {
      containers: [{ name: 'app', image: containerd.busyboxImage, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', `echo inline > /scratch/f; ${sleepForever}`], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
      volumes: [{ name: 'scratch', csi: { driver: DRIVER, volumeAttributes: { 'kts.example/size': 'small' } } }],
    }),
  );
  const running = await runningAndReady('inline');
  const uid = running.metadata.uid as string;
  const handle = inlineVolumeHandle(uid, 'scratch');
  const publish = callsFor(DRIVER, 'NodePublishVolume', handle);
  t.equal(publish.length, 1, `NodePublishVolume with Go's handle csi-<sha256(pod uid + volume name)> (seen: ${callsFor(DRIVER, 'NodePublishVolume').slice(-2).map((c) => c.volumeId).join(', ')})`);
  t.equal(publish[0]?.targetPath, paths.podMount(uid, 'scratch'), 'at pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount');
  t.notOk(publish[0]?.stagingTargetPath, 'no staging path');
  t.same(
    publish[0]?.volumeContext,
    {
      'kts.example/size': 'small',
      'csi.storage.k8s.io/pod.name': 'inline',
      'csi.storage.k8s.io/pod.namespace': NS,
      'csi.storage.k8s.io/pod.uid': uid,
      'csi.storage.k8s.io/serviceAccount.name': 'default',
      'csi.storage.k8s.io/ephemeral': 'true',
    },
    'the volume context: the attributes, the pod info and ephemeral=true',
  );
  t.equal(callsFor(DRIVER, 'NodeStageVolume', handle).length, 0, 'never staged');
  t.equal(await exec(running, ['cat', '/scratch/f']), 'inline\n', 'the container wrote to it');
  await gone('inline');
  const unmounted = await waitFor('the inline volume unmounted', async () => mountCount(paths.podMount(uid, 'scratch')) === 0 && callsFor(DRIVER, 'NodeUnpublishVolume', handle).length > 0, 30_000, diagnostics).catch(() => false);
  t.ok(unmounted, 'NodeUnpublishVolume; no mount left');
});

await t.test('a generic ephemeral volume: the controller\'s claim, owned by the pod, bound to a pre-made PV, mounted like any claim', async (t) => {
  const PV = 'kts-csi-gen';
  const HANDLE = 'vol-gen';
  await kubectl.apply(csiPersistentVolume({ name: PV, driver: DRIVER, volumeHandle: HANDLE, claimRef: { namespace: NS, name: 'gen-scratch' } }));
  await createObject(
    pod(
      'gen',
      {
        containers: [{ name: 'app', image: containerd.busyboxImage, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', `echo generic > /scratch/f; ${sleepForever}`], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
        volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { metadata: { labels: { suite: 'csi' } }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', resources: { requests: { storage: '1Gi' } } } } } }],
      },
      { nodeName: true },
    ),
  );
  const claim = await boundClaim('gen-scratch');
  const running = await runningAndReady('gen');
  const uid = running.metadata.uid as string;
  t.same(
    (claim.metadata.ownerReferences ?? []).map((o: Json) => ({ kind: o.kind, name: o.name, uid: o.uid, controller: o.controller })),
    [{ kind: 'Pod', name: 'gen', uid, controller: true }],
    'the claim <pod>-<volume> is owned by the pod',
  );
  t.equal(claim.spec.volumeName, PV, 'bound to the pre-made PV');
  const publish = callsFor(DRIVER, 'NodePublishVolume', HANDLE);
  t.equal(callsFor(DRIVER, 'NodeStageVolume', HANDLE).length, 1, 'staged once');
  t.equal(publish[0]?.targetPath, paths.podMount(uid, PV), 'published at the PV\'s pod path');
  t.equal(publish[0]?.volumeContext?.['csi.storage.k8s.io/ephemeral'], 'false', 'a claim\'s volume: ephemeral=false');
  t.equal(await exec(running, ['cat', '/scratch/f']), 'generic\n', 'the container wrote to it');
  await gone('gen');
  const collected = await waitFor('the claim garbage-collected with the pod', async () => (await kubectl.getOrUndefined(['pvc', '-n', NS, 'gen-scratch'])) === undefined, 60_000, diagnostics).catch(() => false);
  t.ok(collected, 'the claim is deleted with its pod');
  const unmounted = await waitFor('the generic ephemeral volume unstaged', async () => mountCount(paths.podMount(uid, PV)) === 0 && callsFor(DRIVER, 'NodeUnstageVolume', HANDLE).length > 0, 30_000, diagnostics).catch(() => false);
  t.ok(unmounted, 'unpublished and unstaged; no mount left');
});

await t.test('a driver not registered: Go\'s FailedMount; the pod starts once the driver registers; other pods untouched', async (t) => {
  const PV = 'kts-csi-late';
  await createObject(pod('bystander', { containers: [{ name: 'app', image: containerd.busyboxImage, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever] }] }));
  const bystander = await runningAndReady('bystander');
  await kubectl.apply(csiPersistentVolume({ name: PV, driver: LATE_DRIVER, volumeHandle: 'vol-late' }), csiClaim('late-data', NS, PV));
  await boundClaim('late-data');
  await createObject(claimPod('late', 'late-data', 'echo late > /data/f'));
  const event = await eventFor('late', 'FailedMount', /not found in the list of registered CSI drivers/);
  t.equal(event.type, 'Warning', 'a Warning');
  t.match(event.message, `driver name ${LATE_DRIVER} not found in the list of registered CSI drivers`, 'Go\'s error names the driver');
  t.equal(
    event.message,
    `MountVolume.MountDevice failed for volume "${PV}" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name ${LATE_DRIVER} not found in the list of registered CSI drivers`,
    'Go\'s full FailedMount message',
  );
  const waiting = await waitingInContainerCreating('late');
  t.equal(waiting.status.phase, 'Pending', 'the pod stays Pending');
  const started = Date.now();
  startDriver(LATE_DRIVER);
  const running = await runningAndReady('late', 180_000);
  t.pass(`Running ${Date.now() - started} ms after the driver was started`);
  t.equal(await exec(running, ['cat', '/data/f']), 'late\n', 'with its volume');
  const now = await getPod('bystander');
  t.ok(isPodReady(now), 'the bystander pod is still Ready');
  t.equal(containerStatus(now, 'app')?.containerID, containerStatus(bystander, 'app')?.containerID, 'the bystander runs the same container');
  t.equal(containerStatus(now, 'app')?.restartCount, 0, 'not restarted');
  const writer = await getPod(writerPod.metadata.name);
  t.ok(isPodReady(writer) && containerStatus(writer, 'app')?.restartCount === 0, 'the writer pod is untouched');
});

await t.test('a Block PV in volumeDevices: the container sees the loop device at its devicePath; staged and published at Go\'s block paths', async (t) => {
  const PV = 'kts-csi-block';
  const HANDLE = 'vol-block';
  await kubectl.apply(csiPersistentVolume({ name: PV, driver: DRIVER, volumeHandle: HANDLE, volumeMode: 'Block' }), csiClaim('block-data', NS, PV, 'Block'));
  await boundClaim('block-data');
  await createObject(claimPod('block', 'block-data', '', true));
  const running = await runningAndReady('block');
  const uid = running.metadata.uid as string;
  t.equal((await exec(running, ['stat', '-c', '%F', '/dev/xvda'])).trim(), 'block special file', 'the container has a block device at /dev/xvda');
  t.equal((await sh(running, 'wc -c < /dev/xvda')).trim(), String(16 * MiB), 'of the image\'s 16 MiB');
  t.equal(await sh(running, 'echo block-data | dd of=/dev/xvda bs=512 count=1 conv=sync 2>/dev/null && dd if=/dev/xvda bs=10 count=1 2>/dev/null'), 'block-data', 'writable and readable');
  const stage = callsFor(DRIVER, 'NodeStageVolume', HANDLE);
  t.equal(stage.length, 1, 'one NodeStageVolume');
  t.equal(stage[0]?.capability?.accessType, 'block', 'a block capability');
  t.equal(stage[0]?.stagingTargetPath, paths.blockStaging(PV), 'staged at plugins/kubernetes.io/csi/volumeDevices/staging/<pv>');
  const publish = callsFor(DRIVER, 'NodePublishVolume', HANDLE);
  t.equal(publish[0]?.targetPath, paths.blockPublish(PV, uid), 'published at plugins/kubernetes.io/csi/volumeDevices/publish/<pv>/<pod uid>');
  t.ok(loopDevicesUnder(drivers.get(DRIVER)!.dataDir).length >= 1, 'the driver\'s image is on a loop device');
  await gone('block');
  const torn = await waitFor('the block volume unpublished and unstaged', async () => callsFor(DRIVER, 'NodeUnstageVolume', HANDLE).length > 0 && mountsUnder(join(root, 'plugins/kubernetes.io/csi/volumeDevices')).length === 0, 60_000, diagnostics).catch(() => false);
  t.ok(torn, `NodeUnpublishVolume and NodeUnstageVolume; no block mount left (${mountsUnder(join(root, 'plugins/kubernetes.io/csi/volumeDevices')).join(', ')})`);
  t.ok(indexOf(calls(DRIVER), 'NodeUnpublishVolume', HANDLE) < indexOf(calls(DRIVER), 'NodeUnstageVolume', HANDLE), 'unpublish before unstage');
  t.same(loopDevicesUnder(dir), [], 'no loop device left on the suite\'s files');
});

await t.test('deleting every pod leaves no CSI mount, every staged volume unstaged', async (t) => {
  await kubectl.run(['delete', 'deployment', '-n', NS, 'writer', '--wait=true']);
  await kubectl.run(['delete', 'pods', '-n', NS, '--all', '--wait=true', '--timeout=120s']);
  const clean = await waitFor('no mount under the kubelet\'s pods and plugins dirs', async () => mountsUnder(join(root, 'pods')).length === 0 && mountsUnder(join(root, 'plugins')).length === 0, 60_000, diagnostics).catch(() => false);
  t.ok(clean, `no mount left (${[...mountsUnder(join(root, 'pods')), ...mountsUnder(join(root, 'plugins'))].join(', ')})`);
  for (const driver of drivers.values()) {
    const list = driver.calls();
    const staged = new Map<string, number>();
    for (const c of list.filter((c) => !c.error)) {
      if (c.method === 'NodeStageVolume') staged.set(c.volumeId!, (staged.get(c.volumeId!) ?? 0) + 1);
      if (c.method === 'NodeUnstageVolume') staged.set(c.volumeId!, (staged.get(c.volumeId!) ?? 0) - 1);
    }
    t.same([...staged].filter(([, n]) => n !== 0), [], `${driver.name}: every NodeStageVolume has its NodeUnstageVolume`);
    const failed = list.filter((c) => c.error);
    t.same(failed.map((c) => `${c.method} ${c.volumeId}: ${c.error}`), [], `${driver.name}: no call failed`);
  }
  t.ok(kubelet.running, 'the kubelet ran throughout');
});
