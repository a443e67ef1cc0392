import { spawn } from 'node:child_process';
import { existsSync, lstatSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { LocalRuntime } from '../src/index.js';
import { runContainer, startRuntime, waitExited } from './helpers.js';

t.test('a restarted process-mode runtime still lists its sandboxes and exited containers', async (t) => {
  const h = await startRuntime(t);
  const done = await runContainer(h, 'done', ['sh', '-c', 'exit 4']);
  await waitExited(h, done.containerId);
  const running = await runContainer(h, 'running', ['sleep', '30']);
  h.rs.close();
  h.is.close();
  await h.runtime.stop();

  const again = new LocalRuntime({ socketPath: join(h.dir, 'cri.sock'), rootDir: join(h.dir, 'root'), mode: 'process' });
  await again.start();
  t.teardown(() => again.stop());
  const rs = new RemoteRuntimeService({ endpoint: again.endpoint });
  t.teardown(() => rs.close());
  t.same((await rs.listPodSandbox()).map((s) => s.id).sort(), [done.sandboxId, running.sandboxId].sort());
  const doneStatus = (await rs.containerStatus(done.containerId)).status;
  t.same([doneStatus?.state, doneStatus?.exitCode, doneStatus?.reason], ['CONTAINER_EXITED', 4, 'Error']);
  const killed = (await rs.containerStatus(running.containerId)).status;
  t.equal(killed?.state, 'CONTAINER_EXITED', 'stopped with the runtime');
  t.equal(killed?.exitCode, 143, 'SIGTERM at stop()');
  await rs.removePodSandbox(done.sandboxId);
  t.equal((await rs.listContainers()).length, 1);
});

t.test('simulated mode keeps nothing', async (t) => {
  const h = await startRuntime(t, { mode: 'simulated' });
  await h.rs.runPodSandbox({ metadata: { name: 'p', namespace: 'n', uid: 'u', attempt: 0 } });
  h.rs.close();
  h.is.close();
  await h.runtime.stop();
  const again = new LocalRuntime({ socketPath: join(h.dir, 'cri.sock'), rootDir: join(h.dir, 'root'), mode: 'simulated' });
  await again.start();
  t.teardown(() => again.stop());
  const rs = new RemoteRuntimeService({ endpoint: again.endpoint });
  t.teardown(() => rs.close());
  t.same(await rs.listPodSandbox(), []);
});

t.test('start refuses a socket path in use and replaces a stale one', async (t) => {
  const h = await startRuntime(t);
  const second = new LocalRuntime({ socketPath: join(h.dir, 'cri.sock'), rootDir: join(h.dir, 'root2'), mode: 'simulated' });
  await t.rejects(second.start(), /in use/);
  await second.stop();
  h.rs.close();
  h.is.close();
  // A socket file left behind by a server that died is replaced.
  const stalePath = join(h.dir, 'stale.sock');
  const child = spawn(process.execPath, ['-e', "require('net').createServer().listen(process.argv[1], () => console.log('up'))", stalePath]);
  await new Promise((resolve) => child.stdout.once('data', resolve));
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  t.ok(lstatSync(stalePath).isSocket(), 'stale socket left behind');
  const third = new LocalRuntime({ socketPath: stalePath, rootDir: join(h.dir, 'root3'), mode: 'simulated' });
  await third.start();
  await third.stop();
  t.notOk(existsSync(stalePath), 'socket removed on stop');
  // A path that is not a socket is never removed.
  writeFileSync(join(h.dir, 'file.sock'), 'data');
  const fourth = new LocalRuntime({ socketPath: join(h.dir, 'file.sock'), rootDir: join(h.dir, 'root4'), mode: 'simulated' });
  await t.rejects(fourth.start(), /not a socket/);
  await fourth.stop();
  t.pass('done');
});
