import t from 'tap';
import { NotFoundError } from '@kubelet-ts/cri-client';
import { imageIdFor, normalizeImageName } from '../src/index.js';
import { startRuntime } from './helpers.js';

t.test('normalizeImageName follows the docker reference rules', async (t) => {
  const cases: [string, string][] = [
    ['busybox', 'docker.io/library/busybox:latest'],
    ['busybox:1.36', 'docker.io/library/busybox:1.36'],
    ['library/busybox', 'docker.io/library/busybox:latest'],
    ['docker.io/busybox', 'docker.io/library/busybox:latest'],
    ['index.docker.io/library/busybox:1', 'docker.io/library/busybox:1'],
    ['foo/bar', 'docker.io/foo/bar:latest'],
    ['registry.k8s.io/pause:3.9', 'registry.k8s.io/pause:3.9'],
    ['localhost/x', 'localhost/x:latest'],
    ['localhost:5000/x/y:2', 'localhost:5000/x/y:2'],
    [`busybox@sha256:${'a'.repeat(64)}`, `docker.io/library/busybox@sha256:${'a'.repeat(64)}`],
  ];
  for (const [input, want] of cases) t.equal(normalizeImageName(input), want, input);
  t.throws(() => normalizeImageName(''), /empty/);
  t.throws(() => normalizeImageName('docker.io/Foo'), /invalid reference/);
  t.match(imageIdFor('docker.io/library/busybox:latest'), /^sha256:[0-9a-f]{64}$/);
});

t.test('pull, status, list, remove', async (t) => {
  const h = await startRuntime(t);
  t.equal((await h.is.imageStatus({ image: 'busybox' })).image, null, 'absent image has null status');
  const ref = await h.is.pullImage({ image: 'busybox' });
  t.equal(ref, imageIdFor('docker.io/library/busybox:latest'));
  t.equal(await h.is.pullImage({ image: 'docker.io/library/busybox:latest' }), ref, 'same image, same id');
  const { image } = await h.is.imageStatus({ image: 'busybox:latest' });
  t.equal(image?.id, ref);
  t.same(image?.repoTags, ['docker.io/library/busybox:latest']);
  t.match(image?.repoDigests[0], /^docker\.io\/library\/busybox@sha256:[0-9a-f]{64}$/);
  t.ok(Number(image?.size) > 1_000_000, 'plausible size');
  t.equal((await h.is.imageStatus({ image: ref })).image?.id, ref, 'found by id');
  t.equal((await h.is.imageStatus({ image: image!.repoDigests[0] })).image?.id, ref, 'found by digest');

  await h.is.pullImage({ image: 'registry.k8s.io/pause:3.9' });
  t.same((await h.is.listImages()).map((i) => i.repoTags[0]).sort(), ['docker.io/library/busybox:latest', 'registry.k8s.io/pause:3.9']);
  t.same((await h.is.listImages({ image: { image: 'busybox' } })).map((i) => i.id), [ref]);

  await h.is.removeImage({ image: 'busybox' });
  await h.is.removeImage({ image: 'busybox' });
  t.equal((await h.is.imageStatus({ image: 'busybox' })).image, null);
  t.equal((await h.is.listImages()).length, 1);

  const fs = await h.is.imageFsInfo();
  t.equal(fs.imageFilesystems.length, 1);
  t.ok(Number(fs.imageFilesystems[0].usedBytes?.value) > 0, 'statfs usage');
  t.match(fs.imageFilesystems[0].fsId?.mountpoint, /root$/);

  // Containers report the image id of their image.
  const ref2 = await h.is.pullImage({ image: 'busybox' });
  const sandboxId = await h.rs.runPodSandbox({ metadata: { name: 'p', namespace: 'n', uid: 'u', attempt: 0 } });
  const id = await h.rs.createContainer(sandboxId, { metadata: { name: 'c' }, image: { image: 'busybox' }, command: ['true'] }, {});
  const [container] = await h.rs.listContainers({ id });
  t.equal(container.imageRef, ref2);
});

t.test('unpullable images fail like a registry without them', async (t) => {
  const h = await startRuntime(t, { unpullableImages: ['example.com/private/app:1'] });
  const error = await h.is.pullImage({ image: 'example.com/private/app:1' }).catch((e: unknown) => e);
  t.type(error, NotFoundError);
  t.match((error as Error).message, /failed to pull and unpack image "example\.com\/private\/app:1".*not found/);
  await t.rejects(h.is.pullImage({ image: 'doesnotexist' }), {
    code: 'NotFound',
    message: /failed to pull and unpack image "docker\.io\/library\/doesnotexist:latest"/,
  });
  await t.rejects(h.is.pullImage({ image: '' }), { code: 'InvalidArgument' });
  t.same(await h.is.listImages(), []);
});

t.test('the image list survives a restart (process mode)', async (t) => {
  const h = await startRuntime(t);
  await h.is.pullImage({ image: 'alpine:3' });
  h.rs.close();
  h.is.close();
  await h.runtime.stop();
  const { LocalRuntime } = await import('../src/index.js');
  const again = new LocalRuntime({ socketPath: `${h.dir}/cri2.sock`, rootDir: `${h.dir}/root`, mode: 'process' });
  await again.start();
  t.teardown(() => again.stop());
  const { RemoteImageService } = await import('@kubelet-ts/cri-client');
  const is = new RemoteImageService({ endpoint: again.endpoint });
  t.teardown(() => is.close());
  t.same((await is.listImages()).map((i) => i.repoTags[0]), ['docker.io/library/alpine:3']);
});
