// The watch-based ConfigMap/Secret managers: against fake per-object ListerWatchers on a FakeClock
// (refcounts, one watch per object, updates through the watch, not found, immutable, sync timeout), and
// the client-node managers against @kubelet-ts/test-apiserver.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { KubeConfig, type V1ConfigMap, type V1Pod, type V1Secret } from '@kubernetes/client-node';
import { abortReason, isNotFound, type ListerWatcher, type WatchEvent, type WatchEventType } from '@kubelet-ts/core';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { startTestApiServer } from '@kubelet-ts/test-apiserver';
import {
  ConfigMapManager,
  configMapNamesOf,
  createConfigMapManager,
  createSecretManager,
  ObjectNotFoundError,
  SecretManager,
  secretNamesOf,
  WatchBasedObjectManager,
} from '../src/object-manager.js';

interface FakeWatch {
  signal: AbortSignal;
  opts: { resourceVersion: string; timeoutSeconds: number };
  active: boolean;
  emit(type: WatchEventType, object: unknown): void;
}

/** The API server's view of one object, and the list/watch calls a reflector made for it. */
class FakeObjectLW<T> implements ListerWatcher<T> {
  object: T | undefined;
  resourceVersion = '1';
  lists = 0;
  readonly watches: FakeWatch[] = [];
  /** When set, lists wait for it (a slow API server). */
  gate: Promise<void> | undefined;
  failLists = false;

  constructor(
    readonly namespace: string,
    readonly name: string,
  ) {}

  async list(): Promise<{ items: T[]; resourceVersion: string }> {
    this.lists++;
    if (this.gate) await this.gate;
    if (this.failLists) throw Object.assign(new Error('etcd is sad'), { statusCode: 500 });
    return { items: this.object ? [this.object] : [], resourceVersion: this.resourceVersion };
  }

  watch(opts: { resourceVersion: string; timeoutSeconds: number }, onEvent: (event: WatchEvent<T>) => void, signal: AbortSignal): Promise<void> {
    return new Promise<void>((_resolve, reject) => {
      const w: FakeWatch = {
        signal,
        opts,
        active: true,
        emit: (type, object) => {
          try {
            onEvent({ type, object: object as T });
          } catch (err) {
            // As a real watch does: an event the handler rejects ends the watch with that error.
            w.active = false;
            reject(err);
          }
        },
      };
      this.watches.push(w);
      signal.addEventListener(
        'abort',
        () => {
          w.active = false;
          reject(abortReason(signal));
        },
        { once: true },
      );
    });
  }

  activeWatches(): number {
    return this.watches.filter((w) => w.active).length;
  }
}

class FakeApi<T> {
  readonly created: FakeObjectLW<T>[] = [];
  /** Objects the fake server has, by namespace/name, handed to each new ListerWatcher. */
  readonly objects = new Map<string, T>();

  listerWatcherFor = (namespace: string, name: string): ListerWatcher<T> => {
    const lw = new FakeObjectLW<T>(namespace, name);
    lw.object = this.objects.get(`${namespace}/${name}`);
    this.created.push(lw);
    return lw;
  };

  /** The newest ListerWatcher of an object. */
  lw(namespace: string, name: string): FakeObjectLW<T> {
    const found = this.created.filter((l) => l.namespace === namespace && l.name === name);
    if (found.length === 0) throw new Error(`no lister/watcher for ${namespace}/${name}`);
    return found[found.length - 1];
  }

  activeWatches(): number {
    return this.created.reduce((n, lw) => n + lw.activeWatches(), 0);
  }
}

const configMap = (namespace: string, name: string, data: Record<string, string>, extra: Partial<V1ConfigMap> = {}): V1ConfigMap => ({
  metadata: { namespace, name, resourceVersion: '1' },
  data,
  ...extra,
});

function podUsing(name: string, configMaps: string[], opts: { namespace?: string; uid?: string } = {}): V1Pod {
  return {
    metadata: { namespace: opts.namespace ?? 'ns', name, uid: opts.uid ?? `uid-${name}` },
    spec: {
      containers: [{ name: 'c' }],
      volumes: configMaps.map((cm, i) => ({ name: `v${i}`, configMap: { name: cm } })),
    },
  };
}

function setup() {
  const clock = new FakeClock(0);
  const api = new FakeApi<V1ConfigMap>();
  const logger = new RecordingLogger();
  const manager = new ConfigMapManager({ listerWatcherFor: api.listerWatcherFor, clock, logger });
  return { clock, api, logger, manager };
}

async function rejection(p: Promise<unknown>): Promise<Error & { statusCode?: number }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { statusCode?: number };
  }
  throw new Error('expected a rejection');
}

t.test('secretNamesOf and configMapNamesOf visit what Go visits', async (t) => {
  const pod: V1Pod = {
    metadata: { namespace: 'ns', name: 'p' },
    spec: {
      imagePullSecrets: [{ name: 'pull' }, { name: '' }],
      initContainers: [{ name: 'init', envFrom: [{ secretRef: { name: 'init-envfrom-s' } }, { configMapRef: { name: 'init-envfrom-cm' } }] }],
      containers: [
        {
          name: 'c',
          env: [
            { name: 'A', valueFrom: { secretKeyRef: { name: 'env-s', key: 'k' } } },
            { name: 'B', valueFrom: { configMapKeyRef: { name: 'env-cm', key: 'k' } } },
            { name: 'C', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
            { name: 'D', value: 'plain' },
          ],
        },
      ],
      ephemeralContainers: [{ name: 'debug', envFrom: [{ secretRef: { name: 'eph-s' } }, { configMapRef: { name: 'eph-cm' } }] }],
      volumes: [
        { name: 'secret', secret: { secretName: 'vol-s' } },
        { name: 'cm', configMap: { name: 'vol-cm' } },
        {
          name: 'projected',
          projected: {
            sources: [{ secret: { name: 'proj-s' } }, { configMap: { name: 'proj-cm' } }, { serviceAccountToken: { path: 'token' } }, { downwardAPI: {} }],
          },
        },
        { name: 'azure', azureFile: { secretName: 'azure-s', shareName: 'share' } },
        { name: 'ceph', cephfs: { monitors: ['m'], secretRef: { name: 'ceph-s' } } },
        { name: 'cinder', cinder: { volumeID: 'v', secretRef: { name: 'cinder-s' } } },
        { name: 'flex', flexVolume: { driver: 'd', secretRef: { name: 'flex-s' } } },
        { name: 'rbd', rbd: { monitors: ['m'], image: 'i', secretRef: { name: 'rbd-s' } } },
        { name: 'scaleio', scaleIO: { gateway: 'g', system: 's', secretRef: { name: 'scaleio-s' } } },
        { name: 'iscsi', iscsi: { targetPortal: 't', iqn: 'q', lun: 0, secretRef: { name: 'iscsi-s' } } },
        { name: 'storageos', storageos: { secretRef: { name: 'storageos-s' } } },
        { name: 'csi', csi: { driver: 'd', nodePublishSecretRef: { name: 'csi-s' } } },
        { name: 'ceph-no-ref', cephfs: { monitors: ['m'] } },
        { name: 'empty', emptyDir: {} },
      ],
    },
  };
  t.same(
    [...secretNamesOf(pod)].sort(),
    ['azure-s', 'ceph-s', 'cinder-s', 'csi-s', 'env-s', 'eph-s', 'flex-s', 'init-envfrom-s', 'iscsi-s', 'proj-s', 'pull', 'rbd-s', 'scaleio-s', 'storageos-s', 'vol-s'].sort(),
  );
  t.same([...configMapNamesOf(pod)].sort(), ['env-cm', 'eph-cm', 'init-envfrom-cm', 'proj-cm', 'vol-cm']);
  t.same([...secretNamesOf({ metadata: { name: 'bare' } })], [], 'a pod without a spec references nothing');
  t.same([...configMapNamesOf({})], []);
  const twice = podUsing('p', ['same', 'same']);
  t.same([...configMapNamesOf(twice)], ['same'], 'a set: one reference per pod however many uses');
});

t.test('refcounts: one watch per object however many pods; the last pod to go stops it', async (t) => {
  const { clock, api, manager } = setup();
  api.objects.set('ns/shared', configMap('ns', 'shared', { k: 'v' }));
  api.objects.set('ns/own', configMap('ns', 'own', { k: 'o' }));
  const a = podUsing('a', ['shared', 'own']);
  const b = podUsing('b', ['shared']);
  const c = podUsing('c', ['shared']);
  manager.registerPod(a);
  manager.registerPod(b);
  manager.registerPod(c);
  manager.registerPod(c); // the same pod again: no new reference
  await clock.flush();
  t.equal(api.created.length, 2, 'one lister/watcher per object');
  t.equal(api.activeWatches(), 2);
  t.same(manager.stats(), { pods: 3, objects: 2, activeWatches: 2, immutable: 0 });
  t.same((await manager.getConfigMap('ns', 'shared')).data, { k: 'v' });
  t.equal(api.lw('ns', 'shared').watches[0].opts.resourceVersion, '1');

  manager.unregisterPod(a);
  t.equal(api.lw('ns', 'own').activeWatches(), 0, "the object only a used is no longer watched");
  t.same(
    (await rejection(manager.getConfigMap('ns', 'own'))).message,
    'object "ns"/"own" not registered',
  );
  manager.unregisterPod(b);
  t.equal(api.lw('ns', 'shared').activeWatches(), 1, 'c still needs it');
  manager.unregisterPod(b); // twice: no effect
  t.equal(api.lw('ns', 'shared').activeWatches(), 1);
  manager.unregisterPod(c);
  t.equal(api.activeWatches(), 0);
  t.same(manager.stats(), { pods: 0, objects: 0, activeWatches: 0, immutable: 0 });
  t.equal((await rejection(manager.getConfigMap('ns', 'shared'))).message, 'object "ns"/"shared" not registered');
  await clock.advance(10 * 60_000);
  t.equal(api.created.reduce((n, lw) => n + lw.lists, 0), 2, 'nothing relisted after the stops');
  t.equal(clock.pendingTimers(), 0, 'no timers left');
});

t.test('a pod update adds its new references before dropping its old ones', async (t) => {
  const { clock, api, manager } = setup();
  const v1 = podUsing('p', ['kept', 'dropped']);
  manager.registerPod(v1);
  await clock.flush();
  const kept = api.lw('ns', 'kept');
  const v2 = podUsing('p', ['kept', 'added']);
  manager.registerPod(v2);
  await clock.flush();
  t.equal(api.created.filter((lw) => lw.name === 'kept').length, 1, 'the kept object was never re-listed or re-watched');
  t.equal(kept.lists, 1);
  t.equal(kept.activeWatches(), 1);
  t.equal(api.lw('ns', 'dropped').activeWatches(), 0);
  t.equal(api.lw('ns', 'added').activeWatches(), 1);
  t.same(manager.stats(), { pods: 1, objects: 2, activeWatches: 2, immutable: 0 });

  // Unregistering uses the references of the pod as last registered.
  manager.unregisterPod(v1);
  t.equal(api.activeWatches(), 0);

  // A pod recreated under the same name (a new uid) is another pod.
  const old = podUsing('p', ['x'], { uid: 'old' });
  const recreated = podUsing('p', ['x'], { uid: 'new' });
  manager.registerPod(old);
  manager.registerPod(recreated);
  manager.unregisterPod(old);
  await clock.flush();
  t.equal(api.lw('ns', 'x').activeWatches(), 1, 'the new pod keeps its reference');
  await manager.stop();
});

t.test('a change is visible through get without any extra list or get', async (t) => {
  const { clock, api, manager } = setup();
  api.objects.set('ns/cm', configMap('ns', 'cm', { k: 'v1' }));
  manager.registerPod(podUsing('p', ['cm']));
  t.same((await manager.getConfigMap('ns', 'cm')).data, { k: 'v1' });
  const lw = api.lw('ns', 'cm');
  lw.watches[0].emit('MODIFIED', { metadata: { namespace: 'ns', name: 'cm', resourceVersion: '2' }, data: { k: 'v2' } });
  t.same((await manager.getConfigMap('ns', 'cm')).data, { k: 'v2' });
  lw.watches[0].emit('DELETED', { metadata: { namespace: 'ns', name: 'cm', resourceVersion: '3' } });
  t.equal((await rejection(manager.getConfigMap('ns', 'cm'))).message, 'configmap "cm" not found');
  lw.watches[0].emit('ADDED', { metadata: { namespace: 'ns', name: 'cm', resourceVersion: '4' }, data: { k: 'v3' } });
  t.same((await manager.getConfigMap('ns', 'cm')).data, { k: 'v3' });
  t.equal(lw.lists, 1, 'one list only');
  t.equal(lw.watches.length, 1, 'one watch only');
  await manager.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('onChange tells of changes after the first list, not of the list itself or an unchanged re-list', async (t) => {
  const { clock, api, logger, manager } = setup();
  api.objects.set('ns/cm', configMap('ns', 'cm', { k: 'v1' }));
  const seen: string[] = [];
  const unsubscribe = manager.onChange((namespace, name) => seen.push(`${namespace}/${name}`));
  manager.onChange(() => {
    throw new Error('listener bug');
  });
  manager.registerPod(podUsing('p', ['cm', 'later']));
  await clock.flush();
  t.same(seen, [], 'the first list is no change');
  const lw = api.lw('ns', 'cm');
  lw.watches[0].emit('MODIFIED', { metadata: { namespace: 'ns', name: 'cm', resourceVersion: '2' }, data: { k: 'v2' } });
  lw.watches[0].emit('BOOKMARK', { metadata: { resourceVersion: '3' } });
  t.same(seen, ['ns/cm']);
  t.ok(logger.find('Object change listener failed'), 'a throwing listener is logged; the others still hear');

  // A 410 re-list that finds the same version is no change; one that finds another version is.
  lw.object = { metadata: { namespace: 'ns', name: 'cm', resourceVersion: '2' }, data: { k: 'v2' } };
  lw.watches[0].emit('ERROR', { code: 410, message: 'too old' });
  await clock.flush();
  t.equal(lw.lists, 2);
  t.same(seen, ['ns/cm']);
  lw.object = configMap('ns', 'cm', { k: 'v3' });
  lw.object.metadata!.resourceVersion = '7';
  lw.watches[1].emit('ERROR', { code: 410, message: 'too old' });
  await clock.flush();
  t.same(seen, ['ns/cm', 'ns/cm']);
  t.same((await manager.getConfigMap('ns', 'cm')).data, { k: 'v3' });

  // An object that did not exist appears, then is deleted.
  const later = api.lw('ns', 'later');
  later.watches[0].emit('ADDED', { metadata: { namespace: 'ns', name: 'later', resourceVersion: '8' }, data: {} });
  later.watches[0].emit('DELETED', { metadata: { namespace: 'ns', name: 'later', resourceVersion: '9' } });
  t.same(seen, ['ns/cm', 'ns/cm', 'ns/later', 'ns/later']);

  unsubscribe();
  lw.watches[2].emit('MODIFIED', { metadata: { namespace: 'ns', name: 'cm', resourceVersion: '10' }, data: {} });
  t.equal(seen.length, 4, 'unsubscribed');
  await manager.stop();
});

t.test('not found: Go message, statusCode 404 that isNotFound recognizes; per kind', async (t) => {
  const { api, manager } = setup();
  manager.registerPod(podUsing('p', ['missing']));
  const err = await rejection(manager.getConfigMap('ns', 'missing'));
  t.equal(err.message, 'configmap "missing" not found');
  t.equal(err.statusCode, 404);
  t.ok(isNotFound(err));
  t.ok(err instanceof ObjectNotFoundError);
  t.equal(api.lw('ns', 'missing').lists, 1);
  await manager.stop();

  const clock = new FakeClock(0);
  const secrets = new FakeApi<V1Secret>();
  const secretManager = new SecretManager({ listerWatcherFor: secrets.listerWatcherFor, clock });
  secrets.objects.set('ns/there', { metadata: { namespace: 'ns', name: 'there' }, data: { k: 'dg==' } });
  secretManager.registerPod({ metadata: { namespace: 'ns', name: 'p', uid: 'u' }, spec: { containers: [], imagePullSecrets: [{ name: 'gone' }, { name: 'there' }] } });
  const secretErr = await rejection(secretManager.getSecret('ns', 'gone'));
  t.equal(secretErr.message, 'secret "gone" not found');
  t.ok(isNotFound(secretErr));
  t.same((await secretManager.getSecret('ns', 'there')).data, { k: 'dg==' });
  t.equal((await rejection(secretManager.getSecret('other', 'there'))).message, 'object "other"/"there" not registered');
  await secretManager.stop();
});

t.test('an immutable object stops being watched once read, and is still served', async (t) => {
  const { clock, api, logger, manager } = setup();
  api.objects.set('ns/frozen', configMap('ns', 'frozen', { k: 'v' }, { immutable: true }));
  api.objects.set('ns/mutable', configMap('ns', 'mutable', { k: 'v' }, { immutable: false }));
  manager.registerPod(podUsing('a', ['frozen', 'mutable']));
  await clock.flush();
  t.equal(api.activeWatches(), 2, 'watched until read');
  t.same((await manager.getConfigMap('ns', 'frozen')).data, { k: 'v' });
  await manager.getConfigMap('ns', 'mutable');
  t.equal(api.lw('ns', 'frozen').activeWatches(), 0);
  t.ok(api.lw('ns', 'frozen').watches[0].signal.aborted);
  t.equal(api.lw('ns', 'mutable').activeWatches(), 1);
  t.same(manager.stats(), { pods: 1, objects: 2, activeWatches: 1, immutable: 1 });
  t.ok(logger.find('Stopped watching for changes - object is immutable'));

  // Another pod using it neither restarts the watch nor lists again.
  manager.registerPod(podUsing('b', ['frozen']));
  t.same((await manager.getConfigMap('ns', 'frozen')).data, { k: 'v' });
  t.equal(api.lw('ns', 'frozen').lists, 1);
  t.equal(api.created.filter((lw) => lw.name === 'frozen').length, 1);
  t.equal(logger.entries.filter((e) => e.msg === 'Stopped watching for changes - object is immutable').length, 1);

  // Once no pod references it, a new reference watches afresh (it may have been deleted and recreated).
  manager.unregisterPod(podUsing('a', ['frozen', 'mutable']));
  manager.unregisterPod(podUsing('b', ['frozen']));
  t.equal(manager.stats().objects, 0);
  manager.registerPod(podUsing('c', ['frozen']));
  await clock.flush();
  t.equal(api.created.filter((lw) => lw.name === 'frozen').length, 2);
  await manager.stop();
  t.equal(clock.pendingTimers(), 0);
});

t.test('the first get waits for the first list: up to 1 s, then Go\'s sync timeout', async (t) => {
  const { clock, api, manager } = setup();
  api.objects.set('ns/slow', configMap('ns', 'slow', { k: 'v' }));
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  manager.registerPod(podUsing('p', ['slow', 'broken']));
  api.lw('ns', 'slow').gate = gate;
  api.lw('ns', 'broken').failLists = true;

  let settled: unknown;
  const slow = manager.getConfigMap('ns', 'slow').then((cm) => (settled = cm));
  await clock.advance(900);
  t.equal(settled, undefined, 'still waiting');
  release();
  await clock.flush();
  t.same((await slow).data, { k: 'v' }, 'answered as soon as the list came in');

  const broken = rejection(manager.getConfigMap('ns', 'broken'));
  await clock.advance(999);
  let brokenSettled = false;
  void broken.then(() => (brokenSettled = true));
  await clock.flush();
  t.notOk(brokenSettled);
  await clock.advance(1);
  t.equal((await broken).message, 'failed to sync configmap cache: timed out waiting for the condition');
  t.ok(api.lw('ns', 'broken').lists >= 2, 'the reflector keeps retrying with backoff');

  const secretClock = new FakeClock(0);
  const secrets = new FakeApi<V1Secret>();
  const secretManager = new SecretManager({ listerWatcherFor: secrets.listerWatcherFor, clock: secretClock, syncTimeoutMs: 50 });
  secretManager.registerPod({ metadata: { namespace: 'ns', name: 'p', uid: 'u' }, spec: { containers: [], volumes: [{ name: 's', secret: { secretName: 's' } }] } });
  secrets.lw('ns', 's').failLists = true;
  const secretErr = rejection(secretManager.getSecret('ns', 's'));
  await secretClock.advance(50);
  t.equal((await secretErr).message, 'failed to sync secret cache: timed out waiting for the condition');

  await manager.stop();
  await secretManager.stop();
  t.equal(clock.pendingTimers(), 0, 'stop cancels the backoffs');
  t.equal(secretClock.pendingTimers(), 0);
});

t.test('the generic manager takes any kind and immutability test', async (t) => {
  const clock = new FakeClock(0);
  const api = new FakeApi<V1Secret>();
  api.objects.set('ns/s', { metadata: { namespace: 'ns', name: 's' }, type: 'Opaque' });
  const manager = new WatchBasedObjectManager<V1Secret>({ kind: 'secret', listerWatcherFor: api.listerWatcherFor, clock, isImmutable: (s) => s.type === 'Opaque' });
  manager.registerPod({ metadata: { namespace: 'ns', name: 'p' }, spec: { containers: [{ name: 'c', envFrom: [{ secretRef: { name: 's' } }] }] } });
  await manager.get('ns', 's');
  t.same(manager.stats(), { pods: 1, objects: 1, activeWatches: 0, immutable: 1 });
  await manager.stop();
});

// Against the stand-in API server over HTTP: what the client-node managers ask for.
t.test('createConfigMapManager/createSecretManager against test-apiserver', async (t) => {
  const server = await startTestApiServer({ bookmarkIntervalMs: 0 });
  t.teardown(() => server.close());
  if (!server.store.get('namespaces', undefined, 'team')) server.store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } });
  const dir = await mkdtemp(join(tmpdir(), 'object-manager-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const kc = new KubeConfig();
  kc.loadFromFile(await server.writeKubeconfig(join(dir, 'kubeconfig')));

  server.store.create('configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'team', name: 'app' }, data: { 'a.conf': 'one' } });
  server.store.create('configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'team', name: 'other' }, data: { x: 'y' } });
  server.store.create('secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { namespace: 'team', name: 'creds' }, data: { password: Buffer.from('hunter2').toString('base64') }, immutable: true });

  const configMaps = createConfigMapManager(kc, { reflector: { backoffInitialMs: 20, backoffJitter: 0 } });
  const secrets = createSecretManager(kc, { reflector: { backoffInitialMs: 20, backoffJitter: 0 } });
  t.teardown(() => configMaps.stop());
  t.teardown(() => secrets.stop());
  const pod: V1Pod = {
    metadata: { namespace: 'team', name: 'web', uid: 'u1' },
    spec: {
      containers: [{ name: 'c', env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } }] }],
      volumes: [
        { name: 'conf', configMap: { name: 'app' } },
        { name: 'nothing', configMap: { name: 'absent' } },
      ],
    },
  };
  configMaps.registerPod(pod);
  secrets.registerPod(pod);

  const cm = await configMaps.getConfigMap('team', 'app');
  t.same(cm.data, { 'a.conf': 'one' });
  t.equal(cm.metadata?.name, 'app');
  const secret = await secrets.getSecret('team', 'creds');
  t.equal(Buffer.from(secret.data?.password ?? '', 'base64').toString(), 'hunter2');
  const notFound = await rejection(configMaps.getConfigMap('team', 'absent'));
  t.equal(notFound.message, 'configmap "absent" not found');

  await server.waitForWatch('configmaps', 2);
  const lists = server.requests.filter((r) => r.verb === 'list' && r.resource === 'configmaps');
  t.same(lists.map((r) => [r.namespace, r.query.fieldSelector]).sort(), [
    ['team', 'metadata.name=absent'],
    ['team', 'metadata.name=app'],
  ]);
  const watches = server.requests.filter((r) => r.verb === 'watch' && r.resource === 'configmaps');
  t.match(watches[0].query, { fieldSelector: /^metadata\.name=(app|absent)$/, allowWatchBookmarks: 'true' });
  t.equal(watches[0].namespace, 'team');

  // An update arrives over the watch; get makes no request.
  server.clearRequests();
  server.store.patch('configmaps', 'team', 'app', { data: { 'a.conf': 'two' } }, 'merge');
  const deadline = Date.now() + 5000;
  while ((await configMaps.getConfigMap('team', 'app')).data?.['a.conf'] !== 'two') {
    if (Date.now() > deadline) throw new Error('update not seen');
    await new Promise((r) => setTimeout(r, 10));
  }
  server.store.patch('configmaps', 'team', 'other', { data: { x: 'z' } }, 'merge');
  t.same(
    server.requests.filter((r) => r.resource === 'configmaps' && r.verb !== 'watch'),
    [],
    'no list or get for reads',
  );

  // The immutable secret's watch was closed after the read.
  const secretDeadline = Date.now() + 5000;
  while (server.activeWatches('secrets') !== 0) {
    if (Date.now() > secretDeadline) throw new Error('secret watch still open');
    await new Promise((r) => setTimeout(r, 10));
  }
  t.equal(secrets.stats().immutable, 1);

  configMaps.unregisterPod(pod);
  const closeDeadline = Date.now() + 5000;
  while (server.activeWatches('configmaps') !== 0) {
    if (Date.now() > closeDeadline) throw new Error('configmap watches still open');
    await new Promise((r) => setTimeout(r, 10));
  }
  t.same(configMaps.stats(), { pods: 0, objects: 0, activeWatches: 0, immutable: 0 });
});
