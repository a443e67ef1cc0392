/**
 * The mutating admission plugins of kube-apiserver that change what a kubelet receives, as v1.20 runs them by
 * default (plugin/pkg/admission/...). Found by sending the same requests to this server and to a real v1.20.2
 * (tools/cluster-e2e's stand-in test).
 */
import { isObject, type JsonObject } from './patch.js';

export type AdmissionPlugin = 'ServiceAccount' | 'DefaultTolerationSeconds' | 'TaintNodesByCondition';

/** Which plugins run (all by default, as in kube-apiserver). */
export type AdmissionConfig = Partial<Record<AdmissionPlugin, boolean>>;

export interface AdmissionContext {
  enabled(plugin: AdmissionPlugin): boolean;
  /**
   * The name of the token secret of a service account, made when missing. (The stand-in has no service account
   * controller: every service account of every namespace exists, with one token secret.)
   */
  serviceAccountTokenSecret(namespace: string, serviceAccount: string): string;
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

/**
 * serviceaccount (v1.20, without BoundServiceAccountTokenVolume): the default service account, and its token secret
 * mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in every container, unless the pod opts out.
 * Mirror pods are left as they are (a changed spec would make the kubelet delete them).
 */
function mountServiceAccountToken(spec: JsonObject, namespace: string, ctx: AdmissionContext): void {
  if (typeof spec.serviceAccountName !== 'string' || spec.serviceAccountName === '') spec.serviceAccountName = 'default';
  // The deprecated field mirrors the name on the wire (v1 conversion).
  spec.serviceAccount = spec.serviceAccountName;
  if (spec.automountServiceAccountToken === false) return;
  const secretName = ctx.serviceAccountTokenSecret(namespace, spec.serviceAccountName as string);
  const volumes = Array.isArray(spec.volumes) ? spec.volumes.filter(isObject) : [];
  let volume = volumes.find((v) => isObject(v.secret) && v.secret.secretName === secretName);
  if (!volume) {
    volume = { name: secretName, secret: { secretName } };
    volumes.push(volume);
  }
  spec.volumes = volumes;
  for (const container of containersOf(spec)) {
    const mounts = Array.isArray(container.volumeMounts) ? container.volumeMounts.filter(isObject) : [];
    if (!mounts.some((m) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH)) {
      mounts.push({ name: volume.name, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT_PATH });
    }
    container.volumeMounts = mounts;
  }
}

export function admitPod(pod: JsonObject, namespace: string, ctx: AdmissionContext): void {
  if (!isObject(pod.spec)) return;
  const spec = pod.spec;
  const annotations = isObject(pod.metadata) && isObject(pod.metadata.annotations) ? pod.metadata.annotations : {};
  if (ctx.enabled('ServiceAccount') && annotations[MIRROR_POD_ANNOTATION] === undefined) mountServiceAccountToken(spec, namespace, ctx);
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
