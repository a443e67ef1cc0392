import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalRuntime } from '@kubelet-ts/local-runtime';
import { apiServerScenarios } from './e2e/apiserver-scenarios.js';

const dir = mkdtempSync(join(tmpdir(), 'kubelet-e2e-api-local-'));
const local = new LocalRuntime({ socketPath: join(dir, 'runtime.sock'), rootDir: join(dir, 'runtime'), mode: 'process' });
await local.start();
t.teardown(async () => {
  await local.stop();
  rmSync(dir, { recursive: true, force: true });
});

// The real control plane (tools/cluster-e2e) proves API server mode on containerd. This stand-in run stays for what
// only a stand-in can stage: pods bound and deleted while the API server is unreachable to the kubelet, during a 60 s
// outage (longer than the lease), on the embedded runtime.
apiServerScenarios(t, { name: 'local-runtime', endpoint: local.endpoint, busyboxImage: 'localhost/kubelet-ts/busybox:1', scratchRoot: dir }, {
  outageSeconds: Number(process.env.KUBELET_E2E_OUTAGE_SECONDS ?? 60),
});
