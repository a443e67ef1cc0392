// The kubelet against the real control plane (kube-apiserver, kube-controller-manager, kube-scheduler v1.20.2 from
// tools/kube) on containerd, driven with kubectl as a cluster user would. The cases run in order on one node and
// build on each other, as a node's life does: register, run a Deployment, restart a container, scale down, survive
// kubelet restarts and crashes and an API server restart, then clean up.
import t from 'tap';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import {
  ensureCluster,
  Kubectl,
  KubeletProcess,
  nodeKubeconfig,
  ourCgroupRoot,
  restartComponent,
  unmountAndRemove,
  waitFor,
} from '../src/index.js';
import { condition, httpDeployment, isPodReady, lateReadinessPod, livenessOncePod, printEnvironmentPod, staticPod, stubbornPod } from '../src/workloads.js';

type Json = Record<string, any>;

const NODE = 'kts-e2e-node';
const NS = 'kts-e2e';
/** kube-controller-manager's --node-monitor-grace-period as tools/kube/start.sh sets it. */
const NODE_MONITOR_GRACE_SECONDS = Number.parseInt(process.env.KUBELET_TS_NODE_MONITOR_GRACE_PERIOD ?? '20s', 10);

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const runtime = new RemoteRuntimeService({ endpoint: containerd.endpoint });
const dir = mkdtempSync(join(containerd.root, 'cluster-e2e-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
writeFileSync(join(manifests, 'static-web.json'), JSON.stringify(staticPod('static-web', containerd.busyboxImage)));
const mirrorName = `static-web-${NODE}`;
const kubeconfig = await nodeKubeconfig(NODE);

/** The cluster DNS service IP the kubelet hands to ClusterFirst pods (a kube-dns address in the cluster's service range). */
const CLUSTER_DNS = '10.96.0.10';
const startKubelet = () =>
  KubeletProcess.startOurs({
    node: NODE,
    kubeconfig,
    runtimeEndpoint: containerd.endpoint,
    dir,
    staticPodPath: manifests,
    extraArgs: [`--cluster-dns=${CLUSTER_DNS}`, '--cluster-domain=cluster.local'],
  });
let kubelet = await startKubelet();
const kubeletLog = () => kubelet.logTail();

t.teardown(async () => {
  await kubelet.stop();
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'pod', '-n', 'default', mirrorName, '--ignore-not-found', '--wait=false']).catch(() => undefined);
  await kubectl.run(['delete', 'node', NODE, '--ignore-not-found']).catch(() => undefined);
  await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === NS || pod.name.endsWith(`-${NODE}`));
  await removeHostCgroup(ourCgroupRoot(NODE)).catch(() => undefined);
  runtime.close();
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
});

const getNode = () => kubectl.getOrUndefined(['node', NODE]);
const nodeReady = (node: Json | undefined) => condition(node, 'Ready');
const pods = async (selector: string): Promise<Json[]> => (await kubectl.json(['get', 'pods', '-n', NS, '-l', selector])).items;
const getPod = (name: string, namespace = NS) => kubectl.getOrUndefined(['pod', '-n', namespace, name]);
const containersOf = (pod: string, namespace = NS) =>
  runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.name': pod, 'io.kubernetes.pod.namespace': namespace } });
const eventsFor = async (name: string, namespace = NS): Promise<Json[]> =>
  (await kubectl.json(['get', 'events', '-n', namespace, '--field-selector', `involvedObject.name=${name}`])).items;
const containerIdsOf = (pod: Json | undefined) => (pod?.status?.containerStatuses ?? []).map((c: Json) => c.containerID).sort();
const restartsOf = (pod: Json | undefined) => (pod?.status?.containerStatuses ?? []).map((c: Json) => c.restartCount);
/** What a container wrote to stdout, from the CRI log file the kubelet's runtime writes (kubectl logs is issue 13's). */
const containerOutput = (pod: Json, container: string): string =>
  readFileSync(join(dir, 'pod-logs', `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`, container, '0.log'), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split(' ').slice(3).join(' '))
    .join('\n');

await t.test('the node registers, turns Ready and renews its lease', async (t) => {
  const node = await waitFor('node Ready', async () => nodeReady(await getNode())?.status === 'True' && getNode(), 60_000, kubeletLog);
  t.equal(nodeReady(node)?.reason, 'KubeletReady');
  t.equal(node.metadata.labels['kubernetes.io/hostname'], NODE);
  const info = node.status.nodeInfo;
  t.match(info.containerRuntimeVersion, /^containerd:\/\/\S+/, `runtime ${info.containerRuntimeVersion}`);
  t.ok(info.kernelVersion, `kernel ${info.kernelVersion}`);
  t.ok(info.osImage, `OS image ${info.osImage}`);
  const internalIP = node.status.addresses.find((a: Json) => a.type === 'InternalIP')?.address;
  t.ok(internalIP, `InternalIP ${internalIP}`);
  const wide = await kubectl.run(['get', 'node', NODE, '-o', 'wide']);
  for (const shown of ['Ready', internalIP, info.kernelVersion, info.osImage, info.containerRuntimeVersion]) t.match(wide, shown, `kubectl get node -o wide shows ${shown}`);

  const lease = await waitFor('the node lease', () => kubectl.getOrUndefined(['lease', '-n', 'kube-node-lease', NODE]));
  t.equal(lease.spec.holderIdentity, NODE);
  t.equal(lease.metadata.ownerReferences?.[0]?.uid, node.metadata.uid, 'the lease is owned by the Node');
  await waitFor('a lease renewal', async () => (await kubectl.getOrUndefined(['lease', '-n', 'kube-node-lease', NODE]))?.spec.renewTime !== lease.spec.renewTime, 30_000);
  t.pass('the lease is renewed');
});

await t.test('a static pod runs and gets a mirror pod', async (t) => {
  const mirror = await waitFor('the mirror pod Running', async () => {
    const pod = await getPod(mirrorName, 'default');
    return pod?.status?.phase === 'Running' && isPodReady(pod) && pod;
  }, 60_000, kubeletLog);
  t.ok(mirror.metadata.annotations?.['kubernetes.io/config.mirror'], 'mirror annotation');
  t.equal(mirror.metadata.ownerReferences?.[0]?.kind, 'Node', 'owned by the Node');
  t.equal(mirror.spec.nodeName, NODE);
});

await t.test('a Deployment of 3 runs with pod IPs, and readiness turns its pods Ready', async (t) => {
  // A namespace left by an interrupted run goes first (its deletion waits for the namespace controller).
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
  await kubectl.run(['create', 'namespace', NS]);
  // The ServiceAccount admission plugin refuses pods until the namespace's default service account exists.
  await waitFor('the default service account of the namespace', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', NS, 'default']))?.secrets?.length ?? 0) > 0);
  await kubectl.apply(httpDeployment({ name: 'web', namespace: NS, replicas: 3, image: containerd.busyboxImage }));
  await kubectl.run(['rollout', 'status', '-n', NS, 'deployment/web', '--timeout=120s']).catch((error) => {
    throw new Error(`${(error as Error).message}\n${kubeletLog()}`);
  });
  const web = await pods('app=web');
  t.equal(web.length, 3, '3 pods');
  const internalIP = (await getNode())?.status.addresses.find((a: Json) => a.type === 'InternalIP')?.address;
  const ips = new Set<string>();
  for (const pod of web) {
    t.equal(pod.spec.nodeName, NODE, `${pod.metadata.name} scheduled to the node`);
    t.equal(pod.status.phase, 'Running');
    t.ok(isPodReady(pod), `${pod.metadata.name} Ready`);
    t.ok(pod.status.containerStatuses[0].ready && pod.status.containerStatuses[0].started, 'container ready and started');
    t.match(pod.status.podIP, /^10\.88\./, `${pod.metadata.name} has a pod IP from the bridge CNI (${pod.status.podIP})`);
    t.equal(pod.status.hostIP, internalIP, `${pod.metadata.name} reports the node's InternalIP as its hostIP`);
    ips.add(pod.status.podIP);
    const response = await fetch(`http://${pod.status.podIP}:8080/index.html`);
    t.equal((await response.text()).trim(), 'ok', `${pod.metadata.name} serves on its pod IP`);
  }
  t.equal(ips.size, 3, 'every pod has its own IP');
});

await t.test('a rolling update of the Deployment replaces its pods', async (t) => {
  const before = new Set((await pods('app=web')).map((p) => p.metadata.name));
  await kubectl.run(['set', 'env', '-n', NS, 'deployment/web', 'WEB_VERSION=2']);
  await kubectl.run(['rollout', 'status', '-n', NS, 'deployment/web', '--timeout=120s']).catch((error) => {
    throw new Error(`${(error as Error).message}\n${kubeletLog()}`);
  });
  const after = await waitFor('only the new pods left', async () => {
    const now = await pods('app=web');
    return now.length === 3 && now.every((p) => !before.has(p.metadata.name)) && now;
  }, 60_000, kubeletLog);
  for (const pod of after) {
    t.ok(isPodReady(pod), `${pod.metadata.name} Ready`);
    t.same(pod.spec.containers[0].env, [{ name: 'WEB_VERSION', value: '2' }], `${pod.metadata.name} runs the new template`);
  }
  t.equal((await kubectl.json(['get', 'replicasets', '-n', NS, '-l', 'app=web'])).items.filter((rs: Json) => rs.status.replicas > 0).length, 1, 'one ReplicaSet left with pods');
});

await t.test('a failing liveness probe restarts the container', async (t) => {
  await kubectl.apply(livenessOncePod('liveness', NS, containerd.busyboxImage));
  const pod = await waitFor('the liveness pod restarted once and Running again', async () => {
    const p = await getPod('liveness');
    const status = p?.status?.containerStatuses?.[0];
    return status?.restartCount === 1 && status.state?.running && p;
  }, 60_000, kubeletLog);
  t.ok(pod.status.containerStatuses[0].lastState?.terminated, 'the last state of the killed container is reported');
  const events = await waitFor('the Unhealthy and Killing events', async () => {
    const list = await eventsFor('liveness');
    return list.some((e) => e.reason === 'Unhealthy') && list.some((e) => e.reason === 'Killing') && list;
  });
  const unhealthy = events.find((e) => e.reason === 'Unhealthy')!;
  t.equal(unhealthy.type, 'Warning');
  t.match(unhealthy.message, /^Liveness probe failed: /);
  t.equal(unhealthy.source?.component, 'kubelet');
  t.equal(unhealthy.source?.host, NODE);
  t.match(events.find((e) => e.reason === 'Killing')!.message, 'Container app failed liveness probe, will be restarted');
});

await t.test('a pod sees the service environment variables, the cluster DNS, its host aliases and the host IP', async (t) => {
  await kubectl.apply({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: NS },
    spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
  });
  const service = await kubectl.json(['get', 'service', '-n', NS, 'web']);
  const kubernetes = await kubectl.json(['get', 'service', '-n', 'default', 'kubernetes']);
  await kubectl.apply(printEnvironmentPod('printer', NS, containerd.busyboxImage));
  const pod = await waitFor('the printer pod Succeeded', async () => {
    const p = await getPod('printer');
    return p?.status?.phase === 'Succeeded' && p;
  }, 60_000, kubeletLog);
  const output = containerOutput(pod, 'app');
  const [env, rest] = output.split('---resolv.conf');
  const [resolv, hostsAndName] = rest.split('---hosts');
  const [hosts, hostname] = hostsAndName.split('---hostname');
  const vars = new Map(env.trim().split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
  t.equal(vars.get('KUBERNETES_SERVICE_HOST'), kubernetes.spec.clusterIP, 'KUBERNETES_SERVICE_HOST');
  t.equal(vars.get('KUBERNETES_SERVICE_PORT'), '443', 'KUBERNETES_SERVICE_PORT');
  t.equal(vars.get('KUBERNETES_PORT'), `tcp://${kubernetes.spec.clusterIP}:443`, 'docker-link KUBERNETES_PORT');
  t.equal(vars.get('WEB_SERVICE_HOST'), service.spec.clusterIP, 'the namespace\'s service: WEB_SERVICE_HOST');
  t.equal(vars.get('WEB_SERVICE_PORT_HTTP'), '80', 'named port: WEB_SERVICE_PORT_HTTP');
  t.equal(vars.get('WEB_PORT_80_TCP_ADDR'), service.spec.clusterIP, 'WEB_PORT_80_TCP_ADDR');
  const internalIP = (await getNode())?.status.addresses.find((a: Json) => a.type === 'InternalIP')?.address;
  t.equal(vars.get('HOST_IP'), internalIP, 'the downward API status.hostIP');
  t.equal(pod.status.hostIP, internalIP, 'status.hostIP');
  t.match(resolv, new RegExp(`^nameserver ${CLUSTER_DNS.replace(/\./g, '\\.')}$`, 'm'), 'the cluster DNS server');
  t.match(resolv, new RegExp(`^search ${NS}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local`, 'm'), 'ClusterFirst search path');
  t.match(resolv, /^options ndots:5$/m, 'ndots:5');
  t.match(hosts, /^# Kubernetes-managed hosts file\.$/m, 'the kubelet-managed /etc/hosts');
  t.match(hosts, new RegExp(`^${pod.status.podIP.replace(/\./g, '\\.')}\\tprinter$`, 'm'), 'the pod IP and hostname');
  t.match(hosts, /^192\.0\.2\.7\tprinter\.example$/m, 'the host alias');
  t.equal(hostname.trim(), 'printer', 'the hostname');
});

await t.test('an unready readiness probe keeps a pod out of Ready until the probe passes', async (t) => {
  await kubectl.apply(lateReadinessPod('late', NS, containerd.busyboxImage, 8));
  const running = await waitFor('the pod Running', async () => {
    const p = await getPod('late');
    return p?.status?.phase === 'Running' && p;
  }, 60_000, kubeletLog);
  t.equal(condition(running, 'Ready')?.status, 'False', 'Running but not Ready before the probe passed');
  t.equal(running.status.containerStatuses[0].ready, false, 'the container is not ready');
  const ready = await waitFor('the pod Ready once its probe passes', async () => {
    const p = await getPod('late');
    return isPodReady(p) && p;
  }, 60_000, kubeletLog);
  const became = Date.parse(condition(ready, 'Ready')?.lastTransitionTime);
  const started = Date.parse(ready.status.containerStatuses[0].state.running.startedAt);
  t.ok(became - started >= 7_000, `Ready only after the probe could pass (${became - started} ms after the container started)`);
  await kubectl.run(['delete', 'pod', '-n', NS, 'late', '--wait=false']);
});

await t.test('a second delete with --grace-period=1 ends a 30 s stop at once', async (t) => {
  await kubectl.apply(stubbornPod('stubborn', NS, containerd.busyboxImage, 30));
  await waitFor('the stubborn pod Running', async () => (await getPod('stubborn'))?.status?.phase === 'Running', 60_000, kubeletLog);
  const deleted = Date.now();
  await kubectl.run(['delete', 'pod', '-n', NS, 'stubborn', '--wait=false']);
  await waitFor('the kubelet stopping it (Killing)', async () => (await eventsFor('stubborn')).some((e) => e.reason === 'Killing'), 30_000, kubeletLog);
  t.ok(await getPod('stubborn'), 'the pod waits out its 30 s grace period');
  await kubectl.run(['delete', 'pod', '-n', NS, 'stubborn', '--grace-period=1', '--wait=false']);
  await waitFor('the pod gone', async () => (await getPod('stubborn')) === undefined, 25_000, kubeletLog);
  t.ok(Date.now() - deleted < 30_000, `gone ${Date.now() - deleted} ms after the first delete, before its 30 s grace period ended`);
  t.equal((await containersOf('stubborn')).filter((c) => c.state === 'CONTAINER_RUNNING').length, 0, 'its container stopped');
});

await t.test('scaling the Deployment to 1 stops two pods within their grace period', async (t) => {
  const before = await pods('app=web');
  const grace = before[0].spec.terminationGracePeriodSeconds as number;
  await kubectl.run(['scale', '-n', NS, 'deployment/web', '--replicas=1']);
  const remaining = await waitFor('two web pods gone', async () => {
    const now = await pods('app=web');
    return now.length === 1 && now;
  }, grace * 1000, kubeletLog);
  const gone = before.filter((p) => p.metadata.name !== remaining[0].metadata.name);
  t.equal(gone.length, 2);
  for (const pod of gone) {
    const running = (await containersOf(pod.metadata.name)).filter((c) => c.state === 'CONTAINER_RUNNING');
    t.equal(running.length, 0, `no container of ${pod.metadata.name} still runs`);
    t.ok((await eventsFor(pod.metadata.name)).some((e) => e.reason === 'Killing' && /Stopping container httpd/.test(e.message)), `Killing event for ${pod.metadata.name}`);
  }
  t.ok(isPodReady(remaining[0]), 'the remaining pod stays Ready');
});

await t.test('a kubelet stopped with SIGTERM and started again adopts the running containers', async (t) => {
  const before = new Map<string, Json>();
  for (const [name, namespace] of [[(await pods('app=web'))[0].metadata.name, NS], ['liveness', NS], [mirrorName, 'default']]) before.set(`${namespace}/${name}`, (await getPod(name, namespace))!);
  t.equal(await kubelet.stop(), 0, 'the kubelet exits 0 on SIGTERM');
  const restartedAt = Date.now();
  kubelet = await startKubelet();
  // The binary prints each pod's status as it syncs it: once every pod shows up, the new kubelet has adopted it.
  await waitFor('the restarted kubelet syncing every pod', async () => [...before.keys()].every((key) => kubelet.output().includes(`pod ${key} Running`)), 60_000, kubeletLog);
  await waitFor('a lease renewal by the restarted kubelet', async () => Date.parse((await kubectl.getOrUndefined(['lease', '-n', 'kube-node-lease', NODE]))?.spec.renewTime ?? '0') >= restartedAt - 1000, 30_000);
  for (const [key, pod] of before) {
    const [namespace, name] = key.split('/');
    const after = await getPod(name, namespace);
    t.same(containerIdsOf(after), containerIdsOf(pod), `${key}: the same containers`);
    t.same(restartsOf(after), restartsOf(pod), `${key}: restart count unchanged`);
    t.equal((await containersOf(name, namespace)).length, (pod.status.containerStatuses as Json[]).reduce((n, c) => n + 1 + (c.lastState?.terminated ? 1 : 0), 0), `${key}: no new container in the runtime`);
    t.ok(isPodReady(after), `${key}: still Ready`);
  }
});

await t.test('a kubelet killed for longer than the node monitor grace period: the node goes Unknown, then Ready again', async (t) => {
  await kubelet.kill();
  const unknown = await waitFor('the node lifecycle controller marking the node Unknown', async () => {
    const node = await getNode();
    return nodeReady(node)?.status === 'Unknown' && node;
  }, (NODE_MONITOR_GRACE_SECONDS + 40) * 1000);
  t.equal(nodeReady(unknown)?.reason, 'NodeStatusUnknown');
  t.equal(nodeReady(unknown)?.message, 'Kubelet stopped posting node status.');
  await waitFor('the unreachable taint', async () => ((await getNode())?.spec.taints ?? []).some((taint: Json) => taint.key === 'node.kubernetes.io/unreachable'), 30_000);
  // The controller marks the node's pods not Ready; the kubelet has to set them right when it is back.
  await waitFor('the web pod marked not Ready by the controller', async () => !isPodReady((await pods('app=web'))[0]), 30_000);

  kubelet = await startKubelet();
  const ready = await waitFor('the node Ready again', async () => {
    const node = await getNode();
    return nodeReady(node)?.status === 'True' && node;
  }, 60_000, kubeletLog);
  t.equal(nodeReady(ready)?.reason, 'KubeletReady');
  await waitFor('the unreachable taint removed', async () => !((await getNode())?.spec.taints ?? []).some((taint: Json) => taint.key.startsWith('node.kubernetes.io/unreachable')), 30_000);
  await waitFor('every pod Ready again', async () => (await pods('app=web')).every(isPodReady) && isPodReady(await getPod('liveness')) && isPodReady(await getPod(mirrorName, 'default')), 60_000, kubeletLog);
  t.pass('the kubelet reports its pods Ready again');
  t.same(restartsOf((await pods('app=web'))[0]), [0], 'the web pod was not restarted');
});

await t.test('kube-apiserver restarted mid-run: nothing is lost and statuses converge', async (t) => {
  const [web] = await pods('app=web');
  const [container] = (await containersOf(web.metadata.name)).filter((c) => c.state === 'CONTAINER_RUNNING');
  // The API server goes down for 10 s; meanwhile the web container dies, so the kubelet restarts it unseen.
  const restart = restartComponent('kube-apiserver', 10);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await runtime.stopContainer(container.id, 0);
  await restart;
  const back = Date.now();
  await waitFor('the web pod restart reported', async () => {
    const pod = await getPod(web.metadata.name);
    return pod?.status?.containerStatuses?.[0]?.restartCount === 1 && isPodReady(pod);
  }, 60_000, kubeletLog);
  t.pass('the restart that happened while the API server was down is reported');
  await waitFor('node Ready and its lease renewed after the restart', async () => {
    const lease = await kubectl.getOrUndefined(['lease', '-n', 'kube-node-lease', NODE]);
    return nodeReady(await getNode())?.status === 'True' && Date.parse(lease?.spec.renewTime ?? '0') >= back - 1000;
  }, 30_000, kubeletLog);
  t.pass('node status and lease resume');
  await kubectl.run(['scale', '-n', NS, 'deployment/web', '--replicas=2']);
  await kubectl.run(['rollout', 'status', '-n', NS, 'deployment/web', '--timeout=60s']);
  t.equal((await pods('app=web')).filter(isPodReady).length, 2, 'the kubelet still runs new pods: scaled back to 2, both Ready');
});

await t.test("kubectl get events shows the kubelet's events", async (t) => {
  const all: Json[] = [...(await kubectl.json(['get', 'events', '-n', NS])).items, ...(await kubectl.json(['get', 'events', '-n', 'default'])).items];
  const fromKubelet = all.filter((e) => e.source?.component === 'kubelet' && e.source?.host === NODE);
  const reasons = new Set(fromKubelet.map((e) => e.reason));
  for (const reason of ['Starting', 'NodeReady', 'Pulled', 'Created', 'Started', 'Killing', 'Unhealthy']) t.ok(reasons.has(reason), `a ${reason} event from the kubelet`);
  const starts = fromKubelet.filter((e) => e.reason === 'Starting' && e.involvedObject?.kind === 'Node');
  t.ok(starts.reduce((n, e) => n + (e.count ?? 1), 0) >= 3, 'one Starting event per kubelet start');
  const table = await kubectl.run(['get', 'events', '-n', NS]);
  t.match(table, /Started container httpd/, 'kubectl get events lists them');
});

await t.test('deleting the Deployment and the pods removes them; removing the manifest removes the static pod', async (t) => {
  const web = await pods('app=web');
  await kubectl.run(['delete', '-n', NS, 'deployment/web', 'pod/liveness', 'pod/printer', 'service/web', '--wait=false']);
  await waitFor('every pod of the namespace gone', async () => (await kubectl.json(['get', 'pods', '-n', NS])).items.length === 0, 60_000, kubeletLog);
  for (const pod of [...web.map((p) => p.metadata.name), 'liveness']) {
    t.equal((await containersOf(pod)).filter((c) => c.state === 'CONTAINER_RUNNING').length, 0, `no container of ${pod} still runs`);
  }
  rmSync(join(manifests, 'static-web.json'));
  await waitFor('the mirror pod gone', async () => (await getPod(mirrorName, 'default')) === undefined, 60_000, kubeletLog);
  t.equal((await containersOf(mirrorName, 'default')).filter((c) => c.state === 'CONTAINER_RUNNING').length, 0, 'the static pod stopped');
  t.ok(kubelet.running, 'the kubelet ran throughout');
});
