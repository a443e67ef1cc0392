// The pods, configMaps and secrets of the volumes e2e (test/volumes.test.ts): every volume kind the kubelet sets
// up itself (configMap, secret, downwardAPI, projected with a service-account token, emptyDir on disk and in
// memory, hostPath, subPath), the projected service-account volume newer API servers inject, environment from
// configMaps and secrets, and the failures a user meets (a missing configMap, a missing hostPath, an escaping
// subPath). Plain JSON objects, as kubectl sends them.
import { sleepForever } from './workloads.js';

type Json = Record<string, any>;

export interface VolumePodBase {
  name: string;
  namespace: string;
  image: string;
  /** The node to run on (a nodeSelector on kubernetes.io/hostname). */
  node: string;
}

const pod = (base: VolumePodBase, spec: Json, metadata: Json = {}): Json => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: base.name, namespace: base.namespace, ...metadata },
  spec: {
    nodeSelector: { 'kubernetes.io/hostname': base.node },
    terminationGracePeriodSeconds: 5,
    ...spec,
  },
});

const container = (name: string, image: string, extra: Json = {}): Json => ({
  name,
  image,
  imagePullPolicy: 'IfNotPresent',
  command: ['sh', '-c', sleepForever],
  ...extra,
});

export function configMapObject(name: string, namespace: string, data: Record<string, string>): Json {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}

export function secretObject(name: string, namespace: string, stringData: Record<string, string>): Json {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'Opaque', stringData };
}

export interface VolumesPodOptions extends VolumePodBase {
  /** A configMap with the keys game.properties, ui.properties and app.conf. */
  configMap: string;
  /** A secret with the keys username and password. */
  secret: string;
  /** An existing host directory (hostPath type DirectoryOrCreate). */
  hostPath: string;
  /** A host directory that does not exist yet (hostPath type DirectoryOrCreate: the kubelet creates it). */
  hostPathToCreate: string;
  /** The audience of the projected service-account token. */
  audience: string;
}

/** Where volumesPod mounts what. */
export const VOLUME_MOUNTS = {
  configMap: '/etc/cm',
  secret: '/etc/secret',
  downwardAPI: '/etc/podinfo',
  projected: '/etc/projected',
  emptyDir: '/scratch',
  memory: '/mem',
  hostPath: '/host',
  hostPathCreated: '/host-created',
  subPath: '/etc/sub/app.conf',
  serviceAccount: '/var/run/secrets/kubernetes.io/serviceaccount',
} as const;

/**
 * One pod with every volume kind: configMap (items: game.properties to a nested path with mode 0400,
 * ui.properties with the defaultMode 0640), secret (defaultMode 0440), downwardAPI (labels, annotations,
 * metadata.name, limits.memory in Mi), projected (a service-account token for `audience` valid 3600 s, a configMap
 * item and metadata.name), emptyDir on disk, emptyDir in memory (sizeLimit 16Mi), two hostPaths
 * (DirectoryOrCreate) and app.conf of the configMap as a single file through subPath. The ServiceAccount
 * admission plugin adds the default-token secret volume.
 */
export function volumesPod(o: VolumesPodOptions): Json {
  const m = VOLUME_MOUNTS;
  return pod(
    o,
    {
      containers: [
        container('app', o.image, {
          resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { cpu: '100m', memory: '64Mi' } },
          volumeMounts: [
            { name: 'cm', mountPath: m.configMap },
            { name: 'secret', mountPath: m.secret },
            { name: 'podinfo', mountPath: m.downwardAPI },
            { name: 'projected', mountPath: m.projected },
            { name: 'scratch', mountPath: m.emptyDir },
            { name: 'mem', mountPath: m.memory },
            { name: 'host', mountPath: m.hostPath },
            { name: 'host-created', mountPath: m.hostPathCreated },
            { name: 'cm-all', mountPath: m.subPath, subPath: 'app.conf' },
          ],
        }),
      ],
      volumes: [
        {
          name: 'cm',
          configMap: {
            name: o.configMap,
            defaultMode: 0o640,
            items: [
              { key: 'game.properties', path: 'nested/dir/game.properties', mode: 0o400 },
              { key: 'ui.properties', path: 'ui.properties' },
            ],
          },
        },
        { name: 'cm-all', configMap: { name: o.configMap } },
        { name: 'secret', secret: { secretName: o.secret, defaultMode: 0o440 } },
        {
          name: 'podinfo',
          downwardAPI: {
            items: [
              { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
              { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
              { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
              { path: 'mem_limit', resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' } },
            ],
          },
        },
        {
          name: 'projected',
          projected: {
            sources: [
              { serviceAccountToken: { audience: o.audience, expirationSeconds: 3600, path: 'token' } },
              { configMap: { name: o.configMap, items: [{ key: 'ui.properties', path: 'config/ui.properties' }] } },
              { downwardAPI: { items: [{ path: 'podname', fieldRef: { fieldPath: 'metadata.name' } }] } },
            ],
          },
        },
        { name: 'scratch', emptyDir: {} },
        { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
        { name: 'host', hostPath: { path: o.hostPath, type: 'DirectoryOrCreate' } },
        { name: 'host-created', hostPath: { path: o.hostPathToCreate, type: 'DirectoryOrCreate' } },
      ],
    },
    { labels: { app: 'vols', tier: 'e2e' }, annotations: { 'kts.example/note': 'hello "volumes"' } },
  );
}

/**
 * The projected service-account volume the BoundServiceAccountTokenVolume admission (1.21+) injects instead of the
 * default-token secret (Go: plugin/pkg/admission/serviceaccount, TokenVolumeSource).
 */
export function kubeApiAccessVolume(name: string): Json {
  return {
    name,
    projected: {
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
    },
  };
}

/** A pod with the kube-api-access volume written in by hand, the admission's automount turned off. */
export function kubeApiAccessPod(o: VolumePodBase & { volumeName: string }): Json {
  return pod(o, {
    automountServiceAccountToken: false,
    containers: [container('app', o.image, { volumeMounts: [{ name: o.volumeName, mountPath: VOLUME_MOUNTS.serviceAccount, readOnly: true }] })],
    volumes: [kubeApiAccessVolume(o.volumeName)],
  });
}

/**
 * Environment from a configMap key (GREETING), a whole secret (envFrom secretRef) and a whole configMap with the
 * prefix CFG_ (envFrom configMapRef).
 */
export function envPod(o: VolumePodBase & { configMap: string; secret: string }): Json {
  return pod(o, {
    containers: [
      container('app', o.image, {
        env: [
          { name: 'GREETING', valueFrom: { configMapKeyRef: { name: o.configMap, key: 'greeting' } } },
          { name: 'PLAIN', value: 'plain-value' },
        ],
        envFrom: [{ secretRef: { name: o.secret } }, { configMapRef: { name: o.configMap }, prefix: 'CFG_' }],
      }),
    ],
  });
}

/** A pod with a (non-optional) configMap volume `cfg` of `configMap`, mounted at /etc/late. */
export function configMapVolumePod(o: VolumePodBase & { configMap: string }): Json {
  return pod(o, {
    containers: [container('app', o.image, { volumeMounts: [{ name: 'cfg', mountPath: '/etc/late' }] })],
    volumes: [{ name: 'cfg', configMap: { name: o.configMap } }],
  });
}

/** A pod with a hostPath volume `data` of type Directory at `path`. */
export function hostPathDirectoryPod(o: VolumePodBase & { path: string }): Json {
  return pod(o, {
    containers: [container('app', o.image, { volumeMounts: [{ name: 'data', mountPath: '/data' }] })],
    volumes: [{ name: 'data', hostPath: { path: o.path, type: 'Directory' } }],
  });
}

/**
 * A pod whose emptyDir `scratch` an init container fills: a directory `ok` with a file, and a symlink `link` to
 * the host's root. Three containers mount it: `good` the subPath ok (fine), `bad-expr` the subPathExpr $(SUB) with
 * SUB=../x (the API server only checks the expression, the kubelet must refuse the expansion) and `bad-link` the
 * subPath link, which resolves out of the volume.
 */
export function escapingSubPathPod(o: VolumePodBase): Json {
  return pod(o, {
    initContainers: [
      {
        name: 'init',
        image: o.image,
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', 'mkdir -p /scratch/ok && echo fine > /scratch/ok/file && ln -s / /scratch/link'],
        volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
      },
    ],
    containers: [
      container('good', o.image, { volumeMounts: [{ name: 'scratch', mountPath: '/ok', subPath: 'ok' }] }),
      container('bad-expr', o.image, { env: [{ name: 'SUB', value: '../x' }], volumeMounts: [{ name: 'scratch', mountPath: '/x', subPathExpr: '$(SUB)' }] }),
      container('bad-link', o.image, { volumeMounts: [{ name: 'scratch', mountPath: '/x', subPath: 'link' }] }),
    ],
    volumes: [{ name: 'scratch', emptyDir: {} }],
  });
}

/** An authentication.k8s.io/v1 TokenReview of `token`, for `kubectl create -f - -o json`. */
export function tokenReview(token: string, audiences?: string[]): Json {
  return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(audiences ? { audiences } : {}) } };
}

/** The claims of a JWT (not verified: the TokenReview does that). */
export function jwtClaims(token: string): Json {
  const payload = token.split('.')[1];
  if (!payload) throw new Error(`not a JWT: ${token.slice(0, 20)}...`);
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Json;
}
