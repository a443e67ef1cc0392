// Container lifecycle hooks: exec, httpGet and sleep handlers (Go: pkg/kubelet/lifecycle/handlers.go,
// pkg/probe/http/request.go, pkg/probe/util.go; the kubelet's insecureContainerLifecycleHTTPClient).
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP } from 'node:net';
import type { V1Container, V1HTTPGetAction, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import {
  abortReason,
  errorCode,
  errorText,
  goDialError,
  joinHostPort,
  kubeletUserAgent,
  packageVersion,
  podRef,
  resolveContainerPort,
  type ContainerID,
  type EventRecorder,
  type Logger,
} from '@kubelet-ts/core';
import type { CallOptions, ExecSyncResult } from '@kubelet-ts/cri-client';
import { formatPod } from './helpers.js';

/** Go: maxRespBodyLength, the most of a hook's response body that is read before the connection closes. */
export const MAX_LIFECYCLE_RESPONSE_BODY_BYTES = 10 * 1024;
/** Go's http.Client default: at most 10 requests per chain of redirects. */
const MAX_REDIRECTS = 10;
const REDIRECT_CODES = new Set([301, 302, 303, 307, 308]);

/** The User-Agent of lifecycle hook requests for a kubelet version (Go: userAgent("lifecycle")): `kube-lifecycle/1.31`. */
export function lifecycleUserAgent(kubeletVersion: string): string {
  return kubeletUserAgent('lifecycle', kubeletVersion);
}

/** The URL of an httpGet handler (Go: GetProbeUrl + formatURL): scheme (default http), host (default podIP), port, path. */
export function httpGetActionUrl(httpGet: V1HTTPGetAction, container: V1Container | undefined, podIP: string): URL {
  const scheme = (httpGet.scheme ?? '').toLowerCase() || 'http';
  const host = httpGet.host || podIP;
  const port = resolveContainerPort(httpGet.port, container);
  const path = httpGet.path ?? '';
  const base = `${scheme}://${joinHostPort(host, port)}`;
  return new URL(path === '' || path.startsWith('/') ? base + path : `${base}/${path}`);
}

/** Go's http.CanonicalHeaderKey: `x-my-header` -> `X-My-Header`. */
function canonicalHeaderKey(name: string): string {
  if (!/^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/.test(name)) return name;
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

/**
 * The request headers of an httpGet handler (Go: v1HeaderToHTTPHeader + newProbeRequest): the
 * handler's httpHeaders, `User-Agent` unless given, `Accept: *\/*` unless given (an empty Accept
 * removes it). A `Host` header becomes the request's Host.
 */
export function lifecycleRequestHeaders(httpHeaders: Array<{ name: string; value: string }> | undefined, userAgent: string): Map<string, string[]> {
  const headers = new Map<string, string[]>();
  for (const h of httpHeaders ?? []) {
    const key = canonicalHeaderKey(h.name);
    headers.set(key, [...(headers.get(key) ?? []), h.value]);
  }
  if (!headers.has('User-Agent')) headers.set('User-Agent', [userAgent]);
  if (!headers.has('Accept')) headers.set('Accept', ['*/*']);
  else if ((headers.get('Accept')?.[0] ?? '') === '') headers.delete('Accept');
  return headers;
}

/** A TLS handshake answered in plain HTTP: OpenSSL sees "HTTP/" where a record header belongs. */
function isHttpResponseToHttps(err: unknown): boolean {
  const code = errorCode(err);
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER') return true;
  return code === 'EPROTO' && /wrong version number/i.test(errorText(err));
}

/** What went wrong, as Go's net/http says it (the part after `Get "<url>": `). */
function transportErrorText(err: unknown, url: URL): string {
  const code = errorCode(err);
  const dial = goDialError(err, url.hostname, url.port || (url.protocol === 'https:' ? '443' : '80'));
  if (dial) return dial;
  if (isHttpResponseToHttps(err)) return 'http: server gave HTTP response to HTTPS client';
  // The server closed the connection without an answer.
  if (code === 'ECONNRESET') return errorText(err) === 'socket hang up' ? 'EOF' : 'read: connection reset by peer';
  if (code === 'HPE_INVALID_CONSTANT' || code?.startsWith('HPE_')) return `net/http: HTTP/1.x transport connection broken: malformed HTTP response (${errorText(err)})`;
  return errorText(err);
}

/** A failed request as Go's url.Error prints it: `Get "<url>": <error>`. */
export class HttpGetError extends Error {
  constructor(
    readonly url: string,
    readonly text: string,
    readonly httpResponseToHttps = false,
  ) {
    super(`Get ${JSON.stringify(url)}: ${text}`);
    this.name = 'HttpGetError';
  }
}

interface HookRequest {
  url: URL;
  headers: Map<string, string[]>;
  signal?: AbortSignal;
}

/** One GET; resolves with the response once its headers are in. */
function getOnce(url: URL, headers: Map<string, string[]>, signal: AbortSignal | undefined): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const outgoing: Record<string, string | string[]> = {};
    for (const [name, values] of headers) outgoing[name] = values.length === 1 ? values[0] : values;
    const options: https.RequestOptions = {
      method: 'GET',
      headers: outgoing,
      // One connection per request (nothing idles after the hook), TLS without verification as the
      // Go kubelet's lifecycle client: it has no means to verify a container's certificate.
      agent: false,
      rejectUnauthorized: false,
      // SNI names the URL's host as Go's transport does, never a Host header; none for an IP.
      servername: isIP(url.hostname.replace(/^\[|\]$/g, '')) ? '' : url.hostname,
      signal,
    };
    const request = url.protocol === 'https:' ? https.request(url, options, resolve) : http.request(url, options, resolve);
    request.on('error', reject);
    request.end();
  });
}

/** Go's discardHTTPRespBody: read at most 10 KiB when the length allows, then close the connection. */
async function discardBody(response: http.IncomingMessage): Promise<void> {
  const length = Number(response.headers['content-length'] ?? -1);
  if (length <= MAX_LIFECYCLE_RESPONSE_BODY_BYTES) {
    let read = 0;
    try {
      for await (const chunk of response) {
        read += (chunk as Buffer).length;
        if (read >= MAX_LIFECYCLE_RESPONSE_BODY_BYTES) break;
      }
    } catch {
      // a broken body is not the hook's failure (Go ignores the copy's error)
    }
  }
  response.destroy();
}

/**
 * Go's http.Client.Do with the kubelet's lifecycle client: redirects are followed on the same host
 * only (a redirect elsewhere ends with that response, http.ErrUseLastResponse), at most 10. Any
 * status code is an answer; only transport errors fail.
 */
async function doHookRequest(req: HookRequest): Promise<void> {
  const original = req.url;
  let current = req.url;
  let headers = req.headers;
  for (let redirects = 0; ; redirects++) {
    let response: http.IncomingMessage;
    try {
      response = await getOnce(current, headers, req.signal);
    } catch (err) {
      if (req.signal?.aborted) throw abortReason(req.signal);
      throw new HttpGetError(current.href, transportErrorText(err, current), isHttpResponseToHttps(err));
    }
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (REDIRECT_CODES.has(status) && location) {
      let next: URL;
      try {
        next = new URL(location, current);
      } catch (err) {
        await discardBody(response);
        throw new HttpGetError(current.href, `failed to parse Location header ${JSON.stringify(location)}: ${errorText(err)}`);
      }
      if (next.hostname === original.hostname) {
        await discardBody(response);
        if (redirects + 1 >= MAX_REDIRECTS) throw new HttpGetError(location, `stopped after ${MAX_REDIRECTS} redirects`);
        // A Host header only carries over to a relative redirect (Go's client).
        if (/^[a-z][a-z0-9+.-]*:/i.test(location) || location.startsWith('//')) {
          headers = new Map([...headers].filter(([name]) => name !== 'Host'));
        }
        current = next;
        continue;
      }
    }
    await discardBody(response);
    if (req.signal?.aborted) throw abortReason(req.signal);
    return;
  }
}

export interface HandlerRunnerOptions {
  /** ExecSync against the runtime (Go: the runtime's RunInContainer). */
  execSync(containerId: string, cmd: string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecSyncResult>;
  /** The pod's IPs as the runtime reports them (Go: GetPodStatus(...).IPs). */
  podIPs(pod: V1Pod, signal?: AbortSignal): Promise<string[]>;
  /** Sleeps on the kubelet's clock; rejects on abort. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  recorder: EventRecorder;
  logger: Logger;
  /** Default `kube-lifecycle/<major>.<minor>` of this package's version. */
  userAgent?: string;
}

/** Go: the default User-Agent of hook requests. */
export const DEFAULT_LIFECYCLE_USER_AGENT = lifecycleUserAgent(packageVersion(new URL('../package.json', import.meta.url)));

/**
 * Runs lifecycle handlers (Go: lifecycle.handlerRunner). A failed handler rejects with an Error whose
 * message is Go's message for it (`Exec lifecycle hook ([...]) for Container "c" in Pod "p" failed -
 * error: ..., message: "..."`, `HTTP lifecycle hook (/path) for Container ...`, `Sleep lifecycle hook
 * (5) ...`). When `signal` aborts, the handler is abandoned and the promise rejects with the signal's
 * reason.
 */
export class HandlerRunner {
  private readonly userAgent: string;

  constructor(private readonly opts: HandlerRunnerOptions) {
    this.userAgent = opts.userAgent ?? DEFAULT_LIFECYCLE_USER_AGENT;
  }

  async run(containerId: ContainerID, pod: V1Pod, container: V1Container, handler: V1LifecycleHandler, signal?: AbortSignal): Promise<void> {
    const log = this.opts.logger;
    if (handler.exec) {
      const command = handler.exec.command ?? [];
      let result: ExecSyncResult;
      try {
        // Go passes no timeout (0): the grace period bounds a preStop hook.
        result = await this.opts.execSync(containerId.id, command, 0, { signal });
      } catch (err) {
        if (signal?.aborted) throw abortReason(signal);
        log.v(1).info('Exec lifecycle hook for Container in Pod failed', { execCommand: command, containerName: container.name, pod: podRef(pod), message: '', err: errorText(err) });
        throw new Error(`Exec lifecycle hook ([${command.join(' ')}]) for Container ${JSON.stringify(container.name)} in Pod ${JSON.stringify(formatPod(pod))} failed - error: ${errorText(err)}, message: ""`, { cause: err });
      }
      if (result.exitCode !== 0) {
        // Go's CRI client: a non-zero exit is a CodeExitError; the output is stdout then stderr.
        const output = Buffer.concat([result.stdout, result.stderr]).toString('utf8');
        const err = `command '${command.join(' ')}' exited with ${result.exitCode}: ${result.stderr.toString('utf8')}`;
        log.v(1).info('Exec lifecycle hook for Container in Pod failed', { execCommand: command, containerName: container.name, pod: podRef(pod), message: output, err });
        throw new Error(`Exec lifecycle hook ([${command.join(' ')}]) for Container ${JSON.stringify(container.name)} in Pod ${JSON.stringify(formatPod(pod))} failed - error: ${err}, message: ${JSON.stringify(output)}`);
      }
      return;
    }
    if (handler.httpGet) {
      const path = handler.httpGet.path ?? '';
      try {
        await this.runHttpHandler(pod, container, handler.httpGet, signal);
      } catch (err) {
        if (signal?.aborted) throw abortReason(signal);
        log.v(1).info('HTTP lifecycle hook for Container in Pod failed', { path, containerName: container.name, pod: podRef(pod), err: errorText(err) });
        throw new Error(`HTTP lifecycle hook (${path}) for Container ${JSON.stringify(container.name)} in Pod ${JSON.stringify(formatPod(pod))} failed - error: ${errorText(err)}`, { cause: err });
      }
      return;
    }
    if (handler.sleep) {
      const seconds = Number(handler.sleep.seconds);
      try {
        await this.opts.sleep(seconds * 1000, signal);
      } catch {
        // Go: the context ended first ("unexpected termination"); the caller decides what an abort means.
        const text = 'container terminated before sleep hook finished';
        log.v(1).info('Sleep lifecycle hook for Container in Pod failed', { sleepSeconds: seconds, containerName: container.name, pod: podRef(pod), err: text });
        if (signal?.aborted) throw abortReason(signal);
        throw new Error(`Sleep lifecycle hook (${seconds}) for Container ${JSON.stringify(container.name)} in Pod ${JSON.stringify(formatPod(pod))} failed - error: ${text}`);
      }
      return;
    }
    const err = new Error(`invalid handler: ${JSON.stringify(handler)}`);
    log.error('Cannot run handler', err);
    throw new Error(`Cannot run handler: ${err.message}`, { cause: err });
  }

  /**
   * Go: runHTTPHandler. The host defaults to the pod's first IP from the runtime; an HTTPS request
   * answered in plain HTTP is retried once over HTTP without the Authorization header, and when that
   * works the hook succeeds with a LifecycleHTTPFallback warning.
   */
  private async runHttpHandler(pod: V1Pod, container: V1Container, httpGet: V1HTTPGetAction, signal?: AbortSignal): Promise<void> {
    let podIP = httpGet.host ?? '';
    if (podIP === '') {
      let ips: string[];
      try {
        ips = await this.opts.podIPs(pod, signal);
      } catch (err) {
        if (signal?.aborted) throw abortReason(signal);
        this.opts.logger.error('Unable to get pod info, event handlers may be invalid.', err, { pod: podRef(pod) });
        throw err;
      }
      if (ips.length === 0) {
        const meta = pod.metadata ?? {};
        throw new Error(`failed to find networking container: &{ID:${meta.uid ?? ''} Name:${meta.name ?? ''} Namespace:${meta.namespace ?? ''} IPs:[]}`);
      }
      podIP = ips[0];
    }
    const url = httpGetActionUrl(httpGet, container, podIP);
    const headers = lifecycleRequestHeaders(httpGet.httpHeaders, this.userAgent);
    try {
      await doHookRequest({ url, headers, signal });
    } catch (err) {
      if (!(err instanceof HttpGetError) || !err.httpResponseToHttps) throw err;
      this.opts.logger.v(1).info('HTTPS request to lifecycle hook got HTTP response, retrying with HTTP.', { pod: podRef(pod), host: url.host, err: err.message });
      const plain = new URL(url.href);
      plain.protocol = 'http:';
      const withoutAuth = new Map([...headers].filter(([name]) => name !== 'Authorization'));
      try {
        await doHookRequest({ url: plain, headers: withoutAuth, signal });
      } catch {
        if (signal?.aborted) throw abortReason(signal);
        throw err; // Go returns the HTTPS error when the fallback fails too
      }
      this.opts.recorder.event(pod, 'Warning', 'LifecycleHTTPFallback', `request to HTTPS lifecycle hook ${plain.host} got HTTP response, retry with HTTP succeeded`);
    }
  }
}
