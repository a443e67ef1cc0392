import t from 'tap';
import { NotFoundError } from '@kubelet-ts/cri-client';
import { containerConfig, runContainer, sandboxConfig, startRuntime } from './helpers.js';

t.test('unknown ids: status calls are NotFound naming the id; removes and sandbox stops are idempotent', async (t) => {
  const h = await startRuntime(t);
  const error = await h.rs.containerStatus('deadbeef').catch((e: unknown) => e);
  t.type(error, NotFoundError);
  t.match((error as Error).message, /deadbeef/);
  await t.rejects(h.rs.podSandboxStatus('cafebabe'), { code: 'NotFound', message: /cafebabe/ });
  await t.rejects(h.rs.startContainer('nope'), { code: 'NotFound' });
  await t.rejects(h.rs.stopContainer('nope', 0), { code: 'NotFound' });
  await t.rejects(h.rs.podSandboxStats('nope'), { code: 'NotFound' });
  await t.rejects(h.rs.createContainer('nope', containerConfig('c', ['true']), sandboxConfig()), { code: 'NotFound' });
  await h.rs.removeContainer('nope');
  await h.rs.stopPodSandbox('nope');
  await h.rs.removePodSandbox('nope');
  t.pass('idempotent calls succeed');
});

t.test('lifecycle removes are idempotent and the sandbox takes its containers with it', async (t) => {
  const h = await startRuntime(t);
  const { sandboxId, containerId } = await runContainer(h, 'app', ['sleep', '30']);
  await h.rs.stopPodSandbox(sandboxId);
  t.equal((await h.rs.containerStatus(containerId)).status?.state, 'CONTAINER_EXITED', 'stopping the sandbox stops its containers');
  t.equal((await h.rs.podSandboxStatus(sandboxId)).status?.state, 'SANDBOX_NOTREADY');
  await h.rs.stopPodSandbox(sandboxId);
  await t.rejects(h.rs.createContainer(sandboxId, containerConfig('late', ['true']), sandboxConfig()), {
    code: 'FailedPrecondition',
  });
  await h.rs.removeContainer(containerId);
  await h.rs.removeContainer(containerId);
  t.same(await h.rs.listContainers(), []);
  await h.rs.removePodSandbox(sandboxId);
  await h.rs.removePodSandbox(sandboxId);
  t.same(await h.rs.listPodSandbox(), []);

  // Removing a sandbox with a running container kills and removes it.
  const other = await runContainer(h, 'other', ['sleep', '30']);
  await h.rs.removePodSandbox(other.sandboxId);
  t.same(await h.rs.listContainers(), []);
  t.same(await h.rs.listPodSandbox(), []);
  // Removing a running container kills it.
  const third = await runContainer(h, 'third', ['sleep', '30']);
  await h.rs.removeContainer(third.containerId);
  await t.rejects(h.rs.containerStatus(third.containerId), { code: 'NotFound' });
});

t.test('bad requests: no command, duplicate names, starting twice', async (t) => {
  const h = await startRuntime(t);
  const sandbox = sandboxConfig('dup');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  await t.rejects(h.rs.runPodSandbox(sandbox), { code: 'AlreadyExists' });
  await t.rejects(h.rs.createContainer(sandboxId, containerConfig('nocmd', []), sandbox), {
    code: 'InvalidArgument',
    message: /"nocmd"/,
  });
  // args alone are the command.
  const id = await h.rs.createContainer(sandboxId, { ...containerConfig('argsonly', []), args: ['sleep', '30'] }, sandbox);
  await t.rejects(h.rs.createContainer(sandboxId, containerConfig('argsonly', ['true']), sandbox), { code: 'AlreadyExists' });
  await h.rs.startContainer(id);
  await t.rejects(h.rs.startContainer(id), { code: 'FailedPrecondition' });
  t.equal((await h.rs.containerStatus(id)).status?.state, 'CONTAINER_RUNNING');
  // A new attempt is a new name.
  await h.rs.createContainer(sandboxId, { ...containerConfig('argsonly', ['true']), metadata: { name: 'argsonly', attempt: 1 } }, sandbox);
});

t.test('list filters: id, state, sandbox and labels', async (t) => {
  const h = await startRuntime(t);
  const a = await runContainer(h, 'a', ['sleep', '30'], { labels: { app: 'web', tier: 'front' } });
  const b = await runContainer(h, 'b', ['true'], { labels: { app: 'web', tier: 'back' } });
  const sandbox = sandboxConfig('created-only', { labels: { team: 'x' } });
  const cSandbox = await h.rs.runPodSandbox(sandbox);
  const c = await h.rs.createContainer(cSandbox, containerConfig('c', ['true'], { labels: { app: 'db' } }), sandbox);
  await h.rs.stopContainer(b.containerId, 0).catch(() => undefined);
  await h.rs.stopPodSandbox(b.sandboxId);

  const ids = async (filter: Parameters<typeof h.rs.listContainers>[0]) => (await h.rs.listContainers(filter)).map((x) => x.id).sort();
  t.same(await ids(undefined), [a.containerId, b.containerId, c].sort());
  t.same(await ids({ id: a.containerId }), [a.containerId]);
  t.same(await ids({ id: 'missing' }), []);
  t.same(await ids({ state: { state: 'CONTAINER_RUNNING' } }), [a.containerId]);
  t.same(await ids({ state: { state: 'CONTAINER_EXITED' } }), [b.containerId]);
  t.same(await ids({ state: { state: 'CONTAINER_CREATED' } }), [c]);
  t.same(await ids({ podSandboxId: cSandbox }), [c]);
  t.same(await ids({ podSandboxId: cSandbox, state: { state: 'CONTAINER_RUNNING' } }), []);
  t.same(await ids({ labelSelector: { app: 'web' } }), [a.containerId, b.containerId].sort());
  t.same(await ids({ labelSelector: { app: 'web', tier: 'back' } }), [b.containerId]);
  t.same(await ids({ id: a.containerId, labelSelector: { tier: 'back' } }), []);

  const listed = (await h.rs.listContainers({ id: a.containerId }))[0];
  t.equal(listed.podSandboxId, a.sandboxId);
  t.same(listed.metadata, { name: 'a', attempt: 0 });
  t.equal(listed.image?.image, 'busybox');

  const sandboxIds = async (filter: Parameters<typeof h.rs.listPodSandbox>[0]) =>
    (await h.rs.listPodSandbox(filter)).map((x) => x.id).sort();
  t.same(await sandboxIds(undefined), [a.sandboxId, b.sandboxId, cSandbox].sort());
  t.same(await sandboxIds({ id: cSandbox }), [cSandbox]);
  t.same(await sandboxIds({ state: { state: 'SANDBOX_NOTREADY' } }), [b.sandboxId]);
  t.same(await sandboxIds({ state: { state: 'SANDBOX_READY' } }), [a.sandboxId, cSandbox].sort());
  t.same(await sandboxIds({ labelSelector: { team: 'x' } }), [cSandbox]);
  const [item] = await h.rs.listPodSandbox({ id: cSandbox });
  t.same(item.metadata, { name: 'created-only', namespace: 'default', uid: 'uid-created-only', attempt: 0 });
  t.same(item.annotations, { note: 'sandbox' });

  t.same((await h.rs.listContainerStats({ podSandboxId: a.sandboxId })).map((s) => s.attributes?.id), [a.containerId]);
  t.same((await h.rs.listPodSandboxStats({ labelSelector: { team: 'x' } })).map((s) => s.attributes?.id), [cSandbox]);
});

t.test('sandbox network and namespaces', async (t) => {
  const h = await startRuntime(t);
  const hostNet = sandboxConfig('hostnet', {
    linux: { securityContext: { namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } } },
  });
  const hostId = await h.rs.runPodSandbox(hostNet);
  const podId = await h.rs.runPodSandbox(sandboxConfig('podnet'));
  const host = await h.rs.podSandboxStatus(hostId);
  t.equal(host.status?.network?.ip, '');
  t.equal(host.status?.linux?.namespaces?.options?.network, 'NODE');
  t.equal((await h.rs.podSandboxStatus(podId)).status?.network?.ip, '127.0.0.1');
  t.ok(Number(host.timestamp) > 0);
});
