import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';

/** An API server reached at the wire level, as the kubelet's client reaches it: method, path, body, content type. */
export interface WireServer {
  /** http(s)://host:port */
  url: string;
  token?: string;
  caFile?: string;
}

export interface WireResponse {
  status: number;
  body: any;
}

export async function wire(server: WireServer, method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<WireResponse> {
  const url = new URL(path, server.url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (server.token) headers.Authorization = `Bearer ${server.token}`;
  if (payload !== undefined) {
    headers['Content-Type'] = contentType;
    headers['Content-Length'] = String(Buffer.byteLength(payload));
  }
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const ca = server.caFile ? readFileSync(server.caFile) : undefined;
  return new Promise((resolve, reject) => {
    const req = send(url, { method, headers, ca, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          // not JSON: keep the text
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * Opens a watch and returns its HTTP status and the first `count` events (or fewer when the server ends the stream or
 * `timeoutMs` passes), then closes it.
 */
export async function watchEvents(server: WireServer, path: string, count: number, timeoutMs = 10_000): Promise<{ status: number; events: any[] }> {
  const url = new URL(path, server.url);
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (server.token) headers.Authorization = `Bearer ${server.token}`;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const ca = server.caFile ? readFileSync(server.caFile) : undefined;
  return new Promise((resolve, reject) => {
    const events: any[] = [];
    let buffered = '';
    let status = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve({ status, events });
    };
    const timer = setTimeout(finish, timeoutMs);
    const req = send(url, { method: 'GET', headers, ca }, (res) => {
      status = res.statusCode ?? 0;
      res.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        let newline: number;
        while ((newline = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line) events.push(JSON.parse(line));
          if (events.length >= count) return finish();
        }
      });
      res.on('end', () => {
        if (buffered.trim()) {
          try {
            events.push(JSON.parse(buffered));
          } catch {
            events.push({ text: buffered.trim() });
          }
        }
        finish();
      });
    });
    req.on('error', (error) => {
      if (!done) {
        clearTimeout(timer);
        reject(error);
      }
    });
    req.end();
  });
}
