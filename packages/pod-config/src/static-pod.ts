import { createHash } from 'node:crypto';
import type { V1Container, V1Pod, V1Probe } from '@kubernetes/client-node';
import { canonicalJson, ConfigHashAnnotationKey, ConfigSourceAnnotationKey, type PodSourceName } from '@kubelet-ts/core';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { deserializePod } from './serializer.js';
import { formatFieldErrors, validatePod, validatePodShape, type FieldError } from './validation.js';

// The YAML parser (~9 MiB) is loaded by the first manifest decoded, not by an API-only user's import.
let yamlModule: typeof Yaml | undefined;
function yaml(): typeof Yaml {
  yamlModule ??= createRequire(import.meta.url)('yaml') as typeof Yaml;
  return yamlModule;
}

/** metav1.NamespaceDefault */
export const NamespaceDefault = 'default';

/**
 * A manifest (file or URL body) or one pod in it that could not be used. The message names the
 * file or URL, and for an invalid pod every field at fault, e.g.
 * `/etc/kubernetes/manifests/web.yaml: invalid pod: spec.containers[1].name: Duplicate value: "web"`.
 */
export class ManifestError extends Error {
  override readonly name = 'ManifestError';
  constructor(
    /** The file path or URL the manifest came from. */
    readonly location: string,
    message: string,
    /** The field errors when the manifest parsed but the pod is invalid. */
    readonly fieldErrors: readonly FieldError[] = [],
    /** Index of the pod in a list, when the manifest held several. */
    readonly index?: number,
    /** metadata.namespace/metadata.name as written in the manifest, when it had a name. */
    readonly podKey?: string,
  ) {
    super(`${location}: ${message}`);
  }
}

export interface StaticPodOrigin {
  /** 'file' pods hash in the node name and the file path and get the NoExecute toleration; 'http' pods hash in the URL. */
  kind: 'file' | 'http';
  /** The file path or URL. */
  location: string;
  nodeName: string;
  /** The source name written to config.source; defaults to kind. */
  source?: PodSourceName;
}

/** Go's generatePodName: unique among nodes by appending the lower-cased node name. */
export function generatePodName(name: string, nodeName: string): string {
  return `${name}-${nodeName.toLowerCase()}`;
}

/**
 * The API server's defaulting of a Pod (the part of SetObjectDefaults_Pod a kubelet sees): pod
 * policies, container pull policy and termination message, port protocol, probe timings, volume
 * modes, and requests defaulted from limits. Mutates and returns pod.
 */
export function setPodDefaults(pod: V1Pod): V1Pod {
  pod.metadata ??= {};
  pod.spec ??= { containers: [] };
  const spec = pod.spec;
  spec.restartPolicy ??= 'Always';
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.schedulerName ??= 'default-scheduler';
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  const containers = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  for (const c of containers) setContainerDefaults(c, spec.hostNetwork === true);
  for (const v of spec.volumes ?? []) {
    const { name: _name, ...sources } = v;
    if (Object.values(sources).every((s) => s === undefined)) v.emptyDir = {};
    if (v.configMap) v.configMap.defaultMode ??= 0o644;
    if (v.secret) v.secret.defaultMode ??= 0o644;
    if (v.downwardAPI) v.downwardAPI.defaultMode ??= 0o644;
    if (v.projected) v.projected.defaultMode ??= 0o644;
    if (v.hostPath) v.hostPath.type ??= '';
  }
  return pod;
}

/** Go's defaulting of imagePullPolicy: Always for `:latest` or an untagged image, else IfNotPresent. */
export function defaultImagePullPolicy(image: string | undefined): string {
  if (!image) return 'IfNotPresent';
  if (image.includes('@')) return 'IfNotPresent';
  const lastSlash = image.lastIndexOf('/');
  const lastColon = image.lastIndexOf(':');
  const tag = lastColon > lastSlash ? image.slice(lastColon + 1) : '';
  return tag === '' || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function setContainerDefaults(c: V1Container, hostNetwork: boolean): void {
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  c.imagePullPolicy ??= defaultImagePullPolicy(c.image);
  for (const p of c.ports ?? []) {
    p.protocol ??= 'TCP';
    if (hostNetwork && (p.hostPort === undefined || p.hostPort === 0)) p.hostPort = p.containerPort;
  }
  for (const e of c.env ?? []) {
    if (e.valueFrom?.fieldRef) e.valueFrom.fieldRef.apiVersion ??= 'v1';
  }
  if (c.resources?.limits) {
    c.resources.requests ??= {};
    for (const [k, v] of Object.entries(c.resources.limits)) c.resources.requests[k] ??= v;
  }
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) if (probe) setProbeDefaults(probe);
}

function setProbeDefaults(p: V1Probe): void {
  p.timeoutSeconds ??= 1;
  p.periodSeconds ??= 10;
  p.successThreshold ??= 1;
  p.failureThreshold ??= 3;
  if (p.httpGet) {
    p.httpGet.path ??= '/';
    p.httpGet.scheme ??= 'HTTP';
  }
}

/**
 * The static pod UID: md5 (hex) of the defaulted pod's canonical JSON (API field names, keys sorted,
 * timestamps as RFC 3339, so field order and formatting do not matter, like Go's DeepHashObject of
 * the struct), then `host:<node>` and
 * `file:<path>` for a file or `url:<url>` for a URL — Go's applyDefaults recipe. Deterministic
 * in content, source and node; a changed manifest gets a new UID (the kubelet restarts the pod).
 */
export function staticPodUID(pod: V1Pod, origin: StaticPodOrigin): string {
  const hasher = createHash('md5');
  hasher.update(canonicalJson(pod));
  if (origin.kind === 'file') {
    hasher.update(`host:${origin.nodeName}`);
    hasher.update(`file:${origin.location}`);
  } else {
    hasher.update(`url:${origin.location}`);
  }
  return hasher.digest('hex');
}

/**
 * Go's applyDefaults for file and HTTP pods: UID from the content hash when absent, name suffixed
 * with the node name, namespace defaulted, spec.nodeName set, config.hash (= UID) and config.source
 * annotations, the NoExecute toleration for file pods, status Pending. Expects setPodDefaults
 * to have run (the hash covers the defaulted pod, as in Go where decoding defaults).
 */
export function applyStaticPodDefaults(pod: V1Pod, origin: StaticPodOrigin): V1Pod {
  pod.metadata ??= {};
  pod.spec ??= { containers: [] };
  if (!pod.metadata.uid) pod.metadata.uid = staticPodUID(pod, origin);
  pod.metadata.name = generatePodName(pod.metadata.name ?? '', origin.nodeName);
  if (!pod.metadata.namespace) pod.metadata.namespace = NamespaceDefault;
  pod.spec.nodeName = origin.nodeName;
  pod.metadata.annotations ??= {};
  pod.metadata.annotations[ConfigHashAnnotationKey] = pod.metadata.uid;
  pod.metadata.annotations[ConfigSourceAnnotationKey] = origin.source ?? origin.kind;
  if (origin.kind === 'file') {
    const tolerations = (pod.spec.tolerations ??= []);
    const exists = tolerations.some((t) => t.operator === 'Exists' && t.effect === 'NoExecute' && !t.key && t.tolerationSeconds === undefined);
    if (!exists) tolerations.push({ operator: 'Exists', effect: 'NoExecute' });
  }
  pod.status = { ...(pod.status ?? {}), phase: 'Pending' };
  return pod;
}

/** What decoding a manifest gave: the usable pods, the problems, and whether the body parsed at all. */
export interface DecodeResult {
  pods: V1Pod[];
  errors: ManifestError[];
  /** False when the data was not YAML/JSON or not a Pod, PodList, List or array of pods. */
  parsed: boolean;
}

/**
 * Parses YAML or JSON (JSON is YAML) into one document; throws on a syntax error or several
 * documents. JSON goes through JSON.parse first: the yaml parser costs ~300 us for a small pod,
 * JSON.parse ~10 us; anything JSON.parse rejects gets the YAML parser (and its error message).
 */
function parseDocument(text: string): unknown {
  const first = text.trimStart()[0];
  if (first === '{' || first === '[') {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // YAML flow style, or broken: let the YAML parser decide and explain.
    }
  }
  const docs = yaml().parseAllDocuments(text, { prettyErrors: false, uniqueKeys: false });
  if (!Array.isArray(docs)) return undefined; // an empty stream
  const nonEmpty = docs.filter((d) => d.contents !== null || d.errors.length > 0);
  for (const d of nonEmpty) {
    if (d.errors.length > 0) throw new Error(d.errors[0].message.split('\n')[0]);
  }
  if (nonEmpty.length > 1) throw new Error(`expected one document, found ${nonEmpty.length}`);
  return nonEmpty.length === 0 ? undefined : nonEmpty[0].toJS({ maxAliasCount: 100 });
}

function decodeOnePod(obj: unknown, origin: StaticPodOrigin, index: number | undefined, defaultKind: boolean): V1Pod | ManifestError {
  const where = index === undefined ? '' : `item ${index}: `;
  const raw = obj as Record<string, unknown> | null;
  const rawName = typeof raw?.metadata === 'object' && raw.metadata !== null ? (raw.metadata as Record<string, unknown>).name : undefined;
  const rawNamespace = typeof raw?.metadata === 'object' && raw.metadata !== null ? (raw.metadata as Record<string, unknown>).namespace : undefined;
  const podKey = typeof rawName === 'string' && rawName !== '' ? `${typeof rawNamespace === 'string' && rawNamespace ? rawNamespace : NamespaceDefault}/${rawName}` : undefined;
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    if (!defaultKind && raw.kind !== 'Pod') {
      return new ManifestError(origin.location, `${where}kind: Unsupported value: ${JSON.stringify(raw.kind ?? '')}: supported values: "Pod"`, [], index, podKey);
    }
    if (raw.kind !== undefined && raw.kind !== 'Pod') {
      return new ManifestError(origin.location, `${where}kind: Unsupported value: ${JSON.stringify(raw.kind)}: supported values: "Pod"`, [], index, podKey);
    }
    if (raw.apiVersion !== undefined && raw.apiVersion !== 'v1') {
      return new ManifestError(origin.location, `${where}apiVersion: Unsupported value: ${JSON.stringify(raw.apiVersion)}: supported values: "v1"`, [], index, podKey);
    }
  }
  const shapeErrors = validatePodShape(obj);
  if (shapeErrors.length > 0) return new ManifestError(origin.location, `${where}invalid pod: ${formatFieldErrors(shapeErrors)}`, shapeErrors, index, podKey);
  let pod: V1Pod;
  try {
    pod = deserializePod(obj);
  } catch (err) {
    return new ManifestError(origin.location, `${where}couldn't decode pod: ${(err as Error).message}`, [], index, podKey);
  }
  // A missing name would become "-<node>" after the suffix; report it as Go's validation would the field.
  if (!pod.metadata?.name) {
    const errs: FieldError[] = [{ field: 'metadata.name', type: 'Required value', detail: 'name or generateName is required' }];
    return new ManifestError(origin.location, `${where}invalid pod: ${formatFieldErrors(errs)}`, errs, index, podKey);
  }
  setPodDefaults(pod);
  applyStaticPodDefaults(pod, origin);
  const errs = validatePod(pod);
  if (errs.length > 0) return new ManifestError(origin.location, `${where}invalid pod: ${formatFieldErrors(errs)}`, errs, index, podKey);
  return pod;
}

/**
 * Decodes a file manifest: exactly one Pod (Go's tryDecodeSinglePod), defaulted, given static pod
 * identity and validated.
 */
export function decodeSinglePodManifest(data: string, origin: StaticPodOrigin): DecodeResult {
  let obj: unknown;
  try {
    obj = parseDocument(data);
  } catch (err) {
    return { pods: [], parsed: false, errors: [new ManifestError(origin.location, `couldn't parse as pod (${(err as Error).message}), please check manifest file`)] };
  }
  if (obj === undefined || obj === null) {
    return { pods: [], parsed: false, errors: [new ManifestError(origin.location, "couldn't parse as pod (empty document), please check manifest file")] };
  }
  if (typeof obj !== 'object' || Array.isArray(obj) || (obj as Record<string, unknown>).kind === undefined) {
    return { pods: [], parsed: false, errors: [new ManifestError(origin.location, "couldn't parse as pod (Object 'Kind' is missing), please check manifest file")] };
  }
  const result = decodeOnePod(obj, origin, undefined, false);
  if (result instanceof ManifestError) return { pods: [], parsed: true, errors: [result] };
  return { pods: [result], parsed: true, errors: [] };
}

/**
 * Decodes an HTTP manifest body: a single Pod, a PodList/List (items) or a bare array of pods.
 * Each invalid pod is reported and skipped; the others are kept.
 */
export function decodePodsManifest(data: string, origin: StaticPodOrigin): DecodeResult {
  let obj: unknown;
  try {
    obj = parseDocument(data);
  } catch (err) {
    return { pods: [], parsed: false, errors: [new ManifestError(origin.location, `couldn't parse as single pod or list of pods (${(err as Error).message})`)] };
  }
  let items: unknown[];
  if (Array.isArray(obj)) {
    items = obj;
  } else if (obj !== null && typeof obj === 'object') {
    const kind = (obj as Record<string, unknown>).kind;
    if (kind === 'Pod') {
      const result = decodeOnePod(obj, origin, undefined, false);
      if (result instanceof ManifestError) return { pods: [], parsed: true, errors: [result] };
      return { pods: [result], parsed: true, errors: [] };
    }
    if (kind !== 'PodList' && kind !== 'List') {
      return { pods: [], parsed: false, errors: [new ManifestError(origin.location, `couldn't parse as single pod or list of pods (kind ${JSON.stringify(kind ?? '')}, want Pod, PodList or List)`)] };
    }
    const listItems = (obj as Record<string, unknown>).items ?? [];
    if (!Array.isArray(listItems)) {
      return { pods: [], parsed: false, errors: [new ManifestError(origin.location, 'items: Invalid value: must be a list')] };
    }
    items = listItems;
  } else {
    return { pods: [], parsed: false, errors: [new ManifestError(origin.location, "couldn't parse as single pod or list of pods (not an object)")] };
  }
  const pods: V1Pod[] = [];
  const errors: ManifestError[] = [];
  items.forEach((item, i) => {
    const result = decodeOnePod(item, origin, i, true);
    if (result instanceof ManifestError) errors.push(result);
    else pods.push(result);
  });
  return { pods, parsed: true, errors };
}
