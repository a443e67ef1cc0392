#!/usr/bin/env node
// A byte relay between a listening socket and a target, one target connection per accepted connection
// (written for tools/systemd-node). Endpoints: tcp:HOST:PORT or unix:/PATH.
//   node relay.mjs --listen unix:/tmp/x/apiserver.sock --to tcp:127.0.0.1:6443
//   node relay.mjs --listen tcp:127.0.0.1:6443 --to unix:/tmp/x/apiserver.sock
// A listening unix socket path is replaced if a stale socket file is there. Exits on SIGTERM/SIGINT.
import { createConnection, createServer } from 'node:net';
import { chmodSync, lstatSync, unlinkSync } from 'node:fs';

function parse(flag, value) {
  if (!value) throw new Error(`relay: ${flag} needs a value (tcp:HOST:PORT or unix:/PATH)`);
  if (value.startsWith('unix:')) {
    const path = value.slice('unix:'.length);
    if (!path.startsWith('/')) throw new Error(`relay: ${flag} ${value}: the unix socket path must be absolute`);
    return { path };
  }
  const match = /^tcp:(.+):(\d+)$/.exec(value);
  if (!match || Number(match[2]) < 1 || Number(match[2]) > 65535) throw new Error(`relay: ${flag} ${value}: expected tcp:HOST:PORT or unix:/PATH`);
  return { host: match[1], port: Number(match[2]) };
}

const args = process.argv.slice(2);
const valueOf = (flag) => {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
};
let listen, to;
try {
  listen = parse('--listen', valueOf('--listen'));
  to = parse('--to', valueOf('--to'));
} catch (error) {
  console.error(error.message);
  process.exit(2);
}

const describe = (e) => (e.path ? `unix:${e.path}` : `tcp:${e.host}:${e.port}`);
const server = createServer((client) => {
  const upstream = createConnection(to);
  client.pipe(upstream).pipe(client);
  const close = (what) => (error) => {
    if (error && error.code !== 'ECONNRESET' && error.code !== 'EPIPE') console.error(`relay: ${what}: ${error.message}`);
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close(`client ${describe(listen)}`));
  upstream.on('error', close(`upstream ${describe(to)}`));
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
});
if (listen.path) {
  try {
    if (lstatSync(listen.path).isSocket()) unlinkSync(listen.path);
  } catch (error) {
    if (error.code !== 'ENOENT') throw error;
  }
}
server.on('error', (error) => {
  console.error(`relay: listening on ${describe(listen)}: ${error.message}`);
  process.exit(1);
});
server.listen(listen, () => {
  if (listen.path) chmodSync(listen.path, 0o600);
  console.error(`relay: ${describe(listen)} -> ${describe(to)} (pid ${process.pid})`);
});
const stop = () => {
  server.close();
  if (listen.path) {
    try {
      unlinkSync(listen.path);
    } catch {
      // already gone
    }
  }
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
