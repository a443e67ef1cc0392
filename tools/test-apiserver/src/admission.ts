/**
 * The mutating admission plugins of kube-apiserver that change what a kubelet receives, as v1.20 runs them by
 * default (plugin/pkg/admission/...). Found by sending the same requests to this server and to a real v1.20.2
 * (tools/cluster-e2e's stand-in test).
 */
import { ApiError } from './errors.js';
import { isObject, type JsonObject } from './patch.js';

export type AdmissionPlugin = 'ServiceAccount' | 'DefaultTolerationSeconds' | 'TaintNodesByCondition';

/** Which plugins run (all by default, as in kube-apiserver). */
export type AdmissionConfig = Partial<Record<AdmissionPlugin, boolean>>;

export interface AdmissionContext {
  enabled(plugin: AdmissionPlugin): boolean;
  /** The service account as stored, or undefined when it does not exist. */
  serviceAccount(namespace: string, name: string): JsonObject | undefined;
  /**
   * The token secret a pod of the service account mounts: the first secret the service account lists that is a
   * `kubernetes.io/service-account-token` secret of it (the token controller makes one for every service account).
   */
  serviceAccountTokenSecret(namespace: string, serviceAccount: JsonObject): string | undefined;
  /** A name with a random 5-character suffix, as generateName makes them. */
  generateName(prefix: string): string;
}

export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
export const SERVICE_ACCOUNT_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
const DEFAULT_TOLERATION_SECONDS = 300;

function containersOf(spec: JsonObject): JsonObject[] {
  return [spec.initContainers, spec.containers].flatMap((list) => (Array.isArray(list) ? list.filter(isObject) : []));
}

/** defaulttolerationseconds: pods tolerate not-ready and unreachable nodes for 300 s unless they say otherwise. */
function addDefaultTolerations(spec: JsonObject): void {
  const tolerations = Array.isArray(spec.tolerations) ? spec.tolerations.filter(isObject) : [];
  const tolerates = (key: string) =>
    tolerations.some((t) => (t.key === key || !t.key) && (t.effect === 'NoExecute' || !t.effect));
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    if (!tolerates(key)) tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: DEFAULT_TOLERATION_SECONDS });
  }
  spec.tolerations = tolerations;
}

/** admission.NewForbidden for a pod: `pods "<name>" is forbidden: <why>`. */
function forbidden(name: string, why: string): ApiError {
  return new ApiError(403, 'Forbidden', `pods ${JSON.stringify(name)} is forbidden: ${why}`, { name, kind: 'pods' });
}

/**
 * serviceaccount (v1.20, without BoundServiceAccountTokenVolume): the service account (`default` unless named) must
 * exist (403 otherwise); unless the pod or the service account opts out, its token secret is mounted read-only at
 * /var/run/secrets/kubernetes.io/serviceaccount in every container that does not mount something there already (a
 * volume named after the secret, or `<secret>-xxxxx` when that name is taken, added when some container needs it);
 * a pod without imagePullSecrets gets the service account's. Mirror pods are left as they are (a changed spec would
 * make the kubelet delete them).
 */
function admitServiceAccount(pod: JsonObject, spec: JsonObject, namespace: string, ctx: AdmissionContext): void {
  if (typeof spec.serviceAccountName !== 'string' || spec.serviceAccountName === '') spec.serviceAccountName = 'default';
  const saName = spec.serviceAccountName as string;
  // The deprecated field mirrors the name on the wire (v1 conversion).
  spec.serviceAccount = saName;
  // Admission sees the object before its name is generated: kube names a pod with only generateName by its prefix,
  // and one with neither `Unknown`.
  const podMeta = isObject(pod.metadata) ? pod.metadata : {};
  const podName = (typeof podMeta.name === 'string' && podMeta.name) || (typeof podMeta.generateName === 'string' && podMeta.generateName) || 'Unknown';
  const sa = ctx.serviceAccount(namespace, saName);
  if (!sa) throw forbidden(podName, `error looking up service account ${namespace}/${saName}: serviceaccount ${JSON.stringify(saName)} not found`);
  const automount = typeof spec.automountServiceAccountToken === 'boolean' ? spec.automountServiceAccountToken : sa.automountServiceAccountToken !== false;
  if (automount) mountServiceAccountToken(spec, namespace, sa, ctx);
  if (!Array.isArray(spec.imagePullSecrets) || spec.imagePullSecrets.length === 0) {
    const fromSa = Array.isArray(sa.imagePullSecrets) ? sa.imagePullSecrets.filter(isObject) : [];
    if (fromSa.length > 0) spec.imagePullSecrets = fromSa.map((ref) => ({ name: ref.name ?? '' }));
  }
}

function mountServiceAccountToken(spec: JsonObject, namespace: string, sa: JsonObject, ctx: AdmissionContext): void {
  const saName = isObject(sa.metadata) ? String(sa.metadata.name) : '';
  const secretName = ctx.serviceAccountTokenSecret(namespace, sa);
  if (!secretName) {
    // errors.NewServerTimeout with the plugin's message: the token controller has not made the secret yet.
    throw new ApiError(
      500,
      'ServerTimeout',
      `No API token found for service account ${JSON.stringify(saName)}, retry after the token is automatically created and added to the service account`,
      { name: 'create pod', kind: 'serviceaccounts', retryAfterSeconds: 1 },
    );
  }
  const volumes = Array.isArray(spec.volumes) ? spec.volumes.filter(isObject) : [];
  const existing = volumes.find((v) => isObject(v.secret) && v.secret.secretName === secretName);
  let volumeName = existing ? String(existing.name) : secretName;
  if (!existing && volumes.some((v) => v.name === volumeName)) volumeName = ctx.generateName(`${secretName}-`);
  let needsVolume = false;
  for (const container of containersOf(spec)) {
    const mounts = Array.isArray(container.volumeMounts) ? container.volumeMounts.filter(isObject) : [];
    if (!mounts.some((m) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH)) {
      mounts.push({ name: volumeName, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT_PATH });
      container.volumeMounts = mounts;
      needsVolume = true;
    }
  }
  if (!existing && needsVolume) {
    volumes.push({ name: volumeName, secret: { secretName } });
    spec.volumes = volumes;
  }
}

export function admitPod(pod: JsonObject, namespace: string, ctx: AdmissionContext): void {
  if (!isObject(pod.spec)) return;
  const spec = pod.spec;
  const annotations = isObject(pod.metadata) && isObject(pod.metadata.annotations) ? pod.metadata.annotations : {};
  if (ctx.enabled('ServiceAccount') && annotations[MIRROR_POD_ANNOTATION] === undefined) admitServiceAccount(pod, spec, namespace, ctx);
  if (ctx.enabled('DefaultTolerationSeconds')) addDefaultTolerations(spec);
}

/** On update only DefaultTolerationSeconds runs (ServiceAccount admits creates only): removed defaults come back. */
export function admitPodUpdate(pod: JsonObject, ctx: AdmissionContext): void {
  if (isObject(pod.spec) && ctx.enabled('DefaultTolerationSeconds')) addDefaultTolerations(pod.spec);
}

/** TaintNodesByCondition: a new node is not-ready (NoSchedule) until its kubelet reports Ready. */
export function admitNode(node: JsonObject, ctx: AdmissionContext): void {
  if (!ctx.enabled('TaintNodesByCondition')) return;
  if (!isObject(node.spec)) node.spec = {};
  const taints = Array.isArray(node.spec.taints) ? node.spec.taints.filter(isObject) : [];
  if (!taints.some((t) => t.key === 'node.kubernetes.io/not-ready' && t.effect === 'NoSchedule')) {
    taints.push({ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' });
  }
  node.spec.taints = taints;
}
