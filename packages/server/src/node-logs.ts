import { createReadStream } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, normalize, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';

/**
 * The node's logs at /logs/ (Go: http.FileServer over /var/log/ behind StripPrefix("/logs/")): a directory
 * answers Go's `<pre>` listing, a file its contents. Paths are confined to the log directory, symlinks included.
 */
export async function serveNodeLogs(root: string, subpath: string, request: IncomingMessage, response: ServerResponse): Promise<void> {
  if (!subpath.startsWith('/')) return notFound(response);
  const relative = normalize(decodeURIComponentSafe(subpath)).replace(/^(\.\.(\/|$))+/, '');
  const rootReal = await realpath(root).catch(() => undefined);
  if (!rootReal) return notFound(response);
  const target = await realpath(join(rootReal, relative)).catch(() => undefined);
  if (!target || (target !== rootReal && !target.startsWith(rootReal + sep))) return notFound(response);
  const info = await stat(target).catch(() => undefined);
  if (!info) return notFound(response);

  if (info.isDirectory()) {
    if (!subpath.endsWith('/')) {
      // Go redirects a directory to its canonical form with a trailing slash, relative to the request.
      const base = subpath.split('/').pop() ?? '';
      response.writeHead(301, { location: `${base}/` }).end();
      return;
    }
    const entries = await readdir(target, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const lines = entries.map((entry) => {
      const name = entry.isDirectory() ? `${entry.name}/` : entry.name;
      return `<a href="${escapeHtml(encodeURI(name))}">${escapeHtml(name)}</a>`;
    });
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<pre>\n${lines.map((l) => `${l}\n`).join('')}</pre>\n`);
    return;
  }
  if (!info.isFile()) return notFound(response);
  response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': info.size, 'last-modified': info.mtime.toUTCString() });
  if (request.method === 'HEAD') {
    response.end();
    return;
  }
  await pipeline(createReadStream(target), response).catch(() => response.destroy());
}

function notFound(response: ServerResponse): void {
  response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }).end('404 page not found\n');
}

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&#34;').replace(/'/g, '&#39;');
}
