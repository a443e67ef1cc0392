import { setTimeout as sleep } from 'node:timers/promises';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { readContainerdEnv } from '@kubelet-ts/cri-conformance';
import { CriChaosProxy } from '../cri-proxy.js';
import { containerdPid, containerdTool } from '../node.js';
import type { FaultReport, Scenario, ScenarioContext, ScenarioSettings } from '../scenario.js';


/**
 * Scenario 2: containerd SIGKILLed mid-churn (its shims and containers live on, as with a crashed daemon) and
 * started again after a few seconds; then containerd slowed down and made flaky through a proxy on the CRI socket
 * (the kubelet talks to containerd only through it): every call delayed 200-500 ms, then one in five dropped with
 * UNAVAILABLE, then the calls hung for a while, as a wedged runtime does. Each for `faultMs`.
 */
export class ContainerdFaults implements Scenario {
  readonly name = 'containerd-faults';
  private proxy?: CriChaosProxy;

  nodeOptions() {
    return { runtimeEndpoint: this.proxy!.endpoint };
  }

  async setup(_settings: ScenarioSettings): Promise<void> {
    const containerd = readContainerdEnv();
    const socketPath = join(containerd.root, 'chaos-cri-proxy.sock');
    rmSync(socketPath, { force: true });
    this.proxy = await CriChaosProxy.start({ socketPath, upstream: containerd.endpoint });
  }

  async teardown(): Promise<void> {
    this.proxy?.setFault(undefined);
    await this.proxy?.close();
  }

  async inject(context: ScenarioContext): Promise<FaultReport> {
    const { node, settings } = context;
    const proxy = this.proxy!;
    const recoveriesMs: number[] = [];
    const figures: string[] = [];
    for (let i = 0; i < settings.iterations; i++) {
      await sleep(2000 + context.random() * 8000);
      const pid = containerdPid(node.containerd);
      if (pid === undefined) throw new Error('containerd is not running (no live pid in its pid file)');
      process.kill(pid, 'SIGKILL');
      settings.log(`containerd-faults: SIGKILL containerd (pid ${pid})`);
      await sleep(3000 + context.random() * 4000);
      // restart.sh starts the daemon alone (start.sh would also check packages and images: a minute and more).
      await containerdTool('restart.sh');
      recoveriesMs.push(await context.recovered(Date.now()));

      const phases: Array<[string, Parameters<CriChaosProxy['setFault']>[0]]> = [
        ['slow (200-500 ms per call)', { delayMs: 200, jitterMs: 300 }],
        ['flaky (20% of calls dropped)', { dropRate: 0.2 }],
        ['hung (calls held until the hang ends)', { hang: true }],
      ];
      for (const [what, fault] of phases) {
        proxy.resetStats();
        proxy.setFault(fault);
        settings.log(`containerd-faults: ${what} for ${settings.faultMs / 1000} s`);
        await sleep(what.startsWith('hung') ? Math.min(settings.faultMs, 20_000) : settings.faultMs);
        proxy.setFault(undefined);
        const stats = proxy.stats();
        const endedAt = Date.now();
        recoveriesMs.push(await context.recovered(endedAt));
        figures.push(`${what}: ${stats.calls} calls, ${stats.delayed} delayed, ${stats.dropped} dropped, ${stats.hung} hung`);
      }
    }
    return { faults: `${settings.iterations} x (containerd SIGKILL + slow + flaky + hung CRI)`, recoveriesMs, figures };
  }
}
