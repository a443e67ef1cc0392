// Preloaded into the fleet process by bench/fleet.bench.ts (node --import): counts the process's HTTP requests to the
// API server (FLEET_COUNT_API, host:port) by verb and resource, from Node's diagnostics channels (node:http(s) and
// undici), and serves the counts as JSON on 127.0.0.1:FLEET_COUNT_PORT. The API server's own metrics count every
// client's requests with no client label; this counts exactly the fleet's. One map update per request.
import dc from 'node:diagnostics_channel';
import { createServer } from 'node:http';

const apiHost = process.env.FLEET_COUNT_API ?? '';
const counts = new Map();

/** WATCH, LIST, GET, ... and the resource (pods, pods/status, leases, nodes/status) of an API path. */
function key(method, path) {
  const [pathname, query = ''] = path.split('?');
  const parts = pathname.split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  let rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : parts;
  if (rest[0] === 'namespaces' && rest.length > 2) rest = rest.slice(2);
  const resource = rest.length >= 3 ? `${rest[0]}/${rest[2]}` : (rest[0] ?? pathname);
  const watch = /(^|&)watch=(1|true)(&|$)/.test(query);
  const verb = watch ? 'WATCH' : method === 'GET' && rest.length === 1 ? 'LIST' : method;
  return `${verb} ${resource}`;
}

function count(host, method, path) {
  if (apiHost && host !== apiHost) return;
  const k = key(method ?? 'GET', path ?? '/');
  counts.set(k, (counts.get(k) ?? 0) + 1);
}

dc.subscribe('http.client.request.start', ({ request }) => count(request.getHeader('host') ?? request.host, request.method, request.path));
dc.subscribe('undici:request:create', ({ request }) => count(new URL(request.origin).host, request.method, request.path));

const port = Number(process.env.FLEET_COUNT_PORT ?? 0);
if (port > 0) {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(Object.fromEntries(counts)));
  });
  server.listen(port, '127.0.0.1');
  server.unref();
}
