// Fleet mode seen from the real control plane (v1.20.2 from tools/kube), the way a cluster user checks it with
// kubectl: one `kubelet fleet` process (20 real kubelets on the simulated runtime, two node groups from a
// --fleet-config) registers Ready nodes whose leases are renewed; the scheduler spreads a Deployment over them; the
// simulated runtime's pod annotations drive CrashLoopBackOff, readiness (and so Endpoints), `kubectl logs` and memory
// pressure (and so eviction); a node killed through the fleet's control port goes NotReady and the controller evicts
// its pods after their toleration, and revived it comes back Ready.
//
// Identity: the fleet acts for 20 nodes, which the Node authorizer would never allow one node's certificate; it runs
// as a dedicated service account bound to the `system:node` ClusterRole (fleetKubeconfig), not as the admin.
// Another fleet (a benchmark) may share the control plane: this one's nodes carry a label of their own
// (kubelet-ts.io/e2e-fleet), every pod here selects it, and only nodes with it are deleted.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quantityValue } from '@kubelet-ts/core';
import { ensureCluster, FleetProcess, fleetKubeconfig, Kubectl, KubectlError, unmountAndRemove, waitFor, type FleetGroup } from '../src/index.js';
import { condition, containerStatus, isPodReady } from '../src/workloads.js';

type Json = Record<string, any>;

const NS = 'kts-fleet';
const PREFIX = 'kts-e2e-fleet';
const ACCOUNT = 'kubelet-ts-fleet-e2e';
const BASE_PORT = Number(process.env.KUBELET_E2E_FLEET_BASE_PORT ?? 24250);
const CONTROL_PORT = Number(process.env.KUBELET_E2E_FLEET_CONTROL_PORT ?? 24249);
const SIM = 'simulated.kubelet-ts.io';
const E2E_LABEL = 'kubelet-ts.io/e2e-fleet';
const FLEET_TAINT = { key: 'kubelet-ts.io/fleet', value: 'simulated', effect: 'NoSchedule' };
const SMALL_TAINT = { key: 'kubelet-ts.io/e2e-small', value: 'true', effect: 'NoSchedule' };
const IMAGE = 'registry.example/kubelet-ts/fleet-app:1';
// The fleet is a zone of its own: the node lifecycle controller keeps its eviction state per zone (the NoExecute
// tainting queue, its rate limit, disruption modes), and v1.20's queue for the default zone can stay stuck on a node
// deleted while queued (another suite's), so a node of this fleet dying would never be tainted there.
const ZONE = { 'topology.kubernetes.io/region': 'kts-e2e', 'topology.kubernetes.io/zone': 'kts-e2e-fleet' };
const GROUPS: FleetGroup[] = [
  { name: 'std', count: 18, cpu: '4', memory: '8Gi', pods: 110, labels: { [E2E_LABEL]: 'std', ...ZONE } },
  // Small nodes for the memory-pressure case, kept free of other pods by a taint of their own.
  {
    name: 'small',
    count: 2,
    cpu: '2',
    memory: '1Gi',
    pods: 20,
    labels: { [E2E_LABEL]: 'small', ...ZONE },
    taints: [`${SMALL_TAINT.key}=${SMALL_TAINT.value}:${SMALL_TAINT.effect}`],
  },
];
const TOTAL = GROUPS.reduce((sum, group) => sum + group.count, 0);

const suiteStart = Date.now();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const dir = mkdtempSync(join(tmpdir(), 'kts-fleet-e2e-'));
// The fleet, once started (teardown runs whether or not it did).
const fleets: FleetProcess[] = [];

async function cleanUp(): Promise<void> {
  // Pods first, while their kubelets run to confirm them gone; a pod of a dead node stays Terminating.
  await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=60s']).catch(() => undefined);
  for (const fleet of fleets) await fleet.stop();
  await kubectl.run(['delete', 'node', '-l', E2E_LABEL, '--wait=false']).catch(() => undefined);
}

async function tearDown(): Promise<void> {
  await cleanUp();
  await kubectl.run(['delete', 'clusterrolebinding', ACCOUNT, '--ignore-not-found']).catch(() => undefined);
  await kubectl.run(['delete', 'serviceaccount', '-n', 'kube-system', ACCOUNT, '--ignore-not-found']).catch(() => undefined);
  if (process.env.KUBELET_E2E_KEEP) console.error(`kept ${dir}`);
  else unmountAndRemove(dir);
  console.error(`fleet e2e: ${((Date.now() - suiteStart) / 1000).toFixed(1)} s wall`);
}
t.teardown(tearDown);
/** A set-up step outside the tests: when it fails, everything is cleaned up first (a top-level throw skips teardown). */
async function setUp<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    await tearDown();
    throw error;
  }
}

// Nodes of an earlier run would keep their old labels and taints.
await kubectl.run(['delete', 'node', '-l', E2E_LABEL, '--ignore-not-found']);
await kubectl.run(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
await kubectl.run(['create', 'namespace', NS]);

const running = await setUp(async () =>
  FleetProcess.start({
    kubeconfig: await fleetKubeconfig(kubectl, cluster, join(dir, 'fleet.kubeconfig'), ACCOUNT),
    dir,
    groups: GROUPS,
    prefix: PREFIX,
    basePort: BASE_PORT,
    controlPort: CONTROL_PORT,
    // --sync-frequency: a crash-looping container restarts when its pod is resynced after the back-off (Go's
    // syncPod reports a back-off as no error, so the worker waits the resync interval, 1m by default).
    extraArgs: [`--client-ca-file=${cluster.caFile}`, '--eviction-hard=memory.available<300Mi', '--sync-frequency=10s'],
  }),
);
fleets.push(running);
const fleetLog = () => running.logTail(15);

const fleetNodes = async (group?: string): Promise<Json[]> =>
  (await kubectl.json(['get', 'nodes', '-l', group ? `${E2E_LABEL}=${group}` : E2E_LABEL])).items as Json[];
const getPod = (name: string) => kubectl.getOrUndefined(['pod', '-n', NS, name]);
const podsOf = async (app: string): Promise<Json[]> => (await kubectl.json(['get', 'pods', '-n', NS, '-l', `app=${app}`])).items as Json[];
const events = async (object: string, reason: string): Promise<Json[]> =>
  (await kubectl.json(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${object},reason=${reason}`])).items as Json[];
const hasTaint = (node: Json, taint: { key: string; effect: string }) => (node.spec?.taints ?? []).some((x: Json) => x.key === taint.key && x.effect === taint.effect);

const fleetToleration = { key: FLEET_TAINT.key, operator: 'Exists', effect: 'NoSchedule' };
/** A pod of this suite: on a `std` node of this fleet unless `spec` says otherwise, tolerating the fleet taint. */
function pod(name: string, annotations: Record<string, string>, spec: Json = {}, labels: Record<string, string> = {}): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels, annotations },
    spec: {
      nodeSelector: { [E2E_LABEL]: 'std' },
      tolerations: [fleetToleration],
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent' }],
      ...spec,
    },
  };
}

function deployment(name: string, replicas: number, template: Json): Json {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { [E2E_LABEL]: 'std' },
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', ports: [{ containerPort: 8080 }] }],
          ...template,
          tolerations: [fleetToleration, ...(template.tolerations ?? [])],
        },
      },
    },
  };
}

await setUp(() =>
  waitFor(`${TOTAL} fleet nodes Ready`, async () => {
    const nodes = await fleetNodes();
    return nodes.length === TOTAL && nodes.every((node) => condition(node, 'Ready')?.status === 'True');
  }, 120_000, fleetLog),
);

// The slow cases' pods start now and are checked in their turn: a crash loop needs two back-offs (10 s + 20 s).
const readinessProbe = { exec: { command: ['true'] }, periodSeconds: 1 };
await setUp(() =>
  kubectl.apply(
    pod('crasher', { [`${SIM}/exit-code`]: '1' }),
    pod('gate-ready', {}, { containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', ports: [{ containerPort: 8080 }], readinessProbe }] }, { app: 'gate' }),
    pod('gate-unready', { [`${SIM}/readiness`]: 'failure' }, { containers: [{ name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent', ports: [{ containerPort: 8080 }], readinessProbe }] }, { app: 'gate' }),
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'gate', namespace: NS }, spec: { selector: { app: 'gate' }, ports: [{ port: 80, targetPort: 8080 }] } },
    pod(
      'talker',
      { [`${SIM}/log`]: 'hello from the fleet\nsecond line', [`${SIM}/log.sidecar`]: 'the sidecar says hi' },
      {
        containers: [
          { name: 'app', image: IMAGE, imagePullPolicy: 'IfNotPresent' },
          { name: 'sidecar', image: IMAGE, imagePullPolicy: 'IfNotPresent' },
        ],
      },
    ),
  ),
);

await t.test('every fleet node is Ready with its group\'s capacity, labels and taints, and its Lease is renewed', async (t) => {
  const listed = await running.nodes();
  t.equal(listed.length, TOTAL, `the control port lists ${TOTAL} nodes`);
  t.ok(listed.every((node) => node.state === 'running'), 'all running');
  t.same(listed.map((node) => node.port).sort((a, b) => a - b), Array.from({ length: TOTAL }, (_, i) => BASE_PORT + i), 'ports base-port + index');
  const nodes = await fleetNodes();
  t.same(nodes.map((node) => node.metadata.name).sort(), listed.map((node) => node.name).sort(), 'the API server has the nodes the control port lists');
  t.ok(nodes.every((node) => node.metadata.name.startsWith(`${PREFIX}-`)), `named ${PREFIX}-*`);

  for (const group of GROUPS) {
    const members = nodes.filter((node) => node.metadata.labels?.[E2E_LABEL] === group.name);
    t.equal(members.length, group.count, `${group.count} nodes in group ${group.name}`);
    const seen = members.map((node) => ({
      name: node.metadata.name,
      cpu: quantityValue(node.status.capacity.cpu),
      memory: quantityValue(node.status.capacity.memory),
      pods: quantityValue(node.status.capacity.pods),
      fleet: node.metadata.labels['kubelet-ts.io/fleet'],
      group: node.metadata.labels['kubelet-ts.io/fleet-group'],
      fleetTaint: hasTaint(node, FLEET_TAINT) && node.spec.taints.find((x: Json) => x.key === FLEET_TAINT.key).value,
      zone: node.metadata.labels['topology.kubernetes.io/zone'],
      groupTaint: hasTaint(node, SMALL_TAINT),
      internalIP: node.status.addresses?.find((a: Json) => a.type === 'InternalIP')?.address,
      port: node.status.daemonEndpoints?.kubeletEndpoint?.Port,
    }));
    t.same(
      seen,
      members.map((node) => ({
        name: node.metadata.name,
        cpu: quantityValue(group.cpu),
        memory: quantityValue(group.memory),
        pods: group.pods,
        fleet: 'true',
        group: group.name,
        fleetTaint: FLEET_TAINT.value,
        zone: ZONE['topology.kubernetes.io/zone'],
        groupTaint: (group.taints ?? []).length > 0,
        internalIP: '127.0.0.1',
        port: listed.find((x) => x.name === node.metadata.name)?.port,
      })),
      `group ${group.name}: capacity, labels, taints, InternalIP and kubelet port`,
    );
  }

  const names = new Set(nodes.map((node) => node.metadata.name));
  const renewTimes = async () =>
    new Map(
      ((await kubectl.json(['get', 'leases', '-n', 'kube-node-lease'])).items as Json[])
        .filter((lease) => names.has(lease.metadata.name))
        .map((lease) => [lease.metadata.name as string, Date.parse(lease.spec.renewTime)]),
    );
  const before = await waitFor('a Lease in kube-node-lease for every node', async () => {
    const times = await renewTimes();
    return times.size === TOTAL && times;
  }, 30_000, fleetLog);
  t.equal(before.size, TOTAL, 'a Lease in kube-node-lease for every node');
  await waitFor('every Lease renewed', async () => {
    const now = await renewTimes();
    return [...before].every(([name, time]) => (now.get(name) ?? 0) > time);
  }, 60_000, fleetLog);
  t.pass('every node renewed its Lease (renewTime advanced)');
});

await t.test('a Deployment of 40 replicas spreads over the fleet, Running and Ready; scaled to 0 its pods go', async (t) => {
  await kubectl.apply(
    deployment('spread', 40, {
      containers: [
        {
          name: 'app',
          image: IMAGE,
          imagePullPolicy: 'IfNotPresent',
          ports: [{ containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 2 },
        },
      ],
    }),
  );
  const pods = await waitFor('40 pods Running and Ready', async () => {
    const items = await podsOf('spread');
    return items.length === 40 && items.every((p) => p.status?.phase === 'Running' && isPodReady(p)) && items;
  }, 180_000, fleetLog);
  const std = new Set((await fleetNodes('std')).map((node) => node.metadata.name));
  const used = new Set(pods.map((p) => p.spec.nodeName as string));
  t.ok(pods.every((p) => std.has(p.spec.nodeName)), 'every pod on a std node of this fleet');
  t.ok(used.size >= 10, `the scheduler spread them over ${used.size} nodes (>= 10)`);
  t.ok(pods.every((p) => p.status.podIP), 'every pod has an IP');
  const ips = [...new Set(pods.map((p) => p.status.podIP as string))];
  t.equal(ips.length, 40, `a pod IP of its own for every pod (${ips.length} distinct: ${ips.slice(0, 3).join(', ')}...)`);
  t.ok(ips.every((ip) => !ip.startsWith('127.')), 'pod IPs outside the loopback range (an Endpoints address may not be in it)');
  const status = await waitFor('the Deployment reports 40 ready replicas', async () => {
    const d = await kubectl.json(['get', 'deployment', '-n', NS, 'spread']);
    return d.status?.readyReplicas === 40 && d.status;
  }, 30_000);
  t.equal(status.availableReplicas, 40, 'available replicas');

  await kubectl.run(['scale', 'deployment', '-n', NS, 'spread', '--replicas=0']);
  await waitFor('no pods left', async () => (await podsOf('spread')).length === 0, 90_000, fleetLog);
  t.pass('scaled to 0, every pod is gone');
  await kubectl.run(['delete', 'deployment', '-n', NS, 'spread']);
});

await t.test('a container exiting 1 goes into CrashLoopBackOff: restarts grow, kubectl shows it, a BackOff event', async (t) => {
  const line = await waitFor('kubectl get pod shows CrashLoopBackOff with 2 restarts', async () => {
    const text = (await kubectl.run(['get', 'pod', '-n', NS, 'crasher', '--no-headers'])).trim();
    const restarts = Number(text.split(/\s+/)[3]);
    return /\bCrashLoopBackOff\b/.test(text) && restarts >= 2 && text;
  }, 120_000, fleetLog);
  t.match(line, /^crasher\s+0\/1\s+CrashLoopBackOff\s+\d+/, `kubectl get pod: ${line}`);
  const first = containerStatus(await getPod('crasher'), 'app');
  t.equal(first?.lastState?.terminated?.exitCode, 1, 'the last run exited 1');
  t.equal(first?.lastState?.terminated?.reason, 'Error', 'terminated reason Error');
  await waitFor('restartCount grows', async () => (containerStatus(await getPod('crasher'), 'app')?.restartCount ?? 0) > first!.restartCount, 90_000, fleetLog);
  t.pass(`restartCount grew past ${first!.restartCount}`);
  const backOff = await waitFor('a BackOff event', async () => {
    const items = await events('crasher', 'BackOff');
    return items.length > 0 && items;
  });
  t.match(backOff[0].message, /Back-off restarting failed container/, 'its message');
  t.equal(backOff[0].type, 'Warning', 'a Warning');
});

await t.test('readiness gates Endpoints: the ready pod in addresses, the failing one in notReadyAddresses', async (t) => {
  // On failure: the Endpoints as last seen, and why the endpoints controller could not write them.
  const describe = async () => {
    const e = await kubectl.getOrUndefined(['endpoints', '-n', NS, 'gate']).catch(() => undefined);
    const failed = await events('gate', 'FailedToUpdateEndpoint').catch(() => []);
    const created = await events('gate', 'FailedToCreateEndpoint').catch(() => []);
    return `endpoints: ${JSON.stringify(e?.subsets)}; ${[...failed, ...created].map((x) => x.message).slice(-1).join('')}`;
  };
  let seen = '';
  const endpoints = await waitFor('the Endpoints split', async () => {
    seen = await describe();
    const e = await kubectl.getOrUndefined(['endpoints', '-n', NS, 'gate']);
    const subset = e?.subsets?.[0];
    const ready = (subset?.addresses ?? []).map((a: Json) => a.targetRef?.name);
    const notReady = (subset?.notReadyAddresses ?? []).map((a: Json) => a.targetRef?.name);
    return ready.length === 1 && ready[0] === 'gate-ready' && notReady.length === 1 && notReady[0] === 'gate-unready' && subset;
  }, 60_000, () => seen);
  const ready = await getPod('gate-ready');
  const unready = await getPod('gate-unready');
  t.equal(endpoints.addresses[0].ip, ready?.status?.podIP, 'the ready pod\'s IP in addresses');
  t.equal(endpoints.notReadyAddresses[0].ip, unready?.status?.podIP, 'the other pod\'s IP in notReadyAddresses');
  t.not(ready?.status?.podIP, unready?.status?.podIP, 'two IPs');
  t.equal(unready?.status?.phase, 'Running', 'the unready pod runs');
  t.equal(condition(unready, 'Ready')?.status, 'False', 'and is not Ready');
  t.equal(containerStatus(unready, 'app')?.started, true, 'its container started');
  t.same(endpoints.ports, [{ port: 8080, protocol: 'TCP' }], 'the target port');
});

await t.test('kubectl logs returns the simulated log of a fleet node\'s container', async (t) => {
  await waitFor('talker Running', async () => (await getPod('talker'))?.status?.phase === 'Running', 60_000, fleetLog);
  const app = await waitFor('the app container\'s log', async () => {
    const text = await kubectl.run(['logs', '-n', NS, 'talker', '-c', 'app']);
    return text.includes('second line') && text;
  }, 30_000, fleetLog);
  t.equal(app.trimEnd(), 'hello from the fleet\nsecond line', 'kubectl logs -c app');
  t.equal((await kubectl.run(['logs', '-n', NS, 'talker', '-c', 'sidecar'])).trimEnd(), 'the sidecar says hi', 'kubectl logs -c sidecar (the per-container annotation)');
  // The previous instance as the pod's status names it: between a crash and the next sync the status still names
  // the one before, which container GC (one dead container kept per container) may have removed, as with Go's.
  const previous = await waitFor('kubectl logs --previous', () => kubectl.run(['logs', '-n', NS, 'crasher', '--previous']), 30_000);
  t.match(previous, /simulated container app started\n/, 'the default log line, of the previous run');
  t.match(previous, /simulated container app exited with code 1/, 'and its exit line');
});

await t.test('kubectl exec runs in a fleet node\'s simulated container: output, stdin and the exit code', async (t) => {
  // The simulated runtime's streaming server answers exec with its small interpreter (local-runtime README).
  t.equal(await kubectl.run(['exec', '-n', NS, 'talker', '-c', 'app', '--', 'echo', 'hello', 'fleet']), 'hello fleet\n', 'echo');
  t.equal(await kubectl.run(['exec', '-i', '-n', NS, 'talker', '-c', 'app', '--', 'cat'], 'from stdin\n'), 'from stdin\n', 'stdin through cat');
  const failed = await kubectl.run(['exec', '-n', NS, 'talker', '-c', 'app', '--', 'sh', '-c', 'exit 3']).then(
    () => undefined,
    (error: KubectlError) => error,
  );
  t.match(failed?.stderr ?? '', /command terminated with exit code 3/, 'a non-zero exit reaches kubectl');
  const missing = await kubectl.run(['exec', '-n', NS, 'talker', '-c', 'app', '--', 'nosuchcommand']).then(
    () => undefined,
    (error: KubectlError) => error,
  );
  t.match(missing?.stderr ?? '', /command not found[\s\S]*exit code 127/, 'an unknown command: 127');
});

await t.test('a killed node goes NotReady, its pods are evicted after their toleration; revived it is Ready again', async (t) => {
  const std = (await fleetNodes('std')).map((node) => node.metadata.name as string).sort();
  const target = std[0];
  const others = std.filter((name) => name !== target);
  // The victims land on the target: every other node is cordoned while they are scheduled.
  await kubectl.run(['cordon', ...others]);
  await kubectl.apply(
    deployment('victim', 2, {
      tolerations: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 }],
    }),
  );
  const victims = await waitFor('2 victims Running on the target', async () => {
    const items = await podsOf('victim');
    return items.length === 2 && items.every((p) => p.status?.phase === 'Running' && p.spec.nodeName === target) && items;
  }, 60_000, fleetLog);
  await kubectl.run(['uncordon', ...others]);

  const killedAt = Date.now();
  await running.killNode(target);
  t.equal((await running.nodes()).find((node) => node.name === target)?.state, 'dead', 'the control port says dead');
  const notReady = await waitFor('the node NotReady', async () => {
    const ready = condition(await kubectl.getOrUndefined(['node', target]), 'Ready');
    return ready?.status === 'Unknown' && ready;
  }, 60_000, fleetLog);
  t.equal(notReady.reason, 'NodeStatusUnknown', 'Ready=Unknown, reason NodeStatusUnknown');
  t.equal(notReady.message, 'Kubelet stopped posting node status.', 'the controller\'s message');
  t.comment(`NotReady ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);

  const uids = new Set(victims.map((p) => p.metadata.uid as string));
  const replacements = await waitFor('the victims deleted and replaced on other nodes', async () => {
    const items = await podsOf('victim');
    const old = items.filter((p) => uids.has(p.metadata.uid));
    const fresh = items.filter((p) => !uids.has(p.metadata.uid) && !p.metadata.deletionTimestamp);
    return (
      old.every((p) => p.metadata.deletionTimestamp) &&
      fresh.length === 2 &&
      fresh.every((p) => p.status?.phase === 'Running' && isPodReady(p) && p.spec.nodeName !== target) &&
      fresh
    );
  }, 90_000, fleetLog);
  t.ok(replacements.every((p) => others.includes(p.spec.nodeName)), 'the ReplicaSet\'s new pods run on other fleet nodes');
  const marked = await events(victims[0].metadata.name, 'TaintManagerEviction');
  t.ok(marked.length > 0, 'the taint manager says it marked the pod for deletion');

  await running.reviveNode(target);
  t.equal((await running.nodes()).find((node) => node.name === target)?.state, 'running', 'the control port says running');
  await waitFor('the node Ready again, untainted', async () => {
    const node = await kubectl.getOrUndefined(['node', target]);
    return condition(node, 'Ready')?.status === 'True' && !hasTaint(node!, { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' });
  }, 60_000, fleetLog);
  t.pass('Ready after the revival, the unreachable taint gone');
  await waitFor('the revived kubelet finishes the victims\' deletion', async () => (await podsOf('victim')).every((p) => !uids.has(p.metadata.uid)), 60_000, fleetLog);
  t.pass('the old pods are gone');
  await kubectl.run(['delete', 'deployment', '-n', NS, 'victim']);
});

await t.test('simulated memory use over --eviction-hard evicts the pod and the node reports MemoryPressure', async (t) => {
  const small = (await fleetNodes('small')).map((node) => node.metadata.name as string).sort()[0];
  await kubectl.apply(
    pod('hog', { [`${SIM}/memory`]: '900Mi' }, {
      nodeSelector: { 'kubernetes.io/hostname': small },
      tolerations: [fleetToleration, { key: SMALL_TAINT.key, operator: 'Exists', effect: 'NoSchedule' }],
    }),
  );
  const evicted = await waitFor('the hog evicted', async () => {
    const p = await getPod('hog');
    return p?.status?.phase === 'Failed' && p;
  }, 90_000, fleetLog);
  t.equal(evicted.spec.nodeName, small, 'it ran on the small node');
  t.equal(evicted.status.reason, 'Evicted', 'reason Evicted');
  t.match(evicted.status.message, /The node was low on resource: memory/, 'the message names memory');
  const event = await waitFor('an Evicted event', async () => {
    const items = await events('hog', 'Evicted');
    return items.length > 0 && items[0];
  });
  t.equal(event.type, 'Warning', 'an Evicted Warning event');
  const pressure = await waitFor('MemoryPressure=True', async () => {
    const c = condition(await kubectl.getOrUndefined(['node', small]), 'MemoryPressure');
    return c?.status === 'True' && c;
  }, 30_000, fleetLog);
  t.equal(pressure.reason, 'KubeletHasInsufficientMemory', 'MemoryPressure=True, reason KubeletHasInsufficientMemory');
});
