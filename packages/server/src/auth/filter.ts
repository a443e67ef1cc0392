// The kubelet API's auth filter (Go: pkg/kubelet/server/server.go InstallAuthFilter): authenticate,
// build the node attributes, authorize, and answer 401/403/500 exactly as the Go kubelet does.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { defaultLogger, type Logger } from '@kubelet-ts/core';
import { cleanPath, rawRequestPath, requestAttributes, unescapePath } from './attributes.js';
import type { Authenticator, Authorizer, RequestAttributes, UserInfo } from './types.js';

/** The outcome of the checks: go on with the user, or the response to send instead. */
export type AuthCheck =
  | { allowed: true; user: UserInfo; attributes: RequestAttributes }
  | { allowed: false; statusCode: number; headers: Record<string, string>; body: string };

export interface AuthFilterOptions {
  logger?: Logger;
  /**
   * Answer a request whose path is not clean ("//x", "/a/../b", "/a/./b") with Go's ServeMux 301 to
   * the clean path, before authentication, as Go's mux does before the filter. Authorizing one
   * path and serving another would let "/stats/../exec/..." through as "stats". Default true.
   */
  redirectUncleanPaths?: boolean;
}

const TEXT = 'text/plain; charset=utf-8';

// The user each allowed request was authenticated as, for handlers and logs.
const requestUsers = new WeakMap<IncomingMessage, UserInfo>();

/** The user checkRequest/checkUpgrade authenticated for this request, if any. */
export function requestUser(request: IncomingMessage): UserInfo | undefined {
  return requestUsers.get(request);
}

/** Go's url escape in encodePath mode: unreserved and $&+,/:;=@ stay, everything else is %XX. */
function escapePath(path: string): string {
  let out = '';
  for (const byte of Buffer.from(path, 'utf8')) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-._~$&+,/:;=@]/.test(c)) out += c;
    else out += '%' + byte.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

function htmlEscape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' })[c] as string);
}

function textResponse(statusCode: number, body: string): AuthCheck {
  // restful's WriteErrorString writes the text as is (no newline); Go sniffs it as text/plain.
  return { allowed: false, statusCode, headers: { 'Content-Type': TEXT }, body };
}

/**
 * Go's ServeMux redirect (301) to `path` (the clean path, or a subtree root with its trailing slash), the query
 * kept, with http.Redirect's headers and its body for GET. It is answered before authentication, as Go's mux does.
 */
export function muxRedirect(request: Pick<IncomingMessage, 'url' | 'method'>, path: string): AuthCheck & { allowed: false } {
  const url = request.url ?? '';
  const q = url.indexOf('?');
  const location = escapePath(path) + (q >= 0 && q < url.length - 1 ? url.slice(q) : '');
  const headers: Record<string, string> = { Location: location };
  let body = '';
  if (request.method === 'GET' || request.method === 'HEAD') headers['Content-Type'] = 'text/html; charset=utf-8';
  if (request.method === 'GET') body = `<a href="${htmlEscape(location)}">Moved Permanently</a>.\n\n`;
  return { allowed: false, statusCode: 301, headers, body };
}

export class AuthFilter {
  private readonly logger: Logger;
  private readonly redirectUncleanPaths: boolean;

  constructor(
    private readonly authenticator: Authenticator,
    private readonly authorizer: Authorizer,
    private readonly nodeName: string,
    opts: AuthFilterOptions = {},
  ) {
    this.logger = opts.logger ?? defaultLogger;
    this.redirectUncleanPaths = opts.redirectUncleanPaths ?? true;
  }

  /** Runs the checks without writing anything. */
  async check(request: IncomingMessage): Promise<AuthCheck> {
    const raw = rawRequestPath(request.url);
    const path = unescapePath(raw);
    if (path === undefined) {
      // Go's server refuses a request target it cannot parse before any handler runs.
      return { allowed: false, statusCode: 400, headers: { 'Content-Type': TEXT, Connection: 'close' }, body: '400 Bad Request' };
    }
    if (this.redirectUncleanPaths && request.method !== 'CONNECT') {
      const clean = cleanPath(path);
      if (clean !== path) return muxRedirect(request, clean);
    }

    let result;
    try {
      result = await this.authenticator.authenticate(request);
    } catch (err) {
      result = { user: undefined, error: err instanceof Error ? err : new Error(String(err)) };
    }
    if (result.error) {
      this.logger.error('Unable to authenticate the request due to an error', result.error);
      return textResponse(401, 'Unauthorized');
    }
    if (!result.user) return textResponse(401, 'Unauthorized');
    const user = result.user;

    const attrs = requestAttributes(user, request, this.nodeName);
    const what = `user=${user.name}, verb=${attrs.verb}, resource=${attrs.resource}, subresource=${attrs.subresource}`;
    let decision;
    try {
      decision = await this.authorizer.authorize(attrs);
    } catch (err) {
      const msg = `Authorization error (${what})`;
      this.logger.error(msg, err);
      return textResponse(500, msg);
    }
    if (decision.decision !== 'allow') {
      const msg = `Forbidden (${what})`;
      const v = this.logger.v(2);
      if (v.enabled) v.info(msg, decision.reason ? { reason: decision.reason } : undefined);
      return textResponse(403, msg);
    }
    return { allowed: true, user, attributes: attrs };
  }

  /**
   * For a request handler: true when the request may proceed; otherwise the answer was written and
   * the handler must stop.
   */
  async checkRequest(request: IncomingMessage, response: ServerResponse): Promise<boolean> {
    const outcome = await this.check(request);
    if (outcome.allowed) {
      requestUsers.set(request, outcome.user);
      return true;
    }
    if (!response.headersSent) {
      const body = Buffer.from(outcome.body, 'utf8');
      response.writeHead(outcome.statusCode, { ...outcome.headers, 'Content-Length': String(body.length) });
      response.end(request.method === 'HEAD' ? undefined : body);
    }
    return false;
  }

  /**
   * For the server's 'upgrade' event (exec/attach/portforward over WebSocket or SPDY), where there
   * is no ServerResponse: the refusal is written to the socket as a raw HTTP/1.1 response.
   */
  async checkUpgrade(request: IncomingMessage, socket: Duplex): Promise<boolean> {
    const outcome = await this.check(request);
    if (outcome.allowed) {
      requestUsers.set(request, outcome.user);
      return true;
    }
    const body = Buffer.from(outcome.body, 'utf8');
    const headers = { ...outcome.headers, 'Content-Length': String(body.length), Date: new Date().toUTCString(), Connection: 'close' };
    const head =
      `HTTP/1.1 ${outcome.statusCode} ${STATUS_CODES[outcome.statusCode] ?? ''}\r\n` +
      Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('') +
      '\r\n';
    if (socket.writable) socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]));
    return false;
  }
}

/** The filter the kubelet API's request handler calls first (Go: InstallAuthFilter). */
export function authFilter(authenticator: Authenticator, authorizer: Authorizer, nodeName: string, opts?: AuthFilterOptions): AuthFilter {
  return new AuthFilter(authenticator, authorizer, nodeName, opts);
}
