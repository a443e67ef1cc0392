/**
 * The object store: one global resourceVersion counter (like etcd's revision), objects kept in
 * their storage version, a bounded history of change events for watches, and the registry
 * semantics of create/update/patch/delete that kube-apiserver's generic store implements.
 */
import { randomUUID } from 'node:crypto';
import {
  ApiError,
  alreadyExists,
  badRequest,
  conflict,
  internalError,
  invalid,
  notFound,
  preconditionFailed,
  successStatus,
  tooOldResourceVersion,
  type FieldError,
  type KubeStatus,
} from './errors.js';
import { clone, deepEqual, isObject, jsonMergePatch, jsonPatch, strategicMergePatch, type Json, type JsonObject } from './patch.js';
import { apiVersionOf, builtinResources, storageDef, storageKeyOf, type ResourceDef } from './resources.js';
import { normalizeTimes, TimeDecodeError } from './times.js';
import { applyWireShape, goFormat } from './go-wire.js';
import type { AdmissionConfig, AdmissionContext } from './admission.js';
import { ServiceAccountTokenIssuer, type TokenIssuerOptions } from './tokens.js';
import { fieldValue, parseFieldSelector, parseLabelSelector, type FieldSelector, type LabelSelector } from './selectors.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One committed change, as kept in the watch history. Objects are in storage form and never mutated. */
export interface StoreEvent {
  type: WatchEventType;
  rv: number;
  storageKey: string;
  key: string;
  object: JsonObject;
  prev?: JsonObject;
}

export type PatchType = 'json' | 'merge' | 'strategic';

export const PATCH_CONTENT_TYPES: Record<string, PatchType> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
};

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
  limit?: number;
  continue?: string;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: string;
  dryRun?: string[];
}

export interface WriteOptions {
  subresource?: string;
  dryRun?: boolean;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  sendInitialEvents?: boolean;
}

export interface WatchSink {
  event(type: WatchEventType, object: JsonObject): void;
  /** Called after the initial ADDED events of sendInitialEvents=true. */
  initialEventsEnd?(rv: number): void;
}

export interface StoreClock {
  now(): number;
}

export interface StoreOptions {
  clock: StoreClock;
  /** Events kept for watches resuming from a resourceVersion (default 1000). */
  maxHistory?: number;
  /** Creating a namespaced object needs its namespace (NamespaceLifecycle admission); default true. */
  enforceNamespaces?: boolean;
  /**
   * What a PATCH whose result changes metadata.uid gets: 'invalid' (422, `field is immutable`,
   * which is what kube's BeforeUpdate validation answers; the default) or 'conflict' (409 with the
   * storage precondition message, what a PUT with a stale uid gets).
   */
  patchUidMismatch?: 'invalid' | 'conflict';
  /** The mutating admission plugins that run on create (all by default, as in kube-apiserver). */
  admission?: AdmissionConfig;
  resources?: ResourceDef[];
  /** The service account token issuer's settings (issuer, API audiences, expiration extension). */
  serviceAccountTokens?: TokenIssuerOptions;
  /** What the token controller writes as `ca.crt` into token secrets (kube-controller-manager's --root-ca-file). Default ''. */
  serviceAccountRootCA?: string;
}

const IMMORTAL_NAMESPACES = ['default', 'kube-system', 'kube-public'];
const SERVICE_ACCOUNT_TOKEN_TYPE = 'kubernetes.io/service-account-token';
const SA_NAME_ANNOTATION = 'kubernetes.io/service-account.name';
const SA_UID_ANNOTATION = 'kubernetes.io/service-account.uid';
const INITIAL_NAMESPACES = [...IMMORTAL_NAMESPACES, 'kube-node-lease'];

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const GENERATE_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

function meta(obj: JsonObject): JsonObject {
  if (!isObject(obj.metadata)) obj.metadata = {};
  return obj.metadata as JsonObject;
}

function str(v: Json | undefined): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function objectKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

/** Five characters of generateName's alphabet. */
function randomSuffix(): string {
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += GENERATE_CHARS[Math.floor(Math.random() * GENERATE_CHARS.length)];
  return suffix;
}

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export class Store {
  readonly defs: ResourceDef[];
  private rv = 1;
  private compactedRv = 1;
  private readonly objects = new Map<string, Map<string, JsonObject>>();
  private history: StoreEvent[] = [];
  private readonly listeners = new Set<(ev: StoreEvent) => void>();
  private readonly clock: StoreClock;
  private readonly maxHistory: number;
  private readonly enforceNamespaces: boolean;
  private readonly patchUidMismatch: 'invalid' | 'conflict';
  private readonly admission: AdmissionContext;
  /** Service account tokens: TokenRequest, TokenReview and the token controller's legacy tokens. */
  readonly tokens: ServiceAccountTokenIssuer;
  private readonly rootCA: string;
  /** The resourceVersion of the latest change of each resource (its watch cache's version in kube-apiserver). */
  private readonly lastChange = new Map<string, number>();
  /** The resourceVersion when the store was made: a watch cache that has seen no change since is at that one. */
  private readonly startRv: number;
  /** Events the in-process controllers have yet to see (set while they run: their own writes queue up here). */
  private controllerQueue: StoreEvent[] | undefined;

  constructor(options: StoreOptions) {
    this.clock = options.clock;
    this.maxHistory = Math.max(1, options.maxHistory ?? 1000);
    this.enforceNamespaces = options.enforceNamespaces ?? true;
    this.patchUidMismatch = options.patchUidMismatch ?? 'invalid';
    this.rootCA = options.serviceAccountRootCA ?? '';
    this.admission = {
      enabled: (plugin) => options.admission?.[plugin] ?? true,
      serviceAccount: (namespace, name) => this.admissionServiceAccount(namespace, name),
      serviceAccountTokenSecret: (namespace, sa) => this.referencedTokenSecret(namespace, sa)?.name,
      generateName: (prefix) => `${prefix}${randomSuffix()}`,
    };
    this.defs = options.resources ?? builtinResources();
    this.tokens = new ServiceAccountTokenIssuer(
      {
        get: (resource, namespace, name) => {
          const def = this.hasDef(resource);
          return def && this.bucket(def).get(objectKey(namespace, name));
        },
        now: () => this.clock.now(),
      },
      options.serviceAccountTokens,
    );
    const namespaces = this.resolve('namespaces');
    for (const name of INITIAL_NAMESPACES) this.create(namespaces, undefined, { metadata: { name } });
    this.startRv = this.rv;
  }

  // -------------------------------------------------------------------------------------------
  // The controllers whose work a kubelet sees: kube-controller-manager's service account controller (a `default`
  // service account in every namespace) and token controller (a token secret for every service account, listed in
  // its `secrets`; removed with it). They run synchronously after each change, so what they make exists by the time
  // the write that caused it returns.

  private hasDef(resource: string): ResourceDef | undefined {
    return this.defs.find((d) => d.group === '' && d.resource === resource);
  }

  private runControllers(ev: StoreEvent): void {
    if (this.controllerQueue) {
      this.controllerQueue.push(ev);
      return;
    }
    this.controllerQueue = [ev];
    try {
      for (let next = this.controllerQueue.shift(); next; next = this.controllerQueue.shift()) {
        try {
          this.serviceAccountControllers(next);
        } catch {
          // A controller's failed write is retried by its next event, as a real controller would requeue it.
        }
      }
    } finally {
      this.controllerQueue = undefined;
    }
  }

  private serviceAccountControllers(ev: StoreEvent): void {
    const m = meta(ev.object);
    const name = str(m.name) ?? '';
    const namespace = str(m.namespace) ?? '';
    if (ev.storageKey === '/namespaces') {
      if (ev.type !== 'DELETED') this.ensureDefaultServiceAccount(name);
    } else if (ev.storageKey === '/serviceaccounts') {
      if (ev.type === 'DELETED') {
        // The token controller deletes the service account's token secrets; the service account controller makes
        // `default` again.
        const secrets = this.hasDef('secrets');
        if (secrets) {
          for (const secret of [...this.bucket(secrets).values()]) {
            if (meta(secret).namespace === namespace && this.isTokenSecretOf(secret, name, str(m.uid))) this.delete(secrets, namespace, String(meta(secret).name));
          }
        }
        if (name === 'default') this.ensureDefaultServiceAccount(namespace);
      } else {
        this.ensureReferencedToken(namespace, name);
      }
    } else if (ev.storageKey === '/secrets' && (ev.type === 'DELETED' ? ev.prev ?? ev.object : ev.object).type === SERVICE_ACCOUNT_TOKEN_TYPE) {
      const annotations = isObject(m.annotations) ? m.annotations : {};
      const saName = str(annotations[SA_NAME_ANNOTATION]) ?? '';
      const sas = this.hasDef('serviceaccounts');
      const secrets = this.hasDef('secrets');
      if (!sas || !secrets) return;
      const sa = this.bucket(sas).get(objectKey(namespace, saName));
      const saUid = str(annotations[SA_UID_ANNOTATION]);
      if (ev.type === 'DELETED') {
        // Its service account no longer lists it (and gets a new one).
        const refs = sa && Array.isArray(sa.secrets) ? sa.secrets : [];
        if (sa && refs.some((r) => isObject(r) && r.name === name)) {
          const next = this.view(sas, sa);
          next.secrets = refs.filter((r) => !(isObject(r) && r.name === name));
          this.update(sas, namespace, saName, next);
        }
        return;
      }
      // A token secret of a service account that does not exist is deleted; one without its token gets it.
      if (!sa || (saUid && saUid !== meta(sa).uid)) {
        this.delete(secrets, namespace, name);
        return;
      }
      const data = isObject(ev.object.data) ? ev.object.data : {};
      if (!data.token || !saUid) {
        const next = this.view(secrets, ev.object);
        const nextMeta = meta(next);
        nextMeta.annotations = { ...annotations, [SA_UID_ANNOTATION]: String(meta(sa).uid) };
        next.data = this.tokenSecretData(namespace, saName, String(meta(sa).uid), name, data);
        this.update(secrets, namespace, name, next);
      }
    }
  }

  /** Whether the namespace exists and is not being deleted (NamespaceLifecycle lets nothing new in otherwise). */
  private namespaceActive(namespace: string): boolean {
    const ns = this.bucket(this.resolve('namespaces')).get(objectKey(undefined, namespace));
    return ns !== undefined && meta(ns).deletionTimestamp === undefined;
  }

  /** The service account controller: every active namespace has a `default` service account. */
  private ensureDefaultServiceAccount(namespace: string): void {
    const sas = this.hasDef('serviceaccounts');
    if (!sas || !this.namespaceActive(namespace)) return;
    if (this.bucket(sas).has(objectKey(namespace, 'default'))) return;
    this.create(sas, namespace, { metadata: { name: 'default', namespace } });
  }

  /** Whether a secret is a token secret of the service account (secret.IsServiceAccountToken). */
  private isTokenSecretOf(secret: JsonObject, saName: string, saUid: string | undefined): boolean {
    if (secret.type !== SERVICE_ACCOUNT_TOKEN_TYPE) return false;
    const annotations = isObject(meta(secret).annotations) ? (meta(secret).annotations as JsonObject) : {};
    if (annotations[SA_NAME_ANNOTATION] !== saName) return false;
    const uid = str(annotations[SA_UID_ANNOTATION]);
    return !uid || !saUid || uid === saUid;
  }

  /** The first token secret the service account lists that exists and is its own (what admission mounts). */
  private referencedTokenSecret(namespace: string, sa: JsonObject): { name: string; secret: JsonObject } | undefined {
    const secrets = this.hasDef('secrets');
    if (!secrets) return undefined;
    const saMeta = meta(sa);
    for (const ref of Array.isArray(sa.secrets) ? sa.secrets : []) {
      if (!isObject(ref) || typeof ref.name !== 'string') continue;
      const secret = this.bucket(secrets).get(objectKey(namespace, ref.name));
      if (secret && this.isTokenSecretOf(secret, String(saMeta.name), str(saMeta.uid))) return { name: ref.name, secret };
    }
    return undefined;
  }

  private tokenSecretData(namespace: string, saName: string, saUid: string, secretName: string, data: JsonObject = {}): JsonObject {
    const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
    return {
      ...data,
      'ca.crt': base64(this.rootCA),
      namespace: base64(namespace),
      token: base64(this.tokens.legacyToken(namespace, saName, saUid, secretName)),
    };
  }

  /**
   * The token controller: a service account that lists no token secret of its own gets a new one,
   * `<sa>-token-<5 chars>` (type kubernetes.io/service-account-token, with a signed legacy token, ca.crt and the
   * namespace), added to its `secrets`.
   */
  private ensureReferencedToken(namespace: string, saName: string): void {
    const sas = this.hasDef('serviceaccounts');
    const secrets = this.hasDef('secrets');
    if (!sas || !secrets) return;
    const sa = this.bucket(sas).get(objectKey(namespace, saName));
    if (!sa || meta(sa).deletionTimestamp !== undefined || this.referencedTokenSecret(namespace, sa)) return;
    // A namespace being deleted gets nothing new (without a namespace object, lax mode, anything goes).
    if (!this.namespaceActive(namespace) && (this.enforceNamespaces || this.bucket(this.resolve('namespaces')).has(objectKey(undefined, namespace)))) return;
    const saUid = String(meta(sa).uid);
    let secretName = '';
    do secretName = `${saName}-token-${randomSuffix()}`;
    while (this.bucket(secrets).has(objectKey(namespace, secretName)));
    this.create(secrets, namespace, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secretName, namespace, annotations: { [SA_NAME_ANNOTATION]: saName, [SA_UID_ANNOTATION]: saUid } },
      type: SERVICE_ACCOUNT_TOKEN_TYPE,
      data: this.tokenSecretData(namespace, saName, saUid, secretName),
    });
    const next = this.view(sas, sa);
    next.secrets = [...(Array.isArray(next.secrets) ? next.secrets : []), { name: secretName }];
    this.update(sas, namespace, saName, next);
  }

  /**
   * What ServiceAccount admission finds. Without NamespaceLifecycle (enforceNamespaces: false) a namespace may have
   * no object, so no controller made its `default` service account: it is made on first use instead.
   */
  private admissionServiceAccount(namespace: string, name: string): JsonObject | undefined {
    const sas = this.hasDef('serviceaccounts');
    // A store made without service accounts: every one exists, and none has a token to mount.
    if (!sas) return { metadata: { name, namespace }, automountServiceAccountToken: false };
    const key = objectKey(namespace, name);
    if (!this.bucket(sas).has(key) && name === 'default' && !this.enforceNamespaces && !this.bucket(this.resolve('namespaces')).has(objectKey(undefined, namespace))) {
      this.create(sas, namespace, { metadata: { name, namespace } });
    }
    return this.bucket(sas).get(key);
  }

  /** The resourceVersion of the resource's watch cache: its latest change (or the store's start, before any). */
  cacheResourceVersion(def: ResourceDef): number {
    return this.lastChange.get(storageKeyOf(def)) ?? this.startRv ?? this.rv;
  }

  /** NamespaceLifecycle: 404 for a namespaced request to a namespace that does not exist (when enforced). */
  requireNamespace(namespace: string | undefined): void {
    if (this.enforceNamespaces && namespace && !this.bucket(this.resolve('namespaces')).has(objectKey(undefined, namespace))) {
      throw notFound('namespaces', '', namespace);
    }
  }

  /** The current (latest committed) resourceVersion. */
  get resourceVersion(): number {
    return this.rv;
  }

  /** The oldest resourceVersion a watch may resume from. */
  get oldestResourceVersion(): number {
    return this.compactedRv;
  }

  get historyLength(): number {
    return this.history.length;
  }

  /** Finds a resource by plural (`pods`), kind (`Pod`), short name, `leases.coordination.k8s.io` or `coordination.k8s.io/v1/leases`. */
  resolve(name: string): ResourceDef {
    const lower = name.toLowerCase();
    const found =
      this.defs.find((d) => `${apiVersionOf(d)}/${d.resource}` === name || `${d.resource}.${d.group}` === name) ??
      this.defs.find((d) => d.resource === lower || d.kind === name || d.singular === lower || d.shortNames?.includes(lower));
    if (!found) throw new Error(`test-apiserver: unknown resource ${JSON.stringify(name)}`);
    return found;
  }

  findDef(group: string, version: string, resource: string): ResourceDef | undefined {
    return this.defs.find((d) => d.group === group && d.version === version && d.resource === resource);
  }

  subscribe(listener: (ev: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Drops the whole watch history: a watch from any earlier resourceVersion now gets 410 Expired. */
  compact(): void {
    this.history = [];
    this.compactedRv = this.rv;
  }

  // -------------------------------------------------------------------------------------------
  // Views

  private bucket(def: ResourceDef): Map<string, JsonObject> {
    const key = storageKeyOf(def);
    let b = this.objects.get(key);
    if (!b) {
      b = new Map();
      this.objects.set(key, b);
    }
    return b;
  }

  /** A stored object as `def`'s version presents it (a fresh copy, with kind and apiVersion). */
  view(def: ResourceDef, stored: JsonObject): JsonObject {
    const copy = clone(stored);
    const out = def.fromStorage ? def.fromStorage(copy) : copy;
    // kind and apiVersion first, as kube serializes them.
    const head: JsonObject = { kind: def.kind, apiVersion: apiVersionOf(def) };
    return Object.assign(head, out, { kind: def.kind, apiVersion: apiVersionOf(def) });
  }

  /** The object as kube would write it back after decoding it into its Go type (see go-wire.ts). */
  private toWire(def: ResourceDef, obj: JsonObject): JsonObject {
    def.decodeDefaults?.(obj);
    return def.wire ? applyWireShape(obj, def.wire) : obj;
  }

  /** What a watch bookmark carries: an empty object of the kind, with only the resourceVersion set. */
  bookmarkObject(def: ResourceDef, resourceVersion: string, annotations?: Record<string, string>): JsonObject {
    const metadata: JsonObject = { resourceVersion };
    if (annotations) metadata.annotations = annotations;
    return this.toWire(def, { kind: def.kind, apiVersion: apiVersionOf(def), metadata });
  }

  private toStorage(def: ResourceDef, obj: JsonObject): JsonObject {
    const s = storageDef(def);
    const converted = def.toStorage ? def.toStorage(obj) : obj;
    converted.kind = s.kind;
    converted.apiVersion = apiVersionOf(s);
    return converted;
  }

  private timestamp(offsetSeconds = 0): string {
    return new Date(this.clock.now() + offsetSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }

  private storageKeyPath(def: ResourceDef, namespace: string | undefined, name: string): string {
    const s = storageDef(def);
    const prefix = s.group ? `/registry/${s.group}/${s.resource}` : `/registry/${s.resource}`;
    return namespace ? `${prefix}/${namespace}/${name}` : `${prefix}/${name}`;
  }

  private existing(def: ResourceDef, namespace: string | undefined, name: string): JsonObject {
    const stored = this.bucket(def).get(objectKey(def.namespaced ? namespace : undefined, name));
    if (!stored) throw notFound(def.resource, def.group, name);
    return stored;
  }

  // -------------------------------------------------------------------------------------------
  // Commit

  private commit(def: ResourceDef, type: WatchEventType, key: string, obj: JsonObject, prev: JsonObject | undefined, dryRun: boolean): JsonObject {
    if (dryRun) return obj;
    this.rv++;
    meta(obj).resourceVersion = String(this.rv);
    const bucket = this.bucket(def);
    if (type === 'DELETED') bucket.delete(key);
    else bucket.set(key, obj);
    const ev: StoreEvent = { type, rv: this.rv, storageKey: storageKeyOf(def), key, object: obj, prev };
    this.lastChange.set(ev.storageKey, this.rv);
    this.history.push(ev);
    if (this.history.length > this.maxHistory) {
      const drop = this.history.length - this.maxHistory;
      this.compactedRv = this.history[drop - 1].rv;
      this.history.splice(0, drop);
    }
    for (const l of [...this.listeners]) l(ev);
    this.runControllers(ev);
    return obj;
  }

  // -------------------------------------------------------------------------------------------
  // Read

  get(def: ResourceDef, namespace: string | undefined, name: string): JsonObject {
    return this.view(def, this.existing(def, namespace, name));
  }

  /** Objects of `def` in `namespace` (all when undefined) as a sorted array of stored objects. */
  private snapshot(def: ResourceDef, rv?: number): Map<string, JsonObject> {
    const current = this.bucket(def);
    if (rv === undefined || rv >= this.rv) return current;
    if (rv < this.compactedRv) throw tooOldResourceVersion(rv, this.compactedRv);
    const snap = new Map(current);
    const key = storageKeyOf(def);
    for (let i = this.history.length - 1; i >= 0 && this.history[i].rv > rv; i--) {
      const ev = this.history[i];
      if (ev.storageKey !== key) continue;
      if (ev.type === 'ADDED') snap.delete(ev.key);
      else if (ev.prev) snap.set(ev.key, ev.prev);
    }
    return snap;
  }

  selectors(def: ResourceDef, labelSelector?: string, fieldSelector?: string): { label: LabelSelector; field: FieldSelector } {
    const supported = new Set(['metadata.name', 'metadata.namespace', ...(def.fieldLabels ?? [])]);
    // Kinds without their own field label conversion get the default one's message.
    const unsupported = def.fieldLabelMessage === 'known' ? (label: string) => `"${label}" is not a known field selector: only "metadata.name", "metadata.namespace"` : undefined;
    return {
      label: parseLabelSelector(labelSelector),
      field: parseFieldSelector(fieldSelector, supported, def.fieldLabelRename, unsupported),
    };
  }

  private matcher(def: ResourceDef, opts: { namespace?: string; labelSelector?: string; fieldSelector?: string }): (obj: JsonObject) => boolean {
    const { label, field } = this.selectors(def, opts.labelSelector, opts.fieldSelector);
    const ns = def.namespaced ? opts.namespace : undefined;
    const valueOf = storageDef(def).fieldValue ?? fieldValue;
    return (obj) => {
      const m = isObject(obj.metadata) ? obj.metadata : {};
      if (ns && m.namespace !== ns) return false;
      if (!label.matches(isObject(m.labels) ? (m.labels as Record<string, string>) : undefined)) return false;
      return field.matches((f) => valueOf(obj, f));
    };
  }

  list(def: ResourceDef, opts: ListOptions = {}): JsonObject {
    const match = this.matcher(def, opts);
    let atRv: number | undefined;
    let startAfter = '';
    if (opts.continue) {
      let token: { rv?: unknown; start?: unknown };
      try {
        token = JSON.parse(Buffer.from(opts.continue, 'base64url').toString('utf8')) as typeof token;
      } catch {
        throw badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
      }
      if (typeof token.rv !== 'number' || typeof token.start !== 'string') throw badRequest('continue key is not valid');
      if (token.rv < this.compactedRv) {
        throw new ApiError(
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      }
      atRv = token.rv;
      startAfter = token.start;
    } else if (opts.resourceVersion && opts.resourceVersion !== '0') {
      const requested = Number(opts.resourceVersion);
      if (!Number.isInteger(requested) || requested < 0) throw badRequest(`invalid resource version: ${opts.resourceVersion}`);
      if (requested > this.rv) {
        throw new ApiError(504, 'Timeout', `Timeout: Too large resource version: ${requested}, current: ${this.rv}`, {
          causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
          retryAfterSeconds: 1,
        });
      }
      if (opts.resourceVersionMatch === 'Exact') atRv = requested;
    }
    const listRv = atRv ?? this.rv;
    const snap = this.snapshot(def, atRv);
    const keys = [...snap.keys()].filter((k) => k > startAfter).sort(compareKeys);
    const items: JsonObject[] = [];
    const limit = opts.limit && opts.limit > 0 ? opts.limit : Infinity;
    let remaining = 0;
    let lastKey = '';
    for (const k of keys) {
      const obj = snap.get(k) as JsonObject;
      if (!match(obj)) continue;
      if (items.length >= limit) {
        remaining++;
        continue;
      }
      items.push(obj);
      lastKey = k;
    }
    const listMeta: JsonObject = { resourceVersion: String(listRv) };
    if (remaining > 0) {
      listMeta.continue = Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: listRv, start: lastKey })).toString('base64url');
      // kube only reports remainingItemCount for lists without a selector.
      if (!opts.labelSelector && !opts.fieldSelector) listMeta.remainingItemCount = remaining;
    }
    return {
      kind: `${def.kind}List`,
      apiVersion: apiVersionOf(def),
      metadata: listMeta,
      // Items of a typed list carry no kind/apiVersion on the wire.
      items: items.map((o) => {
        const v = this.view(def, o);
        delete v.kind;
        delete v.apiVersion;
        return v;
      }),
    };
  }

  // -------------------------------------------------------------------------------------------
  // Create

  private checkNamespace(def: ResourceDef, namespace: string | undefined, obj: JsonObject): string | undefined {
    const m = meta(obj);
    if (!def.namespaced) {
      delete m.namespace;
      return undefined;
    }
    const bodyNs = str(m.namespace);
    if (namespace && bodyNs && bodyNs !== namespace) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    const ns = namespace || bodyNs;
    if (!ns) throw badRequest('the server could not find the requested resource: namespace is required');
    m.namespace = ns;
    return ns;
  }

  private checkTypeMeta(def: ResourceDef, obj: JsonObject): void {
    if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersionOf(def)) {
      throw badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${apiVersionOf(def)})`);
    }
    if (obj.kind !== undefined && obj.kind !== def.kind) {
      throw badRequest(`${def.kind} in version "${def.version}" cannot be handled as a ${String(obj.kind)}: the kind in the data does not match`);
    }
  }

  private validateName(def: ResourceDef, name: string): FieldError[] {
    if (def.nameFormat === 'label') {
      if (name.length > 63 || !DNS_LABEL.test(name)) {
        return [
          {
            type: 'FieldValueInvalid',
            field: 'metadata.name',
            value: name,
            detail:
              "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
          },
        ];
      }
    } else if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
      return [
        {
          type: 'FieldValueInvalid',
          field: 'metadata.name',
          value: name,
          detail:
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        },
      ];
    }
    return [];
  }

  create(def: ResourceDef, namespace: string | undefined, body: unknown, opts: WriteOptions = {}): JsonObject {
    if (!isObject(body)) throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(body)}'`);
    this.checkTypeMeta(def, body);
    let obj = clone(body);
    normalizeTimes(obj, def.kind, def.version);
    const ns = this.checkNamespace(def, namespace, obj);
    const m = meta(obj);
    if (str(m.resourceVersion)) throw internalError('resourceVersion should not be set on objects to be created');
    // Admission runs before the registry's BeforeCreate: NamespaceLifecycle (404), then the mutating plugins (which
    // may refuse the object: a pod of a service account that does not exist gets 403), then names and validation.
    this.requireNamespace(ns);
    def.admitCreate?.(obj, ns, this.admission);
    let name = str(m.name);
    const bucket = this.bucket(def);
    if (!name) {
      const generateName = str(m.generateName);
      if (!generateName) {
        throw invalid(def.kind, def.group, '', [{ type: 'FieldValueRequired', field: 'metadata.name', detail: 'name or generateName is required' }]);
      }
      for (let attempt = 0; attempt < 8; attempt++) {
        name = `${generateName.slice(0, 58)}${randomSuffix()}`;
        if (!bucket.has(objectKey(ns, name))) break;
      }
      m.name = name as string;
    }
    const objName = name as string;
    const nameErrs = this.validateName(def, objName);
    if (nameErrs.length > 0) throw invalid(def.kind, def.group, objName, nameErrs);
    // BeforeCreate: system fields are the server's.
    m.uid = randomUUID();
    m.creationTimestamp = this.timestamp();
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    if (def.generation) m.generation = 1;
    else delete m.generation;
    def.prepareForCreate?.(obj);
    const errs = def.validateCreate?.(obj) ?? [];
    if (errs.length > 0) throw invalid(def.kind, def.group, objName, errs);
    this.toWire(def, obj);
    const key = objectKey(ns, objName);
    if (bucket.has(key)) throw alreadyExists(def.resource, def.group, objName);
    obj = this.toStorage(def, obj);
    return this.view(def, this.commit(def, 'ADDED', key, obj, undefined, !!opts.dryRun));
  }

  // -------------------------------------------------------------------------------------------
  // Update (PUT) and the patch paths that end in it

  update(def: ResourceDef, namespace: string | undefined, name: string, body: unknown, opts: WriteOptions = {}): JsonObject {
    return this.updateInternal(def, namespace, name, body, opts, false);
  }

  private updateInternal(def: ResourceDef, namespace: string | undefined, name: string, body: unknown, opts: WriteOptions, fromPatch: boolean): JsonObject {
    if (!isObject(body)) throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(body)}'`);
    this.checkTypeMeta(def, body);
    const stored = this.existing(def, namespace, name);
    const old = this.view(def, stored);
    const oldMeta = meta(old);
    const obj = clone(body);
    obj.kind = def.kind;
    obj.apiVersion = apiVersionOf(def);
    normalizeTimes(obj, def.kind, def.version);
    const m = meta(obj);
    const bodyName = str(m.name);
    if (!bodyName) throw badRequest('name is required in the body of the request');
    if (bodyName !== name) throw badRequest(`the name of the object (${bodyName}) does not match the name on the URL (${name})`);
    this.checkNamespace(def, def.namespaced ? namespace ?? str(oldMeta.namespace) : undefined, obj);
    const key = objectKey(def.namespaced ? str(m.namespace) : undefined, name);
    const keyPath = this.storageKeyPath(def, str(m.namespace), name);

    // A uid in a PUT body is a storage precondition (DefaultUpdatedObjectInfo.Preconditions).
    const uid = str(m.uid);
    if (uid && uid !== oldMeta.uid) {
      if (!fromPatch || this.patchUidMismatch === 'conflict') {
        throw preconditionFailed(def.resource, def.group, name, keyPath, 'UID', uid, String(oldMeta.uid));
      }
      // Reported twice, as kube does: by the generic ObjectMeta update validation and by the kind's ValidateUpdate.
      const immutable: FieldError = { type: 'FieldValueInvalid', field: 'metadata.uid', value: uid, detail: 'field is immutable' };
      throw invalid(def.kind, def.group, name, [immutable, immutable]);
    }
    const rv = str(m.resourceVersion);
    if (rv && rv !== oldMeta.resourceVersion) throw conflict(def.resource, def.group, name);

    const next: JsonObject = obj;
    if (opts.subresource === 'status') {
      // Status strategies keep the stored spec. Metadata comes from the request as in any update (labels and
      // annotations may change); a pod keeps its owner references (podStatusStrategy.PrepareForUpdate).
      if (old.spec === undefined) delete next.spec;
      else next.spec = clone(old.spec);
      if (def.resource === 'pods' && def.group === '') {
        if (oldMeta.ownerReferences === undefined) delete m.ownerReferences;
        else m.ownerReferences = clone(oldMeta.ownerReferences);
      }
    } else {
      if (def.statusSubresource) {
        if (old.status === undefined) delete next.status;
        else next.status = clone(old.status);
      }
      if (def.resource === 'namespaces' && def.group === '') next.spec = clone(old.spec ?? {});
      def.admitUpdate?.(next, this.admission);
    }
    // BeforeUpdate: system fields come from the stored object.
    m.uid = oldMeta.uid as string;
    m.creationTimestamp = oldMeta.creationTimestamp as string;
    if (oldMeta.deletionTimestamp !== undefined) m.deletionTimestamp = oldMeta.deletionTimestamp;
    else delete m.deletionTimestamp;
    if (oldMeta.deletionGracePeriodSeconds !== undefined && m.deletionGracePeriodSeconds === undefined) {
      m.deletionGracePeriodSeconds = oldMeta.deletionGracePeriodSeconds;
    }
    if (def.generation) {
      const gen = typeof oldMeta.generation === 'number' ? oldMeta.generation : 1;
      m.generation = deepEqual(next.spec, old.spec) ? gen : gen + 1;
    } else if (oldMeta.generation !== undefined) {
      m.generation = oldMeta.generation;
    } else {
      delete m.generation;
    }
    if (def.resource === 'namespaces' && def.group === '') {
      const labels = isObject(m.labels) ? m.labels : {};
      labels['kubernetes.io/metadata.name'] = name;
      m.labels = labels;
    }
    if (opts.subresource !== 'status') {
      const errs = def.validateUpdate?.(next, old) ?? [];
      if (errs.length > 0) throw invalid(def.kind, def.group, name, errs);
    }
    this.toWire(def, next);
    meta(next).resourceVersion = oldMeta.resourceVersion as string;

    // An update that changes nothing writes nothing: no new resourceVersion, no watch event.
    if (deepEqual(next, old)) return old;

    const nextMeta = meta(next);
    const finalizers = Array.isArray(nextMeta.finalizers) ? nextMeta.finalizers : [];
    if (nextMeta.deletionTimestamp !== undefined && finalizers.length === 0 && (nextMeta.deletionGracePeriodSeconds ?? 0) === 0) {
      // shouldDeleteDuringUpdate: the last finalizer is gone from an object being deleted.
      return this.view(def, this.commit(def, 'DELETED', key, this.toStorage(def, next), stored, !!opts.dryRun));
    }
    return this.view(def, this.commit(def, 'MODIFIED', key, this.toStorage(def, next), stored, !!opts.dryRun));
  }

  patch(def: ResourceDef, namespace: string | undefined, name: string, type: PatchType, patch: unknown, opts: WriteOptions = {}): JsonObject {
    const current = this.get(def, namespace, name);
    let patched: Json;
    switch (type) {
      case 'merge':
        if (!isObject(patch)) throw badRequest('json: cannot unmarshal the patch into an object');
        patched = jsonMergePatch(current, patch);
        break;
      case 'strategic':
        if (!isObject(patch)) throw badRequest('json: cannot unmarshal the patch into an object');
        patched = strategicMergePatch(current, patch, def.smp);
        break;
      case 'json':
        patched = jsonPatch(current, patch);
        break;
    }
    if (!isObject(patched)) throw new ApiError(422, 'Invalid', 'the patch did not produce an object');
    try {
      normalizeTimes(clone(patched), def.kind, def.version);
    } catch (err) {
      if (!(err instanceof TimeDecodeError)) throw err;
      // The patched object does not decode: 422 on the field "patch", showing the patch (strategic merge: as the Go
      // map it was applied as) or the patched object (merge and JSON patch: the JSON that was decoded).
      const value = JSON.stringify(type === 'strategic' ? goFormat(patch as Json) : JSON.stringify(patched));
      const message = `Invalid value: ${value}: ${err.parseError}`;
      throw new ApiError(422, 'Invalid', ` "" is invalid: patch: ${message}`, { causes: [{ reason: 'FieldValueInvalid', message, field: 'patch' }] });
    }
    const pm = meta(patched);
    // checkName in the patch handler: the patch may not rename or move the object.
    if (pm.name !== name) throw badRequest(`the name of the object (${String(pm.name)}) does not match the name on the URL (${name})`);
    if (def.namespaced && pm.namespace !== (current.metadata as JsonObject).namespace) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    return this.updateInternal(def, namespace, name, patched, opts, true);
  }

  /** pods/binding: what the scheduler posts to set spec.nodeName. */
  bind(def: ResourceDef, namespace: string | undefined, name: string, binding: unknown, opts: WriteOptions = {}): KubeStatus {
    if (!isObject(binding) || !isObject(binding.target) || typeof binding.target.name !== 'string') {
      throw invalid('Binding', '', name, [{ type: 'FieldValueRequired', field: 'target.name' }]);
    }
    const stored = this.existing(def, namespace, name);
    const old = this.view(def, stored);
    const spec = isObject(old.spec) ? old.spec : {};
    if (meta(old).deletionTimestamp !== undefined) throw conflict(def.resource, def.group, name, 'pod is being deleted, cannot be assigned to a host');
    if (spec.nodeName) throw conflict(def.resource, def.group, name, `pod ${name} is already assigned to node "${String(spec.nodeName)}"`);
    const next = clone(old);
    (next.spec as JsonObject).nodeName = binding.target.name;
    const status = isObject(next.status) ? next.status : {};
    const conditions = Array.isArray(status.conditions) ? status.conditions.filter((c) => !(isObject(c) && c.type === 'PodScheduled')) : [];
    conditions.push({ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: this.timestamp() });
    status.conditions = conditions;
    next.status = status;
    this.commit(def, 'MODIFIED', objectKey(namespace, name), this.toStorage(def, next), stored, !!opts.dryRun);
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
  }

  // -------------------------------------------------------------------------------------------
  // Delete

  delete(def: ResourceDef, namespace: string | undefined, name: string, options: DeleteOptions = {}): JsonObject | KubeStatus {
    const stored = this.existing(def, namespace, name);
    const old = this.view(def, stored);
    const oldMeta = meta(old);
    const ns = def.namespaced ? str(oldMeta.namespace) : undefined;
    const key = objectKey(ns, name);
    const dryRun = !!options.dryRun?.includes('All');
    const pre = options.preconditions;
    // rest.BeforeDelete checks the preconditions, naming the kind (not the resource) in its Conflict.
    if (pre?.uid && pre.uid !== oldMeta.uid) {
      throw conflict(def.kind, def.group, name, `the UID in the precondition (${pre.uid}) does not match the UID in record (${String(oldMeta.uid)}). The object might have been deleted and then recreated`);
    }
    if (pre?.resourceVersion && pre.resourceVersion !== oldMeta.resourceVersion) {
      throw conflict(
        def.kind,
        def.group,
        name,
        `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${String(oldMeta.resourceVersion)}). The object might have been modified`,
      );
    }
    if (def.resource === 'namespaces' && def.group === '' && IMMORTAL_NAMESPACES.includes(name)) {
      throw new ApiError(403, 'Forbidden', `namespaces "${name}" is forbidden: this namespace may not be deleted`, { name, kind: 'namespaces' });
    }

    const finalizers = Array.isArray(oldMeta.finalizers) ? oldMeta.finalizers : [];
    const isPod = def.resource === 'pods' && def.group === '';
    // Negative grace periods count as 1 s on the delete path.
    const requested = typeof options.gracePeriodSeconds === 'number' ? (options.gracePeriodSeconds < 0 ? 1 : options.gracePeriodSeconds) : undefined;
    const next = clone(old);
    const nm = meta(next);
    // rest.BeforeDelete (pods are a graceful strategy) and the store's finalizer handling: the object is first
    // updated (deletionTimestamp, deletionGracePeriodSeconds: a MODIFIED event), then removed when nothing holds it.
    let updated = false;
    let remove: boolean;
    if (isPod && oldMeta.deletionTimestamp !== undefined) {
      // Already being deleted: only a shorter grace period, given in the options, changes anything.
      const current = typeof oldMeta.deletionGracePeriodSeconds === 'number' ? oldMeta.deletionGracePeriodSeconds : 0;
      if (current === 0) {
        remove = finalizers.length === 0;
      } else if (requested === undefined || requested >= current) {
        return this.deleteResult(def, old, false);
      } else {
        const start = Date.parse(String(oldMeta.deletionTimestamp)) - current * 1000;
        nm.deletionTimestamp = new Date(start + requested * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
        nm.deletionGracePeriodSeconds = requested;
        updated = true;
        remove = requested === 0 && finalizers.length === 0;
      }
    } else if (isPod) {
      // podStrategy.CheckGracefulDelete: the options' period, else the pod's; 0 when unscheduled or finished.
      const spec = isObject(old.spec) ? old.spec : {};
      const status = isObject(old.status) ? old.status : {};
      let period = requested ?? (typeof spec.terminationGracePeriodSeconds === 'number' ? spec.terminationGracePeriodSeconds : 0);
      if (!spec.nodeName || status.phase === 'Failed' || status.phase === 'Succeeded') period = 0;
      nm.deletionTimestamp = this.timestamp(period);
      nm.deletionGracePeriodSeconds = period;
      if (typeof nm.generation === 'number' && nm.generation > 0) nm.generation = nm.generation + 1;
      updated = true;
      remove = period === 0 && finalizers.length === 0;
    } else if (oldMeta.deletionTimestamp !== undefined) {
      remove = finalizers.length === 0;
      if (!remove) return this.deleteResult(def, old, false);
    } else if (finalizers.length > 0) {
      // markAsDeleting: the finalizers hold it.
      nm.deletionTimestamp = this.timestamp();
      nm.deletionGracePeriodSeconds = 0;
      if (typeof nm.generation === 'number' && nm.generation > 0) nm.generation = nm.generation + 1;
      updated = true;
      remove = false;
    } else if (def.resource === 'namespaces' && def.group === '') {
      // The namespace is Terminating (the DELETE answers with it); its controller, which here runs at once, deletes
      // what it holds and then the namespace.
      nm.deletionTimestamp = this.timestamp();
      next.status = { ...(isObject(next.status) ? next.status : {}), phase: 'Terminating' };
      updated = true;
      remove = true;
    } else {
      remove = true;
    }

    let current = stored;
    if (updated) current = this.commit(def, 'MODIFIED', key, this.toStorage(def, next), stored, dryRun);
    if (remove) {
      if (def.resource === 'namespaces' && def.group === '') this.deleteNamespaceContents(name, dryRun);
      const last = this.commit(def, 'DELETED', key, this.toStorage(def, clone(current)), current, dryRun);
      if (def.resource === 'namespaces' && def.group === '') return this.view(def, last);
      return this.deleteResult(def, this.view(def, last), true);
    }
    return this.deleteResult(def, this.view(def, current), false);
  }

  private deleteResult(def: ResourceDef, obj: JsonObject, removed: boolean): JsonObject | KubeStatus {
    if (!removed || def.returnDeletedObject) return obj;
    const m = meta(obj);
    const details: { name: string; group?: string; kind: string; uid: string } = { name: String(m.name), kind: def.resource, uid: String(m.uid) };
    if (def.group) details.group = def.group;
    return successStatus(details);
  }

  private deleteNamespaceContents(namespace: string, dryRun: boolean): void {
    const seen = new Set<string>();
    for (const def of this.defs) {
      if (!def.namespaced || def.storageOf) continue;
      const sk = storageKeyOf(def);
      if (seen.has(sk)) continue;
      seen.add(sk);
      const bucket = this.bucket(def);
      for (const [key, obj] of [...bucket.entries()]) {
        if (meta(obj).namespace === namespace) this.commit(def, 'DELETED', key, clone(obj), obj, dryRun);
      }
    }
  }

  deleteCollection(def: ResourceDef, opts: ListOptions, options: DeleteOptions = {}): JsonObject {
    const list = this.list(def, { namespace: opts.namespace, labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector });
    const items: JsonObject[] = [];
    for (const item of list.items as JsonObject[]) {
      const m = meta(item);
      try {
        const out = this.delete(def, str(m.namespace), String(m.name), { ...options, preconditions: undefined });
        if (out.kind !== 'Status') {
          const copy = { ...(out as JsonObject) };
          delete copy.kind;
          delete copy.apiVersion;
          items.push(copy);
        } else {
          items.push(item);
        }
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
    return { kind: `${def.kind}List`, apiVersion: apiVersionOf(def), metadata: { resourceVersion: String(this.rv) }, items };
  }

  // -------------------------------------------------------------------------------------------
  // Watch

  /**
   * Starts a watch: replays history after `resourceVersion` (or the current state as ADDED events
   * when it is absent or "0"), then follows live changes. Throws 410 Expired when the history no
   * longer reaches back to `resourceVersion`. Returns the function that stops it.
   */
  watch(def: ResourceDef, opts: WatchOptions, sink: WatchSink): () => void {
    const match = this.matcher(def, { namespace: opts.namespace, labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector });
    const sk = storageKeyOf(def);
    const translate = (ev: StoreEvent): void => {
      if (ev.storageKey !== sk) return;
      const now = match(ev.object);
      const before = ev.prev !== undefined && match(ev.prev);
      let type: WatchEventType | undefined;
      if (ev.type === 'ADDED') type = now ? 'ADDED' : undefined;
      else if (ev.type === 'DELETED') type = before ? 'DELETED' : undefined;
      else if (now && before) type = 'MODIFIED';
      else if (now) type = 'ADDED';
      else if (before) type = 'DELETED';
      if (type) sink.event(type, this.view(def, ev.object));
    };
    const rvText = opts.resourceVersion ?? '';
    let from: number | undefined;
    if (rvText !== '' && rvText !== '0') {
      from = Number(rvText);
      if (!Number.isInteger(from) || from < 0) throw badRequest(`invalid resource version: ${rvText}`);
    }
    if (from === undefined || opts.sendInitialEvents) {
      const snap = this.snapshot(def);
      for (const k of [...snap.keys()].sort(compareKeys)) {
        const obj = snap.get(k) as JsonObject;
        if (match(obj)) sink.event('ADDED', this.view(def, obj));
      }
      if (opts.sendInitialEvents) sink.initialEventsEnd?.(this.rv);
    } else {
      if (from < this.compactedRv) throw tooOldResourceVersion(from, this.compactedRv);
      for (const ev of this.history) if (ev.rv > from) translate(ev);
    }
    return this.subscribe(translate);
  }

  // -------------------------------------------------------------------------------------------
  // Test helpers

  /** Writes an object as-is (no defaulting, no strategy), creating or replacing it; emits ADDED or MODIFIED. */
  put(def: ResourceDef, obj: JsonObject): JsonObject {
    const o = clone(obj);
    const m = meta(o);
    const name = str(m.name);
    if (!name) throw new Error('test-apiserver: put needs metadata.name');
    const ns = def.namespaced ? str(m.namespace) ?? 'default' : undefined;
    if (ns) m.namespace = ns;
    else delete m.namespace;
    const key = objectKey(ns, name);
    const prev = this.bucket(def).get(key);
    if (!m.uid) m.uid = prev ? (meta(prev).uid as string) : randomUUID();
    if (!m.creationTimestamp) m.creationTimestamp = prev ? (meta(prev).creationTimestamp as string) : this.timestamp();
    o.kind = def.kind;
    o.apiVersion = apiVersionOf(def);
    return this.view(def, this.commit(def, prev ? 'MODIFIED' : 'ADDED', key, this.toStorage(def, o), prev, false));
  }

  /** The stored object (storage version, a copy) or undefined. */
  peek(def: ResourceDef, namespace: string | undefined, name: string): JsonObject | undefined {
    const stored = this.bucket(def).get(objectKey(def.namespaced ? namespace : undefined, name));
    return stored ? this.view(def, stored) : undefined;
  }

  /** All objects of a resource (optionally of one namespace), sorted by namespace/name, with kind and apiVersion. */
  all(def: ResourceDef, namespace?: string): JsonObject[] {
    const bucket = this.bucket(def);
    return [...bucket.keys()]
      .sort(compareKeys)
      .map((k) => bucket.get(k) as JsonObject)
      .filter((o) => !namespace || meta(o).namespace === namespace)
      .map((o) => this.view(def, o));
  }
}
