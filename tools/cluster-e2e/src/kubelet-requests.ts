import { wire, watchEvents, type WireResponse, type WireServer } from './wire.js';

type Json = Record<string, any>;

/** What one request got back, reduced to what a client acts on. */
export type Outcome = Json;

const STRATEGIC = 'application/strategic-merge-patch+json';
const WRONG_UID = '00000000-0000-0000-0000-000000000000';

/** A Status error as a client reads it: code, reason, message (names and numbers substituted), details. */
function statusOf(response: WireResponse, replace: (text: string) => string): Outcome {
  const body = response.body ?? {};
  return {
    httpStatus: response.status,
    kind: body.kind,
    ...(body.kind === 'Status'
      ? {
          status: body.status,
          code: body.code,
          reason: body.reason,
          message: replace(String(body.message ?? '')),
          details: body.details ? { name: replace(String(body.details.name ?? '')), group: body.details.group, kind: body.details.kind } : undefined,
        }
      : {}),
  };
}

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** Removes what differs between any two servers or runs: uids, resourceVersions, timestamps, generated names. */
export function normalize(value: unknown, replace: (text: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => normalize(v, replace));
  if (value && typeof value === 'object') {
    const out: Json = {};
    for (const [key, v] of Object.entries(value)) {
      if (['uid', 'resourceVersion', 'managedFields', 'selfLink', 'creationTimestamp'].includes(key)) continue;
      out[key] = normalize(v, replace);
    }
    return out;
  }
  if (typeof value === 'string') {
    if (TIMESTAMP.test(value)) return '<time>';
    return replace(value);
  }
  return value;
}

/**
 * The requests the kubelet makes (node registration and status, the lease, pod list/watch by node, pod status
 * patches, the final delete, events), and the mistakes it must survive (stale versions, uid preconditions, a watch
 * from too old a version), sent to one server. Returns each request's outcome, normalized so that two servers can
 * be compared. `waitForServiceAccount` waits for the namespace's default service account token where a
 * controller-manager makes one.
 */
export async function kubeletRequests(server: WireServer, suffix: string, options: { waitForServiceAccount: boolean }): Promise<Record<string, Outcome>> {
  const ns = `wire-${suffix}`;
  const node = `wire-node-${suffix}`;
  const uids = new Map<string, string>();
  const replace = (text: string) => {
    let out = text;
    for (const [uid, name] of uids) out = out.split(uid).join(`<${name}-uid>`);
    return out
      .split(ns)
      .join('<ns>')
      .split(node)
      .join('<node>')
      .replace(/default-token-[a-z0-9]{5}/g, 'default-token-<id>')
      .replace(/\b\d{2,}\b/g, '<n>');
  };
  const out: Record<string, Outcome> = {};
  const call = (method: string, path: string, body?: unknown, contentType?: string) => wire(server, method, path, body, contentType);

  out.createNamespace = statusOf(await call('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }), replace);
  if (options.waitForServiceAccount) {
    const deadline = Date.now() + 60_000;
    while (!((await call('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).body?.secrets?.length > 0)) {
      if (Date.now() > deadline) throw new Error(`the default service account of ${ns} got no token within 60 s`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  const pods = `/api/v1/namespaces/${ns}/pods`;

  out.getMissingPod = statusOf(await call('GET', `${pods}/missing`), replace);

  // A pod as a user creates it, bound to the node: what defaults and admission add is what the kubelet gets.
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', labels: { app: 'web' } }, spec: { nodeName: node, containers: [{ name: 'app', image: 'localhost/kubelet-ts/busybox:1', command: ['sh'] }] } };
  const created = await call('POST', pods, pod);
  const podUid: string = created.body?.metadata?.uid ?? '';
  uids.set(podUid, 'pod');
  out.createPod = { httpStatus: created.status, object: normalize(created.body, replace) };
  out.createPodAgain = statusOf(await call('POST', pods, pod), replace);
  out.createInvalidPod = statusOf(await call('POST', pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'empty' }, spec: { containers: [] } }), replace);

  const listed = await call('GET', `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`);
  out.listPodsByNode = { httpStatus: listed.status, kind: listed.body?.kind, apiVersion: listed.body?.apiVersion, names: (listed.body?.items ?? []).map((p: Json) => p.metadata?.name), hasResourceVersion: Boolean(listed.body?.metadata?.resourceVersion) };

  // The status manager's patch: a uid precondition and the status it generated.
  const status = {
    phase: 'Running',
    conditions: [
      { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-24T01:00:00Z' },
      { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-24T01:00:01Z' },
      { type: 'ContainersReady', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-24T01:00:01Z' },
    ],
    hostIP: '192.0.2.2',
    hostIPs: [{ ip: '192.0.2.2' }],
    podIP: '10.88.0.5',
    podIPs: [{ ip: '10.88.0.5' }],
    startTime: '2026-11-24T01:00:00Z',
    containerStatuses: [
      {
        name: 'app',
        state: { running: { startedAt: '2026-11-24T01:00:01Z' } },
        lastState: {},
        ready: true,
        restartCount: 0,
        image: 'localhost/kubelet-ts/busybox:1',
        imageID: 'sha256:0123',
        containerID: 'containerd://0123',
        started: true,
      },
    ],
  };
  const patched = await call('PATCH', `${pods}/web/status`, { metadata: { uid: podUid }, status }, STRATEGIC);
  out.patchPodStatus = { httpStatus: patched.status, status: normalize(patched.body?.status, replace) };
  out.patchPodStatusOtherUid = statusOf(await call('PATCH', `${pods}/web/status`, { metadata: { uid: WRONG_UID }, status: { phase: 'Failed' } }, STRATEGIC), replace);

  // Watch from "now", then a change: the event a pod source sees.
  const rv = (await call('GET', `${pods}/web`)).body?.metadata?.resourceVersion;
  const watching = watchEvents(server, `${pods}?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true&timeoutSeconds=30`, 1);
  await new Promise((resolve) => setTimeout(resolve, 300));
  await call('PATCH', `${pods}/web`, { metadata: { labels: { touched: 'yes' } } }, STRATEGIC);
  const watched = await watching;
  out.watchEvent = { httpStatus: watched.status, types: watched.events.map((e) => e.type), kinds: watched.events.map((e) => e.object?.kind), labels: watched.events[0]?.object?.metadata?.labels };

  // An update carrying another uid: a storage precondition (a different message from DELETE's).
  const current = (await call('GET', `${pods}/web`)).body;
  out.putPodOtherUid = statusOf(await call('PUT', `${pods}/web`, { ...current, metadata: { ...current?.metadata, uid: WRONG_UID } }), (text) => replace(text).replace(/Key: \/registry\/pods\/[^,]+/, 'Key: <key>'));

  // Deletion as the kubelet sees and finishes it.
  out.deleteOtherUid = statusOf(await call('DELETE', `${pods}/web`, { preconditions: { uid: WRONG_UID } }), replace);
  const graceful = await call('DELETE', `${pods}/web`, { gracePeriodSeconds: 30 });
  out.deleteGracefully = {
    httpStatus: graceful.status,
    kind: graceful.body?.kind,
    deletionGracePeriodSeconds: graceful.body?.metadata?.deletionGracePeriodSeconds,
    hasDeletionTimestamp: Boolean(graceful.body?.metadata?.deletionTimestamp),
  };
  const final = await call('DELETE', `${pods}/web`, { gracePeriodSeconds: 0, preconditions: { uid: podUid } });
  out.deleteFinally = { httpStatus: final.status, kind: final.body?.kind };
  out.getDeletedPod = statusOf(await call('GET', `${pods}/web`), replace);

  // Node registration and a status update.
  const nodeBody = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: node, labels: { 'kubernetes.io/hostname': node, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' } },
    spec: {},
    status: {
      capacity: { cpu: '2', memory: '24Gi', pods: '110' },
      allocatable: { cpu: '2', memory: '24Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: 'starting', lastHeartbeatTime: '2026-11-24T01:00:00Z', lastTransitionTime: '2026-11-24T01:00:00Z' }],
      addresses: [
        { type: 'InternalIP', address: '192.0.2.2' },
        { type: 'Hostname', address: node },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: { machineID: 'm', systemUUID: 's', bootID: 'b', kernelVersion: 'k', osImage: 'o', containerRuntimeVersion: 'containerd://1.6.20', kubeletVersion: 'v0.1.0', kubeProxyVersion: 'v0.1.0', operatingSystem: 'linux', architecture: 'amd64' },
    },
  };
  const nodeCreated = await call('POST', '/api/v1/nodes', nodeBody);
  uids.set(nodeCreated.body?.metadata?.uid ?? '', 'node');
  out.createNode = { httpStatus: nodeCreated.status, object: normalize(nodeCreated.body, replace) };
  const nodePatched = await call(
    'PATCH',
    `/api/v1/nodes/${node}/status`,
    { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status', lastHeartbeatTime: '2026-11-24T01:00:10Z', lastTransitionTime: '2026-11-24T01:00:10Z' }] } },
    STRATEGIC,
  );
  out.patchNodeStatus = { httpStatus: nodePatched.status, conditions: normalize(nodePatched.body?.status?.conditions, replace) };

  // The node lease: create, renew, and a renewal from a stale copy.
  const leases = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';
  const lease = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: node, ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: nodeCreated.body?.metadata?.uid }] },
    spec: { holderIdentity: node, leaseDurationSeconds: 40, renewTime: '2026-11-24T01:00:00.123456Z' },
  };
  const leaseCreated = await call('POST', leases, lease);
  out.createLease = { httpStatus: leaseCreated.status, renewTime: leaseCreated.body?.spec?.renewTime, ownerKind: leaseCreated.body?.metadata?.ownerReferences?.[0]?.kind };
  // MicroTime has exactly six fractional digits on the wire: anything else is a 400.
  out.renewLeaseShortMicroTime = statusOf(await call('PUT', `${leases}/${node}`, { ...leaseCreated.body, spec: { ...leaseCreated.body?.spec, renewTime: '2026-11-24T01:00:10.5Z' } }), replace);
  const renewed = await call('PUT', `${leases}/${node}`, { ...leaseCreated.body, spec: { ...leaseCreated.body?.spec, renewTime: '2026-11-24T01:00:10.500000Z' } });
  out.renewLease = { httpStatus: renewed.status, renewTime: renewed.body?.spec?.renewTime };
  out.renewLeaseStale = statusOf(await call('PUT', `${leases}/${node}`, { ...leaseCreated.body, spec: { ...leaseCreated.body?.spec, renewTime: '2026-11-24T01:00:20.000000Z' } }), replace);

  // An event, then the count update the recorder sends for a repeat.
  const events = `/api/v1/namespaces/${ns}/events`;
  const event = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'web.1234abcd', namespace: ns },
    involvedObject: { kind: 'Pod', namespace: ns, name: 'web', uid: podUid, apiVersion: 'v1', fieldPath: 'spec.containers{app}' },
    reason: 'Started',
    message: 'Started container app',
    source: { component: 'kubelet', host: node },
    firstTimestamp: '2026-11-24T01:00:01Z',
    lastTimestamp: '2026-11-24T01:00:01Z',
    count: 1,
    type: 'Normal',
    eventTime: null,
    reportingComponent: '',
    reportingInstance: '',
  };
  const eventCreated = await call('POST', events, event);
  out.createEvent = { httpStatus: eventCreated.status, object: normalize(eventCreated.body, replace) };
  const eventPatched = await call('PATCH', `${events}/web.1234abcd`, { count: 2, lastTimestamp: '2026-11-24T01:00:05Z', message: 'Started container app' }, STRATEGIC);
  out.patchEvent = { httpStatus: eventPatched.status, count: eventPatched.body?.count, lastTimestamp: eventPatched.body?.lastTimestamp };

  // Clean up what is cluster-scoped; the namespace takes the rest.
  await call('DELETE', `${leases}/${node}`);
  await call('DELETE', `/api/v1/nodes/${node}`);
  await call('DELETE', `/api/v1/namespaces/${ns}`);
  return out;
}

/** A watch from a resourceVersion the server no longer has: how it says so. */
export async function watchFromTooOld(server: WireServer, resourceVersion: string, collection = '/api/v1/pods'): Promise<Outcome> {
  const watched = await watchEvents(server, `${collection}?watch=true&resourceVersion=${resourceVersion}&allowWatchBookmarks=true`, 1);
  const first = watched.events[0];
  return {
    httpStatus: watched.status,
    type: first?.type,
    kind: first?.object?.kind,
    code: first?.object?.code,
    reason: first?.object?.reason,
    message: String(first?.object?.message ?? '').replace(/\d+/g, '<n>'),
  };
}
