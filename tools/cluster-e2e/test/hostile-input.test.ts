// Hostile input (issue 29), on the real v1.20.2 control plane and containerd. Where the API server lets an object
// through, the kubelet is the last guard; where it does not, a static pod reaches the kubelet anyway. Every case must
// end in a clear error (or a pod that runs as asked), nothing may be written outside the pods' directories, and the
// other pods, the canaries, must not notice: same containers, no restarts, the kubelet healthy throughout.
import t from 'tap';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { ensureCluster, Kubectl, KubectlError, KubeletProcess, nodeKubeconfig, ourCgroupRoot, unmountAndRemove, waitFor } from '../src/index.js';
import { containerStatus, execThroughCri, isPodReady, sleepForever } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-hostile-node';
const NS = 'kts-hostile';
const PORT = 10268;

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const runtime = new RemoteRuntimeService({ endpoint: containerd.endpoint });
const image = containerd.busyboxImage;
const dir = mkdtempSync(join(containerd.root, 'hostile-e2e-'));
const root = join(dir, 'root');
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
// What escapes would reach: a host directory beside the kubelet's, with a secret in it.
const hostSecrets = join(dir, 'host-secrets');
mkdirSync(hostSecrets);
writeFileSync(join(hostSecrets, 'secret.txt'), 'HOST-SECRET\n');

const kubelet = await KubeletProcess.startOurs({
  node: NODE,
  kubeconfig: await nodeKubeconfig(NODE),
  runtimeEndpoint: containerd.endpoint,
  dir,
  staticPodPath: manifests,
  extraArgs: ['--sync-frequency=10s', '--file-check-frequency=2s', `--port=${PORT}`, '--read-only-port=0'],
});
const kubeletLog = () => kubelet.logTail(80);

t.teardown(async () => {
  await kubelet.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS || pod.namespace.startsWith('kts-nnnnnnnn') || pod.name.endsWith(`-${NODE}`));
  await removeHostCgroup(ourCgroupRoot(NODE)).catch(() => undefined);
  runtime.close();
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

const base = (name: string, spec: Json, namespace = NS): Json => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace },
  spec: { nodeSelector: { 'kubernetes.io/hostname': NODE }, terminationGracePeriodSeconds: 1, ...spec },
});
const container = (name: string, extra: Json = {}): Json => ({ name, image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever], ...extra });
const getPod = (name: string, namespace = NS) => kubectl.getOrUndefined(['pod', '-n', namespace, name]);
async function runningAndReady(name: string, timeoutMs = 90_000, namespace = NS): Promise<Json> {
  return waitFor(`pod ${namespace}/${name} Running and Ready`, async () => {
    const pod = await getPod(name, namespace);
    return pod?.status?.phase === 'Running' && isPodReady(pod) && pod;
  }, timeoutMs, kubeletLog);
}
/** kubectl create of an object the API server is expected to refuse: the error text, or undefined if it was created. */
async function refused(object: Json): Promise<string | undefined> {
  try {
    await kubectl.run(['create', '-f', '-'], JSON.stringify(object));
    return undefined;
  } catch (error) {
    if (error instanceof KubectlError) return error.stderr;
    throw error;
  }
}
const exec = (pod: Json, cmd: string[], name = 'app') => execThroughCri(runtime, pod, cmd, name, 20);
async function events(name: string, namespace = NS): Promise<Json[]> {
  return (await kubectl.json(['get', 'events', '-n', namespace, '--field-selector', `involvedObject.name=${name}`])).items as Json[];
}
/** Every path under the kubelet's root dir outside pods/, to prove nothing hostile wrote there. */
function filesOutsidePods(): string[] {
  const out: string[] = [];
  const walk = (path: string): void => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      const rel = relative(root, full);
      if (rel === 'pods' || rel.startsWith('plugins') || rel.startsWith('device-plugins') || rel.startsWith('pod-resources')) continue;
      out.push(rel);
      if (entry.isDirectory()) walk(full);
    }
  };
  walk(root);
  return out.sort();
}

// The canaries: an API pod and a static pod that must not notice anything.
await waitFor('node registered', () => kubectl.getOrUndefined(['node', NODE]), 60_000, kubeletLog);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);
writeFileSync(join(manifests, 'canary.yaml'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'static-canary', namespace: NS }, spec: { containers: [container('app')] } }));
await kubectl.apply(base('canary', { containers: [container('app')] }));
const canaries = new Map<string, Json>();
canaries.set('canary', await runningAndReady('canary'));
canaries.set(`static-canary-${NODE}`, await runningAndReady(`static-canary-${NODE}`));
const rootBefore = filesOutsidePods();

await t.test('the API server refuses what would escape a volume; the same in a static pod is refused by the kubelet with Go\'s field errors', async (t) => {
  const escapes: Record<string, Json> = {
    'subpath-dotdot': { volumes: [{ name: 'v', emptyDir: {} }], containers: [container('app', { volumeMounts: [{ name: 'v', mountPath: '/m', subPath: '../../../host-secrets' }] })] },
    'downward-escape': { volumes: [{ name: 'v', downwardAPI: { items: [{ path: '../../escaped', fieldRef: { fieldPath: 'metadata.name' } }] } }], containers: [container('app', { volumeMounts: [{ name: 'v', mountPath: '/m' }] })] },
    'configmap-item-escape': { volumes: [{ name: 'v', configMap: { name: 'x', items: [{ key: 'k', path: '../../escaped' }] } }], containers: [container('app', { volumeMounts: [{ name: 'v', mountPath: '/m' }] })] },
    'hostpath-dotdot': { volumes: [{ name: 'v', hostPath: { path: `${hostSecrets}/../host-secrets` } }], containers: [container('app', { volumeMounts: [{ name: 'v', mountPath: '/m' }] })] },
  };
  const expected: Record<string, string> = {
    'subpath-dotdot': `spec.containers[0].volumeMounts.subPath: Invalid value: "../../../host-secrets": must not contain '..'`,
    'downward-escape': `spec.volumes[0].downwardAPI.path: Invalid value: "../../escaped": must not contain '..'`,
    'configmap-item-escape': `spec.volumes[0].configMap.items[0].path: Invalid value: "../../escaped": must not contain '..'`,
    'hostpath-dotdot': `spec.volumes[0].hostPath.path: Invalid value: "${hostSecrets}/../host-secrets": must not contain '..'`,
  };
  for (const [name, spec] of Object.entries(escapes)) {
    const error = await refused(base(name, spec));
    t.ok(error?.includes(expected[name]), `the API server refuses ${name}: ${error?.trim()}`);
    writeFileSync(join(manifests, `${name}.yaml`), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS }, spec }));
  }
  for (const [name] of Object.entries(escapes)) {
    const line = await waitFor(`the kubelet refuses static pod ${name}`, async () => kubelet.logTail(2000).split('\n').map((l) => l.replaceAll('\\"', '"')).find((l) => l.includes(`${name}.yaml`) && l.includes(expected[name])), 30_000, kubeletLog);
    t.ok(line, `the kubelet names the file and Go's field error: ${name}`);
  }
  t.equal(await getPod(`subpath-dotdot-${NODE}`), undefined, 'no mirror pod for a refused static pod');
  const names = (await runtime.listPodSandbox()).map((s) => s.metadata?.name ?? '');
  t.notOk(names.some((n) => Object.keys(escapes).some((e) => n.startsWith(e))), 'no sandbox was made for any of them');
  t.notOk(existsSync(join(root, 'escaped')) || existsSync(join(dir, 'escaped')), 'nothing named escaped was written');
});

await t.test('configMap keys: .. and / refused by the API server; 10,000 keys and a value near the 1 MiB limit mount whole', async (t) => {
  for (const key of ['..', '../escape', 'a/b', '..data']) {
    const error = await refused({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bad-key', namespace: NS }, data: { [key]: 'x' } });
    t.match(error ?? '', /Invalid value/, `key ${JSON.stringify(key)} refused: ${error?.trim().slice(0, 160)}`);
  }
  const many: Record<string, string> = {};
  for (let i = 0; i < 10_000; i++) many[`k${i}`] = `v${i}`;
  await kubectl.run(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'many-keys', namespace: NS }, data: many }));
  const bigValue = 'x'.repeat(1000 * 1024);
  await kubectl.run(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'big-value', namespace: NS }, stringData: { big: bigValue } }));
  await kubectl.apply(
    base('many-keys', {
      volumes: [
        { name: 'many', configMap: { name: 'many-keys' } },
        { name: 'big', secret: { secretName: 'big-value' } },
      ],
      containers: [container('app', { volumeMounts: [{ name: 'many', mountPath: '/many' }, { name: 'big', mountPath: '/big' }] })],
    }),
  );
  const pod = await runningAndReady('many-keys', 180_000);
  t.equal((await exec(pod, ['sh', '-c', 'ls /many | wc -l'])).trim(), '10000', 'all 10,000 keys are files');
  t.equal(await exec(pod, ['cat', '/many/k9999']), 'v9999', 'the last one with its value');
  t.equal((await exec(pod, ['sh', '-c', 'wc -c < /big/big'])).trim(), String(bigValue.length), 'the big value whole');
});

await t.test('a subPath swapped between a directory and a symlink out of the volume while containers start never shows what is outside', async (t) => {
  // The swapper flips scratch/sub between a directory of the volume and a symlink to the host's secrets (a host path:
  // only the kubelet, which prepares the subPath on the host, could follow it). Four readers mount subPath "sub" and
  // exit, so each restart prepares it again while the swap goes on.
  const swap = `while true; do rm -rf /scratch/sub; mkdir /scratch/sub; echo INSIDE > /scratch/sub/marker; sleep 1; rm -rf /scratch/sub; ln -s ${hostSecrets} /scratch/sub; usleep 200000; done`;
  const reader = 'if [ -e /mnt/secret.txt ]; then echo ESCAPED; cat /mnt/secret.txt; else echo "inside: $(ls /mnt | tr \'\\n\' \' \')"; fi; sleep 1; exit 1';
  await kubectl.apply(
    base('swap-race', {
      volumes: [{ name: 'scratch', emptyDir: {} }],
      containers: [
        container('swapper', { command: ['sh', '-c', swap], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }),
        ...[0, 1, 2, 3].map((i) => container(`r${i}`, { command: ['sh', '-c', reader], volumeMounts: [{ name: 'scratch', mountPath: '/mnt', subPath: 'sub' }] })),
      ],
    }),
  );
  const pod = await waitFor('the swapper running', async () => {
    const p = await getPod('swap-race');
    return containerStatus(p, 'swapper')?.state?.running && p;
  }, 60_000, kubeletLog);
  const logDir = join(dir, 'pod-logs', `${NS}_swap-race_${pod.metadata.uid}`);
  /** What the readers printed, every instance (the log files on the host), and the starts the kubelet refused. */
  const attempts = async (): Promise<{ lines: string[]; refusedStarts: number }> => {
    const lines: string[] = [];
    for (const name of [0, 1, 2, 3].map((i) => `r${i}`)) {
      if (!existsSync(join(logDir, name))) continue;
      for (const file of readdirSync(join(logDir, name))) lines.push(...readFileSync(join(logDir, name, file), 'utf8').split('\n').filter((l) => l !== ''));
    }
    // Each refused or failed start is one error line in the kubelet's log (events are rate-limited, the log is not).
    const refusedStarts = kubelet
      .output()
      .split('\n')
      .filter((l) => l.includes('"container start failed in pod"') && l.includes('pod="kts-hostile/swap-race"') && /container="r\d"/.test(l)).length;
    return { lines, refusedStarts };
  };
  // Starts while the swap goes on (a directory for 1 s, a symlink for 0.2 s): some find the directory and run, some
  // the symlink and are refused, some lose their directory between the bind mount and the runtime's mount (runc
  // fails with ENOENT, which is safe too); wait for runs and failures, a dozen in all.
  const { lines, refusedStarts } = await waitFor('12 reader starts, some run and some refused', async () => {
    const seen = await attempts();
    return seen.lines.length > 0 && seen.refusedStarts > 0 && seen.lines.length + seen.refusedStarts >= 12 && seen;
  }, 150_000, kubeletLog);
  t.pass(`the readers were started again and again: ${lines.length} ran, ${refusedStarts} refused or failed`);
  t.same(lines.filter((l) => /ESCAPED|HOST-SECRET/.test(l)), [], 'no reader ever saw the host\'s secrets');
  await kubectl.run(['delete', 'pod', '-n', NS, 'swap-race', '--wait=false']);
});

await t.test('hostPath / with the wrong type fails the mount with Go\'s message; nothing is created', async (t) => {
  await kubectl.apply(base('root-as-file', { volumes: [{ name: 'root', hostPath: { path: '/', type: 'File' } }], containers: [container('app', { volumeMounts: [{ name: 'root', mountPath: '/host' }] })] }));
  const event = await waitFor('a FailedMount event', async () => (await events('root-as-file')).find((e) => e.reason === 'FailedMount'), 60_000, kubeletLog);
  t.equal(event.message, 'MountVolume.SetUp failed for volume "root" : hostPath type check failed: / is not a file', 'Go\'s message');
  t.equal((await runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.name': 'root-as-file' } })).length, 0, 'no container was started');
});

await t.test('an environment of 1 MiB fails its container with the runtime\'s error; the kubelet carries on', async (t) => {
  // create, not apply: apply would keep the whole spec in an annotation, which may not exceed 256 KiB.
  await kubectl.run(['create', '-f', '-'], JSON.stringify(base('huge-env', { restartPolicy: 'Never', containers: [container('app', { env: [{ name: 'HUGE', value: 'e'.repeat(1024 * 1024) }] })] })));
  const pod = await waitFor('huge-env failed', async () => {
    const p = await getPod('huge-env');
    const state = containerStatus(p, 'app')?.state;
    return (state?.terminated || (state?.waiting && state.waiting.reason !== 'ContainerCreating')) && p;
  }, 90_000, kubeletLog);
  // Linux takes at most 128 KiB per environment string (MAX_ARG_STRLEN): the container's process cannot be executed.
  // containerd reports it as the runtime sees it: an exec failure (StartError, with runc's text) or an exit (Error).
  const state = containerStatus(pod, 'app')?.state;
  const reason = state?.terminated?.reason ?? state?.waiting?.reason;
  const message = state?.terminated?.message ?? state?.waiting?.message ?? '';
  t.match(reason, /^(StartError|RunContainerError|CreateContainerError|ContainerCannotRun|Error)$/, `a start failure: ${reason} ${message.slice(0, 200)}`);
  if (state?.terminated) t.not(state.terminated.exitCode, 0, `a non-zero exit code: ${state.terminated.exitCode}`);
  t.ok(kubelet.running, 'the kubelet runs');
});

await t.test('100 containers in one pod all run', async (t) => {
  const containers = Array.from({ length: 100 }, (_, i) => container(`c${i}`, { command: ['sleep', '3600'] }));
  await kubectl.apply(base('hundred', { containers }));
  const pod = await runningAndReady('hundred', 300_000);
  t.equal(pod.status.containerStatuses.filter((c: Json) => c.state?.running).length, 100, '100 running containers');
});

await t.test('names at the length limits: a 63-character namespace and container, a 253-character pod name', async (t) => {
  const longNs = `kts-${'n'.repeat(59)}`;
  const longContainer = `c${'x'.repeat(62)}`;
  const longPod = `p${'o'.repeat(252)}`;
  t.teardown(() => kubectl.run(['delete', 'namespace', longNs, '--ignore-not-found', '--wait=false']).then(() => undefined));
  await kubectl.run(['create', 'namespace', longNs]);
  await waitFor('the default service account', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', longNs, 'default']))?.secrets?.length ?? 0) > 0);
  await kubectl.apply(base('short', { containers: [container(longContainer)] }, longNs));
  const pod = await runningAndReady('short', 90_000, longNs);
  t.ok(containerStatus(pod, longContainer)?.state?.running, 'a 63-character container in a 63-character namespace runs');
  // <namespace>_<name>_<uid> is the pod's log directory (Go: BuildPodLogsDirectory): 63 + 253 + 36 + 2 bytes is more
  // than a file name may be (255). Go's kubelet fails such a pod's sandbox the same way; it must fail clearly.
  await kubectl.apply(base(longPod, { containers: [container('app')] }, longNs));
  const event = await waitFor('a sandbox failure event naming the cause', async () => (await events(longPod, longNs)).find((e) => /too long/i.test(e.message ?? '')), 60_000, kubeletLog);
  t.match(event.message, /file name too long|name too long/i, `the event says why: ${event.message.slice(0, 300)}`);
  t.equal(event.type, 'Warning');
});

await t.test('static manifests: a symlink to a manifest is read, a symlinked or real directory is not recursed into, a dangling link and a huge file are reported, others run', async (t) => {
  const elsewhere = join(dir, 'elsewhere');
  mkdirSync(join(elsewhere, 'nested'), { recursive: true });
  writeFileSync(join(elsewhere, 'linked.yaml'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'linked', namespace: NS }, spec: { containers: [container('app')] } }));
  writeFileSync(join(elsewhere, 'nested', 'deep.yaml'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'deep', namespace: NS }, spec: { containers: [container('app')] } }));
  symlinkSync(join(elsewhere, 'linked.yaml'), join(manifests, 'linked.yaml'));
  symlinkSync(join(elsewhere, 'nested'), join(manifests, 'linked-dir'));
  mkdirSync(join(manifests, 'real-dir'));
  writeFileSync(join(manifests, 'real-dir', 'inner.yaml'), JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'inner', namespace: NS }, spec: { containers: [container('app')] } }));
  symlinkSync(join(elsewhere, 'missing.yaml'), join(manifests, 'dangling.yaml'));
  // 64 MiB of one long line: not a pod, and not a reason to stop reading the others.
  writeFileSync(join(manifests, 'huge.yaml'), `${'a'.repeat(64 * 1024 * 1024)}\n`);
  await runningAndReady(`linked-${NODE}`, 60_000);
  t.pass('the symlinked manifest runs');
  await waitFor('the huge file reported', async () => kubelet.logTail(3000).split('\n').find((l) => l.includes('huge.yaml')), 60_000, kubeletLog);
  t.pass('the huge file is reported by name');
  t.ok(kubelet.logTail(3000).includes('dangling.yaml'), 'the dangling link is reported by name');
  t.equal(await getPod(`deep-${NODE}`), undefined, 'no pod from a symlinked directory');
  t.equal(await getPod(`inner-${NODE}`), undefined, 'no pod from a directory');
  t.ok(kubelet.running, 'the kubelet runs');
});

await t.test('afterwards: the canaries never noticed, nothing was written outside the pods\' directories', async (t) => {
  for (const [name, before] of canaries) {
    const now = await getPod(name);
    t.ok(isPodReady(now), `${name} is still Ready`);
    t.equal(containerStatus(now, 'app')?.containerID, containerStatus(before, 'app')?.containerID, `${name} runs the same container`);
    t.equal(containerStatus(now, 'app')?.restartCount, 0, `${name} was not restarted`);
  }
  t.same(readdirSync(hostSecrets), ['secret.txt'], 'the host directory holds only what it held');
  t.equal(readFileSync(join(hostSecrets, 'secret.txt'), 'utf8'), 'HOST-SECRET\n', 'unchanged');
  const added = filesOutsidePods().filter((path) => !rootBefore.includes(path));
  t.same(added, [], 'no new file under the kubelet\'s root dir outside pods/');
  t.ok(kubelet.running, 'the kubelet ran throughout');
});
