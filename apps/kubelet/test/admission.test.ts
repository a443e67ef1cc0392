import t from 'tap';
import type { V1Container, V1Node, V1NodeSelectorTerm, V1Pod, V1PodStatus, V1Taint, V1Toleration } from '@kubernetes/client-node';
import { RecordingEventRecorder } from '@kubelet-ts/core/testing';
import {
  admitPod,
  admitPodAsync,
  computePodResourceRequest,
  HostPortInfo,
  InsufficientResourceError,
  isExtendedResourceName,
  isScalarResourceName,
  matchNodeSelectorTerms,
  PredicateAdmitHandler,
  PredicateFailureError,
  rejectedPodStatus,
  rejectPod,
  safeSysctlAllowlist,
  SysctlAllowlistAdmitHandler,
  type PodAdmitHandler,
  type PodAdmitResult,
  type PredicateAdmitHandlerOptions,
} from '../src/lifecycle/index.js';

type Requests = Record<string, string>;

interface NodeOpts {
  name?: string;
  allocatable?: Requests;
  labels?: Record<string, string>;
  taints?: V1Taint[];
}

function makeNode(opts: NodeOpts = {}): V1Node {
  return {
    metadata: { name: opts.name ?? 'node1', labels: opts.labels ?? { 'kubernetes.io/hostname': 'node1' } },
    spec: { taints: opts.taints },
    status: { allocatable: opts.allocatable ?? { cpu: '2', memory: '4Gi', pods: '110', 'ephemeral-storage': '10Gi' } },
  };
}

interface PodOpts {
  containers?: Requests[];
  init?: Requests[];
  overhead?: Requests;
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  terms?: V1NodeSelectorTerm[];
  ports?: { hostPort?: number; containerPort?: number; protocol?: string; hostIP?: string }[];
  initPorts?: { hostPort?: number; containerPort?: number }[];
  tolerations?: V1Toleration[];
  annotations?: Record<string, string>;
  sysctls?: string[];
  hostNetwork?: boolean;
  hostIPC?: boolean;
}

let uid = 0;
function makePod(name: string, opts: PodOpts = {}): V1Pod {
  const container = (prefix: string, requests: Requests | undefined, i: number, ports?: PodOpts['ports']): V1Container => ({
    name: `${prefix}${i}`,
    image: 'busybox',
    resources: requests ? { requests } : {},
    ports: ports?.map((p) => ({ containerPort: p.containerPort ?? p.hostPort ?? 80, ...p })),
  });
  const containers = (opts.containers ?? [undefined as unknown as Requests]).map((r, i) => container('c', r, i, i === 0 ? opts.ports : undefined));
  return {
    metadata: { name, namespace: 'default', uid: `uid-${++uid}`, annotations: opts.annotations },
    spec: {
      containers,
      initContainers: opts.init?.map((r, i) => container('init', r, i, i === 0 ? opts.initPorts : undefined)),
      overhead: opts.overhead,
      nodeName: opts.nodeName,
      nodeSelector: opts.nodeSelector,
      affinity: opts.terms ? { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: opts.terms } } } : undefined,
      tolerations: opts.tolerations,
      hostNetwork: opts.hostNetwork,
      hostIPC: opts.hostIPC,
      securityContext: opts.sysctls ? { sysctls: opts.sysctls.map((s) => ({ name: s, value: '1' })) } : undefined,
    },
  };
}

function predicate(node: V1Node | undefined, opts: Partial<PredicateAdmitHandlerOptions> = {}): PredicateAdmitHandler {
  return new PredicateAdmitHandler({ getNode: () => node, ...opts });
}

function admit(node: V1Node, pod: V1Pod, otherPods: V1Pod[] = [], opts: Partial<PredicateAdmitHandlerOptions> = {}): PodAdmitResult {
  return predicate(node, opts).admit({ pod, otherPods });
}

t.test('admitPod runs the handlers in order and the first refusal wins', async (t) => {
  const calls: string[] = [];
  const handler = (name: string, result: PodAdmitResult): PodAdmitHandler => ({
    admit: () => {
      calls.push(name);
      return result;
    },
  });
  const attrs = { pod: makePod('p'), otherPods: [] };
  t.same(admitPod([], attrs), { admit: true });
  t.same(admitPod([handler('a', { admit: true }), handler('b', { admit: true })], attrs), { admit: true });
  t.same(calls, ['a', 'b']);
  calls.length = 0;
  const result = admitPod(
    [handler('a', { admit: true }), handler('b', { admit: false, reason: 'First', message: 'first says no' }), handler('c', { admit: false, reason: 'Second', message: 'x' })],
    attrs,
  );
  t.same(result, { admit: false, reason: 'First', message: 'first says no' });
  t.same(calls, ['a', 'b'], 'handlers after the refusal are not asked');
});

t.test('admitPodAsync awaits each handler in order; the first refusal wins', async (t) => {
  const seen: string[] = [];
  const attrs = { pod: makePod('p'), otherPods: [] };
  const result = await admitPodAsync(
    [
      { admit: () => (seen.push('sync'), { admit: true }) },
      { admit: async () => (seen.push('async'), { admit: false, reason: 'UnexpectedAdmissionError', message: 'Allocate failed' }) },
      { admit: () => (seen.push('never'), { admit: true }) },
    ],
    attrs,
  );
  t.same(result, { admit: false, reason: 'UnexpectedAdmissionError', message: 'Allocate failed' });
  t.same(seen, ['sync', 'async']);
  t.same(await admitPodAsync([], attrs), { admit: true });
});

t.test('rejectPod records a Warning event and fails the pod with "Pod <message>"', async (t) => {
  const recorder = new RecordingEventRecorder();
  const statuses: [V1Pod, V1PodStatus][] = [];
  const pod = makePod('p');
  rejectPod(pod, 'OutOfcpu', "Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000", {
    recorder,
    setPodStatus: (p, s) => statuses.push([p, s]),
  });
  t.same(recorder.lines(), ["Warning OutOfcpu Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000"]);
  t.equal(statuses[0][0], pod);
  t.same(statuses[0][1], { phase: 'Failed', reason: 'OutOfcpu', message: "Pod Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000" });
  t.same(rejectedPodStatus('NodeAffinity', 'Predicate NodeAffinity failed'), { phase: 'Failed', reason: 'NodeAffinity', message: 'Pod Predicate NodeAffinity failed' });
});

t.test('InvalidNodeInfo when the node is not known', async (t) => {
  const expected = { admit: false, reason: 'InvalidNodeInfo', message: 'Kubelet cannot get node info.' };
  t.same(predicate(undefined).admit({ pod: makePod('p'), otherPods: [] }), expected);
  const throwing = new PredicateAdmitHandler({
    getNode: () => {
      throw new Error('no node yet');
    },
  });
  t.same(throwing.admit({ pod: makePod('p'), otherPods: [] }), expected);
});

t.test('a pod that fits is admitted, including one that fills the node exactly', async (t) => {
  const node = makeNode({ allocatable: { cpu: '2', memory: '1Gi', pods: '3', 'ephemeral-storage': '1Gi' } });
  t.same(admit(node, makePod('p', { containers: [{ cpu: '500m', memory: '100Mi' }] })), { admit: true });
  const others = [makePod('a', { containers: [{ cpu: '1500m', memory: '924Mi', 'ephemeral-storage': '512Mi' }] }), makePod('b')];
  t.same(admit(node, makePod('p', { containers: [{ cpu: '500m', memory: '100Mi', 'ephemeral-storage': '512Mi' }] }), others), { admit: true });
});

t.test('OutOfpods from the allocatable pods count', async (t) => {
  const node = makeNode({ allocatable: { cpu: '2', memory: '4Gi', pods: '2' } });
  const others = [makePod('a'), makePod('b')];
  t.same(admit(node, makePod('p'), others), {
    admit: false,
    reason: 'OutOfpods',
    message: "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
  });
  t.same(admit(node, makePod('p'), others.slice(1)), { admit: true });
  // A node that advertises no pods capacity refuses everything.
  t.equal(admit(makeNode({ allocatable: { cpu: '2' } }), makePod('p')).reason, 'OutOfpods');
});

t.test('OutOfcpu, OutOfmemory and OutOfephemeral-storage with Go\'s message and units', async (t) => {
  const node = makeNode({ allocatable: { cpu: '2', memory: '1Gi', pods: '110', 'ephemeral-storage': '1Gi' } });
  const others = [makePod('a', { containers: [{ cpu: '1', memory: '512Mi' }, { cpu: '800m', 'ephemeral-storage': '1G' }] })];
  t.same(admit(node, makePod('p', { containers: [{ cpu: '500m' }] }), others), {
    admit: false,
    reason: 'OutOfcpu',
    message: "Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000",
  });
  t.same(admit(node, makePod('p', { containers: [{ memory: '600Mi' }] }), others.map((p) => ({ ...p, spec: { ...p.spec!, containers: [p.spec!.containers[0]] } }))), {
    admit: false,
    reason: 'OutOfmemory',
    message: `Node didn't have enough resource: memory, requested: ${600 * 2 ** 20}, used: ${512 * 2 ** 20}, capacity: ${2 ** 30}`,
  });
  t.same(admit(node, makePod('p', { containers: [{ 'ephemeral-storage': '100Mi' }] }), [makePod('a', { containers: [{ 'ephemeral-storage': '1G' }] })]), {
    admit: false,
    reason: 'OutOfephemeral-storage',
    message: `Node didn't have enough resource: ephemeral-storage, requested: ${100 * 2 ** 20}, used: 1000000000, capacity: ${2 ** 30}`,
  });
  // Fractional quantities round up to whole units as Quantity.Value()/MilliValue() do.
  t.same(admit(makeNode({ allocatable: { cpu: '1m', memory: '1', pods: '1' } }), makePod('p', { containers: [{ cpu: '0.0001', memory: '1' }] })), { admit: true });
  t.equal(admit(makeNode({ allocatable: { cpu: '1m', memory: '1', pods: '1' } }), makePod('p', { containers: [{ cpu: '0.0011' }] })).message, "Node didn't have enough resource: cpu, requested: 2, used: 0, capacity: 1");
});

t.test('only the first failure is reported: pods, cpu, memory, ephemeral-storage, scalar, then the predicates', async (t) => {
  const node = makeNode({ allocatable: { cpu: '1', memory: '1Gi', pods: '1', 'ephemeral-storage': '1Gi', 'example.com/gpu': '1' }, labels: { zone: 'a' } });
  const huge = { cpu: '2', memory: '2Gi', 'ephemeral-storage': '2Gi', 'example.com/gpu': '2' };
  t.equal(admit(node, makePod('p', { containers: [huge], nodeSelector: { zone: 'b' } }), [makePod('a')]).reason, 'OutOfpods');
  t.equal(admit(node, makePod('p', { containers: [huge], nodeSelector: { zone: 'b' } })).reason, 'OutOfcpu');
  t.equal(admit(node, makePod('p', { containers: [{ ...huge, cpu: '1' }] })).reason, 'OutOfmemory');
  t.equal(admit(node, makePod('p', { containers: [{ ...huge, cpu: '1', memory: '1Gi' }] })).reason, 'OutOfephemeral-storage');
  t.equal(admit(node, makePod('p', { containers: [{ 'example.com/gpu': '2' }], nodeSelector: { zone: 'b' } })).reason, 'OutOfexample.com/gpu');
  t.equal(admit(node, makePod('p', { nodeSelector: { zone: 'b' }, nodeName: 'other' })).reason, 'NodeAffinity');
});

t.test('requests: init containers count as a max against the sum of the containers, overhead adds on', async (t) => {
  const node = makeNode({ allocatable: { cpu: '1', memory: '1Gi', pods: '110' } });
  // sum(containers) = 500m; the largest init container 800m wins.
  const initHeavy = makePod('p', { containers: [{ cpu: '300m' }, { cpu: '200m' }], init: [{ cpu: '800m' }, { cpu: '100m' }] });
  t.equal(computePodResourceRequest(initHeavy).milliCPU, 800);
  t.equal(admit(node, initHeavy, [makePod('a', { containers: [{ cpu: '300m' }] })]).message, "Node didn't have enough resource: cpu, requested: 800, used: 300, capacity: 1000");
  // Init containers smaller than the sum do not add to it.
  const sumHeavy = makePod('p', { containers: [{ cpu: '300m', memory: '100Mi' }, { cpu: '400m' }], init: [{ cpu: '600m', memory: '300Mi' }] });
  const r = computePodResourceRequest(sumHeavy);
  t.same([r.milliCPU, r.memory], [700, 300 * 2 ** 20], 'max is per resource');
  t.same(admit(node, sumHeavy, [makePod('a', { containers: [{ cpu: '300m' }] })]), { admit: true });
  // The pods already on the node are counted the same way.
  const usedByInit = makePod('a', { containers: [{ cpu: '100m' }], init: [{ cpu: '900m' }] });
  t.equal(admit(node, makePod('p', { containers: [{ cpu: '200m' }] }), [usedByInit]).message, "Node didn't have enough resource: cpu, requested: 200, used: 900, capacity: 1000");
  // Overhead is added after the max.
  const withOverhead = makePod('p', { containers: [{ cpu: '400m' }], init: [{ cpu: '500m' }], overhead: { cpu: '250m', memory: '64Mi' } });
  t.same([computePodResourceRequest(withOverhead).milliCPU, computePodResourceRequest(withOverhead).memory], [750, 64 * 2 ** 20]);
  t.equal(admit(node, withOverhead, [makePod('a', { containers: [{ cpu: '300m' }] })]).message, "Node didn't have enough resource: cpu, requested: 750, used: 300, capacity: 1000");
  t.equal(
    admit(node, makePod('p', { containers: [{ cpu: '100m' }] }), [makePod('a', { containers: [{ cpu: '100m' }], overhead: { cpu: '850m' } })]).message,
    "Node didn't have enough resource: cpu, requested: 100, used: 950, capacity: 1000",
    "other pods' overhead counts as used",
  );
});

t.test('a pod requesting nothing skips the resource checks, even on an overcommitted node (Go v1.20)', async (t) => {
  const node = makeNode({ allocatable: { cpu: '1', memory: '1Gi', pods: '110' } });
  const overcommit = [makePod('a', { containers: [{ cpu: '1500m' }] })];
  t.same(admit(node, makePod('p'), overcommit), { admit: true });
  // Go v1.20 then checks every resource: a memory-only pod is refused for the overcommitted cpu.
  t.same(admit(node, makePod('p', { containers: [{ memory: '1Mi' }] }), overcommit), {
    admit: false,
    reason: 'OutOfcpu',
    message: "Node didn't have enough resource: cpu, requested: 0, used: 1500, capacity: 1000",
  });
});

t.test('extended and other scalar resources', async (t) => {
  t.ok(isExtendedResourceName('example.com/gpu'));
  t.notOk(isExtendedResourceName('cpu'));
  t.notOk(isExtendedResourceName('kubernetes.io/foo'), 'the kubernetes.io namespace is native');
  t.notOk(isExtendedResourceName('requests.example.com/gpu'));
  t.notOk(isExtendedResourceName('example.com/bad name'));
  t.ok(isScalarResourceName('hugepages-2Mi'));
  t.ok(isScalarResourceName('attachable-volumes-aws-ebs'));
  t.ok(isScalarResourceName('kubernetes.io/foo'));
  t.notOk(isScalarResourceName('storage'));

  const node = makeNode({ allocatable: { cpu: '4', memory: '4Gi', pods: '110', 'example.com/gpu': '2', 'hugepages-2Mi': '8Mi' } });
  const other = makePod('a', { containers: [{ 'example.com/gpu': '1' }] });
  t.same(admit(node, makePod('p', { containers: [{ 'example.com/gpu': '1' }] }), [other]), { admit: true });
  t.same(admit(node, makePod('p', { containers: [{ 'example.com/gpu': '2' }] }), [other]), {
    admit: false,
    reason: 'OutOfexample.com/gpu',
    message: "Node didn't have enough resource: example.com/gpu, requested: 2, used: 1, capacity: 2",
  });
  t.same(admit(node, makePod('p', { containers: [{ 'hugepages-2Mi': '10Mi' }] })), {
    admit: false,
    reason: 'OutOfhugepages-2Mi',
    message: `Node didn't have enough resource: hugepages-2Mi, requested: ${10 * 2 ** 20}, used: 0, capacity: ${8 * 2 ** 20}`,
  });
  // An extended resource the node does not advertise is a cluster-level resource: ignored in the
  // containers' requests...
  t.same(admit(node, makePod('p', { containers: [{ 'example.com/fpga': '1', cpu: '1' }] })), { admit: true });
  // ...but not in an init container's, as in Go v1.20.
  t.same(admit(node, makePod('p', { init: [{ 'example.com/fpga': '1' }] })), {
    admit: false,
    reason: 'OutOfexample.com/fpga',
    message: "Node didn't have enough resource: example.com/fpga, requested: 1, used: 0, capacity: 0",
  });
  // Unknown unprefixed resources are not scalar and are not checked.
  t.same(admit(node, makePod('p', { containers: [{ storage: '100Ti' }] })), { admit: true });
});

t.test("device plugin resources: allocated devices raise the node's allocatable (Go: UpdatePluginResources, sanitizeNodeAllocatable)", async (t) => {
  // Right after a kubelet restart the plugin has not registered again: the node says 0 devices.
  const node = makeNode({ allocatable: { cpu: '4', memory: '4Gi', pods: '110', 'example.com/gpu': '0' } });
  const pod = makePod('p', { containers: [{ 'example.com/gpu': '1' }] });
  const without = new PredicateAdmitHandler({ getNode: () => node });
  t.match(without.admit({ pod, otherPods: [] }), { admit: false, reason: 'OutOfexample.com/gpu' });
  const handler = new PredicateAdmitHandler({ getNode: () => node, allocatedPluginResources: () => ({ 'example.com/gpu': 1 }) });
  t.same(handler.admit({ pod, otherPods: [] }), { admit: true }, 'the pod whose device is allocated (from the checkpoint) passes');
  t.match(handler.admit({ pod: makePod('q', { containers: [{ 'example.com/gpu': '1' }] }), otherPods: [pod] }), { admit: false, reason: 'OutOfexample.com/gpu' }, 'no more than allocated');
  t.same(node.status?.allocatable?.['example.com/gpu'], '0', 'the node itself is not changed');
});

t.test('node selector and required node affinity: reason NodeAffinity', async (t) => {
  const node = makeNode({ labels: { 'kubernetes.io/hostname': 'node1', zone: 'a', disk: 'ssd', gen: '5' } });
  const refused = { admit: false, reason: 'NodeAffinity', message: 'Predicate NodeAffinity failed' };
  t.same(admit(node, makePod('p', { nodeSelector: { zone: 'a', disk: 'ssd' } })), { admit: true });
  t.same(admit(node, makePod('p', { nodeSelector: { zone: 'b' } })), refused);
  t.same(admit(node, makePod('p', { nodeSelector: { gpu: '' } })), refused, 'a missing label does not equal ""');
  t.same(admit(node, makePod('p', { terms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }] })), { admit: true });
  t.same(admit(node, makePod('p', { terms: [{ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }] })), refused);
  t.same(admit(node, makePod('p', { nodeSelector: { zone: 'a' }, terms: [{ matchExpressions: [{ key: 'disk', operator: 'In', values: ['hdd'] }] }] })), refused, 'both must match');
  t.same(admit(node, makePod('p', { terms: [] })), refused, 'no terms match nothing');
});

t.test('matchNodeSelectorTerms: operators, fields, ORed terms, invalid requirements', async (t) => {
  const labels = { zone: 'a', gen: '5', 'example.com/tier': 'gold' };
  const fields = { 'metadata.name': 'node1' };
  const m = (...terms: V1NodeSelectorTerm[]) => matchNodeSelectorTerms(terms, labels, fields);
  t.ok(m({ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }));
  t.notOk(m({ matchExpressions: [{ key: 'disk', operator: 'Exists' }] }));
  t.ok(m({ matchExpressions: [{ key: 'disk', operator: 'DoesNotExist' }] }));
  t.ok(m({ matchExpressions: [{ key: 'disk', operator: 'NotIn', values: ['ssd'] }] }), 'NotIn matches a missing label');
  t.ok(m({ matchExpressions: [{ key: 'gen', operator: 'Gt', values: ['4'] }] }));
  t.notOk(m({ matchExpressions: [{ key: 'gen', operator: 'Gt', values: ['5'] }] }));
  t.ok(m({ matchExpressions: [{ key: 'gen', operator: 'Lt', values: ['6'] }] }));
  t.notOk(m({ matchExpressions: [{ key: 'zone', operator: 'Lt', values: ['6'] }] }), 'a label that is not an integer');
  t.notOk(m({ matchExpressions: [{ key: 'gen', operator: 'Gt', values: ['four'] }] }), 'an invalid bound fails the term');
  t.notOk(m({ matchExpressions: [{ key: 'zone', operator: 'In', values: [] }] }), 'In needs values');
  t.notOk(m({ matchExpressions: [{ key: 'zone', operator: 'Exists', values: ['a'] }] }), 'Exists takes none');
  t.notOk(m({ matchExpressions: [{ key: 'zone', operator: 'Near', values: ['a'] }] }), 'unknown operator');
  t.notOk(m({ matchExpressions: [{ key: 'bad key!', operator: 'DoesNotExist' }] }), 'invalid key');
  t.ok(m({ matchExpressions: [{ key: 'example.com/tier', operator: 'In', values: ['gold'] }] }));
  t.ok(m({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1'] }] }));
  t.notOk(m({ matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['node1'] }] }));
  t.notOk(m({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node1', 'node2'] }] }), 'fields take exactly one value');
  t.notOk(m({ matchFields: [{ key: 'metadata.name', operator: 'Exists' }] }), 'fields take In and NotIn only');
  t.notOk(m({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }], matchFields: [{ key: 'metadata.name', operator: 'In', values: ['other'] }] }), 'a term ANDs');
  t.ok(m({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] }, { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }), 'terms OR');
  t.notOk(m({}), 'an empty term matches nothing');
  t.ok(m({}, { matchExpressions: [{ key: 'zone', operator: 'Exists' }] }));
});

t.test('NodeName: a pod bound to another node is refused', async (t) => {
  const node = makeNode();
  t.same(admit(node, makePod('p', { nodeName: 'node1' })), { admit: true });
  t.same(admit(node, makePod('p')), { admit: true }, 'no nodeName is fine');
  t.same(admit(node, makePod('p', { nodeName: 'node2' })), { admit: false, reason: 'NodeName', message: 'Predicate NodeName failed' });
});

t.test('host ports: NodePorts when another pod holds the same protocol and port', async (t) => {
  const node = makeNode();
  const refused = { admit: false, reason: 'NodePorts', message: 'Predicate NodePorts failed' };
  const holder = makePod('a', { ports: [{ hostPort: 8080 }] });
  t.same(admit(node, makePod('p', { ports: [{ hostPort: 8080, protocol: 'TCP' }] }), [holder]), refused, 'empty protocol is TCP');
  t.same(admit(node, makePod('p', { ports: [{ hostPort: 8080, protocol: 'UDP' }] }), [holder]), { admit: true });
  t.same(admit(node, makePod('p', { ports: [{ hostPort: 8081 }] }), [holder]), { admit: true });
  t.same(admit(node, makePod('p', { ports: [{ hostPort: 8080, hostIP: '10.0.0.1' }] }), [holder]), refused, '0.0.0.0 covers every IP');
  const onIp = makePod('a', { ports: [{ hostPort: 9090, hostIP: '10.0.0.1' }] });
  t.same(admit(node, makePod('p', { ports: [{ hostPort: 9090, hostIP: '10.0.0.2' }] }), [onIp]), { admit: true }, 'different IPs');
  t.same(admit(node, makePod('p', { ports: [{ hostPort: 9090, hostIP: '10.0.0.1' }] }), [onIp]), refused);
  t.same(admit(node, makePod('p', { ports: [{ hostPort: 9090 }] }), [onIp]), refused, '0.0.0.0 conflicts with any IP');
  t.same(admit(node, makePod('p', { ports: [{ containerPort: 80 }] }), [makePod('a', { ports: [{ containerPort: 80 }] })]), { admit: true }, 'no host port');
  t.same(admit(node, makePod('p', { ports: [{ hostPort: 8080 }] }), [makePod('a', { init: [{}], initPorts: [{ hostPort: 8080 }] })]), { admit: true }, "init containers' ports do not count");
  const h = new HostPortInfo();
  h.add('', '', 0);
  h.add(undefined, undefined, 53);
  h.add('', 'UDP', 53);
  t.equal(h.size, 2);
});

t.test('taints: only untolerated NoExecute taints refuse, and never a static pod', async (t) => {
  const noExecute: V1Taint = { key: 'dedicated', value: 'db', effect: 'NoExecute' };
  const node = makeNode({ taints: [{ key: 'other', effect: 'NoSchedule' }, { key: 'soft', effect: 'PreferNoSchedule' }, noExecute] });
  const refused = { admit: false, reason: 'TaintToleration', message: 'Predicate TaintToleration failed' };
  t.same(admit(node, makePod('p')), refused);
  t.same(admit(node, makePod('p', { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoExecute' }] })), { admit: true }, 'NoSchedule is the scheduler\'s business');
  t.same(admit(node, makePod('p', { tolerations: [{ key: 'dedicated', value: 'db' }] })), { admit: true }, 'empty operator is Equal, empty effect any');
  t.same(admit(node, makePod('p', { tolerations: [{ key: 'dedicated', value: 'web' }] })), refused, 'Equal compares values');
  t.same(admit(node, makePod('p', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] })), { admit: true });
  t.same(admit(node, makePod('p', { tolerations: [{ operator: 'Exists' }] })), { admit: true }, 'an empty key with Exists tolerates everything');
  t.same(admit(node, makePod('p', { tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }] })), refused, 'the effect must match');
  t.same(admit(node, makePod('p', { annotations: { 'kubernetes.io/config.source': 'file' } })), { admit: true }, 'static pods are exempt');
  t.same(admit(node, makePod('p', { annotations: { 'kubernetes.io/config.source': 'api' } })), refused, 'API pods are not');
  t.same(admit(node, makePod('p'), [], { checkNoExecuteTaints: false }), { admit: true }, 'Go v1.20.2 behaviour on request');
  t.same(admit(makeNode({ taints: [{ key: 'other', effect: 'NoSchedule' }] }), makePod('p')), { admit: true });
});

t.test('the admission failure handler sees every reason and may clear them (Go: critical pod preemption)', async (t) => {
  const node = makeNode({ allocatable: { cpu: '1', memory: '1Gi', pods: '110' }, labels: { zone: 'a' } });
  const pod = makePod('p', { containers: [{ cpu: '2', memory: '2Gi' }], nodeSelector: { zone: 'b' } });
  let seen: unknown[] = [];
  t.same(
    admit(node, pod, [], {
      admissionFailureHandler: (p, reasons) => {
        t.equal(p, pod, 'gets the original pod');
        seen = reasons;
        return reasons.filter((r) => !(r instanceof InsufficientResourceError));
      },
    }),
    { admit: false, reason: 'NodeAffinity', message: 'Predicate NodeAffinity failed' },
  );
  t.same(
    seen.map((r) => (r as InsufficientResourceError | PredicateFailureError).reason),
    ['Insufficient cpu', 'Insufficient memory', "node(s) didn't match node selector"],
  );
  t.same(admit(node, pod, [], { admissionFailureHandler: () => [] }), { admit: true });
  t.same(
    admit(node, pod, [], {
      admissionFailureHandler: () => {
        throw new Error('failed to evict pod x');
      },
    }),
    { admit: false, reason: 'UnexpectedAdmissionError', message: 'Unexpected error while attempting to recover from admission failure: failed to evict pod x' },
  );
  let called = false;
  admit(node, makePod('fits', { nodeSelector: { zone: 'a' } }), [], {
    admissionFailureHandler: (_p, r) => {
      called = true;
      return r;
    },
  });
  t.notOk(called, 'not asked when the pod fits');
});

t.test('a malformed quantity is an UnexpectedAdmissionError, not a crash', async (t) => {
  const result = admit(makeNode(), makePod('p', { containers: [{ cpu: 'lots' }] }));
  t.equal(result.admit, false);
  t.equal(result.reason, 'UnexpectedAdmissionError');
  t.match(result.message, /^GeneralPredicates failed due to quantities must match the regular expression .*, which is unexpected\.$/);
});

t.test('sysctls: the safe list, --allowed-unsafe-sysctls patterns and host namespaces', async (t) => {
  t.same(safeSysctlAllowlist(), ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range']);
  const safeOnly = new SysctlAllowlistAdmitHandler();
  const check = (h: SysctlAllowlistAdmitHandler, opts: PodOpts) => h.admit({ pod: makePod('p', opts), otherPods: [] });
  t.same(check(safeOnly, {}), { admit: true });
  t.same(check(safeOnly, { sysctls: ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range'] }), { admit: true });
  t.same(check(safeOnly, { sysctls: ['net.ipv4.tcp_syncookies', 'kernel.msgmax'] }), {
    admit: false,
    reason: 'SysctlForbidden',
    message: 'forbidden sysctl: "kernel.msgmax" not whitelisted',
  });
  t.same(check(safeOnly, { sysctls: ['net.ipv4.tcp_syncookies'], hostNetwork: true }), {
    admit: false,
    reason: 'SysctlForbidden',
    message: 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled',
  });
  t.same(check(safeOnly, { sysctls: ['kernel.shm_rmid_forced'], hostIPC: true }), {
    admit: false,
    reason: 'SysctlForbidden',
    message: 'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled',
  });
  t.same(check(safeOnly, { sysctls: ['kernel.shm_rmid_forced'], hostNetwork: true }), { admit: true }, 'an ipc sysctl with host network');

  const unsafe = new SysctlAllowlistAdmitHandler({ allowedUnsafeSysctls: ['kernel.msg*', 'net.core.somaxconn', 'kernel.sem'] });
  t.same(check(unsafe, { sysctls: ['kernel.msgmax', 'kernel.msgmnb', 'net.core.somaxconn', 'kernel.sem'] }), { admit: true });
  t.same(check(unsafe, { sysctls: ['net.core.rmem_max'] }).message, 'forbidden sysctl: "net.core.rmem_max" not whitelisted');
  t.same(check(unsafe, { sysctls: ['kernel.msgmax'], hostIPC: true }).message, 'forbidden sysctl: "kernel.msgmax" not allowed with host ipc enabled', 'patterns check host namespaces too');

  t.throws(() => new SysctlAllowlistAdmitHandler({ allowedUnsafeSysctls: ['kernel.*'] }), { message: 'the sysctls "kernel.*" are not known to be namespaced' });
  t.throws(() => new SysctlAllowlistAdmitHandler({ allowedUnsafeSysctls: ['vm.swappiness'] }), { message: 'the sysctl "vm.swappiness" are not known to be namespaced' });
  t.throws(() => new SysctlAllowlistAdmitHandler({ allowedUnsafeSysctls: ['Net.Core'] }), {
    message: 'sysctl "Net.Core" must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?\\.)*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]',
  });
});

t.test('a handler chain as the kubelet builds it: sysctls before predicates', async (t) => {
  const node = makeNode({ allocatable: { cpu: '1', memory: '1Gi', pods: '110' } });
  const handlers = [new SysctlAllowlistAdmitHandler(), predicate(node)];
  const pod = makePod('p', { containers: [{ cpu: '2' }], sysctls: ['kernel.msgmax'] });
  t.equal(admitPod(handlers, { pod, otherPods: [] }).reason, 'SysctlForbidden');
  t.equal(admitPod(handlers, { pod: makePod('p', { containers: [{ cpu: '2' }] }), otherPods: [] }).reason, 'OutOfcpu');
  t.same(admitPod(handlers, { pod: makePod('p', { containers: [{ cpu: '1' }] }), otherPods: [] }), { admit: true });
});
