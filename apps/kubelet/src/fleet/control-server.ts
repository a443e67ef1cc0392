// The fleet's control API on the loopback: list the nodes, make one die, bring it back.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FleetNodeNotFoundError, FleetNodeStateError, type Fleet } from './fleet.js';

/** Starts the control API on 127.0.0.1:port (0: any free port); resolves with the server and its port. */
export async function startFleetControlServer(fleet: Pick<Fleet, 'list' | 'kill' | 'revive'>, port: number): Promise<{ server: Server; port: number }> {
  const server = createServer((request, response) => {
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(`${JSON.stringify(body)}\n`);
    };
    const path = new URL(request.url ?? '/', 'http://fleet').pathname;
    if (request.method === 'GET' && (path === '/nodes' || path === '/nodes/')) return reply(200, fleet.list());
    if (request.method === 'GET' && path === '/healthz') return reply(200, { ok: true });
    const action = /^\/nodes\/([^/]+)\/(kill|revive)$/.exec(path);
    if (!action) return reply(404, { error: `no route ${request.method} ${path}: GET /nodes, POST /nodes/<name>/kill, POST /nodes/<name>/revive` });
    if (request.method !== 'POST') return reply(405, { error: `${path} takes POST` });
    const name = decodeURIComponent(action[1]!);
    const run = action[2] === 'kill' ? fleet.kill(name) : fleet.revive(name);
    run.then(
      () => reply(200, fleet.list().find((node) => node.name === name)),
      (error: unknown) => {
        const status = error instanceof FleetNodeNotFoundError ? 404 : error instanceof FleetNodeStateError ? 409 : 500;
        reply(status, { error: (error as Error).message });
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, port: (server.address() as AddressInfo).port };
}
