// Fleet mode against the stand-in API server: several real kubelets in one process on simulated runtimes, one pod
// watch for all of them, and a node that dies and comes back. (tools/cluster-e2e proves it on the real control plane.)
import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { createLogger, noopLogger } from '@kubelet-ts/core';
import { startTestApiServer } from '@kubelet-ts/test-apiserver';
import { parseFlags, resolveConfig } from '../src/index.js';
import { Fleet } from '../src/fleet/fleet.js';
import { resolveFleetSpec } from '../src/fleet/fleet-spec.js';
import { startFleetControlServer } from '../src/fleet/control-server.js';
import { waitFor } from './e2e/harness.js';

type Json = Record<string, any>;
const NS = 'fleet';
const condition = (obj: Json | undefined, type: string) => obj?.status?.conditions?.find((c: Json) => c.type === type);

const dir = mkdtempSync(join(tmpdir(), 'kubelet-fleet-'));
const server = await startTestApiServer({});
const kubeconfig = join(dir, 'kubeconfig');
server.writeKubeconfig(kubeconfig);
const spec = resolveFleetSpec(
  new Map([
    ['nodes', '3'],
    ['node-memory', '1Gi'],
    ['node-cpu', '2'],
    ['node-pods', '20'],
    ['fleet-root-dir', join(dir, 'fleet')],
    // Any free port for every node's server (the base port + index is for real fleets).
    ['fleet-base-port', '0'],
  ]),
);
const template = resolveConfig(parseFlags([`--kubeconfig=${kubeconfig}`, '--node-status-update-frequency=1s', '--eviction-hard=memory.available<300Mi', '--eviction-pressure-transition-period=1s']));
const logger = process.env.KUBELET_E2E_LOGS ? createLogger({ verbosity: 2 }) : noopLogger;
const fleet = new Fleet({ spec, template, container: container.createChildContainer(), logger });
t.teardown(async () => {
  await fleet.stop();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});
const get = (resource: string, namespace: string | undefined, name: string) => server.store.get(resource, namespace, name) as Json | undefined;
const pod = (name: string, node: string, annotations: Record<string, string> = {}, extra: Json = {}): Json => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS, annotations },
  spec: { nodeName: node, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: 'busybox', ...extra }] },
});

await fleet.start();

t.test('every node registers with its simulated capacity, fleet label and taint, and turns Ready with a lease', async (t) => {
  t.same(fleet.list().map((n) => [n.name, n.state]), [['fleet-0', 'running'], ['fleet-1', 'running'], ['fleet-2', 'running']]);
  for (const name of ['fleet-0', 'fleet-1', 'fleet-2']) {
    const node = await waitFor(`${name} Ready`, () => {
      const n = get('nodes', undefined, name);
      return condition(n, 'Ready')?.status === 'True' && n;
    });
    t.same([node.status.capacity.cpu, node.status.capacity.memory, node.status.capacity.pods], ['2', '1Gi', '20'], `${name} capacity`);
    t.equal(node.metadata.labels['kubelet-ts.io/fleet'], 'true');
    t.same(node.spec.taints.find((taint: Json) => taint.key === 'kubelet-ts.io/fleet'), { key: 'kubelet-ts.io/fleet', value: 'simulated', effect: 'NoSchedule' });
    t.same(node.status.addresses.find((a: Json) => a.type === 'InternalIP'), { type: 'InternalIP', address: '127.0.0.1' });
    const port = node.status.daemonEndpoints.kubeletEndpoint.Port;
    t.equal(port, fleet.list().find((n) => n.name === name)?.port, 'its own server port');
    // Its server answers there, and authenticates: 401 without credentials.
    const status = await new Promise<number | undefined>((resolve, reject) =>
      httpsGet({ host: '127.0.0.1', port, path: '/pods', rejectUnauthorized: false }, (res) => {
        res.resume();
        resolve(res.statusCode);
      }).once('error', reject),
    );
    t.equal(status, 401, `its server on 127.0.0.1:${port} asks for credentials`);
    await waitFor(`${name}'s lease`, () => get('leases', 'kube-node-lease', name));
  }
});

t.test('pods bound to the nodes run on their simulated runtimes, with one pod watch for the whole fleet', async (t) => {
  server.store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  for (let i = 0; i < 6; i++) server.store.create('pods', pod(`p${i}`, `fleet-${i % 3}`));
  const ips = new Set<string>();
  for (let i = 0; i < 6; i++) {
    const p = await waitFor(`p${i} Running`, () => {
      const p = get('pods', NS, `p${i}`);
      return p?.status?.phase === 'Running' && condition(p, 'Ready')?.status === 'True' && p;
    });
    t.match(p.status.podIP, new RegExp(`^10\\.128\\.${i % 3}\\.\\d+$`), `p${i} on fleet-${i % 3} has an IP of its node's range`);
    ips.add(p.status.podIP);
  }
  t.equal(ips.size, 6, 'every pod its own IP');
  const podWatches = server.requests.filter((r) => r.verb === 'watch' && r.path === '/api/v1/pods');
  t.equal(podWatches.length, 1, 'one pod watch, not one per node');
  t.equal(podWatches[0]?.query.fieldSelector, 'spec.nodeName!=', 'of the pods bound to any node');
});

t.test('a crashing container goes into CrashLoopBackOff; a failing readiness probe keeps the pod unready', async (t) => {
  server.store.create('pods', pod('crash', 'fleet-0', { 'simulated.kubelet-ts.io/exit-code': '1' }));
  server.store.create('pods', pod('unready', 'fleet-1', { 'simulated.kubelet-ts.io/readiness': 'failure' }, { readinessProbe: { httpGet: { port: 8080 }, periodSeconds: 1 } }));
  const crash = await waitFor('crash in CrashLoopBackOff', () => {
    const p = get('pods', NS, 'crash');
    const s = p?.status?.containerStatuses?.[0];
    return s?.state?.waiting?.reason === 'CrashLoopBackOff' && s.restartCount >= 1 && p;
  }, 60_000);
  t.equal(crash.status.containerStatuses[0].lastState.terminated.exitCode, 1);
  const unready = await waitFor('unready Running but not Ready', () => {
    const p = get('pods', NS, 'unready');
    return p?.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.state?.running && p;
  });
  t.equal(condition(unready, 'Ready')?.status, 'False');
  await waitFor('an Unhealthy event', () => (server.store.list('events') as Json[]).some((e) => e.reason === 'Unhealthy' && e.involvedObject?.name === 'unready'));
});

t.test('simulated memory use brings MemoryPressure and evicts the pod', async (t) => {
  server.store.create('pods', pod('hog', 'fleet-2', { 'simulated.kubelet-ts.io/memory': '900Mi' }));
  const evicted = await waitFor('hog evicted', () => {
    const p = get('pods', NS, 'hog');
    return p?.status?.phase === 'Failed' && p.status.reason === 'Evicted' && p;
  }, 60_000);
  t.match(evicted.status.message, /memory/);
  t.ok((server.store.list('events') as Json[]).some((e) => e.reason === 'Evicted' && e.involvedObject?.name === 'hog'), 'an Evicted event');
  const node = get('nodes', undefined, 'fleet-2');
  t.ok(['True', 'False'].includes(condition(node, 'MemoryPressure')?.status), 'the node reports its MemoryPressure condition');
});

t.test('the control API kills a node (its lease stops) and revives it (it adopts its pods)', async (t) => {
  const control = await startFleetControlServer(fleet, 0);
  t.teardown(() => void control.server.close());
  const base = `http://127.0.0.1:${control.port}`;
  t.same(((await (await fetch(`${base}/nodes`)).json()) as Json[]).map((n) => n.state), ['running', 'running', 'running']);
  const before = get('pods', NS, 'p1')!.status.containerStatuses[0];
  const killed = await fetch(`${base}/nodes/fleet-1/kill`, { method: 'POST' });
  t.equal(killed.status, 200);
  t.equal(((await killed.json()) as Json).state, 'dead');
  t.equal((await fetch(`${base}/nodes/fleet-1/kill`, { method: 'POST' })).status, 409, 'a dead node cannot be killed again');
  t.equal((await fetch(`${base}/nodes/nope/kill`, { method: 'POST' })).status, 404);
  const renewed = get('leases', 'kube-node-lease', 'fleet-1')!.spec.renewTime;
  const othersRenewed = get('leases', 'kube-node-lease', 'fleet-0')!.spec.renewTime;
  await waitFor('a live node renewing its lease meanwhile', () => get('leases', 'kube-node-lease', 'fleet-0')!.spec.renewTime !== othersRenewed, 30_000);
  t.equal(get('leases', 'kube-node-lease', 'fleet-1')!.spec.renewTime, renewed, 'a dead node renews no lease');
  const revived = await fetch(`${base}/nodes/fleet-1/revive`, { method: 'POST' });
  t.equal(((await revived.json()) as Json).state, 'running');
  await waitFor('the lease renewed again', () => get('leases', 'kube-node-lease', 'fleet-1')!.spec.renewTime !== renewed);
  const after = get('pods', NS, 'p1')!.status.containerStatuses[0];
  t.same([after.containerID, after.restartCount], [before.containerID, before.restartCount], 'the running container was adopted, not restarted');
});
