// /debug/pprof/{name} (Go: net/http/pprof as the kubelet mounts it): the process's command line, and a CPU profile of
// the kubelet over `seconds`, taken with V8's sampling profiler (a .cpuprofile, as Chrome DevTools and `node --cpu-prof`
// write it; Go's is pprof's protobuf). Go's other profiles (heap, goroutine, block, mutex, threadcreate, symbol,
// trace) have no counterpart in a Node.js process: they answer pprof's 404 "Unknown profile".
import type { ServerResponse } from 'node:http';
import { Session } from 'node:inspector';
import type { Clock } from '@kubelet-ts/core';

/** Go's kubelet server WriteTimeout (4 h): a longer profile is refused, as pprof.Profile does. */
const WRITE_TIMEOUT_SECONDS = 4 * 60 * 60;
const DEFAULT_PROFILE_SECONDS = 30;

/** Go's pprof serveError: plain text with a newline, never cached. */
function serveError(response: ServerResponse, status: number, text: string): void {
  response
    .writeHead(status, {
      'cache-control': 'no-cache',
      'content-type': 'text/plain; charset=utf-8',
      'x-content-type-options': 'nosniff',
    })
    .end(`${text}\n`);
}

function post<T>(session: Session, method: string): Promise<T> {
  return new Promise((resolve, reject) => session.post(method, (error, result) => (error ? reject(error) : resolve(result as T))));
}

/** The profiling endpoints of one server: one CPU profile at a time, as Go's runtime allows. */
export class ProfilingHandler {
  private profiling = false;

  constructor(
    private readonly clock: Clock,
    private readonly argv: readonly string[] = [process.argv[1] ?? process.argv0, ...process.argv.slice(2)],
  ) {}

  /** Serves /debug/pprof/`name`. */
  async serve(name: string, response: ServerResponse, query: URLSearchParams): Promise<void> {
    if (name === 'cmdline') {
      response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }).end(this.argv.join('\x00'));
      return;
    }
    if (name === 'profile') {
      await this.cpuProfile(response, query);
      return;
    }
    serveError(response, 404, 'Unknown profile');
  }

  private async cpuProfile(response: ServerResponse, query: URLSearchParams): Promise<void> {
    const parsed = /^[+-]?\d+$/.test(query.get('seconds') ?? '') ? Number(query.get('seconds')) : 0;
    const seconds = parsed > 0 ? parsed : DEFAULT_PROFILE_SECONDS;
    if (seconds >= WRITE_TIMEOUT_SECONDS) {
      serveError(response, 400, "profile duration exceeds server's WriteTimeout");
      return;
    }
    if (this.profiling) {
      serveError(response, 500, 'Could not enable CPU profiling: cpu profiling already in use');
      return;
    }
    this.profiling = true;
    const session = new Session();
    // The client going away ends the profile early, as Go's sleep(r, d) returns when the request is done.
    const gone = new AbortController();
    const abort = () => gone.abort();
    response.once('close', abort);
    try {
      session.connect();
      await post(session, 'Profiler.enable');
      await post(session, 'Profiler.start');
      await this.clock.sleep(seconds * 1000, gone.signal).catch(() => undefined);
      const { profile } = await post<{ profile: object }>(session, 'Profiler.stop');
      if (response.destroyed) return;
      response
        .writeHead(200, {
          'content-type': 'application/json',
          'content-disposition': 'attachment; filename="profile.cpuprofile"',
          'x-content-type-options': 'nosniff',
        })
        .end(JSON.stringify(profile));
    } catch (error) {
      if (!response.headersSent) serveError(response, 500, `Could not enable CPU profiling: ${(error as Error).message}`);
    } finally {
      response.off('close', abort);
      session.disconnect();
      this.profiling = false;
    }
  }
}
