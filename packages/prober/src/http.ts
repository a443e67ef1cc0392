// HTTP probes (Go: pkg/probe/http: DoHTTPProbe, RedirectChecker, NewRequestForHTTPGetAction) over undici.
import type { V1Container, V1HTTPGetAction } from '@kubernetes/client-node';
import { createRequire } from 'node:module';
import { errorText, realClock, type Clock } from '@kubelet-ts/core';
import type * as Undici from 'undici';
import type { Agent, Dispatcher } from 'undici';
import { requestHead, WireExchange } from './http-wire.js';
import { resolveContainerPort } from './port.js';
import {
  DEFAULT_PROBE_USER_AGENT,
  errorCode,
  goDialError,
  joinHostPort,
  MAX_PROBE_OUTPUT_BYTES,
  type ProbeResponse,
} from './probe.js';

/** Header name/value pairs as in a probe spec (`httpHeaders`), or a plain object. */
export type ProbeHeaders = Array<{ name: string; value: string }> | Record<string, string | string[]>;

export interface HttpProbeOptions {
  url: string | URL;
  headers?: ProbeHeaders;
  /** The whole exchange, body included, must finish within this (Go: http.Client Timeout). Default 1. */
  timeoutSeconds?: number;
  /** Default `kube-probe/<major>.<minor>`; a User-Agent in `headers` wins. */
  userAgent?: string;
  /** Follow redirects to other hosts (Go: followNonLocalRedirects, false in the kubelet). */
  followNonLocalRedirects?: boolean;
  /**
   * Sends the probe through this undici dispatcher instead (e.g. createProbeAgent()); by default each
   * probe opens its own connection over node:net/tls, TLS certificates not verified (as Go).
   */
  dispatcher?: Dispatcher;
  clock?: Pick<Clock, 'setTimeout'>;
  signal?: AbortSignal;
}

const MAX_REDIRECTS = 10;
const REDIRECT_CODES = new Set([301, 302, 303, 307, 308]);

// undici costs ~18 MiB and a few hundred ms at import: it is loaded by the first HTTP probe, not with the package.
let undiciModule: typeof Undici | undefined;
function undici(): typeof Undici {
  undiciModule ??= createRequire(import.meta.url)('undici') as typeof Undici;
  return undiciModule;
}

/** An undici Agent as the Go prober's transport: TLS not verified, no proxy, no compression. */
export function createProbeAgent(): Agent {
  return new (undici().Agent)({ connect: { rejectUnauthorized: false }, keepAliveTimeout: 1000 });
}

function headerList(headers: ProbeHeaders | undefined): Array<[string, string]> {
  if (!headers) return [];
  if (Array.isArray(headers)) return headers.map((h) => [h.name, h.value]);
  const out: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : [value]) out.push([name, v]);
  }
  return out;
}

/**
 * The request headers as Go builds them (newProbeRequest): the given ones, plus
 * `User-Agent: kube-probe/<version>` unless set, and `Accept: *\/*` unless set (an Accept set to ''
 * removes it). A `Host` header sets the request's Host.
 */
export function probeRequestHeaders(headers: ProbeHeaders | undefined, userAgent: string = DEFAULT_PROBE_USER_AGENT): Array<[string, string]> {
  const list = headerList(headers);
  const has = (name: string): boolean => list.some(([n]) => n.toLowerCase() === name);
  if (!has('user-agent')) list.push(['User-Agent', userAgent]);
  if (!has('accept')) list.push(['Accept', '*/*']);
  else if (list.filter(([n]) => n.toLowerCase() === 'accept').every(([, v]) => v === '')) {
    return list.filter(([n]) => n.toLowerCase() !== 'accept');
  }
  return list;
}

/**
 * The URL of an httpGet probe (Go: GetProbeUrl): scheme (default http, lower-cased), host (default
 * the pod IP), the port by number or by the container's port name, and the path. Throws with Go's
 * messages on a bad port (`strconv.Atoi: parsing "web": invalid syntax`, `invalid port number: 0`).
 */
export function httpGetUrl(httpGet: V1HTTPGetAction, container: V1Container | undefined, podIP: string): URL {
  const scheme = (httpGet.scheme ?? '').toLowerCase() || 'http';
  const host = httpGet.host || podIP;
  const port = resolveContainerPort(httpGet.port, container);
  const path = httpGet.path ?? '';
  const base = `${scheme}://${joinHostPort(host, port)}`;
  return new URL(path.startsWith('/') ? base + path : `${base}/${path}`);
}

/** Hostname as Go's URL.Hostname(): without IPv6 brackets. */
function hostname(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

function portOf(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : '80');
}

/** A failed exchange as Go's url.Error prints it: `Get "<url>": <what went wrong>`. */
function requestError(url: URL, err: unknown, phase: 'headers' | 'body', timedOut: boolean): string {
  if (timedOut) {
    return phase === 'headers'
      ? `Get ${JSON.stringify(url.href)}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)`
      : `Get ${JSON.stringify(url.href)}: context deadline exceeded (Client.Timeout or context cancellation while reading body)`;
  }
  const dial = goDialError(err, url.hostname, portOf(url));
  if (dial) return `Get ${JSON.stringify(url.href)}: ${dial}`;
  const code = errorCode(err);
  if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET') {
    return `Get ${JSON.stringify(url.href)}: ${code === 'ECONNRESET' ? 'read: connection reset by peer' : 'EOF'}`;
  }
  if (code?.startsWith('HPE_') || (err as { name?: unknown } | undefined)?.name === 'HTTPParserError') {
    const message = errorText(err);
    const what = code === 'HPE_INVALID_STATUS' || /invalid status/i.test(message) ? 'malformed HTTP status code' : `malformed HTTP response (${message})`;
    return `Get ${JSON.stringify(url.href)}: net/http: HTTP/1.x transport connection broken: ${what}`;
  }
  return `Get ${JSON.stringify(url.href)}: ${errorText(err)}`;
}

/** Drops a response body; destroying an unread undici body emits an error nobody needs. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

async function readAtMost(body: Dispatcher.ResponseData['body'], limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    chunks.push(buf);
    size += buf.length;
    if (size >= limit) break; // Go: non-fatal truncation
  }
  discard(body);
  return Buffer.concat(chunks).subarray(0, limit);
}

/**
 * Runs an HTTP GET probe with the Go kubelet's semantics (DoHTTPProbe): 2xx is success with the
 * body (at most 10 KiB) as output; redirects are followed to the same host only (at most 10); a
 * redirect elsewhere ends the probe with that 3xx response, which, like any 3xx left, is a
 * `warning` (`Probe terminated redirects, Response body: ...`); other codes fail with
 * `HTTP probe failed with statuscode: <code>`; connection errors and timeouts fail with Go's error
 * text. A fresh connection per probe (Go disables keep-alives): over node:net/tls, or through
 * `dispatcher` (undici) when one is given. Never throws.
 */
export async function httpProbe(opts: HttpProbeOptions): Promise<ProbeResponse> {
  if (opts.dispatcher) return httpProbeUndici(opts, opts.dispatcher);
  let url: URL;
  try {
    url = typeof opts.url === 'string' ? new URL(opts.url) : opts.url;
  } catch (err) {
    return { result: 'failure', output: errorText(err) };
  }
  if (opts.signal?.aborted) return { result: 'failure', output: `Get ${JSON.stringify(url.href)}: ${ABORTED}` };
  const clock = opts.clock ?? realClock;
  const timeoutMs = (opts.timeoutSeconds ?? 1) * 1000;
  const original = url;
  let current = url;
  let headers = probeRequestHeaders(opts.headers, opts.userAgent);
  let exchange: WireExchange | undefined;
  let timedOut = false;
  const timer = timeoutMs > 0 ? clock.setTimeout(() => {
    timedOut = true;
    exchange?.cancel();
  }, timeoutMs) : undefined;
  const onOuterAbort = (): void => exchange?.cancel();
  opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  // A redirect is followed when it parses and goes to the same host (or anywhere, if asked).
  const follows = (statusCode: number, location: string | undefined): boolean => {
    if (!REDIRECT_CODES.has(statusCode) || !location) return false;
    const next = URL.canParse(location, current.href) ? new URL(location, current) : undefined;
    return !next || hostname(next) === hostname(original) || !!opts.followNonLocalRedirects;
  };
  try {
    for (let redirects = 0; ; redirects++) {
      const built = requestHead(current, headers);
      if ('error' in built) return { result: 'failure', output: `Get ${JSON.stringify(current.href)}: ${built.error}` };
      if (timedOut || opts.signal?.aborted) return { result: 'failure', output: requestError(current, undefined, 'headers', timedOut) };
      exchange = new WireExchange({ url: current, head: built.head, bodyLimit: MAX_PROBE_OUTPUT_BYTES, wantBody: (code, location) => !follows(code, location) });
      const res = await exchange.result;
      exchange = undefined;
      switch (res.kind) {
        case 'cancelled':
          return { result: 'failure', output: requestError(current, timedOut ? undefined : new Error(ABORTED), res.phase, timedOut) };
        case 'error':
          return { result: 'failure', output: requestError(current, res.error, res.phase, false) };
        case 'eof':
          return { result: 'failure', output: `Get ${JSON.stringify(current.href)}: EOF` };
        case 'protocol':
          return { result: 'failure', output: `Get ${JSON.stringify(current.href)}: ${res.text}` };
      }
      if (res.body === undefined) {
        // A redirect to follow (wantBody said so).
        const locationText = res.location as string;
        const next = URL.canParse(locationText, current.href) ? new URL(locationText, current) : undefined;
        if (!next) return { result: 'failure', output: `Get ${JSON.stringify(current.href)}: failed to parse Location header ${JSON.stringify(locationText)}` };
        // Go's default checker: the request chain (original + redirects so far) may not reach 10.
        if (redirects + 1 >= MAX_REDIRECTS) {
          return { result: 'failure', output: `Get ${JSON.stringify(current.href)}: stopped after ${MAX_REDIRECTS} redirects` };
        }
        // A Host header only carries over to a relative redirect (Go drops it when the URL names a host).
        if (!isRelative(locationText)) headers = headers.filter(([n]) => n.toLowerCase() !== 'host');
        current = next;
        continue;
      }
      return finalResponse(res.statusCode, res.body.toString('utf8'));
    }
  } finally {
    timer?.cancel();
    opts.signal?.removeEventListener('abort', onOuterAbort);
  }
}

/** What an aborted request reads as (the text undici gave for an aborted signal). */
const ABORTED = 'This operation was aborted';

function isRelative(location: string): boolean {
  return !/^[a-z][a-z0-9+.-]*:/i.test(location) && !location.startsWith('//');
}

/** The probe result of the final response (Go: DoHTTPProbe after the client returned). */
function finalResponse(statusCode: number, body: string): ProbeResponse {
  if (statusCode >= 200 && statusCode < 400) {
    if (statusCode >= 300) return { result: 'warning', output: `Probe terminated redirects, Response body: ${body}` };
    return { result: 'success', output: body };
  }
  // Go: the user-facing failure message must not contain the response body (issue 99425).
  return { result: 'failure', output: `HTTP probe failed with statuscode: ${statusCode}` };
}

/** httpProbe through an undici dispatcher (`opts.dispatcher`). */
async function httpProbeUndici(opts: HttpProbeOptions, dispatcher: Dispatcher): Promise<ProbeResponse> {
  let url: URL;
  try {
    url = typeof opts.url === 'string' ? new URL(opts.url) : opts.url;
  } catch (err) {
    return { result: 'failure', output: errorText(err) };
  }
  const clock = opts.clock ?? realClock;
  const timeoutMs = (opts.timeoutSeconds ?? 1) * 1000;
  const baseHeaders = probeRequestHeaders(opts.headers, opts.userAgent);
  const controller = new AbortController();
  let timedOut = false;
  const timer = timeoutMs > 0 ? clock.setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs) : undefined;
  const onOuterAbort = (): void => controller.abort();
  opts.signal?.addEventListener('abort', onOuterAbort, { once: true });

  const original = url;
  let current = url;
  let headers = baseHeaders;
  let phase: 'headers' | 'body' = 'headers';
  try {
    for (let redirects = 0; ; redirects++) {
      phase = 'headers';
      const res = await undici().request(current, {
        method: 'GET',
        headers: headers.flat(),
        dispatcher,
        signal: controller.signal,
        reset: true,
      });
      const location = res.headers.location;
      const locationText = Array.isArray(location) ? location[0] : location;
      if (REDIRECT_CODES.has(res.statusCode) && locationText) {
        let next: URL | undefined;
        try {
          next = new URL(locationText, current);
        } catch {
          next = undefined;
        }
        if (!next) {
          discard(res.body);
          return { result: 'failure', output: `Get ${JSON.stringify(current.href)}: failed to parse Location header ${JSON.stringify(locationText)}` };
        }
        const sameHost = hostname(next) === hostname(original);
        if (sameHost || opts.followNonLocalRedirects) {
          discard(res.body);
          // Go's default checker: the request chain (original + redirects so far) may not reach 10.
          if (redirects + 1 >= MAX_REDIRECTS) {
            return { result: 'failure', output: `Get ${JSON.stringify(current.href)}: stopped after ${MAX_REDIRECTS} redirects` };
          }
          // A Host header only carries over to a relative redirect (Go drops it when the URL names a host).
          if (!isRelative(locationText)) headers = headers.filter(([n]) => n.toLowerCase() !== 'host');
          current = next;
          continue;
        }
        // Go: http.ErrUseLastResponse; the 3xx is the final response.
      }
      phase = 'body';
      return finalResponse(res.statusCode, (await readAtMost(res.body, MAX_PROBE_OUTPUT_BYTES)).toString('utf8'));
    }
  } catch (err) {
    return { result: 'failure', output: requestError(current, err, phase, timedOut) };
  } finally {
    timer?.cancel();
    opts.signal?.removeEventListener('abort', onOuterAbort);
  }
}
