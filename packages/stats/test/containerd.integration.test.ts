// The summary against the real containerd (tools/containerd/start.sh; the test command starts it). It creates
// nothing: whatever pods other suites run there, the node figures must be sane and every pod well formed.
import t from 'tap';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { RemoteImageService, RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { renderResourceMetrics, SummaryProvider } from '../src/index.js';

const SOCKET = process.env.CONTAINERD_SOCKET ?? '/tmp/kubelet-ts-containerd/containerd.sock';

t.test('get() on the real containerd', { skip: existsSync(SOCKET) ? false : `no containerd socket at ${SOCKET}: run tools/containerd/start.sh` }, async (t) => {
  const endpoint = `unix://${SOCKET}`;
  const runtimeService = new RemoteRuntimeService({ endpoint });
  const imageService = new RemoteImageService({ endpoint });
  t.teardown(() => {
    runtimeService.close();
    imageService.close();
  });
  const provider = new SummaryProvider({ runtimeService, imageService, nodeName: 'integration', rootDir: tmpdir() });

  // containerd 1.6 implements ListPodSandboxStats: no Unimplemented error, an array back.
  t.ok(Array.isArray(await runtimeService.listPodSandboxStats({})), 'ListPodSandboxStats is implemented');

  const summary = await provider.get(true);
  const node = summary.node;
  t.equal(node.nodeName, 'integration');
  t.ok(Date.parse(node.startTime) < Date.now(), 'booted in the past');
  t.ok((node.memory?.workingSetBytes ?? 0) > 0, 'memory working set > 0');
  t.ok((node.memory?.availableBytes ?? 0) > 0, 'memory available > 0');
  t.ok((node.cpu?.usageCoreNanoSeconds ?? 0) > 0, 'cpu time > 0');
  t.ok((node.fs?.capacityBytes ?? 0) > 0, 'nodefs capacity > 0');
  t.ok((node.fs?.availableBytes ?? -1) >= 0);
  t.ok((node.runtime?.imageFs?.capacityBytes ?? 0) > 0, 'imageFs capacity from statfs of the snapshotter mountpoint');
  t.ok((node.runtime?.imageFs?.usedBytes ?? 0) > 0, 'imageFs used bytes from CRI ImageFsInfo (the imported images)');
  t.ok((node.rlimit?.maxpid ?? 0) > 0 && (node.rlimit?.curproc ?? 0) > 0, 'task limit and count');
  for (const pod of summary.pods) {
    t.ok(pod.podRef.uid && pod.podRef.namespace && pod.podRef.name, `pod ${pod.podRef.namespace}/${pod.podRef.name} has a full reference`);
    t.ok(pod['ephemeral-storage'], 'and ephemeral storage');
  }
  t.match(renderResourceMetrics(await provider.getCPUAndMemoryStats()), /^node_memory_working_set_bytes \S+ \d+$/m);
});
