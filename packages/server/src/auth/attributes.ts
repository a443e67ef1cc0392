// Authorization attributes of a request to the kubelet API (Go: pkg/kubelet/server/auth.go,
// nodeAuthorizerAttributesGetter). Every request is checked as an action on the node object:
// verb from the HTTP method, resource "nodes", name the node, and a subresource from the path.
import type { IncomingMessage } from 'node:http';
import type { RequestAttributes, UserInfo } from './types.js';

// Go 1.20's pkg/kubelet/server path constants that have their own subresource.
const STATS_PATH = '/stats/';
const METRICS_PATH = '/metrics';
const LOGS_PATH = '/logs/';
const SPEC_PATH = '/spec/';

/** Go's isSubpath: path itself (without a trailing slash) or anything below it. */
export function isSubpath(subpath: string, path: string): boolean {
  const base = path.endsWith('/') ? path.slice(0, -1) : path;
  return subpath === base || (subpath.startsWith(base) && subpath[base.length] === '/');
}

/** The API verb for an HTTP method; Go maps only these five, anything else (HEAD, OPTIONS...) is ''. */
export function apiVerb(method: string | undefined): string {
  switch (method) {
    case 'POST':
      return 'create';
    case 'GET':
      return 'get';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      return '';
  }
}

/** The subresource the kubelet authorizes a path as: stats, metrics, log, spec, or proxy for the rest. */
export function subresourceForPath(path: string): string {
  const clean = cleanPath(path);
  if (isSubpath(clean, STATS_PATH)) return 'stats';
  if (isSubpath(clean, METRICS_PATH)) return 'metrics';
  // "log" to match other log subresources (pods/log).
  if (isSubpath(clean, LOGS_PATH)) return 'log';
  if (isSubpath(clean, SPEC_PATH)) return 'spec';
  return 'proxy';
}

function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x41 && code <= 0x46) return code - 0x41 + 10;
  if (code >= 0x61 && code <= 0x66) return code - 0x61 + 10;
  return -1;
}

/**
 * Go's url.PathUnescape: %XX becomes the byte, '+' stays '+'. Returns undefined for a malformed
 * escape, which Go's HTTP server refuses with 400 before any handler runs.
 */
export function unescapePath(raw: string): string | undefined {
  if (!raw.includes('%')) return raw;
  const bytes: number[] = [];
  const input = Buffer.from(raw, 'utf8');
  for (let i = 0; i < input.length; i++) {
    const b = input[i] as number;
    if (b !== 0x25) {
      bytes.push(b);
      continue;
    }
    const hi = i + 2 < input.length ? hexValue(input[i + 1] as number) : -1;
    const lo = i + 2 < input.length ? hexValue(input[i + 2] as number) : -1;
    if (hi < 0 || lo < 0) return undefined;
    bytes.push(hi * 16 + lo);
    i += 2;
  }
  return Buffer.from(bytes).toString('utf8');
}

/** The raw path of a request target (origin-form or absolute-form), without the query. */
export function rawRequestPath(url: string | undefined): string {
  let target = url ?? '';
  const absolute = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?]*/.exec(target);
  if (absolute) target = target.slice(absolute[0].length);
  const query = target.indexOf('?');
  return query >= 0 ? target.slice(0, query) : target;
}

/** Go's r.URL.Path: the decoded path of the request, or undefined when it cannot be decoded. */
export function requestPath(request: Pick<IncomingMessage, 'url'>): string | undefined {
  return unescapePath(rawRequestPath(request.url));
}

/**
 * Go's net/http cleanPath: path.Clean of a rooted path, keeping a trailing slash. Go's ServeMux
 * redirects any request whose path is not clean before the kubelet's auth filter runs, so the
 * filter only ever sees clean paths; authorizing on the clean path keeps "/stats/../exec/..."
 * from passing as "stats".
 */
export function cleanPath(p: string): string {
  if (p === '') return '/';
  if (!p.startsWith('/')) p = '/' + p;
  const out: string[] = [];
  for (const segment of p.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') out.pop();
    else out.push(segment);
  }
  let np = '/' + out.join('/');
  if (p.endsWith('/') && np !== '/') np += '/';
  return np;
}

/**
 * Go's nodeAuthorizerAttributesGetter.GetRequestAttributes: {apiVersion=v1, verb=<from method>,
 * resource=nodes, name=<node name>, subresource=proxy}, with subresource stats for /stats/*,
 * metrics for /metrics/*, log for /logs/* and spec for /spec/*.
 */
export function requestAttributes(user: UserInfo, request: Pick<IncomingMessage, 'method' | 'url'>, nodeName: string): RequestAttributes {
  const raw = rawRequestPath(request.url);
  const path = unescapePath(raw) ?? raw;
  return {
    user,
    verb: apiVerb(request.method),
    namespace: '',
    apiGroup: '',
    apiVersion: 'v1',
    resource: 'nodes',
    subresource: subresourceForPath(path),
    name: nodeName,
    resourceRequest: true,
    path,
  };
}
