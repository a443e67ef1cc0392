import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A named health check: returns an Error when unhealthy. */
export interface HealthzCheck {
  name: string;
  check(): Error | undefined;
}

/**
 * The kubelet's localhost healthz endpoint (Go: healthz.InstallHandler). GET /healthz answers `ok`, or
 * 500 listing the failed checks; `?verbose` lists every check as `[+]name ok` / `[-]name failed`.
 */
export class HealthzServer {
  private server?: Server;

  constructor(
    private readonly checks: HealthzCheck[],
    private readonly options: { port: number; address: string },
  ) {}

  async start(): Promise<number> {
    const server = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://localhost');
      const path = url.pathname.replace(/\/$/, '');
      const single = path.startsWith('/healthz/') ? path.slice('/healthz/'.length) : undefined;
      if (path !== '/healthz' && single === undefined) {
        response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
        return;
      }
      const selected = single === undefined ? this.checks : this.checks.filter((c) => c.name === single);
      if (single !== undefined && selected.length === 0) {
        response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('404 page not found\n');
        return;
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
