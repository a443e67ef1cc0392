// tools/test-apiserver (the fast stand-in) against the real kube-apiserver v1.20.2: the same requests the kubelet
// makes, sent to both, must get the same answers. Where they differ, the real server is right and the stand-in is
// fixed; the only differences allowed are the ones listed here, each for a reason.
import t from 'tap';
import { startTestApiServer } from '@kubelet-ts/test-apiserver';
import { adminWireServer, ensureCluster, kubeletRequests, watchFromTooOld, wire, type Outcome } from '../src/index.js';
import { customResourceTooOld } from '../src/differential.js';

type Json = Record<string, any>;

const cluster = await ensureCluster();
const real = adminWireServer(cluster);
// A short history, so that resourceVersion 1 is too old for a watch there too.
const standIn = await startTestApiServer({ maxHistory: 20, bookmarkIntervalMs: 0 });
t.teardown(() => standIn.close());

const suffix = Math.random().toString(36).slice(2, 7);
const fromReal = await kubeletRequests(real, suffix, { waitForServiceAccount: true });
const fromStandIn = await kubeletRequests({ url: standIn.url }, suffix, { waitForServiceAccount: false });
for (let i = 0; i < 25; i++) await wire({ url: standIn.url }, 'POST', '/api/v1/namespaces', { metadata: { name: `history-${i}` } });
// The real server's pod watch cache may still hold version 1 when the cluster is new: a collection made for the run
// has a watch cache that starts after it, as stand-in-vs-real does.
const tooOld = await customResourceTooOld(real, suffix);
try {
  fromReal.watchTooOld = await watchFromTooOld(real, tooOld.resourceVersion, tooOld.path);
} finally {
  await tooOld.cleanup();
}
fromStandIn.watchTooOld = await watchFromTooOld({ url: standIn.url }, '1');

/** Intended differences, applied to the stand-in's outcome before comparing. */
const intended: Record<string, { why: string; adjust: (standIn: Outcome, real: Outcome) => Outcome }> = {
  createPod: {
    why: 'pods have metadata.generation since Kubernetes 1.33 (PodObservedGenerationTracking); 1.20 has none',
    adjust: (o) => {
      const copy = structuredClone(o);
      delete copy.object?.metadata?.generation;
      return copy;
    },
  },
  patchPodStatus: {
    why: 'status.hostIPs arrived in Kubernetes 1.28: a 1.20 server drops it, the stand-in keeps fields newer than 1.20 on purpose',
    adjust: (o) => {
      const copy = structuredClone(o);
      delete copy.status?.hostIPs;
      return copy;
    },
  },
  renewLeaseShortMicroTime: {
    why: 'both refuse a MicroTime without six fractional digits with 400 BadRequest; the real message goes on with json-iterator decoder details',
    adjust: (o, r) => ({ ...o, message: r.message.startsWith(o.message.split(': parsing time')[0]) ? r.message : o.message }),
  },
};

for (const key of Object.keys(fromReal)) {
  t.test(key, async (t) => {
    const exception = intended[key];
    const standInOutcome = exception ? exception.adjust(fromStandIn[key], fromReal[key]) : fromStandIn[key];
    t.same(standInOutcome, fromReal[key], exception ? `the same, but for: ${exception.why}` : 'the stand-in answers as kube-apiserver v1.20.2 does');
  });
}

t.test('what the kubelet gets from the real server', async (t) => {
  const pod: Json = fromReal.createPod.object;
  t.equal(pod.spec.serviceAccountName, 'default', 'ServiceAccount admission');
  t.match(pod.spec.volumes[0].name, /^default-token-/, 'the token secret volume (1.20 style; 1.21+ servers project kube-api-access-*)');
  t.same(pod.spec.containers[0].volumeMounts[0].mountPath, '/var/run/secrets/kubernetes.io/serviceaccount');
  t.equal(pod.spec.tolerations.length, 2, 'DefaultTolerationSeconds');
  t.same(fromReal.createNode.object.spec.taints, [{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }], 'TaintNodesByCondition');
  t.equal(fromReal.watchTooOld.code, 410, 'a watch from too old a version: HTTP 200 and an ERROR event with a 410 Status');
  t.equal(fromReal.renewLease.renewTime, '2026-11-24T01:00:10.500000Z', 'MicroTime on the wire: six fractional digits');
});
