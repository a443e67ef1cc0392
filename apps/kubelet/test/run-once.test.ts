import 'reflect-metadata';
import t from 'tap';
import { container } from 'tsyringe';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { noopLogger } from '@kubelet-ts/core';
import { Tokens, parseFlags, registerKubeletDeps, resolveConfig, startKubelet, type RunPodResult } from '../src/index.js';

function pod(name: string, spec: Record<string, unknown>) {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec });
}

t.test('runOnce runs the static pods once, reports each result and fails naming the pods that failed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kubelet-runonce-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests);
  const image = 'localhost/kubelet-ts/busybox:1';
  writeFileSync(join(manifests, 'server.json'), pod('server', { containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"] }] }));
  writeFileSync(join(manifests, 'job.json'), pod('job', { restartPolicy: 'Never', containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sh', '-c', 'exit 0'] }] }));
  writeFileSync(join(manifests, 'bad.json'), pod('bad', { containers: [{ name: 'app', image: 'registry.invalid/doesnotexist:1', command: ['true'] }] }));

  const config = resolveConfig(parseFlags([`--pod-manifest-path=${manifests}`, `--root-dir=${join(dir, 'root')}`, `--pod-logs-dir=${join(dir, 'logs')}`, '--hostname-override=node1', '--runonce']));
  const c = container.createChildContainer();
  registerKubeletDeps(c, config);
  c.register(Tokens.Logger, { useValue: noopLogger });
  const running = await startKubelet(c, new AbortController().signal);
  const error = (await running.done.catch((e: unknown) => e)) as Error & { results: RunPodResult[] };
  t.type(error, Error);
  t.equal(error.message, 'error running pods: [default/bad-node1]', 'the failed pod is named');
  const byName = Object.fromEntries(error.results.map((r) => [r.pod.metadata!.name!, r]));
  t.equal(byName['server-node1'].error, undefined, 'the server runs');
  t.equal(byName['server-node1'].terminal, false);
  t.equal(running.kubelet.getPodStatus(byName['server-node1'].pod.metadata!.uid!)?.phase, 'Running');
  t.equal(byName['job-node1'].terminal, true, 'the job finished');
  t.equal(running.kubelet.getPodStatus(byName['job-node1'].pod.metadata!.uid!)?.phase, 'Succeeded');
  t.match(byName['bad-node1'].error?.message, /error syncing pod "default\/bad-node1".*ErrImagePull/);
});
