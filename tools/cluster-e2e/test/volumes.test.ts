// Volumes end to end: the kubelet against the real control plane (kube-apiserver, kube-controller-manager,
// kube-scheduler v1.20.2 from tools/kube) on containerd, checked as a cluster user would: kubectl for the API side,
// CRI ExecSync (what `kubectl exec` ends in) to look inside containers, and the host's mount table and the kubelet's
// root dir for what is left behind. The cases run in order on one node and build on each other.
import t from 'tap';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import {
  configMapObject,
  configMapVolumePod,
  ensureCluster,
  envPod,
  escapingSubPathPod,
  hostPathDirectoryPod,
  jwtClaims,
  kubeApiAccessPod,
  Kubectl,
  KubeletProcess,
  nodeKubeconfig,
  ourCgroupRoot,
  secretObject,
  tokenReview,
  unmountAndRemove,
  VOLUME_MOUNTS,
  volumesPod,
  waitFor,
} from '../src/index.js';
import { condition, containerStatus, execThroughCri, isPodReady } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-vol-node';
const NS = 'kts-vol';
const SA_USER = `system:serviceaccount:${NS}:default`;
/** The API server's --api-audiences (tools/kube/start.sh): what a token without an audience is issued for. */
const API_AUDIENCE = 'https://kubernetes.default.svc.cluster.local';
const AUDIENCE = 'kts-vol-audience';
/**
 * An atomic writer's timestamped data directory: Go's is `..2006_01_02_15_04_05.` plus os.MkdirTemp's random
 * suffix (decimal digits there, mkdtemp's letters and digits here; nothing reads the suffix).
 */
const TIMESTAMP_DIR = /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\w+$/;

const CONFIG = 'vol-config';
const CONFIG_DATA = { 'game.properties': 'lives=3\nenemies=aliens\n', 'ui.properties': 'color=blue\n', 'app.conf': 'version=1\n' };
const CONFIG_UPDATE = { 'game.properties': 'lives=3\nenemies=aliens\n', 'ui.properties': 'color=green\n', 'app.conf': 'version=2\n' };
const SECRET = 'vol-secret';
const SECRET_DATA = { username: 'admin', password: 's3cr3t!' };

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const runtime = new RemoteRuntimeService({ endpoint: containerd.endpoint });
const dir = mkdtempSync(join(containerd.root, 'volumes-e2e-'));
const root = join(dir, 'root');
const hostDir = join(dir, 'hostpath');
mkdirSync(hostDir);
writeFileSync(join(hostDir, 'from-host.txt'), 'host data\n');
const hostDirToCreate = join(dir, 'hostpath-created', 'sub');
const kubeconfig = await nodeKubeconfig(NODE);

const startKubelet = () =>
  KubeletProcess.startOurs({
    node: NODE,
    kubeconfig,
    runtimeEndpoint: containerd.endpoint,
    dir,
    extraArgs: ['--sync-frequency=10s', '--cluster-dns=10.96.0.10', '--cluster-domain=cluster.local'],
  });
let kubelet = await startKubelet();
const kubeletLog = () => kubelet.logTail(60);

t.teardown(async () => {
  await kubelet.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS);
  await removeHostCgroup(ourCgroupRoot(NODE)).catch(() => undefined);
  runtime.close();
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

const getPod = (name: string) => kubectl.getOrUndefined(['pod', '-n', NS, name]);
const createObject = (object: Json) => kubectl.run(['create', '-f', '-'], JSON.stringify(object));
const eventsFor = async (name: string): Promise<Json[]> =>
  (await kubectl.json(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`])).items;
const containersOf = (pod: string) => runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.name': pod, 'io.kubernetes.pod.namespace': NS } });
const statusOf = (pod: Json | undefined, container = 'app'): Json | undefined => containerStatus(pod, container);
const podDir = (pod: Json) => join(root, 'pods', pod.metadata.uid);

async function runningAndReady(name: string, timeoutMs = 60_000): Promise<Json> {
  return waitFor(`pod ${name} Running and Ready`, async () => {
    const pod = await getPod(name);
    return pod?.status?.phase === 'Running' && isPodReady(pod) && pod;
  }, timeoutMs, kubeletLog);
}

const exec = (pod: Json, cmd: string[], container = 'app') => execThroughCri(runtime, pod, cmd, container, 10);
const cat = (pod: Json, path: string, container = 'app') => exec(pod, ['cat', path], container);
/** The permission bits of what `path` resolves to, in octal (`stat -L -c %a`). */
const modeOf = async (pod: Json, path: string) => (await exec(pod, ['stat', '-L', '-c', '%a', path])).trim();
/** `ls -A`, sorted, with an atomic writer's timestamped directory shown as `..<timestamp>`. */
async function entries(pod: Json, path: string): Promise<string[]> {
  const listing = await exec(pod, ['ls', '-A', path]);
  if (listing.startsWith('<')) return [listing];
  return listing
    .split('\n')
    .filter((line) => line !== '')
    .map((name) => (TIMESTAMP_DIR.test(name) ? '..<timestamp>' : name))
    .sort();
}
/** The filesystem type mounted at `target` inside the container (its /proc/mounts). */
async function containerFsType(pod: Json, target: string): Promise<string | undefined> {
  const mounts = await cat(pod, '/proc/mounts');
  return mounts
    .split('\n')
    .map((line) => line.split(' '))
    .filter((fields) => fields[1] === target)
    .at(-1)?.[2];
}
/** The host's mount table (this process's /proc/self/mountinfo): mount point and filesystem type. */
function hostMounts(): { target: string; fsType: string }[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [before, after] = line.split(' - ');
      return { target: unescape(before.split(' ')[4]), fsType: after.split(' ')[0] };
    });
}
const hostFsType = (target: string) => hostMounts().filter((m) => m.target === target).at(-1)?.fsType;
async function review(token: string, audiences?: string[]): Promise<Json> {
  return JSON.parse(await kubectl.run(['create', '-f', '-', '-o', 'json'], JSON.stringify(tokenReview(token, audiences)))) as Json;
}
/** Waits for a pod event with `reason` whose message matches `pattern`. */
async function eventFor(name: string, reason: string, pattern: RegExp, timeoutMs = 30_000): Promise<Json> {
  return waitFor(`a ${reason} event for ${name} matching ${pattern}`, async () => (await eventsFor(name)).find((e) => e.reason === reason && pattern.test(e.message ?? '')), timeoutMs, kubeletLog);
}
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// The node, and a fresh namespace whose default service account exists (the ServiceAccount admission plugin
// refuses pods until it does) and whose kube-root-ca.crt configMap the controller-manager has published.
await waitFor('node Ready', async () => condition(await kubectl.getOrUndefined(['node', NODE]), 'Ready')?.status === 'True', 60_000, kubeletLog);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);
const clusterCA = readFileSync(cluster.caFile, 'utf8');

/** Pods of the earlier cases, as first seen Running: later cases check they are left alone. */
const seen = new Map<string, Json>();

await t.test('a pod with configMap, secret, downwardAPI, projected, emptyDir, hostPath and subPath volumes runs and sees exactly its data', async (t) => {
  await kubectl.apply(configMapObject(CONFIG, NS, CONFIG_DATA), secretObject(SECRET, NS, SECRET_DATA));
  await createObject(
    volumesPod({ name: 'vols', namespace: NS, image: containerd.busyboxImage, node: NODE, configMap: CONFIG, secret: SECRET, hostPath: hostDir, hostPathToCreate: hostDirToCreate, audience: AUDIENCE }),
  );
  const pod = await runningAndReady('vols');
  seen.set('vols', pod);
  t.equal(condition(pod, 'ContainersReady')?.status, 'True', 'ContainersReady');
  const m = VOLUME_MOUNTS;
  const volumes = join(podDir(pod), 'volumes');

  // configMap with items: only the listed keys, one at a nested path; modes from the item and from defaultMode.
  t.same(await entries(pod, m.configMap), ['..<timestamp>', '..data', 'nested', 'ui.properties'], 'configMap volume: the listed items and the atomic writer\'s ..data layout');
  t.equal(await cat(pod, `${m.configMap}/nested/dir/game.properties`), CONFIG_DATA['game.properties'], 'configMap item at its nested path');
  t.equal(await cat(pod, `${m.configMap}/ui.properties`), CONFIG_DATA['ui.properties'], 'configMap item ui.properties');
  t.equal(await modeOf(pod, `${m.configMap}/nested/dir/game.properties`), '400', 'the item mode 0400');
  t.equal(await modeOf(pod, `${m.configMap}/ui.properties`), '640', 'the defaultMode 0640');
  const cmDir = join(volumes, 'kubernetes.io~configmap', 'cm');
  t.match(safeReadlink(join(cmDir, '..data')), TIMESTAMP_DIR, '..data links to the timestamped directory');
  t.equal(safeReadlink(join(cmDir, 'ui.properties')), '..data/ui.properties', 'a top-level file links through ..data');
  t.equal(safeReadlink(join(cmDir, 'nested')), '..data/nested', 'a top-level directory links through ..data');

  // secret: data decoded, defaultMode 0440, on tmpfs (Go wraps secret volumes in a Memory emptyDir).
  t.same(await entries(pod, m.secret), ['..<timestamp>', '..data', 'password', 'username'], 'secret volume: every key');
  t.equal(await cat(pod, `${m.secret}/username`), SECRET_DATA.username, 'secret username');
  t.equal(await cat(pod, `${m.secret}/password`), SECRET_DATA.password, 'secret password');
  t.equal(await modeOf(pod, `${m.secret}/username`), '440', 'secret defaultMode 0440 (username)');
  t.equal(await modeOf(pod, `${m.secret}/password`), '440', 'secret defaultMode 0440 (password)');
  t.equal(await containerFsType(pod, m.secret), 'tmpfs', 'the secret volume is tmpfs in the container');
  t.equal(hostFsType(join(volumes, 'kubernetes.io~secret', 'secret')), 'tmpfs', 'the secret volume is a tmpfs on the host');

  // downwardAPI: Go's formats (sorted key="value" lines, quoted as %q), a resource in the divisor's unit.
  t.same(await entries(pod, m.downwardAPI), ['..<timestamp>', '..data', 'annotations', 'labels', 'mem_limit', 'name'], 'downwardAPI volume: every item');
  t.equal(await cat(pod, `${m.downwardAPI}/labels`), 'app="vols"\ntier="e2e"', 'metadata.labels');
  const annotations = await cat(pod, `${m.downwardAPI}/annotations`);
  t.match(annotations, /^kts\.example\/note="hello \\"volumes\\""$/m, 'metadata.annotations has the annotation, quoted as Go does');
  t.ok(annotations.split('\n').every((line) => /^[^=]+=".*"$/.test(line)), `metadata.annotations is key="value" lines: ${JSON.stringify(annotations)}`);
  t.equal(await cat(pod, `${m.downwardAPI}/name`), 'vols', 'metadata.name');
  t.equal(await cat(pod, `${m.downwardAPI}/mem_limit`), '64', 'limits.memory in Mi');
  t.equal(await modeOf(pod, `${m.downwardAPI}/name`), '644', 'downwardAPI default mode 0644');

  // projected: a bound service-account token for the audience, a configMap item and a downwardAPI item.
  t.same(await entries(pod, m.projected), ['..<timestamp>', '..data', 'config', 'podname', 'token'], 'projected volume: every source');
  t.equal(await cat(pod, `${m.projected}/config/ui.properties`), CONFIG_DATA['ui.properties'], 'projected configMap item');
  t.equal(await cat(pod, `${m.projected}/podname`), 'vols', 'projected downwardAPI item');
  t.equal(await modeOf(pod, `${m.projected}/token`), '644', 'projected default mode 0644');
  t.equal(await containerFsType(pod, m.projected), 'tmpfs', 'the projected volume is tmpfs (it holds a token)');
  const projectedToken = await cat(pod, `${m.projected}/token`);
  let claims: Json = {};
  try {
    claims = jwtClaims(projectedToken);
  } catch (error) {
    t.fail(`the projected token is a JWT: ${(error as Error).message}`);
  }
  t.same(claims.aud, [AUDIENCE], 'the token is for the requested audience');
  t.equal(claims.exp - claims.iat, 3600, 'the token lives expirationSeconds (3600)');
  t.equal(claims['kubernetes.io']?.pod?.name, 'vols', 'the token is bound to the pod (name)');
  t.equal(claims['kubernetes.io']?.pod?.uid, pod.metadata.uid, 'the token is bound to the pod (uid)');
  const projectedReview = await review(projectedToken, [AUDIENCE]);
  t.equal(projectedReview.status?.authenticated, true, `TokenReview with the audience authenticates the projected token ${JSON.stringify(projectedReview.status)}`);
  t.equal(projectedReview.status?.user?.username, SA_USER, 'as the default service account');
  t.same(projectedReview.status?.audiences, [AUDIENCE], 'for the audience');
  t.same(projectedReview.status?.user?.extra?.['authentication.kubernetes.io/pod-name'], ['vols'], 'bound to the pod');
  t.not((await review(projectedToken)).status?.authenticated, true, 'the projected token is not accepted for the API server\'s own audience');

  // emptyDir on disk: writable, backed by the kubelet's pod dir, not a mount.
  t.equal(await exec(pod, ['sh', '-c', `echo written > ${m.emptyDir}/file && cat ${m.emptyDir}/file`]), 'written\n', 'the emptyDir is writable');
  const scratchDir = join(volumes, 'kubernetes.io~empty-dir', 'scratch');
  t.equal(safeRead(join(scratchDir, 'file')), 'written\n', 'the emptyDir is the pod dir\'s volumes/kubernetes.io~empty-dir/scratch on the host');
  t.equal(hostFsType(scratchDir), undefined, 'a disk emptyDir is no mount of its own on the host');

  // emptyDir medium Memory: a tmpfs.
  t.equal(await containerFsType(pod, m.memory), 'tmpfs', 'the Memory emptyDir is tmpfs in the container');
  t.equal(hostFsType(join(volumes, 'kubernetes.io~empty-dir', 'mem')), 'tmpfs', 'the Memory emptyDir is a tmpfs on the host');
  t.equal(await exec(pod, ['sh', '-c', `echo in-memory > ${m.memory}/file && cat ${m.memory}/file`]), 'in-memory\n', 'the Memory emptyDir is writable');

  // hostPath: the host's directory, both ways; DirectoryOrCreate creates a missing one.
  t.equal(await cat(pod, `${m.hostPath}/from-host.txt`), 'host data\n', 'the container reads the host directory');
  t.equal(await exec(pod, ['sh', '-c', `echo from pod > ${m.hostPath}/from-pod.txt`]), '', 'the container writes into it');
  t.equal(safeRead(join(hostDir, 'from-pod.txt')), 'from pod\n', 'the host sees what the container wrote');
  t.ok(existsSync(hostDirToCreate) && statSync(hostDirToCreate).isDirectory(), 'DirectoryOrCreate created the missing host directory');
  t.same(await entries(pod, m.hostPathCreated), [], 'the created directory is mounted, empty');

  // subPath: one key of the configMap as a single file.
  t.equal(await cat(pod, m.subPath), CONFIG_DATA['app.conf'], 'the subPath file has the key\'s content');
  t.equal(await modeOf(pod, m.subPath), '644', 'the subPath file has the configMap\'s default mode');
  t.same(await entries(pod, '/etc/sub'), ['app.conf'], 'the subPath mount is a single file');

  // The ServiceAccount admission plugin's default-token secret volume.
  const tokenVolume = (pod.spec.volumes as Json[]).find((v) => /^default-token-/.test(v.name));
  t.ok(tokenVolume?.secret?.secretName, `the admission plugin added the ${tokenVolume?.name} volume`);
  t.same(await entries(pod, m.serviceAccount), ['..<timestamp>', '..data', 'ca.crt', 'namespace', 'token'], 'the service-account volume has token, ca.crt and namespace');
  t.equal(await cat(pod, `${m.serviceAccount}/namespace`), NS, 'its namespace');
  t.equal(await cat(pod, `${m.serviceAccount}/ca.crt`), clusterCA, 'its ca.crt is the cluster CA');
  const saReview = await review(await cat(pod, `${m.serviceAccount}/token`));
  t.equal(saReview.status?.authenticated, true, `TokenReview authenticates the mounted token ${JSON.stringify(saReview.status)}`);
  t.equal(saReview.status?.user?.username, SA_USER, 'as the default service account');
  t.ok((saReview.status?.user?.groups ?? []).includes(`system:serviceaccounts:${NS}`), 'in the namespace\'s service-account group');
});

await t.test('the kube-api-access projected volume of 1.21+ admission: token, ca.crt and namespace, the token bound to the pod', async (t) => {
  const rootCA = await waitFor('the kube-root-ca.crt configMap of the namespace', () => kubectl.getOrUndefined(['configmap', '-n', NS, 'kube-root-ca.crt']));
  await createObject(kubeApiAccessPod({ name: 'api-access', namespace: NS, image: containerd.busyboxImage, node: NODE, volumeName: 'kube-api-access-e2e01' }));
  const pod = await runningAndReady('api-access');
  seen.set('api-access', pod);
  t.same((pod.spec.volumes as Json[]).map((v) => v.name), ['kube-api-access-e2e01'], 'no default-token volume with automountServiceAccountToken: false');
  const sa = VOLUME_MOUNTS.serviceAccount;
  t.same(await entries(pod, sa), ['..<timestamp>', '..data', 'ca.crt', 'namespace', 'token'], 'token, ca.crt and namespace');
  t.equal(await cat(pod, `${sa}/namespace`), NS, 'namespace');
  const ca = await cat(pod, `${sa}/ca.crt`);
  t.equal(ca, rootCA.data['ca.crt'], 'ca.crt is kube-root-ca.crt\'s');
  t.equal(ca, clusterCA, 'which is the cluster CA');
  for (const file of ['token', 'ca.crt', 'namespace']) t.equal(await modeOf(pod, `${sa}/${file}`), '644', `${file} has defaultMode 420`);
  const token = await cat(pod, `${sa}/token`);
  let claims: Json = {};
  try {
    claims = jwtClaims(token);
  } catch (error) {
    t.fail(`the token is a JWT: ${(error as Error).message}`);
  }
  t.same(claims.aud, [API_AUDIENCE], 'without an audience the token is for the API server');
  t.ok(claims.exp - claims.iat >= 3607, `valid at least expirationSeconds 3607 (${claims.exp - claims.iat} s; the API server may extend it)`);
  const result = await review(token);
  t.equal(result.status?.authenticated, true, `TokenReview authenticates the token ${JSON.stringify(result.status)}`);
  t.equal(result.status?.user?.username, SA_USER, 'as the default service account');
  t.same(result.status?.user?.extra?.['authentication.kubernetes.io/pod-name'], ['api-access'], 'bound to the pod (pod-name)');
  t.same(result.status?.user?.extra?.['authentication.kubernetes.io/pod-uid'], [pod.metadata.uid], 'bound to the pod (pod-uid)');
});

await t.test('environment from a configMap key, a secret and a prefixed configMap reaches the container', async (t) => {
  await kubectl.apply(
    configMapObject('env-config', NS, { greeting: 'hello from a configMap', mode: 'e2e' }),
    secretObject('env-secret', NS, { DB_USER: 'admin', DB_PASSWORD: 'p@ss w0rd', '1invalid': 'skipped' }),
  );
  await createObject(envPod({ name: 'env', namespace: NS, image: containerd.busyboxImage, node: NODE, configMap: 'env-config', secret: 'env-secret' }));
  const pod = await runningAndReady('env');
  seen.set('env', pod);
  const environ = await cat(pod, '/proc/1/environ');
  const vars = new Map(
    environ
      .split('\0')
      .filter((entry) => entry.includes('='))
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
  t.equal(vars.get('GREETING'), 'hello from a configMap', 'valueFrom.configMapKeyRef');
  t.equal(vars.get('PLAIN'), 'plain-value', 'a plain value');
  t.equal(vars.get('DB_USER'), 'admin', 'envFrom.secretRef: DB_USER');
  t.equal(vars.get('DB_PASSWORD'), 'p@ss w0rd', 'envFrom.secretRef: DB_PASSWORD');
  t.equal(vars.get('CFG_greeting'), 'hello from a configMap', 'envFrom.configMapRef with a prefix: CFG_greeting');
  t.equal(vars.get('CFG_mode'), 'e2e', 'envFrom.configMapRef with a prefix: CFG_mode');
  t.notOk(vars.has('1invalid'), 'a key that is no valid variable name is left out');
  const invalid = await eventFor('env', 'InvalidEnvironmentVariableNames', /1invalid/, 10_000).catch(() => undefined);
  t.equal(
    invalid?.message,
    `Keys [1invalid] from the EnvFrom secret ${NS}/env-secret were skipped since they are considered invalid environment variable names.`,
    'an InvalidEnvironmentVariableNames event names the skipped key',
  );
});

await t.test('a configMap change reaches the mounted files within a sync period; the subPath file keeps its content', async (t) => {
  const pod = seen.get('vols')!;
  const cmDir = join(podDir(pod), 'volumes', 'kubernetes.io~configmap', 'cm');
  const dataBefore = safeReadlink(join(cmDir, '..data'));
  const changed = Date.now();
  await kubectl.apply(configMapObject(CONFIG, NS, CONFIG_UPDATE));
  await waitFor('the new ui.properties in the configMap volume', async () => (await cat(pod, `${VOLUME_MOUNTS.configMap}/ui.properties`)) === CONFIG_UPDATE['ui.properties'], 30_000, kubeletLog);
  const took = Date.now() - changed;
  t.pass(`the configMap volume shows the change after ${took} ms`);
  await waitFor('the new ui.properties in the projected volume', async () => (await cat(pod, `${VOLUME_MOUNTS.projected}/config/ui.properties`)) === CONFIG_UPDATE['ui.properties'], 30_000 - took, kubeletLog);
  t.pass('the projected volume\'s configMap item too');
  t.not(safeReadlink(join(cmDir, '..data')), dataBefore, '..data points to a new timestamped directory');
  t.equal(await cat(pod, `${VOLUME_MOUNTS.configMap}/nested/dir/game.properties`), CONFIG_UPDATE['game.properties'], 'the unchanged key is still there');
  t.equal(await modeOf(pod, `${VOLUME_MOUNTS.configMap}/nested/dir/game.properties`), '400', 'with its mode');
  t.equal(await cat(pod, VOLUME_MOUNTS.subPath), CONFIG_DATA['app.conf'], 'the subPath file keeps the old content (subPath mounts are not updated)');
  t.equal(restartsOf(await getPod('vols')), 0, 'the container was not restarted');
});

await t.test('a missing configMap holds the pod with a FailedMount event until it is created', async (t) => {
  await createObject(configMapVolumePod({ name: 'needs-config', namespace: NS, image: containerd.busyboxImage, node: NODE, configMap: 'late-config' }));
  const event = await eventFor('needs-config', 'FailedMount', /configmap "late-config" not found/);
  t.equal(event.type, 'Warning', 'a Warning');
  t.equal(event.message, 'MountVolume.SetUp failed for volume "cfg" : configmap "late-config" not found', 'Go\'s message');
  t.equal(event.source?.component, 'kubelet', 'from the kubelet');
  const waiting = await waitFor('needs-config reported ContainerCreating', async () => {
    const pod = await getPod('needs-config');
    return statusOf(pod)?.state?.waiting && pod;
  }, 15_000, kubeletLog).catch(() => undefined);
  t.equal(waiting?.status?.phase, 'Pending', 'the pod stays Pending');
  t.equal(statusOf(waiting)?.state?.waiting?.reason, 'ContainerCreating', 'its container waits in ContainerCreating');
  t.equal((await containersOf('needs-config')).length, 0, 'no container was created');

  const created = Date.now();
  await kubectl.apply(configMapObject('late-config', NS, { 'late.txt': 'arrived' }));
  const pod = await runningAndReady('needs-config', 30_000);
  t.pass(`Running ${Date.now() - created} ms after the configMap was created`);
  t.equal(await cat(pod, '/etc/late/late.txt'), 'arrived', 'the container sees the configMap');
  seen.set('needs-config', pod);
});

await t.test('a hostPath of type Directory that does not exist fails the mount; other pods carry on', async (t) => {
  const missing = join(dir, 'no-such-dir');
  await createObject(hostPathDirectoryPod({ name: 'bad-host', namespace: NS, image: containerd.busyboxImage, node: NODE, path: missing }));
  const event = await eventFor('bad-host', 'FailedMount', new RegExp(escapeRegExp(`hostPath type check failed: ${missing} is not a directory`)));
  t.equal(event.type, 'Warning', 'a Warning');
  t.equal(event.message, `MountVolume.SetUp failed for volume "data" : hostPath type check failed: ${missing} is not a directory`, 'Go\'s message');
  const pod = await getPod('bad-host');
  t.equal(pod?.status?.phase, 'Pending', 'the pod stays Pending');
  t.equal((await containersOf('bad-host')).length, 0, 'no container was started');
  t.notOk(existsSync(missing), 'type Directory does not create the path');
  for (const [name, before] of seen) {
    const now = await getPod(name);
    t.ok(isPodReady(now), `${name} is still Ready`);
    t.equal(statusOf(now)?.containerID, statusOf(before)?.containerID, `${name} runs the same container`);
    t.equal(restartsOf(now), 0, `${name} was not restarted`);
  }
});

await t.test('a subPath escaping its volume fails its container with CreateContainerConfigError; the pod\'s other containers run', async (t) => {
  await createObject(escapingSubPathPod({ name: 'escape', namespace: NS, image: containerd.busyboxImage, node: NODE }));
  const pod = await waitFor('escape: good running, bad-expr and bad-link in CreateContainerConfigError', async () => {
    const p = await getPod('escape');
    return (
      statusOf(p, 'good')?.state?.running &&
      statusOf(p, 'bad-expr')?.state?.waiting?.reason === 'CreateContainerConfigError' &&
      statusOf(p, 'bad-link')?.state?.waiting?.reason === 'CreateContainerConfigError' &&
      p
    );
  }, 60_000, kubeletLog).catch(async (error: Error) => {
    t.fail(error.message);
    return (await getPod('escape')) ?? {};
  });
  const badExpr = statusOf(pod, 'bad-expr')?.state?.waiting;
  t.equal(badExpr?.reason, 'CreateContainerConfigError', 'bad-expr: CreateContainerConfigError');
  t.match(badExpr?.message ?? '', /`\.\.\/x`/, 'bad-expr: the message names the subPath');
  t.equal(badExpr?.message, "unable to provision SubPath `../x`: must not contain '..'", 'bad-expr: Go\'s message');
  const badLink = statusOf(pod, 'bad-link')?.state?.waiting;
  t.equal(badLink?.reason, 'CreateContainerConfigError', 'bad-link (a symlink out of the volume): CreateContainerConfigError');
  t.equal(badLink?.message, 'failed to prepare subPath for volumeMount "scratch" of container "bad-link"', 'bad-link: Go\'s message');
  const failed = await eventFor('escape', 'Failed', /SubPath `\.\.\/x`/, 10_000).catch(() => undefined);
  t.equal(failed?.message, "Error: unable to provision SubPath `../x`: must not contain '..'", 'a Failed event with the error');
  const names = (await containersOf('escape')).map((c) => c.metadata?.name);
  t.notOk(names.includes('bad-expr') || names.includes('bad-link'), `no escaping container was created (runtime has ${names.join(', ')})`);
  t.ok(statusOf(pod, 'good')?.state?.running, 'the good container runs');
  t.equal(await cat(pod, '/ok/file', 'good'), 'fine\n', 'and sees its own subPath');
  t.equal(statusOf(pod, 'good')?.restartCount, 0, 'the good container was not restarted');
});

await t.test('a kubelet restart keeps every volume as it is (nothing mounted twice); a pod deleted meanwhile loses its volumes', async (t) => {
  const vols = await runningAndReady('vols');
  const gone = (await kubectl.json(['get', 'pods', '-n', NS])).items.find((p: Json) => p.metadata.name !== 'vols' && p.status?.phase === 'Running') as Json;
  t.ok(gone, `a second running pod (${gone?.metadata.name}) to delete while the kubelet is down`);
  const mountsOf = (uid: string) => hostMounts().filter((m) => m.target.includes(uid)).map((m) => m.target).sort();
  const before = mountsOf(vols.metadata.uid);
  const cmDir = join(podDir(vols), 'volumes', 'kubernetes.io~configmap', 'cm');
  const dataBefore = safeReadlink(join(cmDir, '..data'));
  t.ok(before.length >= 3, `${before.length} mounts of the pod before the restart`);
  await kubelet.stop();
  await kubectl.run(['delete', 'pod', '-n', NS, gone.metadata.name, '--grace-period=0', '--force', '--wait=false']);
  kubelet = await startKubelet();
  await waitFor('the node Ready again', async () => {
    const node = await kubectl.getOrUndefined(['node', NODE]);
    return node?.status?.conditions?.find((c: Json) => c.type === 'Ready')?.status === 'True' && kubelet.logTail(200).includes('Starting Kubelet Volume Manager');
  }, 60_000, kubeletLog);
  const goneUid = gone.metadata.uid as string;
  const goneCleaned = await waitFor('the deleted pod\'s volumes and directory removed', async () => mountsOf(goneUid).length === 0 && !existsSync(join(root, 'pods', goneUid)), 60_000, kubeletLog).catch(() => false);
  t.ok(goneCleaned, `the pod deleted while the kubelet was down lost its mounts and directory (left: ${mountsOf(goneUid).join(', ')})`);
  const after = await runningAndReady('vols');
  t.same(mountsOf(vols.metadata.uid), before, 'the running pod\'s mounts are exactly those it had: none added, none stacked, none lost');
  t.equal(restartsOf(after), restartsOf(vols), 'its container was not restarted');
  t.equal(safeReadlink(join(cmDir, '..data')), dataBefore, 'its configMap files were not rewritten (same content)');
  t.equal(await cat(after, `${VOLUME_MOUNTS.secret}/username`), SECRET_DATA.username, 'the secret is still readable in the container');
  await kubectl.apply(configMapObject(CONFIG, NS, { ...CONFIG_UPDATE, 'ui.properties': 'after-restart=1\n' }));
  await waitFor('a configMap change after the restart', async () => (await cat(after, `${VOLUME_MOUNTS.configMap}/ui.properties`)) === 'after-restart=1\n', 30_000, kubeletLog);
  t.pass('a configMap change after the restart reaches the file (the watch is back)');
});

await t.test('deleting the pods leaves no mount and no pod directory behind', async (t) => {
  const pods = (await kubectl.json(['get', 'pods', '-n', NS])).items as Json[];
  t.ok(pods.length >= 5, `${pods.length} pods to delete`);
  const uids = pods.map((p) => p.metadata.uid as string);
  t.ok(hostMounts().some((m) => uids.some((uid) => m.target.includes(uid))), 'the pods have mounts before');
  await kubectl.run(['delete', 'pod', '-n', NS, '--all', '--wait=true', '--timeout=120s']);
  const deleted = Date.now();
  const leftMounts = () => hostMounts().filter((m) => uids.some((uid) => m.target.includes(uid)));
  const leftDirs = () => uids.filter((uid) => existsSync(join(root, 'pods', uid)));
  const mountsGone = await waitFor('no mount of the deleted pods', async () => leftMounts().length === 0, 30_000).catch(() => false);
  t.ok(mountsGone, `no mount left ${Date.now() - deleted} ms after deletion${mountsGone ? '' : `: ${leftMounts().map((m) => `${m.target} (${m.fsType})`).join(', ')}`}`);
  const dirsGone = await waitFor('no directory of the deleted pods', async () => leftDirs().length === 0, 30_000).catch(() => false);
  t.ok(dirsGone, `no pod directory left ${Date.now() - deleted} ms after deletion${dirsGone ? '' : `: ${leftDirs().join(', ')}`}`);
  for (const pod of pods) {
    t.equal((await containersOf(pod.metadata.name)).filter((c) => c.state === 'CONTAINER_RUNNING').length, 0, `no container of ${pod.metadata.name} still runs`);
  }
  t.equal(safeRead(join(hostDir, 'from-host.txt')), 'host data\n', 'the hostPath\'s content stays on the host');
  t.equal(safeRead(join(hostDir, 'from-pod.txt')), 'from pod\n', 'including what the pod wrote');
  t.ok(existsSync(hostDirToCreate), 'the created hostPath directory stays');
  t.ok(kubelet.running, 'the kubelet ran throughout');
});

function restartsOf(pod: Json | undefined): number | undefined {
  return statusOf(pod)?.restartCount;
}

function safeReadlink(path: string): string {
  try {
    return readlinkSync(path);
  } catch (error) {
    return `<${(error as Error).message}>`;
  }
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    return `<${(error as Error).message}>`;
  }
}
