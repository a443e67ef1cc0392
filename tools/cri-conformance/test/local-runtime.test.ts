import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RemoteImageService, RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { criConformance } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'cri-conformance-local-'));
const socketPath = join(dir, 'local-runtime.sock');
const local = new LocalRuntime({ socketPath, mode: 'process', rootDir: join(dir, 'root') });
await local.start();
const runtime = new RemoteRuntimeService({ endpoint: local.endpoint });
const images = new RemoteImageService({ endpoint: local.endpoint });
t.teardown(async () => {
  runtime.close();
  images.close();
  await local.stop();
  rmSync(dir, { recursive: true, force: true });
});

criConformance(t, {
  name: 'local-runtime',
  runtime,
  images,
  // Process mode runs host processes: the image is only recorded, the commands come from the host.
  busyboxImage: 'localhost/kubelet-ts/busybox:1',
  logRoot: join(dir, 'logs'),
  supportsContainerEvents: true,
});
