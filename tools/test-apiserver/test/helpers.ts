import { startTestApiServer, type ServerClock, type TestApiServer, type TestApiServerOptions, type TimerHandle } from '../src/index.js';

export type Obj = Record<string, any>;

export interface HttpResult {
  status: number;
  body: any;
  headers: Headers;
}

export async function http(server: TestApiServer | string, method: string, path: string, body?: unknown, contentType = 'application/json', headers: Record<string, string> = {}): Promise<HttpResult> {
  const base = typeof server === 'string' ? server : server.url;
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? headers : { 'Content-Type': contentType, ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // plain text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

export function pod(name: string, extra: Obj = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...(extra.metadata ?? {}) },
    spec: { containers: [{ name: 'c', image: 'busybox:1.36' }], ...(extra.spec ?? {}) },
  };
}

export interface WatchEvent {
  type: string;
  object: Obj;
}

/** A watch stream read through fetch: events are queued as they arrive. */
export class WatchStream {
  readonly events: WatchEvent[] = [];
  ended = false;
  status = 0;
  private waiters: Array<() => void> = [];
  private readonly controller = new AbortController();
  private readonly done: Promise<void>;

  constructor(url: string) {
    this.done = this.run(url);
  }

  private async run(url: string): Promise<void> {
    try {
      const res = await fetch(url, { signal: this.controller.signal });
      this.status = res.status;
      if (!res.body) return;
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.trim()) this.events.push(JSON.parse(line) as WatchEvent);
          this.wake();
        }
      }
    } catch {
      // aborted or reset
    } finally {
      this.ended = true;
      this.wake();
    }
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Waits until `n` events arrived (or the stream ended) and returns them all. */
  async waitFor(n: number, timeoutMs = 5000): Promise<WatchEvent[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.events.length < n && !this.ended) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} watch events; have ${JSON.stringify(this.events.map((e) => e.type))}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 50);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.events;
  }

  /** Waits for the server to end the stream. */
  async waitEnded(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended) {
      if (Date.now() > deadline) throw new Error('watch stream did not end');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.done;
  }
}

export function watch(server: TestApiServer, path: string): WatchStream {
  return new WatchStream(server.url + path);
}

/** Polls `fn` until it returns a truthy value. */
export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 5000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A server closed at the end of the test; periodic bookmarks off unless asked for. */
export async function withServer(t: { teardown(fn: () => unknown): void }, opts: TestApiServerOptions = {}): Promise<TestApiServer> {
  const server = await startTestApiServer({ bookmarkIntervalMs: 0, ...opts });
  t.teardown(() => server.close());
  return server;
}

/** A manual clock: intervals and timeouts fire only when the test advances time. */
export class ManualClock implements ServerClock {
  private nowMs = Date.parse('2024-05-01T12:00:00Z');
  private timers: Array<{ at: number; every?: number; fn: () => void; live: boolean }> = [];

  now(): number {
    return this.nowMs;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer = { at: this.nowMs + ms, fn, live: true };
    this.timers.push(timer);
    return { cancel: () => void (timer.live = false) };
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    const timer = { at: this.nowMs + ms, every: ms, fn, live: true };
    this.timers.push(timer);
    return { cancel: () => void (timer.live = false) };
  }

  advance(ms: number): void {
    const end = this.nowMs + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.live && x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.nowMs = due.at;
      if (due.every) due.at += due.every;
      else due.live = false;
      due.fn();
    }
    this.nowMs = end;
    this.timers = this.timers.filter((x) => x.live);
  }
}
