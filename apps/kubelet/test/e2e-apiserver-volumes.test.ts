// Volumes end to end in API server mode, against @kubelet-ts/test-apiserver on the embedded local runtime: the
// composed kubelet (its container, the watch-based configMap/secret managers, the token manager, the volume manager)
// sets up configMap, secret, downwardAPI, projected, emptyDir and the ServiceAccount admission's token secret volumes
// for a pod bound to the node, hands them to the runtime as CRI mounts, follows a configMap change, holds a pod whose
// configMap is missing with a FailedMount event, and removes a deleted pod's directory. tools/cluster-e2e's
// volumes.test.ts checks the same against the real kube-apiserver on containerd; this run is fast and needs no
// cluster. Secret and projected volumes are tmpfs mounts: as root (CI) they are real, otherwise a FakeMounter
// records them.
import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { noopLogger } from '@kubelet-ts/core';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { startTestApiServer } from '@kubelet-ts/test-apiserver';
import { SystemMounter, type Mounter } from '@kubelet-ts/volume-manager';
import { FakeMounter } from '@kubelet-ts/volume-manager/testing';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet, type RunningKubelet } from '../src/index.js';
import { removeScratchDir, sleepForever, waitFor } from './e2e/harness.js';

type Json = Record<string, any>;

const NODE = 'vol-node';
const NS = 'e2e-vol';
const IMAGE = 'localhost/kubelet-ts/busybox:1';
const AUDIENCE = 'e2e-audience';
/** The test API server's --api-audiences default (its issuer), as tools/kube's real server is configured. */
const API_AUDIENCE = 'https://kubernetes.default.svc.cluster.local';
const SA_USER = `system:serviceaccount:${NS}:default`;
const SA_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
/** An atomic writer's timestamped data directory (Go: `..2006_01_02_15_04_05.` and a random suffix). */
const TIMESTAMP_DIR = /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\w+$/;

const CONFIG = 'vol-config';
const CONFIG_DATA = { 'game.properties': 'lives=3\nenemies=aliens\n', 'ui.properties': 'color=blue\n' };
const CONFIG_UPDATE = { 'game.properties': 'lives=3\nenemies=aliens\n', 'ui.properties': 'color=green\n' };
const SECRET = 'vol-secret';
const SECRET_DATA = { username: 'admin', password: 's3cr3t!' };
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** Real tmpfs mounts need root; KUBELET_E2E_FAKE_MOUNTER=1 uses the FakeMounter as root too. */
const isRoot = process.getuid?.() === 0 && process.env.KUBELET_E2E_FAKE_MOUNTER !== '1';
const dir = mkdtempSync(join(tmpdir(), 'kubelet-e2e-vol-'));
const root = join(dir, 'root');
const local = new LocalRuntime({ socketPath: join(dir, 'runtime.sock'), rootDir: join(dir, 'runtime'), mode: 'process' });
await local.start();
/** What the token controller writes as ca.crt (kube-controller-manager's --root-ca-file). */
const ROOT_CA = '-----BEGIN CERTIFICATE-----\nMIIBe2UtdHMtdGVzdC1jYQ==\n-----END CERTIFICATE-----\n';
const server = await startTestApiServer({ serviceAccountRootCA: ROOT_CA });
const runtime = new RemoteRuntimeService({ endpoint: local.endpoint });
// As root the kubelet mounts tmpfs for real (SystemMounter, its default); otherwise a FakeMounter stands in.
const fakeMounter = isRoot ? undefined : new FakeMounter();
const systemMounter = new SystemMounter();
const controller = new AbortController();
const started: { kubelet?: RunningKubelet } = {};

t.teardown(async () => {
  controller.abort();
  await started.kubelet?.done.catch(() => undefined);
  await server.close();
  // The kubelet leaves pods running when it stops, as the Go kubelet does; the test removes its own.
  for (const sandbox of await runtime.listPodSandbox().catch(() => [])) {
    await runtime.stopPodSandbox(sandbox.id).catch(() => undefined);
    await runtime.removePodSandbox(sandbox.id).catch(() => undefined);
  }
  runtime.close();
  await local.stop();
  // A stopped kubelet leaves volumes mounted: unmount whatever is left under the scratch dir, then remove it.
  await removeScratchDir(dir);
});

const kubeconfig = join(dir, 'kubeconfig');
await server.writeKubeconfig(kubeconfig);
const config = resolveConfig(
  parseFlags([
    `--kubeconfig=${kubeconfig}`,
    `--root-dir=${root}`,
    `--pod-logs-dir=${join(dir, 'logs')}`,
    `--container-runtime-endpoint=${local.endpoint}`,
    `--hostname-override=${NODE}`,
    '--healthz-port=0',
    '--node-status-update-frequency=1s',
    '--sync-frequency=10s',
    '--cgroups-per-qos=false',
  ]),
);
const c = container.createChildContainer();
registerKubeletDeps(c, config);
if (!process.env.KUBELET_E2E_LOGS) c.register(Tokens.Logger, { useValue: noopLogger });
if (fakeMounter) c.register<Mounter>(Tokens.Mounter, { useValue: fakeMounter });
const kubelet = await startKubelet(c, controller.signal);
started.kubelet = kubelet;
let exited = false;
void kubelet.done.then(
  () => (exited = true),
  () => (exited = true),
);

const get = (resource: string, namespace: string | undefined, name: string) => server.store.get(resource, namespace, name) as Json | undefined;
const podDir = (pod: Json) => join(root, 'pods', pod.metadata.uid);
const volumeDir = (pod: Json, plugin: string, volume: string) => join(podDir(pod), 'volumes', `kubernetes.io~${plugin}`, volume);
const statusOf = (pod: Json | undefined, name = 'app'): Json | undefined => (pod?.status?.containerStatuses ?? []).find((s: Json) => s.name === name);
const isRunning = (pod: Json | undefined): pod is Json => pod?.status?.phase === 'Running' && statusOf(pod)?.state?.running !== undefined;
const containersOf = (pod: string) => runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.name': pod, 'io.kubernetes.pod.namespace': NS } });
const eventsFor = (name: string) => (server.store.list('events', NS) as Json[]).filter((e) => e.involvedObject?.name === name);


function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    return `<${(error as Error).message}>`;
  }
}

function safeReadlink(path: string): string {
  try {
    return readlinkSync(path);
  } catch (error) {
    return `<${(error as Error).message}>`;
  }
}

/** The permission bits of what `path` resolves to, in octal. */
function modeOf(path: string): string {
  try {
    return (statSync(path).mode & 0o777).toString(8);
  } catch (error) {
    return `<${(error as Error).message}>`;
  }
}

/** A volume directory's entries, sorted, with the atomic writer's timestamped directory shown as `..<timestamp>`. */
function entries(path: string): string[] {
  try {
    return readdirSync(path)
      .map((name) => (TIMESTAMP_DIR.test(name) ? '..<timestamp>' : name))
      .sort();
  } catch (error) {
    return [`<${(error as Error).message}>`];
  }
}

/** Whether `target` is a tmpfs mount point: the host's mount table as root, the FakeMounter's otherwise. */
async function isTmpfsMount(target: string): Promise<boolean> {
  if (fakeMounter) return fakeMounter.mounts.some((m) => m.target === target && m.fsType === 'tmpfs');
  return (await systemMounter.entries()).some((m) => m.mountPoint === target && m.fsType === 'tmpfs');
}

/** Mount points at or under `prefix` (the host's, or the FakeMounter's). */
async function mountsUnder(prefix: string): Promise<string[]> {
  if (fakeMounter) return fakeMounter.mounts.filter((m) => m.target === prefix || m.target.startsWith(`${prefix}/`)).map((m) => m.target);
  return systemMounter.mountPointsUnder(prefix);
}

function jwtClaims(token: string): Json {
  const payload = token.split('.')[1];
  if (!payload) throw new Error(`not a JWT: ${token.slice(0, 20)}...`);
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Json;
}

/** A TokenReview through the API, as a cluster user would send it. */
async function review(token: string, audiences?: string[]): Promise<Json> {
  const res = await fetch(`${server.url}/apis/authentication.k8s.io/v1/tokenreviews`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(audiences ? { audiences } : {}) } }),
  });
  return (await res.json()) as Json;
}

function configMap(name: string, data: Record<string, string>): Json {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data };
}

/** The pod of the main case: every volume type the kubelet sets up from the API, one container mounting them all. */
function volumesPod(): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'vols', namespace: NS, labels: { app: 'vols', tier: 'e2e' }, annotations: { 'kts.example/note': 'hello "volumes"' } },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'app',
          image: IMAGE,
          imagePullPolicy: 'IfNotPresent',
          command: ['sh', '-c', sleepForever],
          resources: { limits: { memory: '64Mi' } },
          volumeMounts: [
            { name: 'cm', mountPath: '/etc/cm' },
            { name: 'secret', mountPath: '/etc/secret', readOnly: true },
            { name: 'dapi', mountPath: '/etc/podinfo' },
            { name: 'proj', mountPath: '/etc/proj', readOnly: true },
            { name: 'scratch', mountPath: '/scratch' },
          ],
        },
      ],
      volumes: [
        {
          name: 'cm',
          configMap: {
            name: CONFIG,
            items: [
              { key: 'game.properties', path: 'nested/dir/game.properties', mode: 0o400 },
              { key: 'ui.properties', path: 'ui.properties' },
            ],
            defaultMode: 0o640,
          },
        },
        { name: 'secret', secret: { secretName: SECRET, defaultMode: 0o440 } },
        {
          name: 'dapi',
          downwardAPI: {
            items: [
              { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
              { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
              { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
              { path: 'mem_limit', resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' } },
            ],
          },
        },
        {
          name: 'proj',
          projected: {
            sources: [
              { serviceAccountToken: { audience: AUDIENCE, path: 'token' } },
              { configMap: { name: CONFIG, items: [{ key: 'ui.properties', path: 'config/ui.properties' }] } },
              { downwardAPI: { items: [{ path: 'podname', fieldRef: { fieldPath: 'metadata.name' } }] } },
            ],
          },
        },
        { name: 'scratch', emptyDir: {} },
      ],
    },
  };
}

function configMapVolumePod(name: string, configMapName: string): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 5,
      containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever], volumeMounts: [{ name: 'cfg', mountPath: '/etc/late' }] }],
      volumes: [{ name: 'cfg', configMap: { name: configMapName } }],
    },
  };
}

if (!isRoot) t.comment('not root: secret and projected volumes are recorded by a FakeMounter instead of mounted as tmpfs');

await waitFor('node registration and Ready', () => get('nodes', undefined, NODE)?.status?.conditions?.some((cond: Json) => cond.type === 'Ready' && cond.status === 'True'));
server.store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
/** Pods of the earlier cases, as first seen Running. */
const seen = new Map<string, Json>();

await t.test('a pod with configMap, secret, downwardAPI, projected, emptyDir and the service account token volumes runs with exactly its data', async (t) => {
  server.store.create('configmaps', configMap(CONFIG, CONFIG_DATA));
  server.store.create('secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name: SECRET, namespace: NS }, data: { username: b64(SECRET_DATA.username), password: b64(SECRET_DATA.password) } });
  server.store.create('pods', volumesPod());
  const pod = await waitFor('pod vols Running in the API server', () => {
    const p = get('pods', NS, 'vols');
    return isRunning(p) && p;
  });
  seen.set('vols', pod);
  t.equal(statusOf(pod)?.restartCount, 0, 'the container runs, not restarted');

  // configMap with items: only the listed keys, one at a nested path; the item's mode and the defaultMode.
  const cmDir = volumeDir(pod, 'configmap', 'cm');
  t.same(entries(cmDir), ['..<timestamp>', '..data', 'nested', 'ui.properties'], "configMap volume: the listed items and the atomic writer's ..data layout");
  t.equal(safeRead(join(cmDir, 'nested/dir/game.properties')), CONFIG_DATA['game.properties'], 'configMap item at its nested path');
  t.equal(safeRead(join(cmDir, 'ui.properties')), CONFIG_DATA['ui.properties'], 'configMap item ui.properties');
  t.equal(modeOf(join(cmDir, 'nested/dir/game.properties')), '400', 'the item mode 0400');
  t.equal(modeOf(join(cmDir, 'ui.properties')), '640', 'the defaultMode 0640');
  t.match(safeReadlink(join(cmDir, '..data')), TIMESTAMP_DIR, '..data links to the timestamped directory');
  t.equal(safeReadlink(join(cmDir, 'ui.properties')), '..data/ui.properties', 'a top-level file links through ..data');
  t.equal(safeReadlink(join(cmDir, 'nested')), '..data/nested', 'a top-level directory links through ..data');
  t.notOk(await isTmpfsMount(cmDir), 'a configMap volume is no mount');

  // secret: every key decoded, defaultMode 0440, on tmpfs.
  const secretDir = volumeDir(pod, 'secret', 'secret');
  t.same(entries(secretDir), ['..<timestamp>', '..data', 'password', 'username'], 'secret volume: every key');
  t.equal(safeRead(join(secretDir, 'username')), SECRET_DATA.username, 'secret username');
  t.equal(safeRead(join(secretDir, 'password')), SECRET_DATA.password, 'secret password');
  t.equal(modeOf(join(secretDir, 'username')), '440', 'secret defaultMode 0440');
  t.ok(await isTmpfsMount(secretDir), 'the secret volume is a tmpfs mount');

  // downwardAPI: Go's formats (sorted key="value" lines), a resource in the divisor's unit, default mode 0644.
  const dapiDir = volumeDir(pod, 'downward-api', 'dapi');
  t.same(entries(dapiDir), ['..<timestamp>', '..data', 'annotations', 'labels', 'mem_limit', 'name'], 'downwardAPI volume: every item');
  t.equal(safeRead(join(dapiDir, 'labels')), 'app="vols"\ntier="e2e"', 'metadata.labels');
  t.match(safeRead(join(dapiDir, 'annotations')), /^kts\.example\/note="hello \\"volumes\\""$/m, 'metadata.annotations, quoted as Go does');
  t.equal(safeRead(join(dapiDir, 'name')), 'vols', 'metadata.name');
  t.equal(safeRead(join(dapiDir, 'mem_limit')), '64', 'limits.memory in Mi');
  t.equal(modeOf(join(dapiDir, 'name')), '644', 'downwardAPI default mode 0644');

  // projected: a bound token for the audience, a configMap item and a downwardAPI item, on tmpfs.
  const projDir = volumeDir(pod, 'projected', 'proj');
  t.same(entries(projDir), ['..<timestamp>', '..data', 'config', 'podname', 'token'], 'projected volume: every source');
  t.equal(safeRead(join(projDir, 'config/ui.properties')), CONFIG_DATA['ui.properties'], 'projected configMap item');
  t.equal(safeRead(join(projDir, 'podname')), 'vols', 'projected downwardAPI item');
  t.equal(modeOf(join(projDir, 'token')), '644', 'projected default mode 0644');
  t.ok(await isTmpfsMount(projDir), 'the projected volume is a tmpfs mount (it holds a token)');
  const token = safeRead(join(projDir, 'token'));
  let claims: Json = {};
  try {
    claims = jwtClaims(token);
  } catch (error) {
    t.fail(`the projected token is a JWT: ${(error as Error).message}`);
  }
  t.same(claims.aud, [AUDIENCE], 'the token is for the requested audience');
  t.equal(claims.sub, SA_USER, 'of the pod\'s service account');
  t.equal(claims.exp - claims.iat, 3600, 'valid expirationSeconds (the API default, 3600)');
  t.equal(claims['kubernetes.io']?.pod?.name, 'vols', 'bound to the pod (name)');
  t.equal(claims['kubernetes.io']?.pod?.uid, pod.metadata.uid, 'bound to the pod (uid)');
  const tokenRequests = server.requests.filter((r) => r.method === 'POST' && r.path === `/api/v1/namespaces/${NS}/serviceaccounts/default/token`);
  t.ok(tokenRequests.length >= 1 && tokenRequests.every((r) => r.status === 201), `the kubelet asked the TokenRequest API (${tokenRequests.map((r) => r.status).join(', ')})`);
  const projectedReview = await review(token, [AUDIENCE]);
  t.equal(projectedReview.status?.authenticated, true, `TokenReview with the audience authenticates it ${JSON.stringify(projectedReview.status)}`);
  t.equal(projectedReview.status?.user?.username, SA_USER, 'as the default service account');
  t.same(projectedReview.status?.user?.extra?.['authentication.kubernetes.io/pod-name'], ['vols'], 'bound to the pod');
  t.not((await review(token)).status?.authenticated, true, "not accepted for the API server's own audience");

  // emptyDir: a directory of the pod's own, not a mount.
  const scratchDir = volumeDir(pod, 'empty-dir', 'scratch');
  t.ok(existsSync(scratchDir) && statSync(scratchDir).isDirectory(), 'the emptyDir is a directory under the pod dir');
  t.same(entries(scratchDir), [], 'empty');
  t.notOk(await isTmpfsMount(scratchDir), 'a disk emptyDir is no mount');

  // The ServiceAccount admission's token secret volume: token, ca.crt and namespace from the token controller's secret.
  const saVolume = (pod.spec.volumes as Json[]).find((v) => /^default-token-[a-z0-9]{5}$/.test(v.name));
  t.ok(saVolume?.secret?.secretName, `the admission plugin added the ${saVolume?.name} volume`);
  const saDir = volumeDir(pod, 'secret', saVolume?.name ?? 'default-token');
  t.same(entries(saDir), ['..<timestamp>', '..data', 'ca.crt', 'namespace', 'token'], 'token, ca.crt and namespace');
  t.equal(safeRead(join(saDir, 'namespace')), NS, 'its namespace');
  t.equal(safeRead(join(saDir, 'ca.crt')), ROOT_CA, 'its ca.crt is the cluster CA');
  t.ok(await isTmpfsMount(saDir), 'the token secret volume is a tmpfs mount');
  const saReview = await review(safeRead(join(saDir, 'token')));
  t.equal(saReview.status?.authenticated, true, `TokenReview authenticates the mounted token ${JSON.stringify(saReview.status)}`);
  t.equal(saReview.status?.user?.username, SA_USER, 'as the default service account');
  t.same(saReview.status?.audiences, [API_AUDIENCE], "for the API server's audience");

  // The container's CRI mounts point at those directories. configMap, secret, downwardAPI and projected volumes are
  // read-only whatever the volumeMount says (Go: their mounters' ReadOnly attribute, since CVE-2017-1002102); an
  // emptyDir is as the volumeMount says.
  const [app] = (await containersOf('vols')).filter((ctr) => ctr.metadata?.name === 'app' && ctr.state === 'CONTAINER_RUNNING');
  t.ok(app, 'the app container runs in the runtime');
  const { status } = app ? await runtime.containerStatus(app.id) : { status: undefined };
  const mounts = new Map((status?.mounts ?? []).map((m) => [m.containerPath, m]));
  const expected: Array<[string, string, boolean]> = [
    ['/etc/cm', volumeDir(pod, 'configmap', 'cm'), true],
    ['/etc/secret', secretDir, true],
    ['/etc/podinfo', dapiDir, true],
    ['/etc/proj', projDir, true],
    ['/scratch', scratchDir, false],
    [SA_MOUNT, saDir, true],
  ];
  for (const [containerPath, hostPath, readonly] of expected) {
    const mount = mounts.get(containerPath);
    t.equal(mount?.hostPath, hostPath, `${containerPath} is the volume directory ${hostPath}`);
    t.equal(mount?.readonly ?? false, readonly, `${containerPath} is ${readonly ? 'read-only' : 'read-write'}`);
  }

  // The watch-based managers watch each object by name in its namespace, as the Node authorizer requires.
  for (const [resource, name] of [
    ['configmaps', CONFIG],
    ['secrets', SECRET],
    ['secrets', saVolume?.secret?.secretName],
  ]) {
    const watches = server.requests.filter((r) => r.verb === 'watch' && r.resource === resource && r.namespace === NS);
    t.ok(
      watches.some((r) => r.query.fieldSelector === `metadata.name=${name}` && r.query.allowWatchBookmarks === 'true' && /^\d+$/.test(r.query.resourceVersion ?? '')),
      `a watch of ${resource} ${name} by fieldSelector metadata.name, with bookmarks, from a resourceVersion`,
    );
  }
});

await t.test('a configMap change reaches the configMap and projected volumes without a restart', async (t) => {
  const pod = seen.get('vols');
  if (!pod) return t.fail('the vols pod did not run');
  const cmDir = volumeDir(pod, 'configmap', 'cm');
  const projDir = volumeDir(pod, 'projected', 'proj');
  const dataBefore = safeReadlink(join(cmDir, '..data'));
  const current = get('configmaps', NS, CONFIG)!;
  server.store.update('configmaps', { ...current, data: CONFIG_UPDATE });
  const changed = Date.now();
  await waitFor('the new ui.properties in the configMap volume', () => safeRead(join(cmDir, 'ui.properties')) === CONFIG_UPDATE['ui.properties']);
  t.pass(`the configMap volume shows the change after ${Date.now() - changed} ms`);
  await waitFor('the new ui.properties in the projected volume', () => safeRead(join(projDir, 'config/ui.properties')) === CONFIG_UPDATE['ui.properties']);
  t.pass("the projected volume's configMap item too");
  t.not(safeReadlink(join(cmDir, '..data')), dataBefore, '..data points to a new timestamped directory');
  t.equal(safeRead(join(cmDir, 'nested/dir/game.properties')), CONFIG_UPDATE['game.properties'], 'the unchanged key is still there');
  t.equal(modeOf(join(cmDir, 'nested/dir/game.properties')), '400', 'with its mode');
  t.equal(statusOf(get('pods', NS, 'vols'))?.restartCount, 0, 'the container was not restarted');
});

await t.test('a missing configMap holds the pod with a FailedMount event until it is created', async (t) => {
  server.store.create('pods', configMapVolumePod('needs-config', 'late-config'));
  const event = await waitFor('a FailedMount event for needs-config', () => eventsFor('needs-config').find((e) => e.reason === 'FailedMount'));
  t.equal(event.type, 'Warning', 'a Warning');
  t.equal(event.message, 'MountVolume.SetUp failed for volume "cfg" : configmap "late-config" not found', "Go's message");
  t.equal(event.source?.component, 'kubelet', 'from the kubelet');
  t.equal(event.involvedObject?.kind, 'Pod', 'about the pod');
  const pending = await waitFor('needs-config reported ContainerCreating', () => {
    const p = get('pods', NS, 'needs-config');
    return statusOf(p)?.state?.waiting && p;
  }, 15_000).catch(() => get('pods', NS, 'needs-config'));
  t.equal(pending?.status?.phase, 'Pending', 'the pod stays Pending');
  t.equal(statusOf(pending)?.state?.waiting?.reason, 'ContainerCreating', 'its container waits in ContainerCreating');
  t.equal((await containersOf('needs-config')).length, 0, 'no container was created');

  const created = Date.now();
  server.store.create('configmaps', configMap('late-config', { 'late.txt': 'arrived' }));
  const pod = await waitFor('needs-config Running', () => {
    const p = get('pods', NS, 'needs-config');
    return isRunning(p) && p;
  });
  t.pass(`Running ${Date.now() - created} ms after the configMap was created`);
  t.equal(safeRead(join(volumeDir(pod, 'configmap', 'cfg'), 'late.txt')), 'arrived', 'the volume has the configMap');
  seen.set('needs-config', pod);
});

await t.test('deleting the pods removes their directories and mounts', async (t) => {
  const pods = [...seen.values()];
  t.ok(pods.length >= 2, `${pods.length} pods to delete`);
  const vols = seen.get('vols');
  if (vols) t.ok((await mountsUnder(podDir(vols))).length >= 3, 'vols has its tmpfs mounts before');
  for (const pod of pods) server.store.delete('pods', NS, pod.metadata.name, { gracePeriodSeconds: 5 });
  for (const pod of pods) {
    await waitFor(`pod ${pod.metadata.name} gone from the API server`, () => get('pods', NS, pod.metadata.name) === undefined);
    const gone = await waitFor(`the directory of ${pod.metadata.name} removed`, () => !existsSync(podDir(pod)), 30_000).catch(() => false);
    t.ok(gone, `${podDir(pod)} is removed${gone ? '' : `: ${describeLeft(podDir(pod))}`}`);
    t.same(await mountsUnder(podDir(pod)), [], `nothing of ${pod.metadata.name} stays mounted`);
    const running = (await containersOf(pod.metadata.name)).filter((ctr) => ctr.state === 'CONTAINER_RUNNING');
    t.equal(running.length, 0, `no container of ${pod.metadata.name} still runs`);
  }
  t.notOk(exited, 'the kubelet ran throughout');
});

/** What is left of a directory, for a failure message. */
function describeLeft(path: string): string {
  const out: string[] = [];
  const walk = (p: string, depth: number) => {
    if (depth > 6) return;
    let st;
    try {
      st = lstatSync(p);
    } catch {
      return;
    }
    out.push(p.slice(path.length) || '/');
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name), depth + 1);
  };
  walk(path, 0);
  return out.join(', ');
}
