// The stand-in API server (tools/test-apiserver) against the real kube-apiserver v1.20.2: the REST requests the
// kubelet makes (node registration, node status and lease, the pod list/watch by node, pod status patches, mirror
// pods, the final delete, events) and the mistakes it must survive (stale versions, uid preconditions, a watch
// from too old a version), sent to one server at the wire level and reduced to outcomes that two servers can be
// compared on. The test (test/stand-in-vs-real.test.ts) sends them to both and holds the list of intended
// differences.
import { readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';

type Json = any;

/** An API server as the kubelet reaches it: http(s) base URL, bearer token, CA file for https. */
export interface Endpoint {
  url: string;
  token?: string;
  caFile?: string;
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as received. */
  text: string;
  /** The body parsed as JSON, or the text when it is not JSON. */
  body: Json;
}

const REQUEST_TIMEOUT_MS = 30_000;

function transport(endpoint: Endpoint, path: string) {
  const url = new URL(path, endpoint.url);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const ca = endpoint.caFile ? readFileSync(endpoint.caFile) : undefined;
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (endpoint.token) headers.Authorization = `Bearer ${endpoint.token}`;
  return { url, send, ca, headers };
}

function parse(text: string): Json {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** One request: JSON body (sent with `contentType`), the answer's status, headers and body. */
export async function send(endpoint: Endpoint, method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<Reply> {
  const { url, send: sendRequest, ca, headers } = transport(endpoint, path);
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  if (payload !== undefined) {
    headers['Content-Type'] = contentType;
    headers['Content-Length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = sendRequest(url, { method, headers, ca, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parse(text) });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

export interface WatchEvent {
  type: string;
  object: Json;
}

export interface WatchResult {
  status: number;
  contentType: string;
  events: WatchEvent[];
  /** The server ended the stream (rather than the reader stopping it). */
  ended: boolean;
  /** What a non-200 answer carried. */
  body?: Json;
}

export interface OpenWatch {
  /** Resolves once the response headers arrived (the watch is registered on the server). */
  started: Promise<void>;
  /** Resolves when `until` is satisfied, the server ends the stream, or `timeoutMs` passes. */
  result: Promise<WatchResult>;
}

/** Opens a watch and reads newline-delimited events until `until(events)` is true or the server ends the stream. */
export function openWatch(endpoint: Endpoint, path: string, until: (events: WatchEvent[]) => boolean = () => false, timeoutMs = 20_000): OpenWatch {
  const { url, send: sendRequest, ca, headers } = transport(endpoint, path);
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const result = new Promise<WatchResult>((resolve, reject) => {
    const out: WatchResult = { status: 0, contentType: '', events: [], ended: false };
    let buffered = '';
    let done = false;
    const finish = (ended: boolean) => {
      if (done) return;
      done = true;
      out.ended = ended;
      clearTimeout(timer);
      markStarted();
      req.destroy();
      resolve(out);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    const req = sendRequest(url, { method: 'GET', headers, ca }, (res) => {
      out.status = res.statusCode ?? 0;
      out.contentType = String(res.headers['content-type'] ?? '');
      markStarted();
      res.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        if (out.status !== 200) return;
        let newline: number;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line) out.events.push(JSON.parse(line) as WatchEvent);
          if (until(out.events)) return finish(false);
        }
      });
      res.on('end', () => {
        if (out.status !== 200) out.body = parse(buffered);
        else if (buffered.trim()) out.events.push(parse(buffered.trim()) as WatchEvent);
        finish(true);
      });
      res.on('error', () => finish(true));
    });
    req.on('error', (error) => {
      if (done) return;
      clearTimeout(timer);
      done = true;
      markStarted();
      reject(error);
    });
    req.end();
  });
  return { started, result };
}

// ---------------------------------------------------------------------------------------------------------------
// Normalization

/** Every time the sequence sends lies in this year, so the server's own times (creation, deletion) can be told apart. */
export const SENT_YEAR = '2030';
const at = (time: string) => `${SENT_YEAR}-01-02T${time}Z`;

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/**
 * Makes outcomes of two servers (or two runs) comparable: uids become the names they were registered under
 * (`<pod-uid>`), other uids `<uid>`; resourceVersions `<rv>`; times the server chose `<time>` (whole seconds, UTC),
 * `<microtime>` (six fractional digits) or `<time:VALUE>` for any other shape, while the times the sequence sent
 * (year SENT_YEAR) stay as they are, so their wire form is compared; the run's names become `<ns>`, `<node>`;
 * generated name suffixes `<id>`; resourceVersions in precondition messages `<rv>`.
 */
export class Normalizer {
  private readonly uids = new Map<string, string>();
  private readonly names: Array<[string, string]>;

  constructor(names: Record<string, string>) {
    // Longest first, so that a name containing another is replaced whole.
    this.names = Object.entries(names).sort((a, b) => b[0].length - a[0].length);
  }

  /** Registers a uid under a name: it is shown as `<name-uid>`. */
  uid(uid: string | undefined, name: string): void {
    if (uid) this.uids.set(uid, `<${name}-uid>`);
  }

  text(value: string): string {
    let out = value.replace(UUID, (uid) => this.uids.get(uid) ?? '<uid>');
    for (const [name, placeholder] of this.names) out = out.split(name).join(placeholder);
    return out.replace(/-token-[a-z0-9]{5}\b/g, '-token-<id>').replace(/ResourceVersion in (the precondition|record) \(\d+\)/g, 'ResourceVersion in $1 (<rv>)');
  }

  time(value: string): string {
    if (value.startsWith(SENT_YEAR)) return value;
    if (/^[^.]+Z$/.test(value)) return '<time>';
    if (/\.\d{6}Z$/.test(value)) return '<microtime>';
    return `<time:${value}>`;
  }

  value(value: unknown, key = ''): Json {
    if (Array.isArray(value)) return value.map((v) => this.value(v));
    if (value && typeof value === 'object') {
      const out: Record<string, Json> = {};
      for (const [k, v] of Object.entries(value)) out[k] = this.value(v, k);
      return out;
    }
    if (typeof value === 'string') {
      if (key === 'resourceVersion') return value === '' ? '' : '<rv>';
      if (RFC3339.test(value)) return this.time(value);
      return this.text(value);
    }
    return value;
  }
}

/** A reply as compared: the HTTP status and the normalized body. */
export interface Outcome {
  code: number;
  body?: Json;
  [more: string]: Json;
}

// ---------------------------------------------------------------------------------------------------------------
// The sequence

export interface SequenceOptions {
  /** Makes the run's names unique: namespace `kdiff-<suffix>`, node `kdiff-node-<suffix>`. */
  suffix: string;
  /**
   * Waits for the namespace's `default` service account to have its token secret before pods are created (a real
   * cluster's controller-manager makes it shortly after the namespace; ServiceAccount admission refuses pods until
   * the service account exists).
   */
  waitForServiceAccount: boolean;
  /**
   * Makes a watch from an old resourceVersion too old for the server and returns the collection to watch with the
   * version to watch from (the stand-in: compact its history; the real server: a custom resource, whose watch cache
   * starts at the version the resource was created at, just as every cache does after an API server restart).
   */
  makeTooOld: () => Promise<{ path: string; resourceVersion: string }>;
}

const SMP = 'application/strategic-merge-patch+json';
const MERGE = 'application/merge-patch+json';
const WRONG_UID = '00000000-0000-4000-8000-000000000000';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The Node the kubelet registers (node-status's nodeToWire: nulls, empty lists and maps left out). */
export function registeredNode(node: string): Json {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: node,
      labels: {
        'beta.kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': node,
        'kubernetes.io/os': 'linux',
      },
      annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
    },
    spec: {},
    status: {
      capacity: { cpu: '2', 'ephemeral-storage': '61255492Ki', memory: '24576Mi', pods: '110' },
      allocatable: { cpu: '2', 'ephemeral-storage': '56453061334', memory: '24476Mi', pods: '110' },
      conditions: [
        { type: 'MemoryPressure', status: 'False', lastHeartbeatTime: at('00:00:00'), lastTransitionTime: at('00:00:00'), reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
        { type: 'DiskPressure', status: 'False', lastHeartbeatTime: at('00:00:00'), lastTransitionTime: at('00:00:00'), reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
        { type: 'PIDPressure', status: 'False', lastHeartbeatTime: at('00:00:00'), lastTransitionTime: at('00:00:00'), reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
        { type: 'Ready', status: 'False', lastHeartbeatTime: at('00:00:00'), lastTransitionTime: at('00:00:00'), reason: 'KubeletNotReady', message: 'container runtime status check may not have completed yet' },
      ],
      addresses: [
        { type: 'InternalIP', address: '192.0.2.10' },
        { type: 'Hostname', address: node },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: 'f00d',
        systemUUID: 'f00d-uuid',
        bootID: 'b007',
        kernelVersion: '6.1.0',
        osImage: 'Debian GNU/Linux 12 (bookworm)',
        containerRuntimeVersion: 'containerd://1.6.20',
        kubeletVersion: 'v1.20.2',
        kubeProxyVersion: 'v1.20.2',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
    },
  };
}

const NODE_CONDITION_ORDER = [{ type: 'MemoryPressure' }, { type: 'DiskPressure' }, { type: 'PIDPressure' }, { type: 'Ready' }];

/** The node status patch of a heartbeat (CreateTwoWayMergePatch of the last and the new status): new times, images. */
export function heartbeatNodePatch(): Json {
  return {
    status: {
      '$setElementOrder/conditions': NODE_CONDITION_ORDER,
      conditions: NODE_CONDITION_ORDER.map(({ type }) => ({ lastHeartbeatTime: at('00:00:10'), type })),
      images: [{ names: ['localhost/kubelet-ts/busybox@sha256:0123', 'localhost/kubelet-ts/busybox:1'], sizeBytes: 1234567 }],
    },
  };
}

/** The node status patch of the heartbeat that turns the node Ready. */
export function readyNodePatch(): Json {
  return {
    status: {
      '$setElementOrder/conditions': NODE_CONDITION_ORDER,
      conditions: [
        ...NODE_CONDITION_ORDER.slice(0, 3).map(({ type }) => ({ lastHeartbeatTime: at('00:00:20'), type })),
        { lastHeartbeatTime: at('00:00:20'), lastTransitionTime: at('00:00:20'), message: 'kubelet is posting ready status', reason: 'KubeletReady', status: 'True', type: 'Ready' },
      ],
    },
  };
}

/** A pod as a user writes it, with the fields whose defaults the kubelet depends on. */
export function userPod(name: string, node: string | undefined, extra: Json = {}): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: name } },
    spec: {
      ...(node ? { nodeName: node } : {}),
      initContainers: [{ name: 'init', image: 'localhost/kubelet-ts/busybox:1', command: ['true'] }],
      containers: [
        {
          name: 'app',
          image: 'localhost/kubelet-ts/busybox',
          command: ['sh', '-c', 'sleep 3600'],
          ports: [{ containerPort: 8080 }],
          env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
          // Quantities in other than canonical form: 0.1 is 100m, 0.0625Gi is 64Mi.
          resources: { limits: { cpu: '0.1', memory: '0.0625Gi' }, requests: { 'ephemeral-storage': '1000Mi' } },
          readinessProbe: { httpGet: { port: 8080 } },
          volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
        },
      ],
      volumes: [{ name: 'cache', emptyDir: {} }, { name: 'config', configMap: { name: 'settings' } }],
      ...extra,
    },
  };
}

/** The kubelet's mirror pod of a static pod: the file source's defaults, the mirror annotation, a Node owner. */
export function mirrorPod(name: string, node: string, nodeUid: string): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${name}-${node}`,
      annotations: { 'kubernetes.io/config.hash': 'c0ffee', 'kubernetes.io/config.mirror': 'c0ffee', 'kubernetes.io/config.seen': at('00:00:00.000000000'), 'kubernetes.io/config.source': 'file' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: nodeUid, controller: true }],
    },
    spec: {
      nodeName: node,
      hostNetwork: true,
      containers: [
        {
          name: 'web',
          image: 'localhost/kubelet-ts/busybox:1',
          command: ['httpd', '-f', '-p', '18080'],
          ports: [{ containerPort: 18080 }],
          resources: {},
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      securityContext: {},
      schedulerName: 'default-scheduler',
      tolerations: [{ operator: 'Exists', effect: 'NoExecute' }],
      enableServiceLinks: true,
    },
  };
}

/** The status the status manager generates for the running pod (podStatusToJson: nulls and empty lists dropped). */
export function runningPodStatus(withHostIPs: boolean): Json {
  return {
    phase: 'Running',
    conditions: [
      { type: 'Initialized', status: 'True', lastTransitionTime: at('00:00:01') },
      { type: 'Ready', status: 'True', lastTransitionTime: at('00:00:03') },
      { type: 'ContainersReady', status: 'True', lastTransitionTime: at('00:00:03') },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: at('00:00:00') },
    ],
    hostIP: '192.0.2.10',
    ...(withHostIPs ? { hostIPs: [{ ip: '192.0.2.10' }] } : {}),
    podIP: '10.88.0.5',
    podIPs: [{ ip: '10.88.0.5' }],
    startTime: at('00:00:00'),
    initContainerStatuses: [
      {
        name: 'init',
        state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: at('00:00:01'), finishedAt: at('00:00:01'), containerID: 'containerd://init0' } },
        lastState: {},
        ready: true,
        restartCount: 0,
        image: 'localhost/kubelet-ts/busybox:1',
        imageID: 'sha256:0123',
        containerID: 'containerd://init0',
      },
    ],
    containerStatuses: [
      {
        name: 'app',
        state: { running: { startedAt: at('00:00:02') } },
        lastState: {},
        ready: true,
        restartCount: 0,
        image: 'localhost/kubelet-ts/busybox:latest',
        imageID: 'sha256:0123',
        containerID: 'containerd://app0',
        started: true,
      },
    ],
  };
}

/** A core/v1 Event as the kubelet's recorder posts it. */
export function kubeletEvent(namespace: string, node: string, pod: { name: string; uid: string }): Json {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${pod.name}.16a0f00dcafe0000`, namespace },
    involvedObject: { kind: 'Pod', namespace, name: pod.name, uid: pod.uid, apiVersion: 'v1', resourceVersion: '1', fieldPath: 'spec.containers{app}' },
    reason: 'Started',
    message: 'Started container app',
    source: { component: 'kubelet', host: node },
    firstTimestamp: at('00:00:02'),
    lastTimestamp: at('00:00:02'),
    count: 1,
    type: 'Normal',
    reportingComponent: 'kubelet',
    reportingInstance: node,
  };
}

/**
 * For the real server: a custom resource made for the run. Its watch cache starts at the version it was created at,
 * as every watch cache does when an API server starts, so a watch from version 1 is too old there. Returns the
 * collection to watch and a clean-up.
 */
export async function customResourceTooOld(endpoint: Endpoint, suffix: string): Promise<{ path: string; resourceVersion: string; cleanup: () => Promise<void> }> {
  const group = 'kdiff.kubelet-ts.io';
  const plural = `widgets${suffix}`;
  const name = `${plural}.${group}`;
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural, singular: `widget${suffix}`, kind: `Widget${suffix}`, listKind: `Widget${suffix}List` },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  };
  const created = await send(endpoint, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
  if (created.status !== 201) throw new Error(`creating ${name}: HTTP ${created.status} ${created.text}`);
  const cleanup = async () => {
    await send(endpoint, 'DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`).catch(() => undefined);
  };
  const path = `/apis/${group}/v1/${plural}`;
  const deadline = Date.now() + 30_000;
  // Served once established and its handler is installed.
  while ((await send(endpoint, 'GET', path)).status !== 200) {
    if (Date.now() > deadline) {
      await cleanup();
      throw new Error(`${name} was not served within 30 s`);
    }
    await sleep(100);
  }
  return { path, resourceVersion: '1', cleanup };
}

/**
 * Sends the kubelet's requests to one server and returns each one's outcome, normalized. The keys name the steps;
 * the same keys come back from every server.
 */
export async function runSequence(endpoint: Endpoint, options: SequenceOptions): Promise<Record<string, Outcome>> {
  const ns = `kdiff-${options.suffix}`;
  const node = `kdiff-node-${options.suffix}`;
  const norm = new Normalizer({ [ns]: '<ns>', [node]: '<node>' });
  const out: Record<string, Outcome> = {};
  const call = (method: string, path: string, body?: unknown, contentType?: string) => send(endpoint, method, path, body, contentType);
  // Normalized at the end, once every uid is known.
  const outcome = (reply: Reply): Outcome => ({ code: reply.status, body: reply.body });
  const record = async (step: string, method: string, path: string, body?: unknown, contentType?: string): Promise<Reply> => {
    const reply = await call(method, path, body, contentType);
    out[step] = outcome(reply);
    return reply;
  };
  const pods = `/api/v1/namespaces/${ns}/pods`;
  const leases = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';
  const events = `/api/v1/namespaces/${ns}/events`;
  const nodeFieldSelector = `fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`;

  try {
    // ---- The namespace (a user's; the kubelet's objects live in it)
    await record('createNamespace', 'POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    if (options.waitForServiceAccount) {
      const deadline = Date.now() + 60_000;
      while (!((await call('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).body?.secrets?.length > 0)) {
        if (Date.now() > deadline) throw new Error(`the default service account of ${ns} got no token secret within 60 s`);
        await sleep(200);
      }
    }

    // ---- Node registration (node-status: registerWithAPIServer) and heartbeats. The Ready heartbeat comes last: on
    // a real cluster the node lifecycle controller then changes the node's taints.
    const nodeCreated = await record('registerNode', 'POST', '/api/v1/nodes', registeredNode(node));
    const nodeUid: string = nodeCreated.body?.metadata?.uid ?? '';
    norm.uid(nodeUid, 'node');
    // A kubelet re-registering an existing node gets AlreadyExists, then reads the node.
    await record('registerNodeAgain', 'POST', '/api/v1/nodes', registeredNode(node));
    await record('getNode', 'GET', `/api/v1/nodes/${node}`);
    // Labels and annotations the kubelet reconciles go to the main resource.
    await record('patchNodeMetadata', 'PATCH', `/api/v1/nodes/${node}`, { metadata: { labels: { 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' } } }, SMP);
    await record('patchNodeStatusHeartbeat', 'PATCH', `/api/v1/nodes/${node}/status`, heartbeatNodePatch(), SMP);
    // Nothing changed: the kubelet still sends an (empty) status patch. No write happens: the resourceVersion stays.
    // (Controllers of a real cluster may write the node meanwhile: the answer is taken from two patches in a row.)
    let unchanged = false;
    for (let attempt = 0; attempt < 3 && !unchanged; attempt++) {
      const first = await call('PATCH', `/api/v1/nodes/${node}/status`, {}, SMP);
      const second = await record('patchNodeStatusEmpty', 'PATCH', `/api/v1/nodes/${node}/status`, {}, SMP);
      unchanged = first.body?.metadata?.resourceVersion === second.body?.metadata?.resourceVersion;
    }
    out.patchNodeStatusEmpty.resourceVersionUnchanged = unchanged;
    // Metadata sent to the status subresource is written too (only the spec is kept).
    await record('patchNodeStatusWithLabels', 'PATCH', `/api/v1/nodes/${node}/status`, { metadata: { labels: { 'sent-to-status': 'yes' } }, status: { phase: 'Running' } }, SMP);
    await record('patchNodeStatusReady', 'PATCH', `/api/v1/nodes/${node}/status`, readyNodePatch(), SMP);
    await record('listNodesBadFieldSelector', 'GET', '/api/v1/nodes?fieldSelector=spec.bogus%3Dx');

    // ---- The node lease (node-status: NodeLeaseController)
    const lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: node, namespace: 'kube-node-lease', ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: nodeUid }] },
      spec: { holderIdentity: node, leaseDurationSeconds: 40, renewTime: at('00:00:00.123456') },
    };
    await record('getLeaseMissing', 'GET', `${leases}/${node}`);
    const leaseCreated = await record('createLease', 'POST', leases, lease);
    const renew = (renewTime: string, base: Json = leaseCreated.body) => ({ ...base, spec: { ...base?.spec, renewTime } });
    const renewed = await record('renewLease', 'PUT', `${leases}/${node}`, renew(at('00:00:10.500000')));
    out.renewLease.renewTimeOnTheWire = /"renewTime":"([^"]*)"/.exec(renewed.text)?.[1];
    // A renewal from the copy before the last one: 409, the kubelet re-reads the lease.
    await record('renewLeaseStale', 'PUT', `${leases}/${node}`, renew(at('00:00:20.000000')));
    // client-node sends a Date as toISOString() (three fractional digits): a MicroTime must have six.
    await record('renewLeaseMilliseconds', 'PUT', `${leases}/${node}`, renew(at('00:00:20.500'), renewed.body));
    await record('patchLeaseMilliseconds', 'PATCH', `${leases}/${node}`, { spec: { renewTime: at('00:00:20.500'), leaseDurationSeconds: 40 } }, SMP);
    await record('listLeasesBadFieldSelector', 'GET', `${leases}?fieldSelector=spec.holderIdentity%3D${node}`);

    // ---- Pods: what defaults and admission add to the pods the kubelet receives
    const created = await record('createPod', 'POST', pods, userPod('web', node));
    const podUid: string = created.body?.metadata?.uid ?? '';
    norm.uid(podUid, 'pod');
    await record('getPod', 'GET', `${pods}/web`);
    await record('createPodAgain', 'POST', pods, userPod('web', node));
    await record('createPodWithoutContainers', 'POST', pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'empty' }, spec: { containers: [] } });
    await record('createPodBadName', 'POST', pods, userPod('Bad_Name', node));
    await record('getMissingPod', 'GET', `${pods}/missing`);
    const sidecar = await record(
      'createPodWithSidecar',
      'POST',
      pods,
      userPod('sidecar', node, { initContainers: [{ name: 'log', image: 'localhost/kubelet-ts/busybox:1', restartPolicy: 'Always' }] }),
    );
    norm.uid(sidecar.body?.metadata?.uid, 'sidecar');
    const mirror = await record('createMirrorPod', 'POST', pods, mirrorPod('static-web', node, nodeUid));
    norm.uid(mirror.body?.metadata?.uid, 'mirror');
    const pending = await record('createUnscheduledPod', 'POST', pods, userPod('pending', undefined, { schedulerName: 'kdiff-no-such-scheduler' }));
    norm.uid(pending.body?.metadata?.uid, 'pending');

    // ---- The pod source: LIST by spec.nodeName, then WATCH from the list's version
    const listed = await record('listPodsOfNode', 'GET', `/api/v1/pods?${nodeFieldSelector}`);
    // From the watch cache: the same pods, in no particular order.
    const cached = await call('GET', `/api/v1/pods?${nodeFieldSelector}&resourceVersion=0`);
    cached.body?.items?.sort((a: Json, b: Json) => String(a.metadata?.name).localeCompare(String(b.metadata?.name)));
    out.listPodsOfNodeFromCache = outcome(cached);
    // Old v1 clients select a pod's node with spec.host.
    await record('listPodsByHost', 'GET', `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.host=${node}`)}`);
    await record('listPodsByPodIPs', 'GET', `/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent('status.podIPs=')}`);
    await record('listPodsByHostNetwork', 'GET', `/api/v1/pods?fieldSelector=${encodeURIComponent('spec.hostNetwork=true')}&${nodeFieldSelector}`);
    await record('listPodsBadFieldSelector', 'GET', `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${node},spec.bogus=x`)}`);
    const listRv: string = listed.body?.metadata?.resourceVersion ?? '';

    // A watch from the list's version sees the status patch as MODIFIED.
    const watching = openWatch(endpoint, `/api/v1/pods?watch=true&${nodeFieldSelector}&resourceVersion=${listRv}&allowWatchBookmarks=true&timeoutSeconds=60`, (evs) => evs.some((e) => e.type === 'MODIFIED'));
    await watching.started;

    // ---- Pod status (status-manager: statusutil.PatchPodStatus: {metadata: {uid}, status: <two-way patch>})
    const firstPatch = { metadata: { uid: podUid }, status: { ...runningPodStatus(true), '$setElementOrder/conditions': [{ type: 'Initialized' }, { type: 'Ready' }, { type: 'ContainersReady' }, { type: 'PodScheduled' }] } };
    await record('patchPodStatus', 'PATCH', `${pods}/web/status`, firstPatch, SMP);
    const watched = await watching.result;
    out.watchPodsOfNode = { code: watched.status, contentType: watched.contentType, events: watched.events };
    await record('getPodAfterStatusPatch', 'GET', `${pods}/web`);
    // Readiness lost: one condition changes, the container statuses (atomic) are sent whole.
    const readiness = {
      metadata: { uid: podUid },
      status: {
        '$setElementOrder/conditions': [{ type: 'Initialized' }, { type: 'Ready' }, { type: 'ContainersReady' }, { type: 'PodScheduled' }],
        conditions: [
          { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [app]', lastTransitionTime: at('00:01:00') },
          { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [app]', lastTransitionTime: at('00:01:00') },
        ],
        containerStatuses: [{ ...runningPodStatus(false).containerStatuses[0], ready: false }],
      },
    };
    await record('patchPodStatusNotReady', 'PATCH', `${pods}/web/status`, readiness, SMP);
    // A patch computed for another pod of the same name (deleted and recreated): the uid may not change.
    await record('patchPodStatusOtherUid', 'PATCH', `${pods}/web/status`, { metadata: { uid: WRONG_UID }, status: { phase: 'Failed' } }, SMP);
    // A patch carrying the resourceVersion it was computed against, now stale.
    await record('patchPodStatusStale', 'PATCH', `${pods}/web/status`, { metadata: { uid: podUid, resourceVersion: listRv }, status: { phase: 'Failed' } }, SMP);
    // Spec changes through the status subresource are ignored.
    await record('patchPodStatusSpec', 'PATCH', `${pods}/web/status`, { metadata: { uid: podUid }, spec: { activeDeadlineSeconds: 5 }, status: { message: 'spec ignored' } }, SMP);
    // A merge patch (what kubectl and controllers send) of a label, through the main resource.
    await record('patchPodLabels', 'PATCH', `${pods}/web`, { metadata: { labels: { touched: 'yes' } } }, MERGE);
    // Spec changes the update validation forbids (v1.20: terminationGracePeriodSeconds too), and one it allows.
    await record('patchPodSpecForbidden', 'PATCH', `${pods}/web`, { spec: { restartPolicy: 'Never' } }, SMP);
    await record('patchPodGracePeriod', 'PATCH', `${pods}/web`, { spec: { terminationGracePeriodSeconds: 10 } }, SMP);
    // DefaultTolerationSeconds admits updates too: the default tolerations come back, nothing changes.
    await record('patchPodTolerationsRemoved', 'PATCH', `${pods}/web`, { spec: { tolerations: [] } }, MERGE);
    // Other tolerations may not be removed.
    await record('patchMirrorPodTolerationsRemoved', 'PATCH', `${pods}/static-web-${node}`, { spec: { tolerations: [] } }, MERGE);
    await record('patchPodImage', 'PATCH', `${pods}/web`, { spec: { containers: [{ name: 'app', image: 'localhost/kubelet-ts/busybox:2' }] } }, SMP);
    // PUT with a uid of another object: a storage precondition.
    const current = (await call('GET', `${pods}/web`)).body;
    await record('putPodOtherUid', 'PUT', `${pods}/web`, { ...current, metadata: { ...current?.metadata, uid: WRONG_UID } });

    // ---- Events (status-manager: the kubelet's recorder): create, then the count PATCH of a repeat
    const event = kubeletEvent(ns, node, { name: 'web', uid: podUid });
    await record('createEvent', 'POST', events, event);
    await record('createEventAgain', 'POST', events, event);
    await record('patchEventCount', 'PATCH', `${events}/${event.metadata.name}`, { count: 2, lastTimestamp: at('00:00:30'), message: 'Started container app' }, SMP);
    await record('patchMissingEvent', 'PATCH', `${events}/web.0000000000000000`, { count: 2, lastTimestamp: at('00:00:30'), message: 'Started container app' }, SMP);

    // ---- Deletion: a user's graceful delete, the kubelet's final delete with a uid precondition. A watch of the node's
    // pods sees each step.
    const beforeDeletion = (await call('GET', `/api/v1/pods?${nodeFieldSelector}`)).body?.metadata?.resourceVersion;
    const deletions = openWatch(endpoint, `/api/v1/pods?watch=true&${nodeFieldSelector}&resourceVersion=${beforeDeletion}`, (evs) => evs.filter((e) => e.type === 'DELETED').length >= 2);
    await deletions.started;
    await record('deletePodOtherUid', 'DELETE', `${pods}/web`, { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: WRONG_UID } });
    await record('deletePodStaleVersion', 'DELETE', `${pods}/web`, { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: listRv } });
    await record('deletePodGracefully', 'DELETE', `${pods}/web`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 30 });
    await record('deletePodLongerGrace', 'DELETE', `${pods}/web`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 60 });
    await record('patchTerminatingPodStatus', 'PATCH', `${pods}/web/status`, { metadata: { uid: podUid }, status: { phase: 'Succeeded' } }, SMP);
    // A delete without a grace period changes nothing on a pod being deleted, finished or not.
    await record('deletePodWithoutGrace', 'DELETE', `${pods}/web`);
    await record('deletePodFinally', 'DELETE', `${pods}/web`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: podUid } });
    await record('getDeletedPod', 'GET', `${pods}/web`);
    await record('deletePodAgain', 'DELETE', `${pods}/web`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: podUid } });
    // A pod bound to no node goes at once; the mirror pod too, with its uid precondition (deleteMirrorPod).
    await record('deleteUnscheduledPod', 'DELETE', `${pods}/pending`, { apiVersion: 'v1', kind: 'DeleteOptions' });
    await record('deleteMirrorPod', 'DELETE', `${pods}/static-web-${node}`, { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: mirror.body?.metadata?.uid } });
    const deletionEvents = await deletions.result;
    out.watchDeletions = {
      code: deletionEvents.status,
      events: deletionEvents.events.map((e) => ({
        type: e.type,
        name: e.object?.metadata?.name,
        deletionTimestamp: e.object?.metadata?.deletionTimestamp,
        deletionGracePeriodSeconds: e.object?.metadata?.deletionGracePeriodSeconds,
        phase: e.object?.status?.phase,
      })),
    };
    await record('deleteLease', 'DELETE', `${leases}/${node}`);

    // ---- Watches: bookmarks, and a watch from a version the server no longer has
    // The initial ADDED events, a change, then (kube: two seconds before the watch's timeout, when the watch has not
    // seen the latest resourceVersion of pods) a bookmark: an empty Pod. kube promises no bookmark, and now and then
    // sends none: up to three watches are tried.
    let bookmark: WatchResult | undefined;
    for (let attempt = 0; attempt < 3 && !bookmark?.events.some((e) => e.type === 'BOOKMARK'); attempt++) {
      const watch = openWatch(endpoint, `/api/v1/pods?watch=true&${nodeFieldSelector}&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=5`, (evs) => evs.some((e) => e.type === 'BOOKMARK'));
      await watch.started;
      await call('PATCH', `${pods}/sidecar`, { metadata: { labels: { attempt: String(attempt) } } }, MERGE);
      bookmark = await watch.result;
    }
    out.watchBookmark = {
      code: bookmark?.status ?? 0,
      events: bookmark?.events.map((e) => ({ type: e.type, name: e.object?.metadata?.name, labels: e.object?.metadata?.labels })),
      bookmark: bookmark?.events.find((e) => e.type === 'BOOKMARK')?.object,
    };
    const tooOld = await options.makeTooOld();
    const expired = await openWatch(endpoint, `${tooOld.path}?watch=true&resourceVersion=${tooOld.resourceVersion}&allowWatchBookmarks=true`).result;
    out.watchTooOld = {
      code: expired.status,
      contentType: expired.contentType,
      ended: expired.ended,
      events: expired.events.map((e) => ({
        type: e.type,
        object: { ...e.object, message: String(e.object?.message ?? '').replace(/^too old resource version: (\d+) \((\d+)\)$/, (_all, asked: string) => `too old resource version: ${asked === tooOld.resourceVersion ? '<asked>' : asked} (<oldest>)`) },
      })),
    };
  } finally {
    // ---- Clean up. No kubelet runs the pods of the node: they go at once; the namespace takes the rest.
    await call('DELETE', `${pods}?gracePeriodSeconds=0`).catch(() => undefined);
    await call('DELETE', `/api/v1/nodes/${node}`).catch(() => undefined);
    const deleted = await call('DELETE', `/api/v1/namespaces/${ns}`).catch(() => undefined);
    if (deleted) out.deleteNamespace = outcome(deleted);
  }
  return Object.fromEntries(Object.entries(out).map(([step, o]) => [step, norm.value(o) as Outcome]));
}

// ---------------------------------------------------------------------------------------------------------------
// Intended differences

/** What one side holds where an intended difference is: nothing, something, anything, this value, or such values. */
export type Expectation = 'absent' | 'present' | 'any' | { equals: Json } | { satisfies: (value: Json) => boolean };

export interface IntendedDifference {
  /** Why the stand-in differs here on purpose. */
  why: string;
  /** Where, as keys from the outcome down (none: the whole outcome): `*` is any one key or list index, `**` any number of levels. */
  path: string[];
  /** The steps it applies to (default: every step). */
  steps?: RegExp;
  standIn: Expectation;
  real: Expectation;
  /** Instead of leaving the values out of the comparison, compare them as this returns them (e.g. a message's first line). */
  compare?: (value: Json) => Json;
  /** The difference depends on timing (a controller's write): it need not show in every run. */
  sometimes?: boolean;
}

interface Location {
  parent: Json;
  key: string;
}

/** The places in `root` that `path` names and that hold a value. */
export function locate(root: Json, path: string[]): Location[] {
  const out: Location[] = [];
  const walk = (node: Json, i: number): void => {
    if (node === null || typeof node !== 'object' || i >= path.length) return;
    const segment = path[i];
    const keys = Array.isArray(node) ? node.map((_, index) => String(index)) : Object.keys(node);
    if (segment === '**') {
      walk(node, i + 1);
      for (const key of keys) walk(node[key], i);
      return;
    }
    for (const key of segment === '*' ? keys : keys.filter((k) => k === segment)) {
      if (i === path.length - 1) out.push({ parent: node, key });
      else walk(node[key], i + 1);
    }
  };
  walk(root, 0);
  return out;
}

function holds(values: Json[], expectation: Expectation): boolean {
  if (expectation === 'any') return true;
  if (expectation === 'absent') return values.length === 0;
  if (expectation === 'present') return values.length > 0;
  if ('satisfies' in expectation) return values.length > 0 && values.every((v) => expectation.satisfies(v));
  return values.length > 0 && values.every((v) => JSON.stringify(v) === JSON.stringify(expectation.equals));
}

export interface IntendedCheck {
  difference: IntendedDifference;
  /** Both sides hold what the entry says. */
  ok: boolean;
  /** The two sides differed there before the entry was applied. */
  differed: boolean;
  standIn: Json[];
  real: Json[];
}

/**
 * Applies the intended differences to one step's outcomes: checks that each side holds what the entry says, then
 * leaves those values out of the comparison (or rewrites them with `compare`). Returns the outcomes to compare and
 * what each entry found.
 */
export function applyIntended(step: string, standIn: Outcome | undefined, real: Outcome | undefined, differences: IntendedDifference[]): { standIn: Json; real: Json; checks: IntendedCheck[] } {
  // Wrapped, so that a path naming no key names the whole outcome.
  const a = { outcome: structuredClone(standIn) as Json };
  const b = { outcome: structuredClone(real) as Json };
  const checks: IntendedCheck[] = [];
  for (const difference of differences) {
    if (difference.steps && !difference.steps.test(step)) continue;
    const inStandIn = locate(a, ['outcome', ...difference.path]);
    const inReal = locate(b, ['outcome', ...difference.path]);
    if (inStandIn.length === 0 && inReal.length === 0) continue;
    const standInValues = inStandIn.map((l) => l.parent[l.key]);
    const realValues = inReal.map((l) => l.parent[l.key]);
    checks.push({
      difference,
      ok: holds(standInValues, difference.standIn) && holds(realValues, difference.real),
      differed: JSON.stringify(standInValues) !== JSON.stringify(realValues),
      standIn: standInValues,
      real: realValues,
    });
    for (const { parent, key } of [...inStandIn, ...inReal].reverse()) {
      if (difference.compare) parent[key] = difference.compare(parent[key]);
      else if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[key];
    }
  }
  return { standIn: a.outcome, real: b.outcome, checks };
}
