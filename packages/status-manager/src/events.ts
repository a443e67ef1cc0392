// The kubelet's event recorder (Go: client-go tools/record EventBroadcaster + recorder +
// EventCorrelator, as the kubelet sets them up): core/v1 Events named <object>.<hex nanos>,
// aggregated and counted on repeats (PATCH of the existing event), spam-filtered per object,
// rate limited (--event-qps/--event-burst), retried on transport errors, and logged.
import { format } from 'node:util';
import type { CoreV1Event, V1ObjectReference, V1Pod } from '@kubernetes/client-node';
import {
  apiCallOptions,
  apiErrorCode,
  BucketRateLimiter,
  containerFieldPath,
  formatTime,
  isAlreadyExists,
  isNotFound,
  PatchContentType,
  defaultLogger,
  realClock,
  type Clock,
  type EventDetails,
  type EventObject,
  type EventRecorder as CoreEventRecorder,
  type EventType,
  type Logger,
} from '@kubelet-ts/core';
import type { KubeClient } from './client.js';

export { KubeletEventReason, nodeReference, type EventDetails, type EventObject, type EventType } from '@kubelet-ts/core';

/**
 * Go's record.EventRecorder: core's EventRecorder (what the components report through) plus eventf.
 * One KubeletEventRecorder serves every component.
 */
export interface EventRecorder extends CoreEventRecorder {
  event(object: EventObject, type: EventType | string, reason: string, message: string, details?: EventDetails): void;
  /** message formatted from messageFmt and args, Go style (%s %v %d %q). */
  eventf(object: EventObject, type: EventType | string, reason: string, messageFmt: string, ...args: unknown[]): void;
}

/** Go's ref.GetReference: kind/apiVersion (Pod v1 when an object carries none), name, namespace, uid, resourceVersion. */
export function getReference(object: EventObject, details?: EventDetails): V1ObjectReference {
  let ref: V1ObjectReference;
  const meta = (object as { metadata?: Record<string, unknown> }).metadata;
  if (meta) {
    const o = object as V1Pod;
    ref = { kind: o.kind ?? 'Pod', apiVersion: o.apiVersion ?? 'v1', name: o.metadata?.name, namespace: o.metadata?.namespace, uid: o.metadata?.uid };
    if (o.metadata?.resourceVersion) ref.resourceVersion = o.metadata.resourceVersion;
  } else {
    ref = { ...(object as V1ObjectReference) };
  }
  const fieldPath = details?.fieldPath ?? (details?.containerName && meta ? containerFieldPath(object as V1Pod, details.containerName) : undefined);
  if (fieldPath) ref.fieldPath = fieldPath;
  return ref;
}

/** Go's fmt verbs the kubelet uses, on top of util.format (%v -> %s, %q -> quoted). */
export function goSprintf(fmt: string, ...args: unknown[]): string {
  let i = 0;
  return fmt.replace(/%([-+# 0]*\d*(?:\.\d+)?)([a-zA-Z%])/g, (whole, _flags: string, verb: string) => {
    if (verb === '%') return '%';
    if (i >= args.length) return `%!${verb}(MISSING)`;
    const arg = args[i++];
    switch (verb) {
      case 'q':
        return JSON.stringify(String(arg));
      case 'd':
        return String(typeof arg === 'number' ? Math.trunc(arg) : arg);
      case 'v':
      case 's':
        return arg instanceof Error ? arg.message : typeof arg === 'object' && arg !== null ? JSON.stringify(arg) : String(arg);
      default:
        return format(`%${verb}`, arg) === `%${verb}` ? whole : format(`%${verb}`, arg);
    }
  });
}

/** The message of eventf(): messageFmt formatted with args by goSprintf, or as is without args. */
export function eventfMessage(messageFmt: string, args: unknown[]): string {
  return args.length > 0 ? goSprintf(messageFmt, ...args) : messageFmt;
}

/** A small LRU (k8s.io/utils/lru) for the correlator's caches. */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly size: number) {}
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.size) this.map.delete(this.map.keys().next().value as string);
  }
}

/** flowcontrol's passive token bucket: tryAccept takes a token only if one is there. */
class PassiveTokenBucket {
  private tokens: number;
  private last: number;
  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly clock: Clock,
  ) {
    this.tokens = burst;
    this.last = clock.now();
  }
  tryAccept(): boolean {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, now - this.last) / 1000) * this.qps);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export interface CorrelatorOptions {
  /** Entries of each cache. Default 4096. */
  lruCacheSize?: number;
  /** Events per object before the spam filter drops them. Default 25. */
  spamBurst?: number;
  /** Refill of that budget. Default 1/300 (one per 5 minutes). */
  spamQps?: number;
  /** Distinct messages of one reason before they are combined. Default 10. */
  aggregateMaxEvents?: number;
  /** Window of that count. Default 600 s. */
  aggregateIntervalMs?: number;
}

/** What the correlator makes of an event: the event to send, and whether to skip it (Go: EventCorrelateResult). */
export interface CorrelateResult {
  event: CoreV1Event;
  /** Set for a repeat: the patch of count, lastTimestamp and message. */
  patch?: Record<string, unknown>;
  skip: boolean;
}

const ref = (e: CoreV1Event): V1ObjectReference => e.involvedObject;
const join = (...parts: (string | number | undefined)[]): string => parts.map((p) => p ?? '').join('');

/** client-go's EventCorrelator: aggregation (EventAggregatorByReasonFunc), repeat counting, spam filter. */
export class EventCorrelator {
  private readonly aggregates: Lru<{ localKeys: Set<string>; lastTimestamp: number }>;
  private readonly observations: Lru<{ count: number; firstTimestamp: Date; name: string; resourceVersion?: string }>;
  private readonly spam: Lru<PassiveTokenBucket>;
  private readonly opts: Required<CorrelatorOptions>;

  constructor(
    private readonly clock: Clock,
    private readonly makeName: (objectName: string) => string,
    opts: CorrelatorOptions = {},
  ) {
    this.opts = {
      lruCacheSize: opts.lruCacheSize ?? 4096,
      spamBurst: opts.spamBurst ?? 25,
      spamQps: opts.spamQps ?? 1 / 300,
      aggregateMaxEvents: opts.aggregateMaxEvents ?? 10,
      aggregateIntervalMs: opts.aggregateIntervalMs ?? 600_000,
    };
    this.aggregates = new Lru(this.opts.lruCacheSize);
    this.observations = new Lru(this.opts.lruCacheSize);
    this.spam = new Lru(this.opts.lruCacheSize);
  }

  static eventKey(e: CoreV1Event): string {
    const o = ref(e);
    return join(e.source?.component, e.source?.host, o.kind, o.namespace, o.name, o.fieldPath, o.uid, o.apiVersion, e.type, e.reason, e.message);
  }

  static aggregateKey(e: CoreV1Event): string {
    const o = ref(e);
    return join(e.source?.component, e.source?.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion, e.type, e.reason, e.reportingComponent, e.reportingInstance);
  }

  static spamKey(e: CoreV1Event): string {
    const o = ref(e);
    return join(e.source?.component, e.source?.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion);
  }

  correlate(input: CoreV1Event): CorrelateResult {
    // 1. Aggregate: the 10th distinct message of one reason within 10 minutes becomes a combined event.
    const now = this.clock.now();
    let key = EventCorrelator.eventKey(input);
    let event = input;
    const aggKey = EventCorrelator.aggregateKey(input);
    let record = this.aggregates.get(aggKey);
    if (!record || now - record.lastTimestamp > this.opts.aggregateIntervalMs) record = { localKeys: new Set(), lastTimestamp: now };
    record.localKeys.add(input.message ?? '');
    record.lastTimestamp = now;
    this.aggregates.set(aggKey, record);
    if (record.localKeys.size >= this.opts.aggregateMaxEvents) {
      const first = record.localKeys.values().next().value as string;
      record.localKeys.delete(first);
      const t = new Date(Math.floor(now / 1000) * 1000);
      event = {
        metadata: { name: this.makeName(input.involvedObject.name ?? ''), namespace: input.metadata.namespace },
        count: 1,
        firstTimestamp: t,
        lastTimestamp: t,
        involvedObject: input.involvedObject,
        message: `(combined from similar events): ${input.message ?? ''}`,
        type: input.type,
        reason: input.reason,
        source: input.source,
        reportingComponent: input.reportingComponent,
        reportingInstance: input.reportingInstance,
      };
      key = aggKey;
    }
    // 2. Observe: a repeat of a known event updates it (count+1, same name and first timestamp).
    event = { ...event, metadata: { ...event.metadata } };
    let patch: Record<string, unknown> | undefined;
    const last = this.observations.get(key);
    if (last && last.count > 0) {
      event.metadata.name = last.name;
      event.metadata.resourceVersion = last.resourceVersion;
      event.firstTimestamp = last.firstTimestamp;
      event.count = last.count + 1;
      patch = { count: event.count, lastTimestamp: formatTime(event.lastTimestamp ?? now), message: event.message };
    }
    this.observations.set(key, { count: event.count ?? 1, firstTimestamp: event.firstTimestamp ?? new Date(now), name: event.metadata.name ?? '', resourceVersion: event.metadata.resourceVersion });
    // 3. Spam filter: 25 events per object, then one per 5 minutes.
    const spamKey = EventCorrelator.spamKey(event);
    let bucket = this.spam.get(spamKey);
    if (!bucket) bucket = new PassiveTokenBucket(this.opts.spamQps, this.opts.spamBurst, this.clock);
    this.spam.set(spamKey, bucket);
    if (!bucket.tryAccept()) return { event, skip: true };
    return { event, patch, skip: false };
  }

  /** Records the server's copy (name, resourceVersion, count) after a successful write. */
  updateState(event: CoreV1Event): void {
    this.observations.set(EventCorrelator.eventKey(event), {
      count: event.count ?? 1,
      firstTimestamp: event.firstTimestamp ?? new Date(this.clock.now()),
      name: event.metadata?.name ?? '',
      resourceVersion: event.metadata?.resourceVersion,
    });
  }
}

export interface EventRecorderOptions {
  /** Where events go; undefined: they are only logged. */
  kubeClient?: Pick<KubeClient, 'createNamespacedEvent' | 'patchNamespacedEvent'>;
  /** Event source component and reportingComponent. Default "kubelet". */
  component?: string;
  /** Event source host and reportingInstance: the node name. */
  host: string;
  clock?: Clock;
  logger?: Logger;
  /** --event-qps: events per second sent to the API server. Default 50. */
  qps?: number;
  /** --event-burst. Default 100. */
  burst?: number;
  /** Events waiting for the API server (client-go's maxQueuedEvents); more are dropped. Default 1000. */
  maxQueuedEvents?: number;
  /** Tries per event on transport errors. Default 12. */
  maxTries?: number;
  /** Wait between tries (the first one randomized below it). Default 10 s. */
  retrySleepMs?: number;
  /** klog level events are logged at (Go: StartStructuredLogging(3)); without a client they log at 0. */
  logVerbosity?: number;
  correlator?: CorrelatorOptions;
  random?: () => number;
}

export interface EventRecorderStats {
  recorded: number;
  created: number;
  patched: number;
  /** Dropped by the per-object spam filter. */
  spamFiltered: number;
  /** Dropped because maxQueuedEvents were already waiting. */
  dropped: number;
  /** Given up after errors. */
  failed: number;
  queued: number;
}

/**
 * The kubelet's recorder: event()/eventf() never block; events are correlated and written in
 * order by one background pump, which stop() ends.
 */
export class KubeletEventRecorder implements EventRecorder {
  private readonly kubeClient: EventRecorderOptions['kubeClient'];
  private readonly component: string;
  private readonly host: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly maxQueued: number;
  private readonly maxTries: number;
  private readonly retrySleepMs: number;
  private readonly logVerbosity: number;
  private readonly random: () => number;
  private readonly bucket: BucketRateLimiter<string>;
  private readonly correlator: EventCorrelator;
  private readonly queue: CoreV1Event[] = [];
  private readonly counters: EventRecorderStats = { recorded: 0, created: 0, patched: 0, spamFiltered: 0, dropped: 0, failed: 0, queued: 0 };
  private pump: Promise<void> | undefined;
  private readonly abort = new AbortController();
  private lastMs = 0;
  private seq = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(opts: EventRecorderOptions) {
    this.kubeClient = opts.kubeClient;
    this.component = opts.component ?? 'kubelet';
    this.host = opts.host;
    this.clock = opts.clock ?? realClock;
    this.logger = opts.logger ?? defaultLogger;
    this.maxQueued = opts.maxQueuedEvents ?? 1000;
    this.maxTries = opts.maxTries ?? 12;
    this.retrySleepMs = opts.retrySleepMs ?? 10_000;
    this.logVerbosity = opts.logVerbosity ?? 3;
    this.random = opts.random ?? Math.random;
    this.bucket = new BucketRateLimiter<string>(opts.qps ?? 50, opts.burst ?? 100, this.clock);
    this.correlator = new EventCorrelator(this.clock, (name) => this.eventName(name), opts.correlator);
    if (!this.kubeClient) this.logger.info('No api server defined - no events will be sent to API server.');
  }

  event(object: EventObject, type: EventType | string, reason: string, message: string, details?: EventDetails): void {
    if (this.abort.signal.aborted) return;
    const involved = getReference(object, details);
    const now = this.clock.now();
    const t = new Date(Math.floor(now / 1000) * 1000);
    const event: CoreV1Event = {
      metadata: { name: this.eventName(involved.name ?? ''), namespace: involved.namespace || 'default' },
      involvedObject: involved,
      reason,
      message,
      firstTimestamp: t,
      lastTimestamp: t,
      count: 1,
      type,
      source: { component: this.component, host: this.host },
      reportingComponent: this.component,
      reportingInstance: this.host,
    };
    if (details?.annotations) event.metadata.annotations = { ...details.annotations };
    this.counters.recorded++;
    const kv = {
      object: `${involved.namespace ? `${involved.namespace}/` : ''}${involved.name ?? ''}`,
      fieldPath: involved.fieldPath ?? '',
      kind: involved.kind ?? '',
      apiVersion: involved.apiVersion ?? '',
      type,
      reason,
      message,
    };
    if (this.kubeClient) this.logger.v(this.logVerbosity).info('Event occurred', kv);
    else {
      this.logger.info('Event occurred', kv);
      return;
    }
    if (this.queue.length >= this.maxQueued) {
      this.counters.dropped++;
      if (this.counters.dropped === 1 || this.counters.dropped % 100 === 0) {
        this.logger.warn('Event dropped: too many events waiting to be sent (rate limited or API server unreachable)', { dropped: this.counters.dropped, reason, object: kv.object });
      }
      return;
    }
    this.queue.push(event);
    this.pump ??= this.run().finally(() => {
      this.pump = undefined;
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    });
  }

  eventf(object: EventObject, type: EventType | string, reason: string, messageFmt: string, ...args: unknown[]): void {
    this.event(object, type, reason, eventfMessage(messageFmt, args));
  }

  stats(): EventRecorderStats {
    return { ...this.counters, queued: this.queue.length };
  }

  /** Resolves once every queued event was written, dropped or given up on. */
  whenIdle(): Promise<void> {
    if (!this.pump) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops sending: queued events are dropped, a retry wait or request in progress ends. */
  async stop(): Promise<void> {
    this.abort.abort();
    this.queue.length = 0;
    await this.pump;
  }

  /** <name>.<hex nanoseconds>, unique even for events in the same millisecond. */
  private eventName(objectName: string): string {
    const ms = this.clock.now();
    if (ms === this.lastMs) this.seq++;
    else {
      this.lastMs = ms;
      this.seq = 0;
    }
    const nanos = BigInt(Math.floor(ms)) * 1_000_000n + BigInt(this.seq % 1_000_000);
    return `${objectName}.${nanos.toString(16)}`;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (this.queue.length > 0 && !signal.aborted) {
      const event = this.queue.shift()!;
      const result = this.correlator.correlate(event);
      if (result.skip) {
        this.counters.spamFiltered++;
        this.logger.v(4).info('Event filtered as spam', { reason: event.reason, object: event.involvedObject.name });
        continue;
      }
      for (let tries = 1; !signal.aborted; tries++) {
        if (await this.recordEvent(result, signal)) break;
        if (tries >= this.maxTries) {
          this.counters.failed++;
          this.logger.error('Unable to write event (retry limit exceeded!)', undefined, { reason: event.reason, object: event.involvedObject.name });
          break;
        }
        const delay = tries === 1 ? this.retrySleepMs * this.random() : this.retrySleepMs;
        try {
          await this.clock.sleep(delay, signal);
        } catch {
          return;
        }
      }
    }
  }

  /** One write; true when done with the event (written or refused for good), false to retry. */
  private async recordEvent(result: CorrelateResult, signal: AbortSignal): Promise<boolean> {
    const client = this.kubeClient!;
    const event = result.event;
    const namespace = event.metadata.namespace ?? 'default';
    try {
      let written: CoreV1Event | undefined;
      if ((event.count ?? 1) > 1 && result.patch) {
        await this.waitForToken(signal);
        try {
          written = await client.patchNamespacedEvent(
            { name: event.metadata.name!, namespace, body: result.patch },
            apiCallOptions({ contentType: PatchContentType.StrategicMergePatch }),
          );
          this.counters.patched++;
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
      if (!written) {
        await this.waitForToken(signal);
        const body = { ...event, metadata: { ...event.metadata } };
        delete body.metadata.resourceVersion;
        written = await client.createNamespacedEvent({ namespace, body });
        this.counters.created++;
      }
      this.correlator.updateState(written);
      return true;
    } catch (err) {
      if (signal.aborted) return true;
      const code = apiErrorCode(err);
      if (code !== undefined && code !== 429 && code < 500) {
        if (isAlreadyExists(err)) this.logger.v(5).info('Server rejected event (will not retry!)', { reason: event.reason, code });
        else this.logger.error('Server rejected event (will not retry!)', err, { reason: event.reason, object: event.involvedObject.name, code });
        this.counters.failed++;
        return true;
      }
      this.logger.error('Unable to write event (may retry after sleeping)', err, { reason: event.reason, object: event.involvedObject.name });
      return false;
    }
  }

  private async waitForToken(signal: AbortSignal): Promise<void> {
    const wait = this.bucket.when('events');
    if (wait > 0) await this.clock.sleep(wait, signal);
  }
}
