// Test doubles, published as `@kubelet-ts/status-manager/testing`.
import { randomUUID } from 'node:crypto';
import type { CoreV1Event, V1ObjectReference, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { applyStrategicMergePatch, deserializeApiObject, isJsonObject, serializeApiObject, isStaticPod, podFullName, type JsonObject } from '@kubelet-ts/core';
import { RecordingEventRecorder as CoreRecordingEventRecorder, FakeApiError, type RecordedEvent } from '@kubelet-ts/core/testing';
import type { KubeClient } from './client.js';
import { eventfMessage, getReference, type EventObject, type EventRecorder, type EventType } from './events.js';
import { podStatusToJson } from './json.js';
import { podStatusPatchSchema } from './patch.js';
import type { PodManagerLike, StatusManager } from './status-manager.js';

const clone = <T>(v: T): T => structuredClone(v);

export type { RecordedEvent };

/**
 * @kubelet-ts/core/testing's RecordingEventRecorder plus eventf (formatted as KubeletEventRecorder
 * does), so it stands in for a KubeletEventRecorder.
 */
export class RecordingEventRecorder extends CoreRecordingEventRecorder implements EventRecorder {
  eventf(object: EventObject, type: EventType | string, reason: string, messageFmt: string, ...args: unknown[]): void {
    // Like KubeletEventRecorder, takes any type string (Go passes strings); components only use Normal and Warning.
    this.event(object, type as EventType, reason, eventfMessage(messageFmt, args));
  }

  /** The involved object of a recorded event, as KubeletEventRecorder would post it. */
  involvedObject(event: RecordedEvent): V1ObjectReference {
    return getReference(event.object, event.details);
  }
}

/** A status manager that only remembers what it was told. */
export class FakeStatusManager implements StatusManager {
  readonly statuses = new Map<string, V1PodStatus>();
  readonly terminated: string[] = [];
  started = false;

  start(): void {
    this.started = true;
  }

  async stop(): Promise<void> {
    this.started = false;
  }

  getPodStatus(uid: string): V1PodStatus | undefined {
    const s = this.statuses.get(uid);
    return s ? clone(s) : undefined;
  }

  setPodStatus(pod: V1Pod, status: V1PodStatus): void {
    this.statuses.set(pod.metadata?.uid ?? '', clone(status));
  }

  setContainerReadiness(podUid: string, containerId: string, ready: boolean): void {
    const s = this.statuses.get(podUid);
    const c = s?.containerStatuses?.find((x) => x.containerID === containerId) ?? s?.initContainerStatuses?.find((x) => x.containerID === containerId);
    if (c) c.ready = ready;
  }

  setContainerStartup(podUid: string, containerId: string, started: boolean): void {
    const s = this.statuses.get(podUid);
    const c = s?.containerStatuses?.find((x) => x.containerID === containerId) ?? s?.initContainerStatuses?.find((x) => x.containerID === containerId);
    if (c) c.started = started;
  }

  terminatePod(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    this.terminated.push(uid);
    const s = this.statuses.get(uid) ?? clone(pod.status ?? {});
    if (s.phase !== 'Succeeded' && s.phase !== 'Failed') s.phase = 'Failed';
    this.statuses.set(uid, s);
  }

  removeOrphanedStatuses(desiredUids: Iterable<string>): void {
    const keep = new Set(desiredUids);
    for (const uid of [...this.statuses.keys()]) if (!keep.has(uid)) this.statuses.delete(uid);
  }
}

/** A pod manager of static pods, their mirror pods and API pods, for the status manager's lookups. */
export class FakePodManager implements PodManagerLike {
  private readonly pods = new Map<string, V1Pod>();
  private readonly mirrors = new Map<string, V1Pod>();

  addPod(pod: V1Pod): void {
    if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) this.mirrors.set(podFullName(pod), pod);
    else this.pods.set(pod.metadata?.uid ?? '', pod);
  }

  removePod(pod: V1Pod): void {
    if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) this.mirrors.delete(podFullName(pod));
    else this.pods.delete(pod.metadata?.uid ?? '');
  }

  getPodByUid(uid: string): V1Pod | undefined {
    return this.pods.get(uid);
  }

  getMirrorPodByPod(pod: V1Pod): V1Pod | undefined {
    return isStaticPod(pod) ? this.mirrors.get(podFullName(pod)) : undefined;
  }

  translatePodUID(uid: string): string {
    for (const [fullName, mirror] of this.mirrors) {
      if (mirror.metadata?.uid !== uid) continue;
      for (const pod of this.pods.values()) if (podFullName(pod) === fullName && isStaticPod(pod)) return pod.metadata?.uid ?? uid;
    }
    return uid;
  }
}

export interface FakeCall {
  method: string;
  namespace?: string;
  name?: string;
  body?: unknown;
}

function apiError(code: number, reason: string, message: string): FakeApiError {
  return new FakeApiError(code, reason, message);
}

/**
 * An in-memory CoreV1Api for pods and events: uid/resourceVersion preconditions, status patches
 * (the strategic merge subset the status manager sends), graceful deletion, AlreadyExists. Every
 * call is recorded in `calls`; failNext() makes the next calls of a method fail.
 */
export class FakeKubeClient implements KubeClient {
  readonly calls: FakeCall[] = [];
  readonly pods = new Map<string, JsonObject>();
  readonly events = new Map<string, JsonObject>();
  private rv = 1;
  private readonly failures: { method: string; error: unknown; remaining: number }[] = [];

  /** The next n calls of method fail with error (an HTTP code gives a kube Status error; anything else is thrown as is). */
  failNext(method: keyof KubeClient, error: number | Error, n = 1): void {
    this.failures.push({ method, error: typeof error === 'number' ? apiError(error, error === 409 ? 'Conflict' : 'ServiceUnavailable', `injected ${error}`) : error, remaining: n });
  }

  /** Seeds a pod as stored (uid and resourceVersion are filled in when missing). */
  putPod(pod: V1Pod): V1Pod {
    const json = serializeApiObject({ apiVersion: 'v1', kind: 'Pod', ...clone(pod) }, 'V1Pod') as JsonObject;
    const meta = json.metadata as JsonObject;
    meta.namespace ??= 'default';
    meta.uid ??= randomUUID();
    meta.resourceVersion = String(this.rv++);
    this.pods.set(`${meta.namespace}/${meta.name}`, json);
    return this.toPod(json);
  }

  getPod(namespace: string, name: string): V1Pod | undefined {
    const json = this.pods.get(`${namespace}/${name}`);
    return json ? this.toPod(json) : undefined;
  }

  callsOf(method: string): FakeCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  private toPod(json: JsonObject): V1Pod {
    return deserializeApiObject(clone(json), 'V1Pod');
  }

  private record(call: FakeCall): void {
    this.calls.push(call);
    const f = this.failures.find((x) => x.method === call.method && x.remaining > 0);
    if (f) {
      f.remaining--;
      throw f.error;
    }
  }

  private podJson(namespace: string, name: string): JsonObject {
    const json = this.pods.get(`${namespace}/${name}`);
    if (!json) throw apiError(404, 'NotFound', `pods "${name}" not found`);
    return json;
  }

  async readNamespacedPod(param: { name: string; namespace: string }): Promise<V1Pod> {
    this.record({ method: 'readNamespacedPod', namespace: param.namespace, name: param.name });
    return this.toPod(this.podJson(param.namespace, param.name));
  }

  async patchNamespacedPodStatus(param: { name: string; namespace: string; body: any }): Promise<V1Pod> {
    this.record({ method: 'patchNamespacedPodStatus', namespace: param.namespace, name: param.name, body: clone(param.body) });
    const json = this.podJson(param.namespace, param.name);
    const meta = json.metadata as JsonObject;
    const patchMeta = isJsonObject(param.body?.metadata) ? param.body.metadata : {};
    if (patchMeta.uid !== undefined && patchMeta.uid !== meta.uid) {
      throw apiError(422, 'Invalid', `Pod "${param.name}" is invalid: metadata.uid: Invalid value: "${patchMeta.uid}": field is immutable`);
    }
    if (patchMeta.resourceVersion !== undefined && patchMeta.resourceVersion !== meta.resourceVersion) {
      throw apiError(409, 'Conflict', `Operation cannot be fulfilled on pods "${param.name}": the object has been modified; please apply your changes to the latest version and try again`);
    }
    if (isJsonObject(param.body?.status)) {
      json.status = applyStrategicMergePatch(isJsonObject(json.status) ? json.status : {}, param.body.status, podStatusPatchSchema);
      meta.resourceVersion = String(this.rv++);
    }
    return this.toPod(json);
  }

  async deleteNamespacedPod(param: { name: string; namespace: string; body?: any; gracePeriodSeconds?: number }): Promise<V1Pod> {
    this.record({ method: 'deleteNamespacedPod', namespace: param.namespace, name: param.name, body: clone(param.body) });
    const json = this.podJson(param.namespace, param.name);
    const meta = json.metadata as JsonObject;
    const uid = param.body?.preconditions?.uid;
    if (uid !== undefined && uid !== meta.uid) {
      throw apiError(409, 'Conflict', `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${meta.uid}`);
    }
    const grace = param.body?.gracePeriodSeconds ?? param.gracePeriodSeconds ?? 30;
    if (grace > 0) {
      meta.deletionTimestamp ??= new Date().toISOString();
      meta.deletionGracePeriodSeconds = grace;
      meta.resourceVersion = String(this.rv++);
    } else {
      this.pods.delete(`${param.namespace}/${param.name}`);
    }
    return this.toPod(json);
  }

  async createNamespacedPod(param: { namespace: string; body: V1Pod }): Promise<V1Pod> {
    this.record({ method: 'createNamespacedPod', namespace: param.namespace, name: param.body.metadata?.name, body: clone(param.body) });
    const key = `${param.namespace}/${param.body.metadata?.name}`;
    if (this.pods.has(key)) throw apiError(409, 'AlreadyExists', `pods "${param.body.metadata?.name}" already exists`);
    if (param.body.metadata?.resourceVersion) throw apiError(500, 'InternalError', 'resourceVersion should not be set on objects to be created');
    const pod = clone(param.body);
    pod.metadata = { ...pod.metadata, namespace: param.namespace, uid: randomUUID() };
    pod.status = { phase: 'Pending' };
    return this.putPod(pod);
  }

  async createNamespacedEvent(param: { namespace: string; body: CoreV1Event }): Promise<CoreV1Event> {
    const body = serializeApiObject({ apiVersion: 'v1', kind: 'Event', ...clone(param.body) }, 'CoreV1Event') as JsonObject;
    this.record({ method: 'createNamespacedEvent', namespace: param.namespace, name: param.body.metadata?.name, body });
    const key = `${param.namespace}/${param.body.metadata?.name}`;
    if (this.events.has(key)) throw apiError(409, 'AlreadyExists', `events "${param.body.metadata?.name}" already exists`);
    (body.metadata as JsonObject).resourceVersion = String(this.rv++);
    this.events.set(key, body);
    return deserializeApiObject(clone(body), 'CoreV1Event');
  }

  async patchNamespacedEvent(param: { name: string; namespace: string; body: any }): Promise<CoreV1Event> {
    this.record({ method: 'patchNamespacedEvent', namespace: param.namespace, name: param.name, body: clone(param.body) });
    const json = this.events.get(`${param.namespace}/${param.name}`);
    if (!json) throw apiError(404, 'NotFound', `events "${param.name}" not found`);
    Object.assign(json, clone(param.body));
    (json.metadata as JsonObject).resourceVersion = String(this.rv++);
    return deserializeApiObject(clone(json), 'CoreV1Event');
  }

  /** The stored status of a pod as JSON (times as the API server writes them). */
  statusJson(namespace: string, name: string): JsonObject {
    const pod = this.getPod(namespace, name);
    return podStatusToJson(pod?.status);
  }
}
