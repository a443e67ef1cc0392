import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { kubeletScenarios } from './e2e/scenarios.js';

// The runtime runs beside the kubelet, not inside it, so the kubelet can be restarted under it.
const dir = mkdtempSync(join(tmpdir(), 'kubelet-e2e-local-'));
const local = new LocalRuntime({ socketPath: join(dir, 'runtime.sock'), rootDir: join(dir, 'runtime'), mode: 'process' });
await local.start();
t.teardown(async () => {
  await local.stop();
  rmSync(dir, { recursive: true, force: true });
});

kubeletScenarios(t, { name: 'local-runtime', endpoint: local.endpoint, busyboxImage: 'localhost/kubelet-ts/busybox:1', scratchRoot: dir });
