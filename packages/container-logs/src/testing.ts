/**
 * Test helpers: a fake of the runtime calls container-logs makes, and a CRI log writer.
 */
import { appendFile, writeFile } from 'node:fs/promises';
import { formatCriLogLine, runtimeapi, type CallOptions, type LogStream, type LogTag } from '@kubelet-ts/cri-client';
import type { LogManagerRuntime } from './log-manager.js';

export interface FakeLogContainer {
  id: string;
  logPath: string;
  running: boolean;
}

export interface FakeLogRuntimeCall {
  method: 'listContainers' | 'containerStatus' | 'reopenContainerLog';
  containerId?: string;
}

/**
 * Implements listContainers, containerStatus and reopenContainerLog over a map of containers. Like
 * a CRI runtime, reopenContainerLog creates a fresh, empty file at the container's log path (unless
 * one exists). Set `reopenError` (or `failReopen(id)`) to make reopen fail, `statusError` to make
 * containerStatus fail.
 */
export class FakeLogRuntime implements LogManagerRuntime {
  readonly containers = new Map<string, FakeLogContainer>();
  readonly calls: FakeLogRuntimeCall[] = [];
  /** Thrown by every reopenContainerLog while set. */
  reopenError: Error | undefined;
  /** Thrown by every containerStatus while set. */
  statusError: Error | undefined;
  private readonly reopenFailures = new Set<string>();

  addContainer(id: string, logPath: string, running = true): FakeLogContainer {
    const container = { id, logPath, running };
    this.containers.set(id, container);
    return container;
  }

  setRunning(id: string, running: boolean): void {
    this.get(id).running = running;
  }

  /** Makes reopenContainerLog fail for this container only. */
  failReopen(id: string, fail = true): void {
    if (fail) this.reopenFailures.add(id);
    else this.reopenFailures.delete(id);
  }

  /** How often a method was called (for one container when given). */
  callCount(method: FakeLogRuntimeCall['method'], containerId?: string): number {
    return this.calls.filter((c) => c.method === method && (containerId === undefined || c.containerId === containerId)).length;
  }

  async listContainers(_filter?: runtimeapi.ContainerFilterInit, _options?: CallOptions): Promise<runtimeapi.Container[]> {
    this.calls.push({ method: 'listContainers' });
    return [...this.containers.values()].map((c) => ({
      id: c.id,
      podSandboxId: '',
      metadata: { name: c.id, attempt: 0 },
      image: null,
      imageRef: '',
      state: this.state(c),
      createdAt: 0,
      labels: {},
      annotations: {},
      imageId: '',
    }));
  }

  async containerStatus(containerId: string, _verbose?: boolean, _options?: CallOptions): Promise<runtimeapi.ContainerStatusResponse> {
    this.calls.push({ method: 'containerStatus', containerId });
    if (this.statusError) throw this.statusError;
    const c = this.get(containerId);
    return {
      status: {
        id: c.id,
        metadata: { name: c.id, attempt: 0 },
        state: this.state(c),
        createdAt: 0,
        startedAt: 0,
        finishedAt: 0,
        exitCode: 0,
        image: null,
        imageRef: '',
        reason: '',
        message: '',
        labels: {},
        annotations: {},
        mounts: [],
        logPath: c.logPath,
        resources: null,
        imageId: '',
        user: null,
        imageSource: '',
      },
      info: {},
    };
  }

  async reopenContainerLog(containerId: string, _options?: CallOptions): Promise<void> {
    this.calls.push({ method: 'reopenContainerLog', containerId });
    const c = this.get(containerId);
    if (this.reopenError) throw this.reopenError;
    if (this.reopenFailures.has(containerId)) throw new Error(`reopen of container ${containerId} failed`);
    if (!c.running) throw new Error(`container ${containerId} is not running`);
    // 'a' creates the file if missing and leaves an existing one alone, as a runtime's O_APPEND|O_CREATE.
    await writeFile(c.logPath, '', { flag: 'a' });
  }

  private get(id: string): FakeLogContainer {
    const c = this.containers.get(id);
    if (!c) throw Object.assign(new Error(`container "${id}" not found`), { code: 'NOT_FOUND' });
    return c;
  }

  private state(c: FakeLogContainer): runtimeapi.ContainerState {
    return c.running ? runtimeapi.ContainerState.CONTAINER_RUNNING : runtimeapi.ContainerState.CONTAINER_EXITED;
  }
}

export interface CriLogLineInit {
  /** ms since the epoch. */
  time: number;
  stream?: LogStream;
  tag?: LogTag;
  text: string;
}

/** The CRI log records, one line each, as a runtime writes them. */
export function criLogLines(lines: readonly CriLogLineInit[]): string {
  return lines.map((l) => formatCriLogLine(l.time, l.stream ?? 'stdout', l.tag ?? 'F', l.text)).join('');
}

/** Appends CRI log records to a file (creating it), as a runtime does. */
export async function appendCriLog(path: string, lines: readonly CriLogLineInit[]): Promise<void> {
  await appendFile(path, criLogLines(lines));
}
