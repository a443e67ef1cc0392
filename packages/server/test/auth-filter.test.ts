import t from 'tap';
import http from 'node:http';
import { RecordingLogger } from '@kubelet-ts/core/testing';
import { authFilter, requestUser, type Authenticator, type Authorizer, type RequestAttributes } from '../src/auth/index.js';
import { call, close, listen } from './fixtures/auth-http.js';

// Users by token; "boom" makes the authenticator fail.
const authenticator: Authenticator = {
  async authenticate(req) {
    const header = req.headers.authorization;
    if (!header) return { user: undefined };
    const token = header.replace(/^Bearer /, '');
    if (token === 'boom') return { user: undefined, error: new Error('webhook down') };
    if (token === 'throws') throw new Error('exploded');
    return { user: { name: token, groups: ['system:authenticated'] } };
  },
};

const seen: RequestAttributes[] = [];
const authorizer: Authorizer = {
  async authorize(attrs) {
    seen.push(attrs);
    if (attrs.user.name === 'sar-error') throw new Error('SubjectAccessReview failed');
    if (attrs.user.name === 'admin') return { decision: 'allow' };
    if (attrs.user.name === 'viewer' && attrs.subresource === 'stats') return { decision: 'allow' };
    return attrs.user.name === 'evil' ? { decision: 'deny', reason: 'nope' } : { decision: 'no-opinion' };
  },
};

const logger = new RecordingLogger();
const filter = authFilter(authenticator, authorizer, 'node-1', { logger });
const server = http.createServer(async (req, res) => {
  if (!(await filter.checkRequest(req, res))) return;
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(requestUser(req)));
});
server.on('upgrade', async (req, socket) => {
  if (!(await filter.checkUpgrade(req, socket))) return;
  socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
});

t.before(() => listen(server));
t.teardown(() => close(server));

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

t.test('allowed: the handler runs and sees the user', async (t) => {
  const res = await call(server, '/pods', bearer('admin'));
  t.equal(res.status, 200);
  t.same(JSON.parse(res.body), { name: 'admin', groups: ['system:authenticated'] });
  t.equal(seen.at(-1)?.subresource, 'proxy');
  t.equal(seen.at(-1)?.name, 'node-1');
});

t.test('no credentials: 401 Unauthorized, no newline, text/plain', async (t) => {
  const res = await call(server, '/pods');
  t.equal(res.status, 401);
  t.equal(res.body, 'Unauthorized');
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  t.equal(res.headers['content-length'], '12');
});

t.test('authentication error: 401, logged', async (t) => {
  for (const token of ['boom', 'throws']) {
    const res = await call(server, '/pods', bearer(token));
    t.equal(res.status, 401);
    t.equal(res.body, 'Unauthorized');
  }
  t.ok(logger.entries.some((e) => e.msg === 'Unable to authenticate the request due to an error'));
});

t.test('denied or no opinion: 403 with the Go text', async (t) => {
  let res = await call(server, '/exec/ns/pod/ctr?command=sh', { ...bearer('viewer'), method: 'POST' });
  t.equal(res.status, 403);
  t.equal(res.body, 'Forbidden (user=viewer, verb=create, resource=nodes, subresource=proxy)');
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  res = await call(server, '/stats/summary', bearer('viewer'));
  t.equal(res.status, 200, 'viewer may read stats');
  res = await call(server, '/metrics/cadvisor', bearer('evil'));
  t.equal(res.status, 403);
  t.equal(res.body, 'Forbidden (user=evil, verb=get, resource=nodes, subresource=metrics)');
});

t.test('authorizer error: 500 with the Go text', async (t) => {
  const res = await call(server, '/logs/', { ...bearer('sar-error'), method: 'DELETE' });
  t.equal(res.status, 500);
  t.equal(res.body, 'Authorization error (user=sar-error, verb=delete, resource=nodes, subresource=log)');
});

t.test('HEAD: verb "", no body', async (t) => {
  const res = await call(server, '/spec/', { ...bearer('viewer'), method: 'HEAD' });
  t.equal(res.status, 403);
  t.equal(res.body, '');
  t.equal(seen.at(-1)?.verb, '');
  t.equal(seen.at(-1)?.subresource, 'spec');
});

t.test('unclean paths are redirected before authentication, as Go ServeMux does', async (t) => {
  const before = seen.length;
  let res = await call(server, '/stats/../exec/ns/pod/ctr?command=id', bearer('viewer'));
  t.equal(res.status, 301);
  t.equal(res.headers.location, '/exec/ns/pod/ctr?command=id');
  t.equal(res.body, '<a href="/exec/ns/pod/ctr?command=id">Moved Permanently</a>.\n\n');
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8');
  res = await call(server, '//pods', { method: 'POST' });
  t.equal(res.status, 301);
  t.equal(res.headers.location, '/pods');
  t.equal(res.body, '', 'no body for other methods');
  res = await call(server, '/%2e%2e/a%20b/../pods');
  t.equal(res.headers.location, '/pods');
  t.equal(seen.length, before, 'nothing was authorized');
});

t.test('undecodable path: 400', async (t) => {
  const res = await call(server, '/pods%zz', bearer('admin'));
  t.equal(res.status, 400);
  t.equal(res.body, '400 Bad Request');
});

t.test('upgrade requests are refused on the socket', async (t) => {
  const headers = { connection: 'Upgrade', upgrade: 'websocket' };
  let res = await call(server, '/exec/ns/pod/ctr', { headers });
  t.equal(res.status, 401);
  t.equal(res.body, 'Unauthorized');
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  res = await call(server, '/attach/ns/pod/ctr', { headers: { ...headers, authorization: 'Bearer viewer' } });
  t.equal(res.status, 403);
  t.equal(res.body, 'Forbidden (user=viewer, verb=get, resource=nodes, subresource=proxy)');
  res = await call(server, '/attach/ns/pod/ctr', { headers: { ...headers, authorization: 'Bearer admin' } });
  t.equal(res.status, 200);
  t.equal(res.body, 'ok');
});
