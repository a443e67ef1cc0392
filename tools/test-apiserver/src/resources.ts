/**
 * The resources this server serves, with the parts of their registry strategies (defaulting,
 * create/update preparation, validation, field labels) that clients can observe.
 */
import { admitNode, admitPod, admitPodUpdate, type AdmissionContext } from './admission.js';
import type { FieldError } from './errors.js';
import { fieldValue } from './selectors.js';
import { clone, deepEqual, isObject, type JsonObject } from './patch.js';
import { metaOnlySchema, namespaceSchema, nodeSchema, podSchema, serviceAccountSchema, serviceSchema, type SmpSchema } from './smp-schema.js';
import { coreEventWire, eventsV1Wire, leaseWire, metaOnlyWire, namespaceWire, nodeWire, podWire, serviceWire, type WireShape } from './go-wire.js';

export interface ResourceDef {
  /** API group, '' for the core group. */
  group: string;
  version: string;
  /** Plural resource name as in URLs: `pods`. */
  resource: string;
  kind: string;
  singular: string;
  namespaced: boolean;
  shortNames?: string[];
  /** Subresources served under `.../{name}/{sub}` (`status`, `binding`). */
  subresources?: string[];
  /**
   * The resource has a status subresource: writes to the main resource keep the stored status,
   * writes to `/status` change only status.
   */
  statusSubresource?: boolean;
  /** Field selector labels besides metadata.name and metadata.namespace. */
  fieldLabels?: string[];
  /** Field labels of this version that name a different stored field. */
  fieldLabelRename?: Record<string, string>;
  /** The value of a (stored) field label, when it is not simply the field at that path. */
  fieldValue?: (obj: JsonObject, field: string) => string;
  /** Strategic merge patch metadata. */
  smp: SmpSchema;
  /**
   * What encoding/json always writes for this kind (fields without omitempty, structs) and where its quantities are
   * (written in canonical form). Applied to every object written through the API, and to watch bookmarks.
   */
  wire?: WireShape;
  /** The message for a field selector label this resource does not support: `label` (default) or `known`. */
  fieldLabelMessage?: 'label' | 'known';
  /** Another definition whose storage this one shares (events.k8s.io/v1 events are core/v1 events). */
  storageOf?: () => ResourceDef;
  /** Converts this version's object to the storage version's (and back). */
  toStorage?: (obj: JsonObject) => JsonObject;
  fromStorage?: (obj: JsonObject) => JsonObject;
  /** DELETE answers with the object rather than a Status (pods). */
  returnDeletedObject?: boolean;
  /** metadata.generation is maintained (starts at 1, bumps on spec changes). */
  generation?: boolean;
  /** Mutating admission on create (before defaulting and PrepareForCreate). */
  admitCreate?: (obj: JsonObject, namespace: string | undefined, ctx: AdmissionContext) => void;
  /** Defaulting on every decode (create, update, patch, status), as SetObjectDefaults runs on every request body. */
  decodeDefaults?: (obj: JsonObject) => void;
  /** Mutating admission on update of the main resource (not of subresources), before validation. */
  admitUpdate?: (obj: JsonObject, ctx: AdmissionContext) => void;
  /** Defaulting and create-time resets (PrepareForCreate + SetDefaults). */
  prepareForCreate?: (obj: JsonObject) => void;
  /** Validation on create; field errors become 422 Invalid. */
  validateCreate?: (obj: JsonObject) => FieldError[];
  /** Validation on update of the main resource. */
  validateUpdate?: (obj: JsonObject, old: JsonObject) => FieldError[];
  /** Name validation: DNS-1123 subdomain (default) or label. */
  nameFormat?: 'subdomain' | 'label' | 'path';
  /** The verbs discovery lists (default: all eight of a stored resource). */
  verbs?: string[];
  /** Nothing is stored: the server answers each request itself (tokenreviews). */
  virtual?: boolean;
}

export function apiVersionOf(def: Pick<ResourceDef, 'group' | 'version'>): string {
  return def.group ? `${def.group}/${def.version}` : def.version;
}

export function storageDef(def: ResourceDef): ResourceDef {
  return def.storageOf ? def.storageOf() : def;
}

export function storageKeyOf(def: ResourceDef): string {
  const s = storageDef(def);
  return `${s.group}/${s.resource}`;
}

// ---------------------------------------------------------------------------------------------
// Pods: defaults (pkg/apis/core/v1/defaults.go), QoS class, update validation.

const QUANTITY = /^([+-]?[0-9.]+)([eE][+-]?[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/;
const SUFFIX: Record<string, number> = {
  '': 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** A resource.Quantity as a number (enough precision to compare requests with limits). */
export function parseQuantity(q: unknown): number | undefined {
  if (typeof q === 'number') return q;
  if (typeof q !== 'string') return undefined;
  const m = q.trim().match(QUANTITY);
  if (!m) return undefined;
  return Number(m[1] + (m[2] ?? '')) * SUFFIX[m[3] ?? ''];
}

function containersOf(spec: JsonObject, field: string): JsonObject[] {
  const list = spec[field];
  return Array.isArray(list) ? (list.filter(isObject) as JsonObject[]) : [];
}

/** GetPodQOS (pkg/apis/core/helper/qos): BestEffort, Guaranteed or Burstable. */
export function podQOSClass(pod: JsonObject): 'BestEffort' | 'Burstable' | 'Guaranteed' {
  const spec = isObject(pod.spec) ? pod.spec : {};
  const containers = [...containersOf(spec, 'containers'), ...containersOf(spec, 'initContainers')];
  const supported = ['cpu', 'memory'];
  const requests = new Map<string, number>();
  const limits = new Map<string, number>();
  let guaranteed = true;
  for (const c of containers) {
    const res = isObject(c.resources) ? c.resources : {};
    const req = isObject(res.requests) ? res.requests : {};
    const lim = isObject(res.limits) ? res.limits : {};
    for (const [name, q] of Object.entries(req)) {
      if (!supported.includes(name)) continue;
      const v = parseQuantity(q) ?? 0;
      if (v !== 0) requests.set(name, (requests.get(name) ?? 0) + v);
    }
    const seen = new Set<string>();
    for (const [name, q] of Object.entries(lim)) {
      if (!supported.includes(name)) continue;
      const v = parseQuantity(q) ?? 0;
      if (v !== 0) {
        seen.add(name);
        limits.set(name, (limits.get(name) ?? 0) + v);
      }
    }
    if (!supported.every((n) => seen.has(n))) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [name, v] of requests) {
      if (limits.get(name) !== v) {
        guaranteed = false;
        break;
      }
    }
  }
  return guaranteed && limits.size === requests.size ? 'Guaranteed' : 'Burstable';
}

function setDefault(obj: JsonObject, key: string, value: JsonObject[string]): void {
  if (obj[key] === undefined || obj[key] === null) obj[key] = value;
}

function defaultProbe(probe: unknown): void {
  if (!isObject(probe)) return;
  setDefault(probe, 'timeoutSeconds', 1);
  setDefault(probe, 'periodSeconds', 10);
  setDefault(probe, 'successThreshold', 1);
  setDefault(probe, 'failureThreshold', 3);
  if (isObject(probe.httpGet)) {
    setDefault(probe.httpGet, 'path', '/');
    setDefault(probe.httpGet, 'scheme', 'HTTP');
  }
}

function defaultContainer(c: JsonObject, hostNetwork: boolean): void {
  setDefault(c, 'terminationMessagePath', '/dev/termination-log');
  setDefault(c, 'terminationMessagePolicy', 'File');
  if (c.imagePullPolicy === undefined && typeof c.image === 'string') {
    const image = c.image;
    const lastPart = image.split('/').pop() ?? image;
    const hasDigest = image.includes('@');
    const tag = lastPart.includes(':') ? lastPart.split(':').pop() : undefined;
    c.imagePullPolicy = !hasDigest && (tag === undefined || tag === 'latest') ? 'Always' : 'IfNotPresent';
  }
  setDefault(c, 'resources', {});
  // SetDefaults_Pod: requests default to limits for resources that have a limit but no request.
  const res = c.resources as JsonObject;
  if (isObject(res.limits)) {
    const requests: JsonObject = isObject(res.requests) ? res.requests : {};
    for (const [name, q] of Object.entries(res.limits)) setDefault(requests, name, q);
    res.requests = requests;
  }
  if (Array.isArray(c.ports)) {
    for (const p of c.ports) {
      if (!isObject(p)) continue;
      setDefault(p, 'protocol', 'TCP');
      if (hostNetwork && p.hostPort === undefined && p.containerPort !== undefined) p.hostPort = p.containerPort;
    }
  }
  if (Array.isArray(c.env)) {
    for (const e of c.env) {
      if (isObject(e) && isObject(e.valueFrom) && isObject(e.valueFrom.fieldRef)) setDefault(e.valueFrom.fieldRef, 'apiVersion', 'v1');
    }
  }
  defaultProbe(c.livenessProbe);
  defaultProbe(c.readinessProbe);
  defaultProbe(c.startupProbe);
}

/** SetDefaults_ObjectFieldSelector on downward API volume items: fieldRef.apiVersion is v1. */
function defaultDownwardAPIItems(items: unknown): void {
  if (!Array.isArray(items)) return;
  for (const item of items) if (isObject(item) && isObject(item.fieldRef)) setDefault(item.fieldRef, 'apiVersion', 'v1');
}

/** SetObjectDefaults_Pod, the subset clients observe. */
export function defaultPod(pod: JsonObject): void {
  if (!isObject(pod.spec)) pod.spec = {};
  const spec = pod.spec;
  setDefault(spec, 'restartPolicy', 'Always');
  setDefault(spec, 'dnsPolicy', 'ClusterFirst');
  setDefault(spec, 'terminationGracePeriodSeconds', 30);
  setDefault(spec, 'securityContext', {});
  setDefault(spec, 'schedulerName', 'default-scheduler');
  setDefault(spec, 'enableServiceLinks', true);
  // The Priority admission plugin's answer when no PriorityClass is named.
  if (spec.priorityClassName === undefined) setDefault(spec, 'priority', 0);
  setDefault(spec, 'preemptionPolicy', 'PreemptLowerPriority');
  const hostNetwork = spec.hostNetwork === true;
  for (const field of ['containers', 'initContainers', 'ephemeralContainers']) {
    for (const c of containersOf(spec, field)) defaultContainer(c, hostNetwork);
  }
  if (Array.isArray(spec.volumes)) {
    for (const v of spec.volumes) {
      if (!isObject(v)) continue;
      for (const src of ['configMap', 'secret', 'projected', 'downwardAPI']) {
        if (isObject(v[src])) setDefault(v[src], 'defaultMode', 420);
      }
      if (isObject(v.hostPath)) setDefault(v.hostPath, 'type', '');
      if (isObject(v.downwardAPI)) defaultDownwardAPIItems(v.downwardAPI.items);
      if (isObject(v.projected) && Array.isArray(v.projected.sources)) {
        for (const source of v.projected.sources) {
          if (!isObject(source)) continue;
          if (isObject(source.downwardAPI)) defaultDownwardAPIItems(source.downwardAPI.items);
          // SetDefaults_ServiceAccountTokenProjection: an hour.
          if (isObject(source.serviceAccountToken)) setDefault(source.serviceAccountToken, 'expirationSeconds', 3600);
        }
      }
    }
  }
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function validatePodSpec(pod: JsonObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = isObject(pod.spec) ? pod.spec : {};
  const containers = containersOf(spec, 'containers');
  if (containers.length === 0) errs.push({ type: 'FieldValueRequired', field: 'spec.containers' });
  const names = new Set<string>();
  for (const field of ['initContainers', 'containers']) {
    containersOf(spec, field).forEach((c, i) => {
      const path = `spec.${field}[${i}]`;
      if (typeof c.name !== 'string' || !c.name) errs.push({ type: 'FieldValueRequired', field: `${path}.name` });
      else if (!DNS_LABEL.test(c.name) || c.name.length > 63) errs.push({ type: 'FieldValueInvalid', field: `${path}.name`, value: c.name, detail: "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character" });
      else if (names.has(c.name)) errs.push({ type: 'FieldValueDuplicate', field: `${path}.name`, value: c.name });
      else names.add(c.name);
      if (typeof c.image !== 'string' || !c.image.trim()) errs.push({ type: 'FieldValueRequired', field: `${path}.image` });
    });
  }
  return errs;
}

/** validateOnlyAddedTolerations: every existing toleration stays, but for its tolerationSeconds. */
function onlyAddedTolerations(newSpec: JsonObject, oldSpec: JsonObject): FieldError[] {
  const now = Array.isArray(newSpec.tolerations) ? newSpec.tolerations : [];
  for (const old of Array.isArray(oldSpec.tolerations) ? oldSpec.tolerations : []) {
    const kept = now.some((t) => {
      if (!isObject(t) || !isObject(old)) return false;
      const same = { ...old };
      delete same.tolerationSeconds;
      if (t.tolerationSeconds !== undefined) same.tolerationSeconds = t.tolerationSeconds;
      return deepEqual(same, t);
    });
    if (!kept) return [{ type: 'FieldValueForbidden', field: 'spec.tolerations', detail: 'existing toleration can not be modified except its tolerationSeconds' }];
  }
  return [];
}

/** v1.20's ValidatePodUpdate message; kube follows it with a Go diff of the internal PodSpec, here one line a field. */
const POD_UPDATE_FORBIDDEN =
  'pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds` or `spec.tolerations` (only additions to existing tolerations)';

/**
 * ValidatePodUpdate's rule (v1.20): only container images, activeDeadlineSeconds and tolerations (additions) may
 * change in a pod's spec; schedulingGates (removals, a field newer than 1.20) too.
 */
function validatePodUpdate(pod: JsonObject, old: JsonObject): FieldError[] {
  const errs = validatePodSpec(pod);
  const newSpec = clone(isObject(pod.spec) ? pod.spec : {});
  const oldSpec = isObject(old.spec) ? old.spec : {};
  for (const field of ['containers', 'initContainers']) {
    const n = containersOf(newSpec, field);
    const o = containersOf(oldSpec, field);
    n.forEach((c, i) => {
      if (o[i] && o[i].image !== undefined) c.image = o[i].image;
    });
  }
  errs.push(...onlyAddedTolerations(newSpec, oldSpec));
  for (const field of ['activeDeadlineSeconds', 'tolerations', 'schedulingGates']) {
    if (oldSpec[field] === undefined) delete newSpec[field];
    else newSpec[field] = oldSpec[field];
  }
  if (!deepEqual(newSpec, oldSpec)) {
    const lines: string[] = [];
    for (const key of [...new Set([...Object.keys(newSpec), ...Object.keys(oldSpec)])].sort()) {
      if (deepEqual(newSpec[key], oldSpec[key])) continue;
      lines.push(`- ${key}: ${JSON.stringify(newSpec[key] ?? null)}`, `+ ${key}: ${JSON.stringify(oldSpec[key] ?? null)}`);
    }
    errs.push({ type: 'FieldValueForbidden', field: 'spec', detail: `${POD_UPDATE_FORBIDDEN}\n${lines.join('\n')}\n` });
  }
  return errs;
}

// ---------------------------------------------------------------------------------------------
// events.k8s.io/v1 <-> core/v1 Event conversion (both are views of one storage).

const EVENT_RENAMES: Array<[string, string]> = [
  ['regarding', 'involvedObject'],
  ['note', 'message'],
  ['deprecatedSource', 'source'],
  ['deprecatedFirstTimestamp', 'firstTimestamp'],
  ['deprecatedLastTimestamp', 'lastTimestamp'],
  ['deprecatedCount', 'count'],
  ['reportingController', 'reportingComponent'],
];

function renameKeys(obj: JsonObject, pairs: Array<[string, string]>, apiVersion: string): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) {
    const pair = pairs.find(([from]) => from === k);
    out[pair ? pair[1] : k] = v;
  }
  out.apiVersion = apiVersion;
  return out;
}

// ---------------------------------------------------------------------------------------------

const podFieldLabels = [
  'spec.nodeName',
  'spec.restartPolicy',
  'spec.schedulerName',
  'spec.serviceAccountName',
  'spec.hostNetwork',
  'status.phase',
  'status.podIP',
  'status.podIPs',
  'status.nominatedNodeName',
];

/** pod.ToSelectableFields: status.podIP is the first of status.podIPs; status.podIPs is a label with no field. */
function podFieldValue(pod: JsonObject, field: string): string {
  if (field === 'status.podIPs') return '';
  if (field === 'status.podIP') {
    const ips = isObject(pod.status) && Array.isArray(pod.status.podIPs) ? pod.status.podIPs : [];
    return isObject(ips[0]) && typeof ips[0].ip === 'string' ? ips[0].ip : '';
  }
  return fieldValue(pod, field);
}

/** event.ToSelectableFields: `source` is the source's component. */
function eventFieldValue(event: JsonObject, field: string): string {
  return fieldValue(event, field === 'source' ? 'source.component' : field);
}

const eventFieldLabels = [
  'involvedObject.kind',
  'involvedObject.namespace',
  'involvedObject.name',
  'involvedObject.uid',
  'involvedObject.apiVersion',
  'involvedObject.resourceVersion',
  'involvedObject.fieldPath',
  'reason',
  'reportingComponent',
  'source',
  'type',
];

export function builtinResources(): ResourceDef[] {
  const pods: ResourceDef = {
    group: '',
    version: 'v1',
    resource: 'pods',
    kind: 'Pod',
    singular: 'pod',
    namespaced: true,
    shortNames: ['po'],
    subresources: ['status', 'binding'],
    statusSubresource: true,
    fieldLabels: podFieldLabels,
    // v1 clients from before spec.nodeName sent spec.host; kube still converts it.
    fieldLabelRename: { 'spec.host': 'spec.nodeName' },
    fieldValue: podFieldValue,
    smp: podSchema,
    wire: podWire,
    returnDeletedObject: true,
    generation: true,
    admitCreate: (pod, namespace, ctx) => admitPod(pod, namespace ?? '', ctx),
    admitUpdate: (pod, ctx) => admitPodUpdate(pod, ctx),
    prepareForCreate(pod) {
      defaultPod(pod);
      // podStrategy.PrepareForCreate: status starts as Pending with the computed QoS class.
      pod.status = { phase: 'Pending', qosClass: podQOSClass(pod) };
    },
    validateCreate: validatePodSpec,
    validateUpdate: validatePodUpdate,
  };
  const coreEvents: ResourceDef = {
    group: '',
    version: 'v1',
    resource: 'events',
    kind: 'Event',
    singular: 'event',
    namespaced: true,
    shortNames: ['ev'],
    fieldLabels: eventFieldLabels,
    fieldValue: eventFieldValue,
    smp: metaOnlySchema,
    wire: coreEventWire,
  };
  const eventsV1: ResourceDef = {
    group: 'events.k8s.io',
    version: 'v1',
    resource: 'events',
    kind: 'Event',
    singular: 'event',
    namespaced: true,
    shortNames: ['ev'],
    fieldLabels: [
      ...eventFieldLabels,
      'regarding.kind',
      'regarding.namespace',
      'regarding.name',
      'regarding.uid',
      'regarding.apiVersion',
      'regarding.resourceVersion',
      'regarding.fieldPath',
      'reportingController',
    ],
    fieldLabelRename: {
      'regarding.kind': 'involvedObject.kind',
      'regarding.namespace': 'involvedObject.namespace',
      'regarding.name': 'involvedObject.name',
      'regarding.uid': 'involvedObject.uid',
      'regarding.apiVersion': 'involvedObject.apiVersion',
      'regarding.resourceVersion': 'involvedObject.resourceVersion',
      'regarding.fieldPath': 'involvedObject.fieldPath',
      reportingController: 'reportingComponent',
    },
    fieldValue: eventFieldValue,
    smp: metaOnlySchema,
    wire: eventsV1Wire,
    storageOf: () => coreEvents,
    toStorage: (obj) => renameKeys(obj, EVENT_RENAMES, 'v1'),
    fromStorage: (obj) =>
      renameKeys(
        obj,
        EVENT_RENAMES.map(([a, b]) => [b, a]),
        'events.k8s.io/v1',
      ),
  };
  return [
    pods,
    {
      group: '',
      version: 'v1',
      resource: 'nodes',
      kind: 'Node',
      singular: 'node',
      namespaced: false,
      shortNames: ['no'],
      subresources: ['status'],
      statusSubresource: true,
      fieldLabels: ['spec.unschedulable'],
      smp: nodeSchema,
      wire: nodeWire,
      decodeDefaults(node) {
        // SetDefaults_NodeStatus: allocatable defaults to capacity.
        if (isObject(node.status) && node.status.allocatable === undefined && isObject(node.status.capacity)) node.status.allocatable = clone(node.status.capacity);
      },
      admitCreate: (node, _namespace, ctx) => admitNode(node, ctx),
    },
    {
      group: '',
      version: 'v1',
      resource: 'namespaces',
      kind: 'Namespace',
      singular: 'namespace',
      namespaced: false,
      shortNames: ['ns'],
      subresources: ['status'],
      statusSubresource: true,
      fieldLabels: ['status.phase'],
      smp: namespaceSchema,
      wire: namespaceWire,
      nameFormat: 'label',
      prepareForCreate(ns) {
        ns.spec = { finalizers: ['kubernetes'] };
        ns.status = { phase: 'Active' };
        const meta = ns.metadata as JsonObject;
        meta.labels = { ...(isObject(meta.labels) ? meta.labels : {}), 'kubernetes.io/metadata.name': meta.name as string };
      },
    },
    coreEvents,
    eventsV1,
    {
      group: '',
      version: 'v1',
      resource: 'configmaps',
      kind: 'ConfigMap',
      singular: 'configmap',
      namespaced: true,
      shortNames: ['cm'],
      smp: metaOnlySchema,
      wire: metaOnlyWire,
      fieldLabelMessage: 'known',
    },
    {
      group: '',
      version: 'v1',
      resource: 'secrets',
      kind: 'Secret',
      singular: 'secret',
      namespaced: true,
      fieldLabels: ['type'],
      smp: metaOnlySchema,
      wire: metaOnlyWire,
      prepareForCreate(secret) {
        setDefault(secret, 'type', 'Opaque');
      },
    },
    {
      group: '',
      version: 'v1',
      resource: 'services',
      kind: 'Service',
      singular: 'service',
      namespaced: true,
      shortNames: ['svc'],
      subresources: ['status'],
      statusSubresource: true,
      smp: serviceSchema,
      wire: serviceWire,
      fieldLabelMessage: 'known',
      nameFormat: 'label',
      prepareForCreate(svc) {
        // serviceStrategy.PrepareForCreate clears status (IP allocation is not simulated).
        svc.status = { loadBalancer: {} };
      },
    },
    {
      group: '',
      version: 'v1',
      resource: 'serviceaccounts',
      kind: 'ServiceAccount',
      singular: 'serviceaccount',
      namespaced: true,
      shortNames: ['sa'],
      // POST .../serviceaccounts/{name}/token: a TokenRequest (authentication.k8s.io/v1), answered by the server.
      subresources: ['token'],
      smp: serviceAccountSchema,
      wire: metaOnlyWire,
      fieldLabelMessage: 'known',
    },
    {
      group: 'authentication.k8s.io',
      version: 'v1',
      resource: 'tokenreviews',
      kind: 'TokenReview',
      singular: 'tokenreview',
      namespaced: false,
      smp: metaOnlySchema,
      verbs: ['create'],
      virtual: true,
    },
    {
      group: 'coordination.k8s.io',
      version: 'v1',
      resource: 'leases',
      kind: 'Lease',
      singular: 'lease',
      namespaced: true,
      smp: metaOnlySchema,
      wire: leaseWire,
      fieldLabelMessage: 'known',
    },
  ];
}
