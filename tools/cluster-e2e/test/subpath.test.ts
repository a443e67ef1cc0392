// Safe subPath end to end (CVE-2017-1002101): our kubelet (the built binary) against the real control plane
// (v1.20.2) on containerd. A pod mounts a file and a directory subPath of an emptyDir and a file subPath of a
// configMap; checked as a user would (kubectl logs and exec: each mount shows the right content, writes land in the
// volume) and as a node admin would (the runtime's ContainerStatus mounts name the kubelet's bind mounts under
// <pod dir>/volume-subpaths/<volume>/<container>/<index>, which the host's mount table lists), across a container
// restart (the bind mounts are reused), and deleting the pod leaves no mount under its directory.
import t from 'tap';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { configMapObject, ensureCluster, Kubectl, KubeletProcess, nodeKubeconfig, ourCgroupRoot, unmountAndRemove, waitFor } from '../src/index.js';
import { condition, containerStatus, isPodReady, sleepForever } from '../src/workloads.js';


const NODE = 'kts-subpath-node';
const NS = 'kts-subpath';
const PORT = 10261;
const CONFIG = 'sp-config';
const CONFIG_DATA = { 'app.conf': 'version=1\n', 'other.conf': 'not mounted\n' };

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const runtime = new RemoteRuntimeService({ endpoint: containerd.endpoint });
const dir = mkdtempSync(join(containerd.root, 'subpath-e2e-'));
const root = join(dir, 'root');
const kubeconfig = await nodeKubeconfig(NODE);
const kubelet = await KubeletProcess.startOurs({
  node: NODE,
  kubeconfig,
  runtimeEndpoint: containerd.endpoint,
  dir,
  extraArgs: ['--sync-frequency=10s', `--client-ca-file=${cluster.caFile}`, `--port=${PORT}`, '--healthz-port=0', '--read-only-port=0'],
});
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

/** Mount points at or below prefix in this process's mount table. */
function hostMountsUnder(prefix: string): string[] {
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => unescape(line.split(' ')[4]))
    .filter((target) => target === prefix || target.startsWith(`${prefix}/`));
}

const getPod = (name: string) => kubectl.getOrUndefined(['pod', '-n', NS, name]);
const exec = (pod: string, container: string, script: string) => kubectl.run(['exec', '-n', NS, pod, '-c', container, '--', 'sh', '-c', script]);

await waitFor('node Ready', async () => condition(await kubectl.getOrUndefined(['node', NODE]), 'Ready')?.status === 'True', 60_000, kubeletLog);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);
await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);

// The init container seeds the emptyDir with a file (files/note) that app mounts as a file subPath; logs is a
// directory subPath the kubelet creates; app.conf is a file subPath of the configMap (through its ..data symlink).
const APP_MOUNTS = [
  { name: 'scratch', mountPath: '/scratch' },
  { name: 'scratch', mountPath: '/logs', subPath: 'logs' },
  { name: 'scratch', mountPath: '/note', subPath: 'files/note' },
  { name: 'config', mountPath: '/etc/app.conf', subPath: 'app.conf' },
];
const podObject = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'sub', namespace: NS },
  spec: {
    nodeSelector: { 'kubernetes.io/hostname': NODE },
    terminationGracePeriodSeconds: 2,
    automountServiceAccountToken: false,
    volumes: [
      { name: 'scratch', emptyDir: {} },
      { name: 'config', configMap: { name: CONFIG } },
    ],
    initContainers: [
      {
        name: 'seed',
        image: containerd.busyboxImage,
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', 'mkdir -p /scratch/files && echo "a note" > /scratch/files/note'],
        volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
      },
    ],
    containers: [
      {
        name: 'app',
        image: containerd.busyboxImage,
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', `echo "conf: $(cat /etc/app.conf)"; echo "note: $(cat /note)"; echo "logs: $(ls -A /logs | wc -l)"; echo started >> /logs/app.log; ${sleepForever}`],
        volumeMounts: APP_MOUNTS,
      },
    ],
  },
};

let uid = '';
let podDir = '';
const subPathsDir = () => join(podDir, 'volume-subpaths');

await t.test('a pod with file and directory subPaths of an emptyDir and a configMap reads the right content', async (t) => {
  await kubectl.apply(configMapObject(CONFIG, NS, CONFIG_DATA));
  await kubectl.run(['create', '-f', '-'], JSON.stringify(podObject));
  const pod = await waitFor('pod sub Running and Ready', async () => {
    const p = await getPod('sub');
    return p?.status?.phase === 'Running' && isPodReady(p) && p;
  }, 90_000, kubeletLog);
  uid = pod.metadata.uid;
  podDir = join(root, 'pods', uid);

  const logs = await waitFor('the app\'s output', async () => {
    const text = await kubectl.run(['logs', '-n', NS, 'sub', '-c', 'app']);
    return text.includes('logs:') && text;
  }, 20_000, kubeletLog);
  t.equal(logs, 'conf: version=1\nnote: a note\nlogs: 0\n', 'kubectl logs: the configMap key, the seeded file, an empty new directory');
  t.equal(await exec('sub', 'app', 'cat /etc/app.conf'), 'version=1\n', 'the configMap file subPath');
  t.equal(await exec('sub', 'app', 'cat /note'), 'a note\n', 'the emptyDir file subPath');
  t.equal(await exec('sub', 'app', 'cat /logs/app.log'), 'started\n', 'the directory subPath is writable');
  t.equal(await exec('sub', 'app', 'cat /scratch/logs/app.log'), 'started\n', 'and its writes land in the volume');
  t.equal(await exec('sub', 'app', 'test -f /etc/app.conf && test -d /logs && test -f /note && echo ok'), 'ok\n', 'files are files, the directory a directory');
  const volumeDir = join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
  t.equal(readFileSync(join(volumeDir, 'logs', 'app.log'), 'utf8'), 'started\n', 'the host sees the write in the emptyDir');
});

await t.test('the runtime got the bind mounts under volume-subpaths, which are mount points on the host', async (t) => {
  const pod = (await getPod('sub'))!;
  const id = (containerStatus(pod, 'app')!.containerID as string).replace(/^containerd:\/\//, '');
  const status = await runtime.containerStatus(id);
  const mounts = (status.status?.mounts ?? []).filter((m) => APP_MOUNTS.some((a) => a.mountPath === m.containerPath));
  const byPath = new Map(mounts.map((m) => [m.containerPath, m.hostPath]));
  const expected = {
    '/scratch': join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'scratch'),
    '/logs': join(subPathsDir(), 'scratch', 'app', '1'),
    '/note': join(subPathsDir(), 'scratch', 'app', '2'),
    '/etc/app.conf': join(subPathsDir(), 'config', 'app', '3'),
  };
  t.same(Object.fromEntries(byPath), expected, 'CRI ContainerStatus: the subPaths are the kubelet\'s bind mounts, indexed by volumeMount');
  t.same(hostMountsUnder(subPathsDir()).sort(), [expected['/etc/app.conf'], expected['/logs'], expected['/note']].sort(), 'each is a mount point on the host');
  t.equal(readFileSync(expected['/etc/app.conf'], 'utf8'), 'version=1\n', 'the configMap bind mount shows the key');
  t.equal(readFileSync(expected['/note'], 'utf8'), 'a note\n');
});

await t.test('a container restart reuses the bind mounts', async (t) => {
  const before = hostMountsUnder(subPathsDir()).sort();
  const restarts = containerStatus(await getPod('sub'), 'app')?.restartCount ?? 0;
  // The container's main process exits; the kubelet restarts it (restartPolicy Always).
  await exec('sub', 'app', 'kill 1').catch(() => undefined);
  const pod = await waitFor('app restarted and Ready', async () => {
    const p = await getPod('sub');
    return (containerStatus(p, 'app')?.restartCount ?? 0) > restarts && isPodReady(p!) && p;
  }, 60_000, kubeletLog);
  t.ok(containerStatus(pod, 'app')!.restartCount > restarts, 'the container restarted');
  t.same(hostMountsUnder(subPathsDir()).sort(), before, 'the same bind mounts, none stacked');
  t.equal(await exec('sub', 'app', 'cat /logs/app.log'), 'started\nstarted\n', 'the restarted container sees the same directory');
  t.equal(await exec('sub', 'app', 'cat /etc/app.conf /note'), 'version=1\na note\n');
});

await t.test('deleting the pod leaves no mount under its directory', async (t) => {
  t.ok(hostMountsUnder(podDir).length > 0, 'mounts before');
  await kubectl.run(['delete', 'pod', '-n', NS, 'sub', '--wait=true', '--timeout=60s']);
  await waitFor('no mount under the pod directory and the directory gone', async () => hostMountsUnder(podDir).length === 0 && !existsSync(podDir), 60_000, kubeletLog);
  t.same(hostMountsUnder(podDir), [], 'no subPath mount left behind');
  t.notOk(existsSync(podDir), 'the pod directory is removed');
  t.notMatch(kubeletLog(), /error cleaning subPath mounts|Failed to clean subpath/, 'no cleanup errors logged');
});
