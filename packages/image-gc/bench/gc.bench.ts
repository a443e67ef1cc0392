// Image GC decision cost: `npm run bench -w @kubelet-ts/image-gc`.
//
// 1,000 images, 10,000 exited containers using 500 of them. "stub" answers the CRI calls from
// prebuilt arrays (the decision alone: detection, in-use matching, eviction order, the freeing
// loop); "fakes" runs on FakeImageService/FakeRuntimeService (which clone every listed object).
import type { ImageService, RuntimeService, runtimeapi } from '@kubelet-ts/cri-client';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';
import { FakeClock } from '@kubelet-ts/core/testing';
import { RealImageGCManager } from '../src/index.js';
import { FakeImageFsStatsProvider } from '../src/testing.js';

const IMAGES = 1_000;
const USED = 500;
const CONTAINERS = 10_000;
const SIZE = 1_000_000;
const MINUTE = 60_000;

const imageList = (): runtimeapi.Image[] =>
  Array.from({ length: IMAGES }, (_, i) => ({
    id: `sha256:${i.toString(16).padStart(64, '0')}`, repoTags: [`registry.local/app-${i}:1`], repoDigests: [], size: SIZE,
    uid: null, username: '', spec: null, pinned: i % 100 === 0, imageSource: '',
  }));
const containerList = (images: runtimeapi.Image[]): runtimeapi.Container[] =>
  Array.from({ length: CONTAINERS }, (_, i) => {
    const image = images[i % USED];
    return {
      id: `c-${i}`, podSandboxId: `sb-${i % 1000}`, metadata: { name: 'app', attempt: i }, image: { image: image.repoTags[0], annotations: {}, userSpecifiedImage: '', runtimeHandler: '' },
      imageRef: image.id, state: 'CONTAINER_EXITED', createdAt: i, labels: {}, annotations: {}, imageId: image.id,
    };
  });

/** Answers from arrays: what is left is image GC's own work. */
function stubs(): { imageService: ImageService; runtimeService: RuntimeService; removed: () => number } {
  const images = new Map(imageList().map((i) => [i.id, i]));
  const containers = containerList([...images.values()]);
  let removed = 0;
  const imageService = {
    listImages: async () => [...images.values()],
    imageStatus: async () => ({ image: null, info: {} }),
    removeImage: async (spec: runtimeapi.ImageSpecInit) => {
      images.delete(spec.image!);
      removed++;
    },
  } as unknown as ImageService;
  const runtimeService = { listContainers: async () => containers } as unknown as RuntimeService;
  return { imageService, runtimeService, removed: () => removed };
}

function fakes(clock: FakeClock): { imageService: ImageService; runtimeService: RuntimeService; removed: () => number } {
  const images = new FakeImageService(clock);
  const list = imageList();
  for (const image of list) images.images.set(image.id, image);
  const runtime = new FakeRuntimeService(clock);
  runtime.sandboxes.set('sb', { runtimeHandler: '', status: { id: 'sb', metadata: null, state: 'SANDBOX_READY', createdAt: 0, network: null, linux: null, labels: {}, annotations: {}, runtimeHandler: '' } });
  for (const c of containerList(list)) {
    runtime.containers.set(c.id, { sandboxId: 'sb', config: {}, status: { id: c.id, metadata: c.metadata, state: c.state, createdAt: c.createdAt, startedAt: 0, finishedAt: 0, exitCode: 0, image: c.image, imageRef: c.imageRef, reason: '', message: '', labels: {}, annotations: {}, mounts: [], logPath: '', resources: null, imageId: c.imageId, user: null, imageSource: '' } });
  }
  return { imageService: images, runtimeService: runtime, removed: () => IMAGES - images.images.size };
}

async function measure(kind: 'stub' | 'fakes'): Promise<{ detectMs: number; gcMs: number; removed: number }> {
  const clock = new FakeClock();
  const services = kind === 'stub' ? stubs() : fakes(clock);
  const stats = new FakeImageFsStatsProvider();
  // 90% used, low threshold 80%: free 10% of capacity = 250 images' worth.
  stats.setUsage(2_500 * SIZE, 90);
  const manager = new RealImageGCManager({ ...services, statsProvider: stats, clock });
  let start = performance.now();
  await manager.detectImages();
  const detectMs = performance.now() - start;
  clock.step(5 * MINUTE);
  start = performance.now();
  await manager.garbageCollect();
  return { detectMs, gcMs: performance.now() - start, removed: services.removed() };
}

await measure('stub'); // warm-up
console.log(`Image GC over ${IMAGES} images (${USED} in use by ${CONTAINERS} exited containers, ${IMAGES / 100} pinned)`);
console.log(['services', 'detect ms', 'µs/item', 'GC ms', 'µs/item', 'removed'].map((s, i) => (i === 0 ? s.padEnd(10) : s.padStart(11))).join(''));
for (const kind of ['stub', 'fakes'] as const) {
  const runs = [await measure(kind), await measure(kind), await measure(kind)].sort((a, b) => a.gcMs - b.gcMs);
  const r = runs[1];
  const items = IMAGES + CONTAINERS;
  console.log(
    [kind.padEnd(10), r.detectMs.toFixed(1), ((r.detectMs * 1000) / items).toFixed(2), r.gcMs.toFixed(1), ((r.gcMs * 1000) / items).toFixed(2), String(r.removed)]
      .map((s, i) => (i === 0 ? s : s.padStart(11)))
      .join(''),
  );
}
console.log('µs/item: per image + container examined');
