// Benchmark: API cost of one node status sync against the test API server through the real
// @kubernetes/client-node, in requests and bytes (request + response bodies) per sync:
//  - nothing changed (inside nodeStatusReportFrequency): GET only;
//  - a condition changed: GET + strategic merge PATCH of the status;
//  - nothing changed but nodeStatusReportFrequency passed: GET + heartbeat-only PATCH;
//  - one lease renewal.
// Figures only, no thresholds. Run: npm run bench -w @kubelet-ts/node-status
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { KubeConfig } from '@kubernetes/client-node';
import { FakeClock } from '@kubelet-ts/core/testing';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { startTestApiServer, type RequestRecord } from '@kubelet-ts/test-apiserver';
import { NodeLeaseController, NodeStatusManager } from '../src/index.js';
import { fakeMachineInfo } from '../src/testing.js';

const N = Number(process.env.SYNCS ?? 50);

interface Row {
  name: string;
  requests: number;
  requestBytes: number;
  responseBytes: number;
  ms: number;
}

function summarize(name: string, records: RequestRecord[], n: number, ms: number): Row {
  return {
    name,
    requests: records.length / n,
    requestBytes: records.reduce((s, r) => s + r.requestBytes, 0) / n,
    responseBytes: records.reduce((s, r) => s + r.responseBytes, 0) / n,
    ms: ms / n,
  };
}

/** Runs p to completion while moving fake time (registration sleeps 100 ms first). */
async function drive<T>(clock: FakeClock, p: Promise<T>): Promise<T> {
  let done = false;
  void p.finally(() => (done = true)).catch(() => undefined);
  while (!done) {
    await clock.advance(100);
    await new Promise((r) => setTimeout(r, 1));
  }
  return p;
}

async function main(): Promise<void> {
  // Fake time, 10 s per sync as in production, so heartbeats (whole seconds) move between syncs.
  const clock = new FakeClock();
  const server = await startTestApiServer({ bookmarkIntervalMs: 0 });
  const dir = await mkdtemp(join(tmpdir(), 'node-status-bench-'));
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(await server.writeKubeconfig(join(dir, 'kubeconfig')));
    const images = new FakeImageService();
    for (let i = 0; i < 30; i++) images.setImages({ id: `sha256:${i}`, tags: [`registry.example.com/app-${i}:v1`], size: 1_000_000 * (i + 1) });
    let memoryPressure = false;
    const common = {
      nodeName: 'bench-node',
      hostname: 'bench-node',
      clock,
      kubeClient: kc,
      runtimeService: new FakeRuntimeService(),
      imageService: images,
      machineInfo: fakeMachineInfo(),
      nodeIP: '10.0.0.5',
      interfaceAddresses: () => ['10.0.0.5'],
      pressure: { memory: () => memoryPressure },
    };
    const quiet = new NodeStatusManager({ ...common, nodeStatusReportFrequencyMs: 3_600_000 });
    await drive(clock, quiet.syncNodeStatus()); // registers and posts the first status

    const rows: Row[] = [];
    const measure = async (name: string, fn: (i: number) => Promise<void>, filter: (r: RequestRecord) => boolean): Promise<void> => {
      server.clearRequests();
      const start = performance.now();
      for (let i = 0; i < N; i++) {
        clock.setTime(clock.now() + 10_000);
        await fn(i);
      }
      rows.push(summarize(name, server.requests.filter(filter), N, performance.now() - start));
    };
    const nodes = (r: RequestRecord) => r.resource === 'nodes';

    await measure('sync, nothing changed', () => quiet.syncNodeStatus(), nodes);
    await measure(
      'sync, a condition changed',
      async () => {
        memoryPressure = !memoryPressure;
        await quiet.syncNodeStatus();
      },
      nodes,
    );
    memoryPressure = false;
    const reporting = new NodeStatusManager({ ...common, nodeStatusReportFrequencyMs: 0 });
    await drive(clock, reporting.syncNodeStatus());
    await measure('sync, report frequency passed', () => reporting.syncNodeStatus(), nodes);

    const lease = new NodeLeaseController({ nodeName: 'bench-node', kubeClient: kc, clock });
    await lease.sync();
    await measure('lease renewal', () => lease.sync(), (r) => r.resource === 'leases' || r.resource === 'nodes');
    await Promise.all([quiet.stop(), reporting.stop(), lease.stop()]);

    const base = rows[0];
    console.log(`node-status: API cost per operation (mean of ${N}), test API server + client-node`);
    console.log('operation                        requests  req bytes  resp bytes   ms/op   bytes vs unchanged sync');
    for (const r of rows) {
      const total = r.requestBytes + r.responseBytes;
      const baseTotal = base.requestBytes + base.responseBytes;
      console.log(
        `${r.name.padEnd(32)} ${r.requests.toFixed(2).padStart(8)} ${r.requestBytes.toFixed(0).padStart(10)} ${r.responseBytes.toFixed(0).padStart(11)} ${r.ms.toFixed(2).padStart(7)}   ${(total / baseTotal).toFixed(2)}x`,
      );
    }
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
