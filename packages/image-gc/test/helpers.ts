import { FakeClock, RecordingEventRecorder, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { RealImageGCManager, type ImageGCPolicy, type RealImageGCManagerOptions, type RemovedImage } from '../src/index.js';
import { FakeImageFsStatsProvider } from '../src/testing.js';

export const MiB = 1024 * 1024;
export const MINUTE = 60_000;

export interface Env {
  clock: FakeClock;
  images: FakeImageService;
  runtime: FakeRuntimeService;
  stats: FakeImageFsStatsProvider;
  logger: RecordingLogger;
  recorder: RecordingEventRecorder;
  removed: RemovedImage[];
  manager: RealImageGCManager;
}

export function setup(policy: Partial<ImageGCPolicy> = {}, extra: Partial<RealImageGCManagerOptions> = {}): Env {
  const clock = new FakeClock();
  const images = new FakeImageService(clock);
  const runtime = new FakeRuntimeService(clock);
  const stats = new FakeImageFsStatsProvider();
  const logger = new RecordingLogger();
  const recorder = new RecordingEventRecorder();
  const removed: RemovedImage[] = [];
  const manager = new RealImageGCManager({
    imageService: images,
    runtimeService: runtime,
    policy,
    statsProvider: stats,
    clock,
    logger,
    recorder,
    nodeRef: { kind: 'Node', name: 'node-a', uid: 'node-a' },
    onImageRemoved: (image) => removed.push(image),
    ...extra,
  });
  return { clock, images, runtime, stats, logger, recorder, removed, manager };
}

let seq = 0;
/** Runs a pod with one container using `image`; `state` decides whether it keeps running. */
export async function runContainer(
  runtime: FakeRuntimeService,
  image: string,
  state: 'running' | 'exited' | 'created' = 'running',
): Promise<string> {
  const n = seq++;
  const sandboxConfig = { metadata: { name: `pod-${n}`, namespace: 'default', uid: `uid-${n}`, attempt: 0 } };
  const sandboxId = await runtime.runPodSandbox(sandboxConfig);
  const id = await runtime.createContainer(sandboxId, { metadata: { name: 'c', attempt: 0 }, image: { image } }, sandboxConfig);
  if (state !== 'created') await runtime.startContainer(id);
  if (state === 'exited') await runtime.stopContainer(id, 0);
  return id;
}

export function ids(removed: RemovedImage[]): string[] {
  return removed.map((r) => r.id);
}
