// Exec probes through a real containerd (started by the test command; a missing containerd fails).
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RemoteRuntimeService } from '@kubelet-ts/cri-client';
import { readContainerdEnv } from '@kubelet-ts/cri-conformance';
import { execSuite } from './exec-suite.js';

const env = readContainerdEnv();
const runtime = new RemoteRuntimeService({ endpoint: env.endpoint, timeoutMs: 30_000 });
// containerd runs as root and writes the logs itself; keep them under its temp root.
const logRoot = mkdtempSync(join(env.root, 'prober-logs-'));
t.teardown(() => {
  runtime.close();
  rmSync(logRoot, { recursive: true, force: true });
});

execSuite(t, { name: 'containerd', runtime, image: env.busyboxImage, logRoot, idType: 'containerd' });
