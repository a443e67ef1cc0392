import { STATUS_CODES } from 'node:http';
import type { V1Pod } from '@kubernetes/client-node';
import { PodOperation, PodSource, abortReason, defaultLogger, realClock, type Clock, type Logger, type PodSourceName } from '@kubelet-ts/core';
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import type { Agent, Dispatcher } from 'undici';
import { abortable } from './util.js';
import type { PodUpdateSink } from './config.js';
import { ManifestError, decodePodsManifest, generatePodName } from './static-pod.js';

// undici costs ~18 MiB and a few hundred ms at import: a file-only or API-only user of the package never loads it.
let undiciModule: typeof Undici | undefined;
function undici(): typeof Undici {
  undiciModule ??= createRequire(import.meta.url)('undici') as typeof Undici;
  return undiciModule;
}

/** HTTP headers for the manifest URL: `key:value` (the --manifest-url-header flag) or a map as KubeletConfiguration.staticPodURLHeader. */
export type ManifestUrlHeader = string | Record<string, string | readonly string[]>;

const tokenRegexp = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Validates and normalizes manifest URL headers. A string must be one `key:value` pair, as the Go
 * kubelet requires ("manifest-url-header must have a single ':' key-value separator, got ...").
 */
export function parseManifestUrlHeader(header: ManifestUrlHeader | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (header === undefined || header === '') return out;
  const add = (key: string, value: string): void => {
    if (!tokenRegexp.test(key)) throw new Error(`manifest-url-header has an invalid header name ${JSON.stringify(key)}`);
    if (/[\r\n\0]/.test(value)) throw new Error(`manifest-url-header ${JSON.stringify(key)} has an invalid value`);
    (out[key] ??= []).push(value);
  };
  if (typeof header === 'string') {
    const pieces = header.split(':');
    if (pieces.length !== 2) throw new Error(`manifest-url-header must have a single ':' key-value separator, got ${JSON.stringify(header)}`);
    add(pieces[0].trim(), pieces[1].trim());
    return out;
  }
  for (const [key, values] of Object.entries(header)) {
    for (const v of typeof values === 'string' ? [values] : values) add(key, v);
  }
  return out;
}

/** A non-2xx answer from the manifest URL. */
export class HttpStatusError extends Error {
  override readonly name = 'HttpStatusError';
  constructor(
    readonly url: string,
    readonly statusCode: number,
  ) {
    super(`${url}: ${statusCode} ${STATUS_CODES[statusCode] ?? ''}`.trimEnd());
  }
}

export interface HttpSourceOptions {
  /** staticPodURL */
  url: string;
  header?: ManifestUrlHeader;
  nodeName: string;
  /** Where SET snapshots go, usually podConfig.channel('http'). */
  sink: PodUpdateSink;
  /** Poll period (httpCheckFrequency). Default 20 s. */
  periodMs?: number;
  /** Per-request timeout (Go's http.Client Timeout). Default 10 s. */
  timeoutMs?: number;
  /** Source name on the updates and in config.source. Default 'http'. */
  source?: PodSourceName;
  clock?: Clock;
  logger?: Logger;
  /** An undici dispatcher to use instead of the source's own Agent (which stop() closes). */
  dispatcher?: Dispatcher;
}

/** HttpSource.stats(): counters since construction. */
export interface HttpSourceStats {
  /** Requests made. */
  polls: number;
  /** Polls that gave no new state: a non-2xx status, a timeout, a connection error, an empty or unusable body. */
  failures: number;
  /** SET updates sent. */
  sets: number;
  /**
   * Bodies that could not be used at all (not YAML/JSON, not a Pod, PodList, List or array of pods, or
   * no valid pod in it), so the last good state was kept. Each distinct body is one error line naming
   * the URL and counted once, however often it is served again.
   */
  invalidManifests: number;
  /** Invalid pods skipped (or kept at their last good version) from bodies that were applied; one error line each. */
  invalidPods: number;
}

/**
 * Go's sourceURL: polls a URL for a Pod, a PodList/List or an array of pods (JSON or YAML) and
 * emits a SET when the body changes. A failed request (non-2xx, timeout, connection error) or a
 * body that does not parse is logged with the URL and status and leaves the last good state in
 * place. An invalid pod in a list is reported and skipped (its last good version kept); the other
 * pods are applied. An empty 200 body is an empty SET, as in Go.
 */
export class HttpSource {
  readonly url: string;
  readonly source: PodSourceName;
  private readonly headers: Record<string, string[]>;
  private readonly nodeName: string;
  private readonly sink: PodUpdateSink;
  private readonly periodMs: number;
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly ownAgent: Agent | undefined;
  private readonly dispatcher: Dispatcher;
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private lastData: string | undefined;
  private lastGood = new Map<string, V1Pod>();
  private failureLogs = 0;
  /** The last unusable body reported, so one served again is not reported again. */
  private lastInvalidData: string | undefined;
  private readonly counters = { polls: 0, failures: 0, sets: 0, invalidManifests: 0, invalidPods: 0 };

  constructor(opts: HttpSourceOptions) {
    new URL(opts.url); // throws on a malformed URL
    this.url = opts.url;
    this.headers = parseManifestUrlHeader(opts.header);
    this.nodeName = opts.nodeName;
    this.sink = opts.sink;
    this.periodMs = opts.periodMs ?? 20_000;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.source = opts.source ?? PodSource.HTTP;
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? defaultLogger).with({ source: this.source });
    if (opts.dispatcher) {
      this.dispatcher = opts.dispatcher;
    } else {
      this.ownAgent = new (undici().Agent)({ keepAliveTimeout: 4_000, connections: 1 });
      this.dispatcher = this.ownAgent;
    }
  }

  /** Polls now and then every periodMs (after each poll ends, as Go's wait.Until). Returns at once. */
  start(): void {
    if (this.controller) return;
    const controller = new AbortController();
    this.controller = controller;
    this.logger.v(1).info('Watching URL', { url: this.url });
    this.loop = this.run(controller.signal);
  }

  /** Stops polling, aborts a request in flight and closes connections. */
  async stop(): Promise<void> {
    const controller = this.controller;
    if (!controller) return;
    controller.abort();
    await this.loop;
    this.controller = undefined;
    if (this.ownAgent) await this.ownAgent.close();
  }

  /** The pods of the last good state. */
  pods(): V1Pod[] {
    return [...this.lastGood.values()];
  }

  stats(): HttpSourceStats {
    return { ...this.counters };
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.poll(signal);
      if (signal.aborted) return;
      try {
        await this.clock.sleep(this.periodMs, signal);
      } catch {
        return;
      }
    }
  }

  /**
   * One poll with Go's failure logging: the first three failures to get a body as warnings, then at
   * V(4). A body that arrives but cannot be used is an error, logged once per distinct body.
   */
  async poll(signal: AbortSignal = new AbortController().signal): Promise<void> {
    this.counters.polls++;
    try {
      await this.extractFromURL(signal);
      if (this.failureLogs > 0 || this.lastInvalidData !== undefined) {
        this.logger.info('Successfully read pods from URL', { url: this.url });
        this.failureLogs = 0;
        this.lastInvalidData = undefined;
      }
    } catch (err) {
      if (signal.aborted) return;
      this.counters.failures++;
      // An unusable body is bad input, not an unreachable URL: extractFromURL reported it at error level.
      if (err instanceof ManifestError) return;
      const kv = { url: this.url, status: err instanceof HttpStatusError ? err.statusCode : undefined };
      if (this.failureLogs < 3) this.logger.warn('Failed to read pods from URL', { ...kv, err: (err as Error).message });
      else if (this.failureLogs === 3) this.logger.warn('Failed to read pods from URL. Dropping verbosity of this message to V(4)', { ...kv, err: (err as Error).message });
      else this.logger.v(4).info('Failed to read pods from URL', { ...kv, err: (err as Error).message });
      this.failureLogs++;
    }
  }

  private async fetchBody(signal: AbortSignal): Promise<string> {
    const timeout = new AbortController();
    const timer = this.clock.setTimeout(() => timeout.abort(new Error(`${this.url}: request timed out after ${this.timeoutMs}ms`)), this.timeoutMs);
    const both = AbortSignal.any([signal, timeout.signal]);
    try {
      const res = await undici().request(this.url, { method: 'GET', headers: this.headers, signal: both, dispatcher: this.dispatcher });
      const body = await res.body.text();
      if (res.statusCode < 200 || res.statusCode > 299) throw new HttpStatusError(this.url, res.statusCode);
      return body;
    } catch (err) {
      if (timeout.signal.aborted && !signal.aborted) throw abortReason(timeout.signal);
      throw err;
    } finally {
      timer.cancel();
    }
  }

  private async extractFromURL(signal: AbortSignal): Promise<void> {
    const data = await this.fetchBody(signal);
    if (data.length === 0) {
      // Go: an empty SET so the source is marked seen, and an error.
      this.lastData = data;
      this.lastGood = new Map();
      await this.send([], signal);
      throw new Error(`zero-length data received from ${this.url}`);
    }
    // Short circuit if the data has not changed since the last time it was read.
    if (data === this.lastData) return;
    const origin = { kind: 'http' as const, location: this.url, nodeName: this.nodeName, source: this.source };
    const result = decodePodsManifest(data, origin);
    // A body that cannot be used is not remembered as the last data: it is parsed again next time
    // (and reported again only if it changed).
    if (!result.parsed || (result.pods.length === 0 && result.errors.length > 0)) {
      this.reportInvalidBody(data, result.errors);
      throw result.errors[0];
    }
    this.lastData = data;
    const next = new Map<string, V1Pod>();
    for (const pod of result.pods) {
      const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
      if (!next.has(key)) next.set(key, pod);
    }
    for (const e of result.errors) {
      let kept: V1Pod | undefined;
      if (e.podKey) {
        const [ns, name] = e.podKey.split('/');
        const key = `${ns}/${generatePodName(name, this.nodeName)}`;
        kept = this.lastGood.get(key);
        if (kept && !next.has(key)) next.set(key, kept);
      }
      this.counters.invalidPods++;
      this.logger.error(kept ? 'Invalid pod in manifest URL body; keeping its last good version' : 'Invalid pod in manifest URL body; skipping it', e, {
        url: this.url,
      });
    }
    this.lastGood = next;
    await this.send([...next.values()], signal);
  }

  /** One error per distinct unusable body (every invalid pod of it named), counted in invalidManifests. */
  private reportInvalidBody(data: string, errors: readonly ManifestError[]): void {
    if (data === this.lastInvalidData) {
      this.logger.v(4).info("Can't process manifest URL body (unchanged)", { url: this.url, err: errors[0].message });
      return;
    }
    this.lastInvalidData = data;
    this.counters.invalidManifests++;
    this.logger.error("Can't process manifest URL body; keeping the last good state", errors[0], { url: this.url });
    for (const e of errors.slice(1)) this.logger.error('Invalid pod in manifest URL body', e, { url: this.url });
  }

  private async send(pods: V1Pod[], signal: AbortSignal): Promise<void> {
    this.counters.sets++;
    await abortable(this.sink({ op: PodOperation.SET, pods, source: this.source }), signal);
  }
}
