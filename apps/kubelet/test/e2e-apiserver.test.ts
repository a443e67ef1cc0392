import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { noopLogger, pollUntil } from '@kubelet-ts/core';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { startTestApiServer } from '@kubelet-ts/test-apiserver';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet } from '../src/index.js';

const IMAGE = 'localhost/kubelet-ts/busybox:1';
const sleepForever = "trap 'exit 0' TERM; while true; do sleep 1; done";

t.test('API server mode: the node registers and turns Ready, its lease renews, bound pods run and report status, static pods get mirror pods', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-e2e-api-'));
  const server = await startTestApiServer({});
  const local = new LocalRuntime({ socketPath: join(dir, 'runtime.sock'), rootDir: join(dir, 'runtime'), mode: 'process' });
  await local.start();
  const stops: Array<() => Promise<void>> = [];
  t.teardown(async () => {
    for (const stop of stops.reverse()) await stop();
    await local.stop();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const kubeconfig = join(dir, 'kubeconfig');
  server.writeKubeconfig(kubeconfig);
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests);
  writeFileSync(
    join(manifests, 'static.json'),
    JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'static' }, spec: { containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever] }] } }),
  );

  const config = resolveConfig(
    parseFlags([
      `--kubeconfig=${kubeconfig}`,
      `--pod-manifest-path=${manifests}`,
      `--root-dir=${join(dir, 'root')}`,
      `--pod-logs-dir=${join(dir, 'logs')}`,
      `--container-runtime-endpoint=${local.endpoint}`,
      '--hostname-override=api-node',
      '--node-labels=team=kubelet-ts',
      '--healthz-port=0',
      '--node-status-update-frequency=1s',
    ]),
  );
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  if (!process.env.KUBELET_E2E_LOGS) c.register(Tokens.Logger, { useValue: noopLogger });
  const controller = new AbortController();
  const running = await startKubelet(c, controller.signal);
  stops.push(async () => {
    controller.abort();
    await running.done;
  });

  // The node registers with its labels and turns Ready.
  let node: any;
  await pollUntil(() => {
    node = server.store.get('nodes', undefined, 'api-node');
    return node?.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True');
  }, 100, 30_000);
  t.equal(node.metadata.labels['kubernetes.io/hostname'], 'api-node');
  t.equal(node.metadata.labels.team, 'kubelet-ts', '--node-labels');
  t.ok(node.status.nodeInfo.containerRuntimeVersion.startsWith('local-runtime://'), `runtime version ${node.status.nodeInfo.containerRuntimeVersion}`);
  t.equal(node.status.capacity.pods, '110');

  // The lease exists, is held by the node and is owned by the Node object.
  let lease: any;
  await pollUntil(() => (lease = server.store.get('leases', 'kube-node-lease', 'api-node')) !== undefined, 100, 30_000);
  t.equal(lease.spec.holderIdentity, 'api-node');
  t.equal(lease.spec.leaseDurationSeconds, 40);
  t.equal(lease.metadata.ownerReferences?.[0]?.uid, node.metadata.uid, 'owned by the Node');

  // A pod bound to the node runs, and its status reaches the API server.
  server.store.create('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default' },
    spec: { nodeName: 'api-node', containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever] }] },
  });
  let pod: any;
  await pollUntil(() => {
    pod = server.store.get('pods', 'default', 'web');
    return pod?.status?.phase === 'Running' && pod.status.containerStatuses?.[0]?.state?.running;
  }, 100, 30_000);
  t.equal(pod.status.containerStatuses[0].restartCount, 0);
  t.ok(pod.status.podIP, `pod IP ${pod.status.podIP}`);
  t.equal(pod.status.conditions.find((c: any) => c.type === 'Ready')?.status, 'True');
  t.ok(server.requests.some((r) => r.method === 'PATCH' && r.path.endsWith('/pods/web/status') && r.contentType === 'application/strategic-merge-patch+json'), 'status sent as a strategic merge patch of the status subresource');

  // The static pod has a mirror pod carrying its status.
  let mirror: any;
  await pollUntil(() => {
    mirror = server.store.get('pods', 'default', 'static-api-node');
    return mirror?.status?.phase === 'Running';
  }, 100, 30_000);
  t.ok(mirror.metadata.annotations['kubernetes.io/config.mirror'], 'mirror annotation');
  t.equal(mirror.metadata.ownerReferences?.[0]?.kind, 'Node');

  // Deleting the API pod gracefully: the kubelet kills it, then deletes it for good.
  server.store.delete('pods', 'default', 'web', { gracePeriodSeconds: 5 });
  await pollUntil(() => server.store.get('pods', 'default', 'web') === undefined, 100, 30_000);
  t.pass('the gracefully deleted pod is gone from the API server once its containers stopped');

  // Events reached the API server.
  await pollUntil(() => server.store.list('events').some((e: any) => e.reason === 'Started'), 100, 10_000);
  t.pass('events are recorded in the API server');
});
