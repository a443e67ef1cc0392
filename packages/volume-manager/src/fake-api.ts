// In-memory API objects for tests of the plugins and of the kubelet: ConfigMaps, Secrets, claims,
// PersistentVolumes and TokenRequests, answering as the API server would (404 with its message).
import type {
  AuthenticationV1TokenRequest,
  V1ConfigMap,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Secret,
} from '@kubernetes/client-node';
import type { ConfigMapGetter, PersistentVolumeGetter, SecretGetter, ServiceAccountTokenGetter } from './types.js';

/** A 404 as core's isNotFound reads it, with the API server's message. */
export function notFoundError(resource: string, name: string): Error & { statusCode: number } {
  return Object.assign(new Error(`${resource} ${JSON.stringify(name)} not found`), { statusCode: 404 });
}

export class FakeApiObjects implements ConfigMapGetter, SecretGetter, PersistentVolumeGetter, ServiceAccountTokenGetter {
  readonly configMaps = new Map<string, V1ConfigMap>();
  readonly secrets = new Map<string, V1Secret>();
  readonly claims = new Map<string, V1PersistentVolumeClaim>();
  readonly volumes = new Map<string, V1PersistentVolume>();
  /** Every TokenRequest asked for, in order. */
  readonly tokenRequests: Array<{ namespace: string; name: string; request: AuthenticationV1TokenRequest }> = [];
  /** Calls by kind, to count API requests. */
  readonly calls = { configMaps: 0, secrets: 0, claims: 0, volumes: 0, tokens: 0 };
  /** When set, TokenRequests fail with it. */
  tokenError: Error | undefined;
  private tokenSerial = 0;

  constructor(private readonly now: () => number = Date.now) {}

  setConfigMap(configMap: V1ConfigMap): void {
    this.configMaps.set(key(configMap.metadata?.namespace, configMap.metadata?.name), configMap);
  }

  setSecret(secret: V1Secret): void {
    this.secrets.set(key(secret.metadata?.namespace, secret.metadata?.name), secret);
  }

  setClaim(claim: V1PersistentVolumeClaim): void {
    this.claims.set(key(claim.metadata?.namespace, claim.metadata?.name), claim);
  }

  setVolume(volume: V1PersistentVolume): void {
    this.volumes.set(volume.metadata?.name ?? '', volume);
  }

  async getConfigMap(namespace: string, name: string): Promise<V1ConfigMap> {
    this.calls.configMaps++;
    const found = this.configMaps.get(key(namespace, name));
    if (!found) throw notFoundError('configmap', name);
    return structuredClone(found);
  }

  async getSecret(namespace: string, name: string): Promise<V1Secret> {
    this.calls.secrets++;
    const found = this.secrets.get(key(namespace, name));
    if (!found) throw notFoundError('secret', name);
    return structuredClone(found);
  }

  async getPersistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim> {
    this.calls.claims++;
    const found = this.claims.get(key(namespace, name));
    if (!found) throw notFoundError('persistentvolumeclaim', name);
    return structuredClone(found);
  }

  async getPersistentVolume(name: string): Promise<V1PersistentVolume> {
    this.calls.volumes++;
    const found = this.volumes.get(name);
    if (!found) throw notFoundError('persistentvolume', name);
    return structuredClone(found);
  }

  /** Answers as the TokenRequest API: a token for the service account, expiring after expirationSeconds. */
  async getServiceAccountToken(namespace: string, name: string, request: AuthenticationV1TokenRequest): Promise<AuthenticationV1TokenRequest> {
    this.calls.tokens++;
    this.tokenRequests.push({ namespace, name, request: structuredClone(request) });
    if (this.tokenError) throw this.tokenError;
    const expirationSeconds = request.spec.expirationSeconds ?? 3600;
    return {
      ...request,
      spec: { ...request.spec, expirationSeconds },
      status: { token: `token-${namespace}-${name}-${++this.tokenSerial}`, expirationTimestamp: new Date(this.now() + expirationSeconds * 1000) },
    };
  }
}

function key(namespace: string | undefined, name: string | undefined): string {
  return `${namespace ?? ''}/${name ?? ''}`;
}
