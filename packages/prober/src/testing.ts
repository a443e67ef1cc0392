// Test doubles for @kubelet-ts/prober, published as `@kubelet-ts/prober/testing`.
import type { V1Container, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { ContainerProber, ProbeType } from './prober.js';
import { ResultsManager } from './results.js';

export { ResultsManager };
/** The recording EventRecorder, from `@kubelet-ts/core/testing`. */
export { RecordingEventRecorder, type RecordedEvent } from '@kubelet-ts/core/testing';

export interface FakeProbeCall {
  type: ProbeType;
  podUID: string;
  containerName: string;
  containerId: string;
}

/** What a fake probe answers. */
export type FakeAnswer = 'success' | 'failure';

/**
 * A ContainerProber whose answers tests set: by default every probe succeeds; `set(type, result)`
 * or `set(type, result, containerName)` changes the answer, `setSequence` queues answers (the
 * default applies once drained), and `calls` records every probe.
 */
export class FakeProber implements ContainerProber {
  readonly calls: FakeProbeCall[] = [];
  private readonly answers = new Map<string, FakeAnswer>();
  private readonly sequences = new Map<string, FakeAnswer[]>();
  defaultResult: FakeAnswer = 'success';

  set(type: ProbeType, result: FakeAnswer, containerName = '*'): void {
    this.answers.set(`${type}/${containerName}`, result);
  }

  setSequence(type: ProbeType, results: FakeAnswer[], containerName = '*'): void {
    this.sequences.set(`${type}/${containerName}`, [...results]);
  }

  count(type?: ProbeType, containerName?: string): number {
    return this.calls.filter((c) => (!type || c.type === type) && (!containerName || c.containerName === containerName)).length;
  }

  async probe(type: ProbeType, pod: V1Pod, _status: V1PodStatus, container: V1Container, containerId: string): Promise<FakeAnswer> {
    this.calls.push({ type, podUID: pod.metadata?.uid ?? '', containerName: container.name, containerId });
    for (const k of [`${type}/${container.name}`, `${type}/*`]) {
      const seq = this.sequences.get(k);
      if (seq && seq.length > 0) return seq.shift() as FakeAnswer;
    }
    return this.answers.get(`${type}/${container.name}`) ?? this.answers.get(`${type}/*`) ?? this.defaultResult;
  }
}

/** An exec runner answering from a function, for probers without a runtime. */
export class FakeExecRunner {
  readonly calls: Array<{ containerId: string; cmd: string[]; timeoutSeconds: number }> = [];
  constructor(
    private readonly answer: (containerId: string, cmd: string[], timeoutSeconds: number) => Promise<{ stdout: Buffer; stderr: Buffer; exitCode: number }> | { stdout: Buffer; stderr: Buffer; exitCode: number },
  ) {}

  async execSync(containerId: string, cmd: string[], timeoutSeconds: number): Promise<{ stdout: Buffer; stderr: Buffer; exitCode: number }> {
    this.calls.push({ containerId, cmd, timeoutSeconds });
    return this.answer(containerId, cmd, timeoutSeconds);
  }
}
