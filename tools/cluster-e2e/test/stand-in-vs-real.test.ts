// The stand-in API server (tools/test-apiserver, which the fast package tests use) against the real kube-apiserver
// v1.20.2 (tools/kube): the REST requests the kubelet makes (src/differential.ts) go to both, and the normalized
// answers must agree. Where they do not, the real server is right and the stand-in is fixed. The only differences
// allowed are listed below, each with its reason; an entry that no longer matches a difference fails the test, so
// the list stays true.
import t from 'tap';
import { startTestApiServer } from '@kubelet-ts/test-apiserver';
import { adminWireServer, ensureCluster } from '../src/index.js';
import { applyIntended, customResourceTooOld, runSequence, type IntendedDifference, type Outcome } from '../src/differential.js';

type Json = any;

/** A message without json-iterator's decoder context: the Go type path before, the byte position after the error. */
const withoutDecoderContext = (message: Json): Json =>
  typeof message === 'string' ? message.replace(/(cannot be handled as a \w+: |patch: Invalid value: )(?:[\w.[\]]+: )*unmarshalerDecoder: /, '$1').replace(/, error found in #\d+ byte of .*$/s, '') : message;

/** The value shown in a 422 on a patch that does not decode: kube shows the patched object as it decoded it. */
const withoutPatchedObject = (message: Json): Json => (typeof message === 'string' ? message.replace(/Invalid value: "\{.*\}": /s, 'Invalid value: <patched object>: ') : message);

const INTENDED: IntendedDifference[] = [
  // ---- Fields and behaviour newer than 1.20, which the stand-in serves on purpose (its users test newer kubelet
  // features); a 1.20 server drops the fields.
  {
    why: 'pods have metadata.generation since Kubernetes 1.33 (PodObservedGenerationTracking), bumped on spec changes and on graceful deletion; 1.20 has none',
    path: ['**', 'metadata', 'generation'],
    standIn: 'present',
    real: 'absent',
  },
  {
    why: 'status.hostIPs arrived in Kubernetes 1.28',
    path: ['**', 'status', 'hostIPs'],
    standIn: { equals: [{ ip: '192.0.2.10' }] },
    real: 'absent',
  },
  {
    why: 'restartable init containers (sidecars: initContainers[].restartPolicy: Always) arrived in Kubernetes 1.28',
    path: ['**', 'initContainers', '*', 'restartPolicy'],
    standIn: { equals: 'Always' },
    real: 'absent',
  },
  {
    why: 'namespaces carry the kubernetes.io/metadata.name label since Kubernetes 1.21',
    path: ['body', 'metadata', 'labels'],
    steps: /Namespace$/,
    standIn: 'present',
    real: 'absent',
  },
  {
    why: 'pods may be selected by spec.hostNetwork in Kubernetes newer than 1.20, which answers 400 "field label not supported"',
    path: [],
    steps: /^listPodsByHostNetwork$/,
    standIn: { satisfies: (o) => o.code === 200 && o.body.items.length === 1 },
    real: { satisfies: (o) => o.code === 400 && o.body.message === 'field label not supported: spec.hostNetwork' },
  },
  // ---- What the stand-in does not implement, with no effect on what the kubelet does.
  {
    why: 'managedFields: the stand-in has no server-side apply, so it tracks no field managers (clients ignore them)',
    path: ['**', 'metadata', 'managedFields'],
    standIn: 'absent',
    real: 'present',
  },
  {
    why: "a real cluster's controller-manager writes nodes: the TTL controller adds this annotation; the stand-in runs no controllers",
    path: ['body', 'metadata', 'annotations', 'node.alpha.kubernetes.io/ttl'],
    standIn: 'absent',
    real: 'any',
    sometimes: true,
  },
  {
    why: "a real cluster's node lifecycle controller taints a NotReady node (not-ready:NoExecute) and untaints a Ready one; the stand-in runs no controllers, its nodes keep the taint admission gave them",
    path: ['body', 'spec', 'taints'],
    steps: /^(getNode|patchNode\w+)$/,
    standIn: { equals: [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }] },
    real: 'any',
    sometimes: true,
  },
  {
    why: "kube follows this message with a Go diff (cmp.Diff) of its internal PodSpec type; the stand-in's lines name the changed fields instead",
    path: ['body', '**', 'message'],
    steps: /^patchPod(SpecForbidden|GracePeriod)$/,
    standIn: 'present',
    real: 'present',
    compare: (message: Json) => (typeof message === 'string' ? message.split('\n')[0] : message),
  },
  {
    why: "a body that does not decode: kube's json-iterator adds the Go type path and the byte position of the error to the message; the stand-in gives the same message without them",
    path: ['body', '**', 'message'],
    steps: /^(renew|patch)LeaseMilliseconds$/,
    standIn: 'present',
    real: 'present',
    compare: (message: Json) => withoutPatchedObject(withoutDecoderContext(message)),
  },
];

const cluster = await ensureCluster();
const real = adminWireServer(cluster);
// No periodic bookmarks: like kube, the stand-in then sends a watch's bookmark two seconds before its timeout.
const standIn = await startTestApiServer({ bookmarkIntervalMs: 0 });
t.teardown(() => standIn.close());

const suffix = Math.random().toString(36).slice(2, 7);
let dropCustomResource: (() => Promise<void>) | undefined;
t.teardown(async () => dropCustomResource?.());

const fromReal = await runSequence(real, {
  suffix,
  waitForServiceAccount: true,
  makeTooOld: async () => {
    const tooOld = await customResourceTooOld(real, suffix);
    dropCustomResource = tooOld.cleanup;
    return tooOld;
  },
});
const fromStandIn = await runSequence(
  { url: standIn.url },
  {
    suffix,
    waitForServiceAccount: false,
    makeTooOld: async () => {
      standIn.compact();
      return { path: '/api/v1/pods', resourceVersion: '1' };
    },
  },
);

const differed = new Set<IntendedDifference>();

t.test('every request gets the same answer from both', async (t) => {
  t.same(Object.keys(fromStandIn), Object.keys(fromReal), 'the same steps ran');
  for (const step of Object.keys(fromReal)) {
    t.test(step, async (t) => {
      const compared = applyIntended(step, fromStandIn[step], fromReal[step], INTENDED);
      for (const check of compared.checks) {
        if (check.differed) differed.add(check.difference);
        t.ok(check.ok, `intended: ${check.difference.why}`, { standIn: check.standIn, real: check.real });
      }
      t.same(compared.standIn, compared.real, 'the stand-in answers as kube-apiserver v1.20.2 does');
    });
  }
});

t.test('each intended difference is still one', async (t) => {
  for (const difference of INTENDED.filter((d) => !d.sometimes)) t.ok(differed.has(difference), difference.why);
});

t.test('what the kubelet relies on, as the real server answers', async (t) => {
  const r: Record<string, Outcome> = fromReal;
  const pod = r.createPod.body;
  t.equal(pod.spec.serviceAccountName, 'default', 'ServiceAccount admission names the service account');
  t.match(pod.spec.volumes.at(-1), { name: 'default-token-<id>', secret: { secretName: 'default-token-<id>', defaultMode: 420 } }, 'and mounts its token secret (1.20; 1.21+ project kube-api-access-*)');
  t.same(
    pod.spec.tolerations.map((x: Json) => x.key),
    ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'],
    'DefaultTolerationSeconds',
  );
  t.match(pod.spec, { restartPolicy: 'Always', dnsPolicy: 'ClusterFirst', terminationGracePeriodSeconds: 30, schedulerName: 'default-scheduler', securityContext: {}, enableServiceLinks: true, priority: 0 });
  t.same(pod.status, { phase: 'Pending', qosClass: 'Burstable' });
  t.same(pod.spec.containers[0].resources, { limits: { cpu: '100m', memory: '64Mi' }, requests: { cpu: '100m', memory: '64Mi', 'ephemeral-storage': '1000Mi' } }, 'quantities in canonical form');
  t.same(r.createMirrorPod.body.spec.serviceAccountName, undefined, 'mirror pods are left alone by ServiceAccount admission');
  t.same(r.registerNode.body.spec.taints, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }], 'TaintNodesByCondition');
  t.equal(r.registerNode.body.status.capacity.memory, '24Gi', '24576Mi comes back as 24Gi');
  t.equal(r.patchPodStatus.body.status.conditions[0].lastProbeTime, null, 'a condition without lastProbeTime comes back with null');
  t.equal(r.renewLease.renewTimeOnTheWire, '2030-01-02T00:00:10.500000Z', 'MicroTime on the wire: six fractional digits');
  t.equal(r.patchNodeStatusEmpty.resourceVersionUnchanged, true, 'an empty status patch writes nothing');
  t.equal(r.patchNodeStatusWithLabels.body.metadata.labels['sent-to-status'], 'yes', 'metadata sent to nodes/status is written');
  t.match(r.deletePodFinally, { code: 200, body: { kind: 'Pod', metadata: { deletionGracePeriodSeconds: 0 } } }, "the kubelet's final delete answers with the pod");
  t.same(
    r.watchDeletions.events.map((e: Json) => `${e.type} ${e.name} ${e.deletionGracePeriodSeconds}`),
    ['MODIFIED web 30', 'MODIFIED web 30', 'MODIFIED web 0', 'DELETED web 0', 'MODIFIED static-web-<node> 0', 'DELETED static-web-<node> 0'],
    'a delete first writes deletionTimestamp and the grace period (MODIFIED), then removes the pod (DELETED)',
  );
  t.match(r.watchTooOld, { code: 200, ended: true, events: [{ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: <asked> (<oldest>)' } }] }, 'a watch from too old a version: HTTP 200, then one ERROR event with a 410 Status');
  t.same(r.watchBookmark.bookmark, { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: '<rv>', creationTimestamp: null }, spec: { containers: null }, status: {} }, 'a bookmark is an empty Pod');
});
