// In-test fakes for the API-content plugins: a Mounter that records without mounting, getters over
// maps that answer 404 with the API server's message, and a VolumeHost under a real temp dir.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import type { AuthenticationV1TokenRequest, V1ConfigMap, V1Pod, V1Secret, V1Volume } from '@kubernetes/client-node';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import type { Mounter, NodeFacts, VolumeContext, VolumeHost } from '../src/types.js';

export class RecordingMounter implements Mounter {
  readonly mountCalls: Array<{ target: string; options?: { sizeBytes?: number } }> = [];
  readonly unmountCalls: string[] = [];
  readonly bindCalls: Array<{ source: string; target: string }> = [];
  readonly mounted = new Set<string>();
  /** The next mountTmpfs rejects with it. */
  mountError: Error | undefined;

  async mountTmpfs(target: string, options?: { sizeBytes?: number }): Promise<void> {
    this.mountCalls.push({ target, options });
    if (this.mountError) {
      const err = this.mountError;
      this.mountError = undefined;
      throw err;
    }
    this.mounted.add(target);
  }

  async bindMount(source: string, target: string): Promise<void> {
    this.bindCalls.push({ source, target });
    this.mounted.add(target);
  }

  async unmount(target: string): Promise<void> {
    this.unmountCalls.push(target);
    this.mounted.delete(target);
  }

  async isMountPoint(target: string): Promise<boolean> {
    return this.mounted.has(target);
  }

  async mountPointsUnder(prefix: string): Promise<string[]> {
    return [...this.mounted].filter((m) => m === prefix || m.startsWith(`${prefix}/`)).sort((a, b) => b.length - a.length);
  }
}

export function notFound(resource: string, name: string): Error {
  return Object.assign(new Error(`${resource} ${JSON.stringify(name)} not found`), { statusCode: 404 });
}

export interface TestHost {
  host: VolumeHost;
  podsDir: string;
  mounter: RecordingMounter;
  logger: RecordingLogger;
  configMaps: Map<string, V1ConfigMap>;
  secrets: Map<string, V1Secret>;
  tokenRequests: Array<{ namespace: string; name: string; request: AuthenticationV1TokenRequest }>;
  deletedTokens: string[];
  /** The token the next requests get. */
  token: { value: string; error?: Error };
  node: NodeFacts;
}

export async function makeHost(t: Test): Promise<TestHost> {
  const podsDir = await mkdtemp(join(tmpdir(), 'api-volume-'));
  t.teardown(() => rm(podsDir, { recursive: true, force: true }));
  const mounter = new RecordingMounter();
  const logger = new RecordingLogger();
  const configMaps = new Map<string, V1ConfigMap>();
  const secrets = new Map<string, V1Secret>();
  const tokenRequests: TestHost['tokenRequests'] = [];
  const deletedTokens: string[] = [];
  const token: TestHost['token'] = { value: 'token-1' };
  const node: NodeFacts = { allocatableMilliCpu: 4000, allocatableMemoryBytes: 8 * 2 ** 30, allocatableEphemeralStorageBytes: 100e9, hostIPs: () => ['10.0.0.1'] };
  const host: VolumeHost = {
    podsDir,
    nodeName: 'node-1',
    mounter,
    configMaps: {
      getConfigMap: async (namespace, name) => {
        const cm = configMaps.get(`${namespace}/${name}`);
        if (!cm) throw notFound('configmap', name);
        return structuredClone(cm);
      },
    },
    secrets: {
      getSecret: async (namespace, name) => {
        const s = secrets.get(`${namespace}/${name}`);
        if (!s) throw notFound('secret', name);
        return structuredClone(s);
      },
    },
    tokens: {
      getServiceAccountToken: async (namespace, name, request) => {
        tokenRequests.push({ namespace, name, request });
        if (token.error) throw token.error;
        return { ...request, status: { token: token.value, expirationTimestamp: new Date(0) } };
      },
      deleteServiceAccountToken: (uid) => void deletedTokens.push(uid),
    },
    persistentVolumes: {
      getPersistentVolumeClaim: async (_ns, name) => Promise.reject(notFound('persistentvolumeclaims', name)),
      getPersistentVolume: async (name) => Promise.reject(notFound('persistentvolumes', name)),
    },
    node,
    clock: new FakeClock(),
    logger,
  };
  return { host, podsDir, mounter, logger, configMaps, secrets, tokenRequests, deletedTokens, token, node };
}

export function makePod(volumes: V1Volume[], extra: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name: 'web', namespace: 'prod', uid: 'uid-1', labels: { app: 'web' }, annotations: { team: 'a' } },
    spec: {
      serviceAccountName: 'builder',
      containers: [{ name: 'app', volumeMounts: volumes.map((v) => ({ name: v.name, mountPath: `/mnt/${v.name}` })) }],
      volumes,
      ...extra,
    },
  };
}

export function volumeContext(th: TestHost, pod: V1Pod, volume: V1Volume, pluginDir: string, fsGroup?: number): VolumeContext {
  return {
    pod,
    volume,
    dir: join(th.podsDir, pod.metadata!.uid!, 'volumes', pluginDir, volume.name),
    ...(fsGroup !== undefined ? { fsGroup } : {}),
    host: th.host,
  };
}

/** Records chown calls instead of changing owners. */
export function recordingChown(): { calls: Array<[string, number, number]>; chown: (p: string, uid: number, gid: number) => Promise<void> } {
  const calls: Array<[string, number, number]> = [];
  return { calls, chown: async (p, uid, gid) => void calls.push([p, uid, gid]) };
}

export const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
