import t from 'tap';
import type { V1Container, V1Pod, V1PodSecurityContext } from '@kubernetes/client-node';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { podSyncError } from '@kubelet-ts/core';
import {
  appArmorProfileFor,
  containerSecurityContext,
  criAppArmorProfile,
  generatePodSandboxConfig,
  imageUser,
  verifyRunAsNonRoot,
} from '../src/index.js';
import { makePod, setup } from './helpers.js';

type CreateArgs = [string, runtimeapi.ContainerConfigInit, runtimeapi.PodSandboxConfigInit];

const where = '(pod: "web_default(uid-1)", container: app)';

/** A pod with one container `app` on busybox:1.36 with the given security contexts. */
function securePod(podSc: V1PodSecurityContext | undefined, containerSc?: V1Container['securityContext']): V1Pod {
  const pod = makePod({ containers: [{ name: 'app', securityContext: containerSc }] });
  pod.spec!.securityContext = podSc;
  return pod;
}

/** The fake's busybox image running as the given user. */
function setImageUser(images: { images: Map<string, runtimeapi.Image> }, user: { uid?: number; username?: string }): void {
  const image = images.images.get('sha256:busybox')!;
  image.uid = user.uid === undefined ? null : { value: user.uid };
  image.username = user.username ?? '';
}

async function syncOnce(env: ReturnType<typeof setup>, pod: V1Pod) {
  const status = await env.manager.getPodStatus('uid-1', 'web', 'default');
  return env.manager.syncPod(pod, status, [], env.backoff);
}

function createCalls(runtime: { calls: { method: string; args: unknown[] }[] }): CreateArgs[] {
  return runtime.calls.filter((c) => c.method === 'createContainer').map((c) => c.args as CreateArgs);
}

t.test('imageUser: the numeric uid, else the name, else root (Go: getImageUser)', async (t) => {
  t.same(imageUser({ uid: { value: 1000 }, username: '' } as runtimeapi.Image), { uid: 1000, username: '' });
  t.same(imageUser({ uid: { value: 0 }, username: 'ignored' } as runtimeapi.Image), { uid: 0, username: '' }, 'the uid wins over a name');
  t.same(imageUser({ uid: null, username: 'nginx' } as runtimeapi.Image), { username: 'nginx' });
  t.same(imageUser({ uid: null, username: '' } as runtimeapi.Image), { uid: 0, username: '' }, 'no user named: root');
  t.same(imageUser(null), { uid: 0, username: '' }, 'no image reported: root');
});

t.test('verifyRunAsNonRoot: Go v1.20 cases and messages', async (t) => {
  const pod = (podSc?: V1PodSecurityContext, sc?: V1Container['securityContext']) => securePod(podSc, sc);
  const app = (p: V1Pod) => p.spec!.containers[0];
  const check = (p: V1Pod, user: { uid?: number; username: string }) => verifyRunAsNonRoot(p, app(p), user);

  t.equal(check(pod(), { uid: 0, username: '' }), undefined, 'runAsNonRoot not set: root allowed');
  t.equal(check(pod({ runAsNonRoot: false }), { uid: 0, username: '' }), undefined, 'runAsNonRoot false: root allowed');

  // the image decides
  t.equal(check(pod({ runAsNonRoot: true }), { uid: 0, username: '' }), `container has runAsNonRoot and image will run as root ${where}`, 'pod-level, numeric root');
  t.equal(check(pod(undefined, { runAsNonRoot: true }), { uid: 0, username: '' }), `container has runAsNonRoot and image will run as root ${where}`, 'container-level, numeric root');
  t.equal(check(pod({ runAsNonRoot: true }), { uid: 1000, username: '' }), undefined, 'numeric non-root');
  t.equal(
    check(pod({ runAsNonRoot: true }), { username: 'nginx' }),
    `container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root ${where}`,
    'a named user cannot be verified',
  );
  t.match(check(pod({ runAsNonRoot: true }), { uid: 2147483648, username: '' }), /^container has runAsNonRoot and image has an invalid user id \(2147483648\)\. \(Must be 1-\(2147483647\)\): must be between 0 and 2147483647, inclusive \(pod: /);

  // the container's setting wins over the pod's
  t.equal(check(pod({ runAsNonRoot: true }, { runAsNonRoot: false }), { uid: 0, username: '' }), undefined, 'container false overrides pod true');
  t.equal(check(pod({ runAsNonRoot: false }, { runAsNonRoot: true }), { uid: 0, username: '' }), `container has runAsNonRoot and image will run as root ${where}`, 'container true overrides pod false');

  // runAsUser overrides the image, both ways
  t.equal(check(pod({ runAsNonRoot: true, runAsUser: 1000 }), { uid: 0, username: '' }), undefined, 'pod runAsUser 1000 over a root image');
  t.equal(check(pod({ runAsNonRoot: true }, { runAsUser: 1000 }), { username: 'nginx' }), undefined, 'container runAsUser over a named user');
  t.equal(check(pod({ runAsNonRoot: true }, { runAsUser: 0 }), { uid: 1000, username: '' }), `container's runAsUser breaks non-root policy ${where}`, 'runAsUser 0 over a non-root image');
  t.equal(check(pod({ runAsNonRoot: true, runAsUser: 0 }, { runAsUser: 1000 }), { uid: 0, username: '' }), undefined, 'the container runAsUser wins over the pod one');
  t.equal(check(pod({ runAsNonRoot: true, runAsUser: 1000 }, { runAsUser: 0 }), { uid: 1000, username: '' }), `container's runAsUser breaks non-root policy ${where}`);
});

t.test('syncPod: a runAsNonRoot container on a root image fails with CreateContainerConfigError and is retried', async (t) => {
  const env = setup();
  setImageUser(env.images, { uid: 0 });
  const pod = securePod({ runAsNonRoot: true });
  const message = `container has runAsNonRoot and image will run as root ${where}`;

  let result = await syncOnce(env, pod);
  const start = result.syncResults.find((r) => r.action === 'StartContainer');
  t.equal(start?.error, 'CreateContainerConfigError');
  t.equal(start?.message, message);
  t.ok(podSyncError(result), 'the sync reports the failure');
  t.same(createCalls(env.runtime), [], 'no container was created');
  const failed = env.recorder.events.filter((e) => e.reason === 'Failed');
  t.same(
    failed.map((e) => [e.type, e.message]),
    [['Warning', `Error: ${message}`]],
    'a Warning Failed event with the message',
  );

  // the next sync tries again (Go: no backoff for a config error), and succeeds once the spec allows it
  result = await syncOnce(env, pod);
  t.equal(result.syncResults.find((r) => r.action === 'StartContainer')?.error, 'CreateContainerConfigError', 'retried and failed again');
  t.equal(env.recorder.events.filter((e) => e.reason === 'Failed').length, 2);

  pod.spec!.containers[0].securityContext = { runAsUser: 1000 };
  result = await syncOnce(env, pod);
  t.equal(podSyncError(result), undefined);
  const [[, config]] = createCalls(env.runtime);
  t.same(config.linux?.securityContext?.runAsUser, { value: 1000 }, 'the spec user goes to the runtime');
});

t.test('syncPod: image users for a runAsNonRoot pod, and what goes to the runtime', async (t) => {
  await t.test('numeric non-root image: runs, its uid sent as runAsUser', async (t) => {
    const env = setup();
    setImageUser(env.images, { uid: 1000 });
    const result = await syncOnce(env, securePod({ runAsNonRoot: true }));
    t.equal(podSyncError(result), undefined);
    const [[, config]] = createCalls(env.runtime);
    t.same(config.linux?.securityContext?.runAsUser, { value: 1000 });
    t.equal(config.linux?.securityContext?.runAsUsername, '');
  });
  await t.test('named image user: fails, cannot verify', async (t) => {
    const env = setup();
    setImageUser(env.images, { username: 'nginx' });
    const result = await syncOnce(env, securePod(undefined, { runAsNonRoot: true }));
    const start = result.syncResults.find((r) => r.action === 'StartContainer');
    t.equal(start?.error, 'CreateContainerConfigError');
    t.equal(start?.message, `container has runAsNonRoot and image has non-numeric user (nginx), cannot verify user is non-root ${where}`);
  });
  await t.test('named image user without runAsNonRoot: runs, the name sent as runAsUsername', async (t) => {
    const env = setup();
    setImageUser(env.images, { username: 'nginx' });
    const result = await syncOnce(env, securePod(undefined));
    t.equal(podSyncError(result), undefined);
    const [[, config]] = createCalls(env.runtime);
    t.equal(config.linux?.securityContext?.runAsUser, undefined);
    t.equal(config.linux?.securityContext?.runAsUsername, 'nginx');
  });
  await t.test('an image with no user runs as uid 0, as Go sends it', async (t) => {
    const env = setup();
    const result = await syncOnce(env, securePod(undefined));
    t.equal(podSyncError(result), undefined);
    const [[, config]] = createCalls(env.runtime);
    t.same(config.linux?.securityContext?.runAsUser, { value: 0 });
  });
  await t.test('pod runAsUser 0 on a non-root image: breaks the policy', async (t) => {
    const env = setup();
    setImageUser(env.images, { uid: 1000 });
    const result = await syncOnce(env, securePod({ runAsNonRoot: true, runAsUser: 0 }));
    t.equal(result.syncResults.find((r) => r.action === 'StartContainer')?.message, `container's runAsUser breaks non-root policy ${where}`);
  });
  await t.test('a pulled image: its user comes from the status read after the pull', async (t) => {
    const env = setup();
    env.images.images.clear();
    const pod = securePod({ runAsNonRoot: true });
    pod.spec!.containers[0].image = 'registry.example/app:1';
    const pull = env.images.pullImage.bind(env.images);
    env.images.pullImage = async (spec, auth, sandbox, options) => {
      env.images.setImages({ id: 'sha256:app', tags: ['registry.example/app:1'] });
      env.images.images.get('sha256:app')!.uid = { value: 0 };
      return pull(spec, auth, sandbox, options).then(() => 'sha256:app');
    };
    const result = await syncOnce(env, pod);
    t.equal(result.syncResults.find((r) => r.action === 'StartContainer')?.message, `container has runAsNonRoot and image will run as root ${where}`);
    const statusCalls = env.images.calls.filter((c) => c.method === 'imageStatus').length;
    t.equal(statusCalls, 2, 'one ImageStatus before the pull, one after: none more for the user');
  });
  await t.test('ImageStatus failing when asked again for the user: CreateContainerConfigError naming the image', async (t) => {
    const env = setup();
    const pod = securePod({ runAsNonRoot: true });
    pod.spec!.containers[0].image = 'registry.example/app:1';
    env.images.images.clear();
    let statusCalls = 0;
    const status = env.images.imageStatus.bind(env.images);
    env.images.imageStatus = async (spec, verbose, options) => {
      statusCalls++;
      if (statusCalls >= 2) throw new Error('runtime gone');
      return status(spec, verbose, options);
    };
    const result = await syncOnce(env, pod);
    const start = result.syncResults.find((r) => r.action === 'StartContainer');
    t.equal(start?.error, 'CreateContainerConfigError');
    t.equal(start?.message, 'failed to get the user of image "registry.example/app:1": runtime gone');
  });
});

t.test('AppArmor: the profile of a container, as the CRI gets it', async (t) => {
  const pod = makePod({ containers: [{ name: 'app' }, { name: 'side' }] });
  const [app, side] = pod.spec!.containers;
  t.equal(appArmorProfileFor(pod, app), undefined, 'none set');
  t.equal(containerSecurityContext(pod, app).apparmor, undefined);

  pod.metadata!.annotations = { 'container.apparmor.security.beta.kubernetes.io/app': 'localhost/k8s-deny-write' };
  t.same(containerSecurityContext(pod, app).apparmor, { profileType: 'Localhost', localhostRef: 'k8s-deny-write' }, 'annotation');
  t.equal(containerSecurityContext(pod, app).apparmorProfile, 'localhost/k8s-deny-write', 'the deprecated string too');
  t.equal(containerSecurityContext(pod, side).apparmor, undefined, 'the annotation names one container');

  pod.spec!.securityContext = { appArmorProfile: { type: 'RuntimeDefault' } };
  t.same(containerSecurityContext(pod, side).apparmor, { profileType: 'RuntimeDefault' }, 'the pod field for the others');
  t.equal(containerSecurityContext(pod, side).apparmorProfile, 'runtime/default');
  t.same(appArmorProfileFor(pod, app), { type: 'Localhost', localhostProfile: 'k8s-deny-write' }, 'the annotation wins over the pod field');

  app.securityContext = { appArmorProfile: { type: 'Unconfined' } };
  t.same(containerSecurityContext(pod, app).apparmor, { profileType: 'Unconfined' }, 'the container field wins');
  t.equal(containerSecurityContext(pod, app).apparmorProfile, 'unconfined');

  pod.metadata!.annotations = { 'container.apparmor.security.beta.kubernetes.io/side': 'bogus' };
  t.same(appArmorProfileFor(pod, side), { type: 'RuntimeDefault' }, 'an invalid annotation is ignored');

  t.throws(() => criAppArmorProfile({ type: 'Localhost' }), { message: 'missing localhost apparmor profile name' });
  t.throws(() => criAppArmorProfile({ type: 'Other' }), { message: 'unknown apparmor profile type: "Other"' });

  const sandbox = generatePodSandboxConfig(pod, 0, { podLogsRootDirectory: '/logs' });
  t.same(sandbox.linux?.securityContext?.apparmor, { profileType: 'RuntimeDefault' }, 'the sandbox gets the pod field');
  pod.spec!.securityContext = {};
  t.equal(generatePodSandboxConfig(pod, 0, { podLogsRootDirectory: '/logs' }).linux?.securityContext?.apparmor, undefined);
});

t.test('syncPod: a Localhost profile without a name fails the container, not the kubelet', async (t) => {
  const env = setup();
  const pod = makePod({ containers: [{ name: 'app', securityContext: { appArmorProfile: { type: 'Localhost' } } }] });
  const result = await syncOnce(env, pod);
  const start = result.syncResults.find((r) => r.action === 'StartContainer');
  t.equal(start?.error, 'CreateContainerConfigError');
  t.equal(start?.message, 'missing localhost apparmor profile name');
});
