import 'reflect-metadata';
import { container } from 'tsyringe';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Test } from 'tap';
import { noopLogger } from '@kubelet-ts/core';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { startTestApiServer } from '@kubelet-ts/test-apiserver';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet, type RunningKubelet } from '../../src/index.js';
import { ensureHostCgroup, removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { removeScratchDir, sleepForever, waitFor, type E2ETarget } from './harness.js';

const NAMESPACE = 'e2e-api';

export interface ApiServerScenarioOptions {
  /**
   * How long the API server stays down in the outage scenario; 0 skips it. The issue asks for 60 s:
   * longer than the lease duration (40 s), so the node's lease expires and must be renewed.
   */
  outageSeconds: number;
}

type JsonPod = Record<string, any>;

function apiPod(name: string, node: string, image: string): JsonPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NAMESPACE },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 5,
      containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever] }],
    },
  };
}

function staticPod(name: string, image: string): JsonPod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { terminationGracePeriodSeconds: 5, containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', sleepForever] }] },
  };
}

const condition = (obj: JsonPod | undefined, type: string) => obj?.status?.conditions?.find((c: JsonPod) => c.type === type);
const isRunning = (pod: JsonPod | undefined): pod is JsonPod => pod?.status?.phase === 'Running' && pod.status.containerStatuses?.[0]?.state?.running !== undefined;


/**
 * The kubelet in API server mode against @kubelet-ts/test-apiserver (the fast stand-in; tools/cluster-e2e runs the
 * kubelet against the real control plane), on the given runtime: registration,
 * lease, bound pods, pod status, mirror pods, graceful deletion and events; optionally an outage of the
 * API server during which the node keeps working, after which everything converges.
 */
export function apiServerScenarios(t: Test, target: E2ETarget, options: ApiServerScenarioOptions): void {
  const node = `api-node-${target.name}`;
  const image = target.busyboxImage;

  t.test(`API server mode on ${target.name}`, async (t) => {
    const dir = mkdtempSync(join(target.scratchRoot, 'kubelet-e2e-api-'));
    const cgroupRoot = `/kts-${basename(dir)}`;
    await ensureHostCgroup(cgroupRoot);
    const server = await startTestApiServer({});
    const runtime = new RemoteRuntimeService({ endpoint: target.endpoint });
    const started: { kubelet?: RunningKubelet } = {};
    const controller = new AbortController();
    t.teardown(async () => {
      controller.abort();
      await started.kubelet?.done;
      await server.close();
      // The kubelet leaves pods running when it stops, as the Go kubelet does; the test removes its own.
      for (const sandbox of await runtime.listPodSandbox()) {
        const name = sandbox.metadata?.name ?? '';
        if (sandbox.metadata?.namespace !== NAMESPACE && !name.endsWith(`-${node}`)) continue;
        await runtime.stopPodSandbox(sandbox.id).catch(() => undefined);
        await runtime.removePodSandbox(sandbox.id).catch(() => undefined);
      }
      runtime.close();
      await removeScratchDir(dir);
      await removeHostCgroup(cgroupRoot);
    });
    const get = (resource: string, namespace: string | undefined, name: string) => server.store.get(resource, namespace, name) as JsonPod | undefined;
    const kubeconfig = join(dir, 'kubeconfig');
    server.writeKubeconfig(kubeconfig);
    const manifests = join(dir, 'manifests');
    mkdirSync(manifests);
    writeFileSync(join(manifests, 'static.json'), JSON.stringify(staticPod('static', image)));

    const config = resolveConfig(
      parseFlags([
        `--kubeconfig=${kubeconfig}`,
        `--pod-manifest-path=${manifests}`,
        `--root-dir=${join(dir, 'root')}`,
        `--pod-logs-dir=${join(dir, 'logs')}`,
        `--container-runtime-endpoint=${target.endpoint}`,
        `--hostname-override=${node}`,
        '--node-labels=team=kubelet-ts',
        '--healthz-port=0',
        '--file-check-frequency=1s',
        '--node-status-update-frequency=1s',
        // A static pod's mirror pod is (re)created by its pod's sync, as in Go, so after an outage it waits
        // for the next periodic sync (1 min by default).
        '--sync-frequency=10s',
        `--cgroup-root=${cgroupRoot}`,
      ]),
    );
    const c = container.createChildContainer();
    registerKubeletDeps(c, config);
    if (!process.env.KUBELET_E2E_LOGS) c.register(Tokens.Logger, { useValue: noopLogger });
    const kubelet = await startKubelet(c, controller.signal);
    started.kubelet = kubelet;
    let exited = false;
    void kubelet.done.then(
      () => (exited = true),
      () => (exited = true),
    );

    // The node registers with its labels and turns Ready.
    const registered = await waitFor('node registration and Ready', () => {
      const n = get('nodes', undefined, node);
      return condition(n, 'Ready')?.status === 'True' && n;
    });
    t.equal(registered.metadata.labels['kubernetes.io/hostname'], node);
    t.equal(registered.metadata.labels.team, 'kubelet-ts', '--node-labels');
    t.match(registered.status.nodeInfo.containerRuntimeVersion, /^[a-z-]+:\/\/\S+$/, `runtime version ${registered.status.nodeInfo.containerRuntimeVersion}`);
    t.equal(registered.status.capacity.pods, '110');

    // The lease exists, is held by the node and is owned by the Node object.
    const lease = await waitFor('the node lease', () => get('leases', 'kube-node-lease', node));
    t.equal(lease.spec.holderIdentity, node);
    t.equal(lease.spec.leaseDurationSeconds, 40);
    t.equal(lease.metadata.ownerReferences?.[0]?.uid, registered.metadata.uid, 'owned by the Node');

    // Pods bound to the node run, and their status reaches the API server.
    server.store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    server.store.create('pods', apiPod('web', node, image));
    server.store.create('pods', apiPod('doomed', node, image));
    const web = await waitFor('pod web Running in the API server', () => {
      const p = get('pods', NAMESPACE, 'web');
      return isRunning(p) && p;
    });
    t.equal(web.status.containerStatuses[0].restartCount, 0);
    t.ok(web.status.podIP, `pod IP ${web.status.podIP}`);
    t.equal(condition(web, 'Ready')?.status, 'True');
    t.ok(
      server.requests.some((r) => r.method === 'PATCH' && r.path.endsWith('/pods/web/status') && r.contentType === 'application/strategic-merge-patch+json'),
      'status sent as a strategic merge patch of the status subresource',
    );
    await waitFor('pod doomed Running in the API server', () => isRunning(get('pods', NAMESPACE, 'doomed')));

    // The static pod has a mirror pod carrying its status.
    const mirror = await waitFor('the mirror pod of the static pod Running', () => {
      const p = get('pods', 'default', `static-${node}`);
      return p?.status?.phase === 'Running' && p;
    });
    t.ok(mirror.metadata.annotations['kubernetes.io/config.mirror'], 'mirror annotation');
    t.equal(mirror.metadata.ownerReferences?.[0]?.kind, 'Node');

    // Events reached the API server.
    await waitFor('a Started event in the API server', () => (server.store.list('events') as JsonPod[]).some((e: JsonPod) => e.reason === 'Started'), 10_000);
    t.pass('events are recorded in the API server');

    if (options.outageSeconds > 0) {
      await t.test(`API server down for ${options.outageSeconds} s, then back: the node keeps working, nothing is lost, statuses converge`, async (t) => {
        const down = Date.now();
        await server.stop();

        // While it is down: a container dies and is restarted, a static pod is added, a pod is bound
        // and another deleted (written into the store directly: only the kubelet's view was cut off).
        const [webContainer] = await runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.namespace': NAMESPACE } });
        await runtime.stopContainer(webContainer.id, 0);
        writeFileSync(join(manifests, 'late-static.json'), JSON.stringify(staticPod('late-static', image)));
        server.store.create('pods', apiPod('late', node, image));
        server.store.delete('pods', NAMESPACE, 'doomed', { gracePeriodSeconds: 5 });

        const local = (name: string) => kubelet.kubelet.podStatuses().find((p) => p.pod.metadata?.name === name)?.status;
        await waitFor('the kubelet restarting web during the outage', () => local('web')?.containerStatuses?.[0]?.restartCount === 1 && local('web')?.phase === 'Running');
        await waitFor('the kubelet running a new static pod during the outage', () => local(`late-static-${node}`)?.phase === 'Running');
        t.pass('the kubelet keeps running and restarting pods while the API server is down');

        await new Promise((resolve) => setTimeout(resolve, Math.max(0, down + options.outageSeconds * 1000 - Date.now())));
        t.notOk(exited, 'the kubelet is still running after the outage');
        // The node lifecycle controller would have marked the node Unknown once its lease expired (40 s);
        // the test API server has no controllers, so the test does what it would have done.
        server.store.patch('nodes', undefined, node, { status: { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.' }] } }, 'strategic', 'status');
        const back = Date.now();
        t.notOk(server.requests.some((r) => r.time >= down && r.time < back), 'no request reached the server while it was down');
        await server.restart();

        const nodeBack = await waitFor(
          'the node Ready again after the outage',
          () => {
            const n = get('nodes', undefined, node);
            const ready = condition(n, 'Ready');
            return ready?.status === 'True' && n;
          },
          60_000,
        );
        t.equal(condition(nodeBack, 'Ready').reason, 'KubeletReady', 'the kubelet reports the node Ready again');
        await waitFor('a lease renewal after the outage', () => {
          const l = get('leases', 'kube-node-lease', node);
          return l !== undefined && Date.parse(l.spec.renewTime) >= back;
        }, 60_000);
        t.pass('the lease is renewed after the outage');

        const webAfter = await waitFor('the restart of web reported', () => {
          const p = get('pods', NAMESPACE, 'web');
          return isRunning(p) && p.status.containerStatuses[0].restartCount === 1 && p;
        }, 60_000);
        t.ok(webAfter.status.containerStatuses[0].lastState?.terminated, 'the last state of the restarted container is reported');
        await waitFor('pod late, bound during the outage, Running', () => isRunning(get('pods', NAMESPACE, 'late')), 60_000);
        t.pass('a pod bound during the outage runs and reports status');
        await waitFor('pod doomed, deleted during the outage, gone', () => get('pods', NAMESPACE, 'doomed') === undefined, 60_000);
        t.pass('a pod deleted during the outage is killed and then removed from the API server');
        const doomedLeft = await runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.name': 'doomed', 'io.kubernetes.pod.namespace': NAMESPACE } });
        t.equal(doomedLeft.filter((c) => c.state === 'CONTAINER_RUNNING').length, 0, 'no container of the deleted pod is still running');
        await waitFor('the mirror pod of the static pod added during the outage', () => get('pods', 'default', `late-static-${node}`)?.status?.phase === 'Running', 60_000);
        t.pass('a static pod added during the outage gets its mirror pod');
        t.ok(get('pods', 'default', `static-${node}`), 'the mirror pod from before the outage is still there');
      });
    }

    // Deleting an API pod gracefully: the kubelet kills it, then deletes it for good.
    server.store.delete('pods', NAMESPACE, 'web', { gracePeriodSeconds: 5 });
    await waitFor('the gracefully deleted pod gone', () => get('pods', NAMESPACE, 'web') === undefined);
    t.pass('the gracefully deleted pod is gone from the API server once its containers stopped');
    t.notOk(exited, 'the kubelet ran throughout');
  });
}
