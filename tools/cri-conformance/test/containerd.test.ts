import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RemoteImageService, RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { criConformance, readContainerdEnv } from '../src/index.js';

const env = readContainerdEnv();
const restartScript = join(import.meta.dirname, '../../containerd/restart.sh');
const runtime = new RemoteRuntimeService({ endpoint: env.endpoint });
const images = new RemoteImageService({ endpoint: env.endpoint });
// containerd runs as root and writes the logs itself; keep them under its temp root.
const logRoot = mkdtempSync(join(env.root, 'pod-logs-'));
t.teardown(() => {
  runtime.close();
  images.close();
  rmSync(logRoot, { recursive: true, force: true });
});

criConformance(t, {
  name: 'containerd',
  runtime,
  images,
  busyboxImage: env.busyboxImage,
  logRoot,
  // containerd 1.6 predates GetContainerEvents; 1.7+ has it.
  supportsContainerEvents: false,
  restartRuntime: async () => {
    await promisify(execFile)('bash', [restartScript], { env: { ...process.env, KUBELET_TS_CONTAINERD_ROOT: env.root } });
  },
});
