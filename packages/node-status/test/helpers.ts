import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeClock } from '@kubelet-ts/core/testing';

/** What a tap test offers for cleanup. */
export interface TeardownHost {
  teardown(fn: () => unknown): void;
}

export async function tempDir(t: TeardownHost, prefix = 'node-status-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export const realSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Moves fake time forward in steps, giving real I/O (HTTP to the test API server) a few real ms
 * between steps, until cond holds. Fails after maxFakeMs of fake time.
 */
export async function advanceUntil(clock: FakeClock, cond: () => boolean, what: string, opts: { stepMs?: number; maxFakeMs?: number; realMs?: number } = {}): Promise<void> {
  const step = opts.stepMs ?? 100;
  const max = opts.maxFakeMs ?? 60_000;
  for (let elapsed = 0; ; elapsed += step) {
    if (cond()) return;
    if (elapsed > max) throw new Error(`gave up after ${max} ms of fake time waiting for ${what}`);
    await clock.advance(step);
    await realSleep(opts.realMs ?? 3);
  }
}

/** Moves fake time forward by ms in steps, with real pauses for I/O. */
export async function advanceFor(clock: FakeClock, ms: number, stepMs = 100, realMs = 2): Promise<void> {
  for (let elapsed = 0; elapsed < ms; elapsed += stepMs) {
    await clock.advance(Math.min(stepMs, ms - elapsed));
    await realSleep(realMs);
  }
}

/** Polls cond with short real waits. */
export async function waitFor(cond: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await realSleep(5);
  }
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An HTTP proxy in front of the test API server that keeps every request body, to check bytes on the wire. */
export async function startRecordingProxy(target: string): Promise<{ url: string; requests: RecordedRequest[]; close: () => Promise<void> }> {
  const requests: RecordedRequest[] = [];
  const targetUrl = new URL(target);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: body.toString('utf8') });
      const upstream = request(
        { host: targetUrl.hostname, port: targetUrl.port, method: req.method, path: req.url, headers: { ...req.headers, host: targetUrl.host } },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => {
        res.writeHead(502);
        res.end();
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
