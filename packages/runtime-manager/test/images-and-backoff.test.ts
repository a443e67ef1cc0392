import t from 'tap';
import type { V1Secret } from '@kubernetes/client-node';
import { applyDefaultImageTag, authsForImage, defaultPullPolicy, registryOf, shouldPullImage } from '../src/index.js';
import { makePod, setup } from './helpers.js';

const imageCalls = (images: { called: string[] }) => images.called.filter((m) => m === 'imageStatus' || m === 'pullImage');

t.test('Always pulls even when the image is present (after checking its status)', async (t) => {
  const { manager, images, backoff, recorder } = setup();
  const pod = makePod({ containers: [{ name: 'app', image: 'busybox:1.36', imagePullPolicy: 'Always' }] });
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.same(imageCalls(images), ['imageStatus', 'pullImage', 'imageStatus']);
  t.same(
    recorder.events.filter((e) => e.reason === 'Pulling' || e.reason === 'Pulled').map((e) => e.message),
    ['Pulling image "busybox:1.36"', 'Successfully pulled image "busybox:1.36" in 0s (0s including waiting). Image size: 1048576 bytes.'],
  );
});

t.test('IfNotPresent checks ImageStatus and does not pull a present image', async (t) => {
  const { manager, images, backoff, recorder } = setup();
  await manager.syncPod(makePod(), await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.same(imageCalls(images), ['imageStatus']);
  t.ok(recorder.events.some((e) => e.reason === 'Pulled' && e.message === 'Container image "busybox:1.36" already present on machine'));
});

t.test('IfNotPresent pulls an absent image', async (t) => {
  const { manager, images, runtime, backoff } = setup();
  const pod = makePod({ containers: [{ name: 'app', image: 'nginx:1.27', imagePullPolicy: 'IfNotPresent' }] });
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.same(imageCalls(images), ['imageStatus', 'pullImage', 'imageStatus']);
  const pull = images.calls.find((c) => c.method === 'pullImage')!;
  t.match(pull.args[0], { image: 'nginx:1.27', userSpecifiedImage: 'nginx:1.27' });
  t.ok(runtime.called.includes('startContainer'));
});

t.test('Never with an absent image fails with ErrImageNeverPull and never pulls', async (t) => {
  const { manager, images, backoff, recorder } = setup();
  const pod = makePod({ containers: [{ name: 'app', image: 'nginx:1.27', imagePullPolicy: 'Never' }] });
  const result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  const start = result.syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start.error, 'ErrImageNeverPull');
  t.equal(start.message, 'Container image "nginx:1.27" is not present with pull policy of Never');
  t.notOk(images.called.includes('pullImage'));
  t.ok(recorder.events.some((e) => e.type === 'Warning' && e.reason === 'ErrImageNeverPull'));
});

t.test('Never with a present image starts', async (t) => {
  const { manager, runtime, backoff } = setup();
  const pod = makePod({ containers: [{ name: 'app', imagePullPolicy: 'Never' }] });
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.ok(runtime.called.includes('startContainer'));
});

t.test('a failed pull is ErrImagePull, then ImagePullBackOff while backing off, 10 s then 20 s', async (t) => {
  const { manager, images, clock, backoff, recorder } = setup();
  images.unpullable.add('ghost:1');
  const pod = makePod({ containers: [{ name: 'app', image: 'ghost:1', imagePullPolicy: 'IfNotPresent' }] });
  const sync = async () => (await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff)).syncResults.find((r) => r.action === 'StartContainer')!;

  let start = await sync();
  t.equal(start.error, 'ErrImagePull');
  t.match(start.message, /rpc error: code = NotFound desc = failed to pull and unpack image "ghost:1": not found/);
  t.ok(recorder.events.some((e) => e.type === 'Warning' && e.reason === 'Failed' && e.message.startsWith('Failed to pull image "ghost:1"')));

  clock.step(5_000);
  start = await sync();
  t.equal(start.error, 'ImagePullBackOff');
  t.equal(start.message, 'Back-off pulling image "ghost:1"');
  t.equal(images.called.filter((m) => m === 'pullImage').length, 1, 'no pull while backing off');

  clock.step(5_001);
  start = await sync();
  t.equal(start.error, 'ErrImagePull', 'pulls again after 10 s');
  clock.step(15_000);
  start = await sync();
  t.equal(start.error, 'ImagePullBackOff', 'the second backoff is 20 s');
  clock.step(5_001);
  images.unpullable.delete('ghost:1');
  start = await sync();
  t.equal(start.error, undefined, 'pull succeeds once the registry has it');
  t.equal(images.called.filter((m) => m === 'pullImage').length, 3);
});

t.test('pull secrets become auth for the matching registry', async (t) => {
  const { manager, images, backoff } = setup();
  const dockerconfig = { auths: { 'registry.example.com': { auth: Buffer.from('user:pass').toString('base64') }, 'other.io': { username: 'x', password: 'y' } } };
  const secret: V1Secret = { type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': Buffer.from(JSON.stringify(dockerconfig)).toString('base64') } };
  const pod = makePod({ containers: [{ name: 'app', image: 'registry.example.com/team/app:2', imagePullPolicy: 'Always' }] });
  await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [secret], backoff);
  const pull = images.calls.find((c) => c.method === 'pullImage')!;
  t.match(pull.args[1], { username: 'user', password: 'pass', serverAddress: 'registry.example.com' });
  t.same(authsForImage('busybox:1', [secret]), [], 'docker.io has no credentials here');
});

t.test('an invalid image name is InvalidImageName', async (t) => {
  const { manager, backoff } = setup();
  const pod = makePod({ containers: [{ name: 'app', image: 'Not_Valid::x' }] });
  const result = await manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  t.equal(result.syncResults.find((r) => r.action === 'StartContainer')?.error, 'InvalidImageName');
});

t.test('image reference helpers', async (t) => {
  t.equal(applyDefaultImageTag('busybox'), 'busybox:latest');
  t.equal(applyDefaultImageTag('localhost:5000/team/app'), 'localhost:5000/team/app:latest');
  t.equal(applyDefaultImageTag('busybox:1.36'), 'busybox:1.36');
  t.equal(applyDefaultImageTag(`busybox@sha256:${'a'.repeat(64)}`), `busybox@sha256:${'a'.repeat(64)}`);
  t.throws(() => applyDefaultImageTag('UPPER/case'));
  t.equal(defaultPullPolicy('busybox'), 'Always');
  t.equal(defaultPullPolicy('busybox:latest'), 'Always');
  t.equal(defaultPullPolicy('busybox:1.36'), 'IfNotPresent');
  t.equal(defaultPullPolicy('localhost:5000/app'), 'Always');
  t.equal(registryOf('busybox'), 'docker.io');
  t.equal(registryOf('library/busybox'), 'docker.io');
  t.equal(registryOf('quay.io/x/y'), 'quay.io');
  t.equal(registryOf('localhost:5000/x'), 'localhost:5000');
  t.equal(shouldPullImage('Always', true), true);
  t.equal(shouldPullImage('IfNotPresent', true), false);
  t.equal(shouldPullImage('IfNotPresent', false), true);
  t.equal(shouldPullImage('Never', false), false);
});

t.test('CrashLoopBackOff grows 10s, 20s, 40s, 1m20s ... capped at 5m0s', async (t) => {
  const { manager, runtime, clock, backoff, recorder } = setup();
  const pod = makePod();
  const id = (n: number) => `app_web_default_uid-1_0_${n}`;
  const sync = async () => manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);

  await sync();
  const waits = [10, 20, 40, 80, 160, 300, 300];
  for (let restart = 0; restart < waits.length; restart++) {
    runtime.setContainerState(id(restart), 'CONTAINER_EXITED', 1);
    // the first restart after a crash goes ahead at once and arms the backoff
    let result = await sync();
    if (restart === 0) {
      t.equal(result.syncResults.find((r) => r.action === 'StartContainer')?.error, undefined, 'first crash restarts at once');
      continue;
    }
    const start = result.syncResults.find((r) => r.action === 'StartContainer')!;
    t.equal(start.error, 'CrashLoopBackOff', `restart ${restart} backs off`);
    const wait = waits[restart - 1];
    const text = wait >= 60 ? `${Math.floor(wait / 60)}m${wait % 60}s` : `${wait}s`;
    t.equal(start.message, `back-off ${text} restarting failed container=app pod=web_default(uid-1)`);
    clock.step(wait * 1000 - 1);
    result = await sync();
    t.equal(result.syncResults.find((r) => r.action === 'StartContainer')?.error, 'CrashLoopBackOff', 'still backing off 1 ms before');
    clock.step(1);
    result = await sync();
    t.equal(result.syncResults.find((r) => r.action === 'StartContainer')?.error, undefined, `restarted after ${text}`);
  }
  t.ok(recorder.events.some((e) => e.type === 'Warning' && e.reason === 'BackOff' && e.message === 'Back-off restarting failed container app in pod web_default(uid-1)'));
  const status = await manager.getPodStatus('uid-1', 'web', 'default');
  t.equal(status.containerStatuses[0].restartCount, waits.length, 'restart count follows the annotation');
});

t.test('CrashLoopBackOff resets after the container ran 10 minutes', async (t) => {
  const { manager, runtime, clock, backoff } = setup();
  const pod = makePod();
  const sync = async () => manager.syncPod(pod, await manager.getPodStatus('uid-1', 'web', 'default'), [], backoff);
  await sync();
  runtime.setContainerState('app_web_default_uid-1_0_0', 'CONTAINER_EXITED', 1);
  await sync(); // restart 1, backoff armed at 10 s
  runtime.setContainerState('app_web_default_uid-1_0_1', 'CONTAINER_EXITED', 1);
  let start = (await sync()).syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start.error, 'CrashLoopBackOff');
  clock.step(10_000);
  await sync(); // restart 2, backoff now 20 s
  clock.step(11 * 60_000); // runs 11 minutes
  runtime.setContainerState('app_web_default_uid-1_0_2', 'CONTAINER_EXITED', 1);
  start = (await sync()).syncResults.find((r) => r.action === 'StartContainer')!;
  t.equal(start.error, undefined, 'after 10 minutes of running the next crash restarts at once');
  runtime.setContainerState('app_web_default_uid-1_0_3', 'CONTAINER_EXITED', 1);
  start = (await sync()).syncResults.find((r) => r.action === 'StartContainer')!;
  t.match(start.message, /^back-off 10s /, 'and the backoff starts again from 10 s');
});
