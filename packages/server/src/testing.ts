// Test doubles for code that serves or calls the kubelet's server without a kubelet behind it.
import type { Writable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import type { LogOptions } from '@kubelet-ts/container-logs';
import type { HealthzCheck } from './healthz.js';
import { HostNotFoundError, type RequestGate, type ServerHost } from './server.js';
import type { StreamOptions } from './streaming.js';

/** One call a FakeServerHost received, in order. */
export type FakeServerHostCall =
  | { method: 'getContainerLogs'; pod: string; container: string; options: LogOptions }
  | { method: 'getExec'; pod: string; container: string; cmd: string[]; streams: StreamOptions }
  | { method: 'getAttach'; pod: string; container: string; streams: StreamOptions }
  | { method: 'getPortForward'; pod: string; ports: number[] }
  | { method: 'runInContainer'; pod: string; container: string; cmd: string[] };

/**
 * A ServerHost backed by plain fields: the pods, each container's log text, the output of commands and the URL the
 * streaming calls hand back. Every call is recorded in `calls`. A container its pod does not have is a
 * HostNotFoundError (the server's 404), as the kubelet answers.
 */
export class FakeServerHost implements ServerHost {
  readonly calls: FakeServerHostCall[] = [];
  healthChecks: HealthzCheck[] = [];
  pods: V1Pod[] = [];
  runningPods: object[] = [];
  /** Log text by `namespace/pod/container`; written whole, whatever the options (they are recorded). */
  readonly logs = new Map<string, string>();
  configz: unknown = {};
  machineInfo: unknown = {};
  /** What `/stats/summary` serves; without it the route answers as a kubelet without stats does. */
  statsSummary?: unknown;
  /** The URL of the runtime's streaming server for exec, attach and port-forward; without it they fail. */
  streamingUrl?: string;
  /** The output of `/run` for a command; empty by default. */
  commandOutput: (cmd: string[]) => string = () => '';

  getPods(): object[] {
    return this.pods;
  }

  async getRunningPods(): Promise<object[]> {
    return this.runningPods;
  }

  getPodByName(namespace: string, name: string): V1Pod | undefined {
    return this.pods.find((p) => (p.metadata?.namespace ?? 'default') === namespace && p.metadata?.name === name);
  }

  getConfigz(): unknown {
    return this.configz;
  }

  async getMachineInfo(): Promise<unknown> {
    return this.machineInfo;
  }

  async getContainerLogs(pod: V1Pod, containerName: string, options: LogOptions, out: Writable): Promise<void> {
    const key = this.containerKey(pod, containerName);
    this.calls.push({ method: 'getContainerLogs', pod: podKey(pod), container: containerName, options });
    out.write(this.logs.get(key) ?? '');
  }

  async getExec(pod: V1Pod, _podUid: string, containerName: string, cmd: string[], streams: StreamOptions): Promise<string> {
    this.containerKey(pod, containerName);
    this.calls.push({ method: 'getExec', pod: podKey(pod), container: containerName, cmd, streams });
    return this.streaming();
  }

  async getAttach(pod: V1Pod, _podUid: string, containerName: string, streams: StreamOptions): Promise<string> {
    this.containerKey(pod, containerName);
    this.calls.push({ method: 'getAttach', pod: podKey(pod), container: containerName, streams });
    return this.streaming();
  }

  async getPortForward(pod: V1Pod, _podUid: string, ports: number[]): Promise<string> {
    this.calls.push({ method: 'getPortForward', pod: podKey(pod), ports });
    return this.streaming();
  }

  async runInContainer(pod: V1Pod, _podUid: string, containerName: string, cmd: string[]): Promise<Buffer> {
    this.containerKey(pod, containerName);
    this.calls.push({ method: 'runInContainer', pod: podKey(pod), container: containerName, cmd });
    return Buffer.from(this.commandOutput(cmd));
  }

  async getStatsSummary(): Promise<unknown> {
    if (this.statsSummary === undefined) throw new Error('FakeServerHost has no stats summary');
    return this.statsSummary;
  }

  private containerKey(pod: V1Pod, containerName: string): string {
    const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? []), ...(pod.spec?.ephemeralContainers ?? [])];
    if (!all.some((c) => c.name === containerName)) {
      throw new HostNotFoundError(`container ${containerName} is not valid for pod ${pod.metadata?.name ?? ''}`);
    }
    return `${podKey(pod)}/${containerName}`;
  }

  private streaming(): string {
    if (this.streamingUrl === undefined) throw new Error('FakeServerHost has no streaming server (set streamingUrl)');
    return this.streamingUrl;
  }
}

function podKey(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
}

/** A RequestGate that lets every request through (Go: AlwaysAllow with anonymous authentication). */
export const allowAllGate: RequestGate = { checkRequest: async () => true };
