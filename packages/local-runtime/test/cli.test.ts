import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { tempDir } from './helpers.js';

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));

function run(args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, out: () => stdout, err: () => stderr };
}

t.test('--help and bad flags', async (t) => {
  const help = run(['--help']);
  t.equal(await help.exited, 0);
  t.match(help.out(), /Usage: local-runtime --socket PATH/);
  const bad = run(['--bogus']);
  t.equal(await bad.exited, 2);
  t.match(bad.err(), /Unknown option '--bogus'/);
  const noSocket = run([]);
  t.equal(await noSocket.exited, 2);
  t.match(noSocket.err(), /--socket is required/);
  const badMode = run(['--socket', '/tmp/x.sock', '--mode', 'vm']);
  t.equal(await badMode.exited, 2);
  t.match(badMode.err(), /--mode must be "process" or "simulated"/);
});

t.test('serves until SIGTERM, then stops cleanly', async (t) => {
  const dir = tempDir(t);
  const socket = join(dir, 'cli.sock');
  const proc = run(['--socket', socket, '--root-dir', join(dir, 'root'), '--mode', 'simulated', '-v', '2']);
  t.teardown(() => {
    if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  });
  const deadline = Date.now() + 20_000;
  while (!proc.err().includes('listening on') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.match(proc.err(), /listening on unix:\/\//);
  const rs = new RemoteRuntimeService({ endpoint: `unix://${socket}`, timeoutMs: 5000 });
  t.equal((await rs.version('v1')).runtimeName, 'local-runtime');
  rs.close();
  proc.child.kill('SIGTERM');
  t.equal(await proc.exited, 0);
  t.notOk(existsSync(socket), 'socket removed');
});
