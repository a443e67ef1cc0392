import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A named health check: returns an Error when unhealthy. */
export interface HealthzCheck {
  name: string;
  check(): Error | undefined;
}

/**
 * Go's healthz.InstallHandler: GET /healthz answers `ok`, or 500 listing the failed checks; `?verbose` lists
 * every check as `[+]name ok` / `[-]name failed`; /healthz/<name> runs one check. Returns false for any
 * other path, so the caller can route it.
 */
export function serveHealthz(checks: HealthzCheck[], request: IncomingMessage, response: ServerResponse): boolean {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const path = url.pathname.replace(/\/$/, '');
  const single = path.startsWith('/healthz/') ? path.slice('/healthz/'.length) : undefined;
  if (path !== '/healthz' && single === undefined) return false;
  const selected = single === undefined ? checks : checks.filter((c) => c.name === single);
  if (single !== undefined && selected.length === 0) {
    response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
    return true;
  }
  const results = selected.map((c) => ({ name: c.name, error: safeCheck(c) }));
  const failed = results.filter((r) => r.error);
  const verbose = url.searchParams.has('verbose');
  const lines = results.map((r) => (r.error ? `[-]${r.name} failed: reason withheld` : `[+]${r.name} ok`));
  response.setHeader('content-type', 'text/plain; charset=utf-8');
  response.setHeader('x-content-type-options', 'nosniff');
  if (failed.length > 0) {
    response.writeHead(500).end(`${lines.join('\n')}\nhealthz check failed\n`);
  } else if (verbose) {
    response.writeHead(200).end(`${lines.join('\n')}\nhealthz check passed\n`);
  } else {
    response.writeHead(200).end('ok');
  }
  return true;
}

/** The kubelet's localhost healthz endpoint (Go: --healthz-port, 10248): only /healthz. */
export class HealthzServer {
  private server?: Server;

  constructor(
    private readonly checks: HealthzCheck[],
    private readonly options: { port: number; address: string },
  ) {}

  async start(): Promise<number> {
    const server = createServer((request, response) => {
      if (!serveHealthz(this.checks, request, response)) {
        response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
      }
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, this.options.address, () => resolve());
    });
    return (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function safeCheck(check: HealthzCheck): Error | undefined {
  try {
    return check.check();
  } catch (error) {
    return error as Error;
  }
}
