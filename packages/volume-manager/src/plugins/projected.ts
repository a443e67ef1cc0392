// The projected volume plugin (Go: pkg/volume/projected): secrets, configMaps, downward API files
// and service account tokens merged into one directory, on tmpfs.
import type { AuthenticationV1TokenRequest, V1ConfigMap, V1Pod, V1ProjectedVolumeSource, V1Secret, V1Volume } from '@kubernetes/client-node';
import { isNotFound } from '@kubelet-ts/core';
import type { FileProjection } from '../atomic-writer.js';
import type { MountedVolume, VolumeContext, VolumeHost, VolumePlugin } from '../types.js';
import {
  aggregateErrors,
  DEFAULT_MODE,
  podLogName,
  podUidOfVolumeDir,
  setUpApiVolume,
  tearDownApiVolume,
  type ApiVolumePluginOptions,
} from './api-volume.js';
import { makeConfigMapPayload } from './configmap.js';
import { collectDownwardAPIData } from './downward-api.js';
import { makeSecretPayload } from './secret.js';

export const PROJECTED_PLUGIN_NAME = 'kubernetes.io/projected';

/** The API default of serviceAccountToken.expirationSeconds. */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;

/** Go: the TokenRequest a serviceAccountToken source asks for, bound to the pod. */
export function serviceAccountTokenRequest(pod: V1Pod, audience: string | undefined, expirationSeconds: number | undefined): AuthenticationV1TokenRequest {
  return {
    spec: {
      audiences: audience ? [audience] : [],
      expirationSeconds: expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS,
      boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' },
    },
  };
}

/**
 * Go: projectedVolumeMounter.collectData: each source's files in order, a later source's file
 * replacing an earlier one at the same path (the API refuses such overlaps; Go lets the last win).
 * Every source is tried and the failures come back as Go's aggregate. With fsGroup set the token is
 * written 0600, and the ownership pass then opens it to the group (0640).
 */
export async function collectProjectedData(
  source: V1ProjectedVolumeSource,
  pod: V1Pod,
  host: Pick<VolumeHost, 'configMaps' | 'secrets' | 'tokens' | 'node' | 'logger'>,
  fsGroup?: number,
): Promise<Map<string, FileProjection>> {
  const defaultMode = source.defaultMode ?? DEFAULT_MODE;
  const namespace = pod.metadata?.namespace ?? '';
  const errs: unknown[] = [];
  const payload = new Map<string, FileProjection>();
  const merge = (files: Map<string, FileProjection>) => {
    for (const [path, projection] of files) payload.set(path, projection);
  };
  for (const projection of source.sources ?? []) {
    try {
      if (projection.secret) {
        const ref = projection.secret;
        const optional = ref.optional === true;
        let secret: V1Secret;
        try {
          secret = await host.secrets.getSecret(namespace, ref.name ?? '');
        } catch (err) {
          if (!(isNotFound(err) && optional)) {
            host.logger.error("Couldn't get secret", err, { secret: `${namespace}/${ref.name ?? ''}` });
            throw err;
          }
          secret = { metadata: { namespace, name: ref.name } };
        }
        merge(makeSecretPayload(ref.items, secret, defaultMode, optional));
      } else if (projection.configMap) {
        const ref = projection.configMap;
        const optional = ref.optional === true;
        let configMap: V1ConfigMap;
        try {
          configMap = await host.configMaps.getConfigMap(namespace, ref.name ?? '');
        } catch (err) {
          if (!(isNotFound(err) && optional)) {
            host.logger.error("Couldn't get configMap", err, { configMap: `${namespace}/${ref.name ?? ''}` });
            throw err;
          }
          configMap = { metadata: { namespace, name: ref.name } };
        }
        merge(makeConfigMapPayload(ref.items, configMap, defaultMode, optional));
      } else if (projection.downwardAPI) {
        merge(collectDownwardAPIData(projection.downwardAPI.items, pod, host.node, defaultMode));
      } else if (projection.serviceAccountToken) {
        const tp = projection.serviceAccountToken;
        const request = serviceAccountTokenRequest(pod, tp.audience, tp.expirationSeconds);
        const token = await host.tokens.getServiceAccountToken(namespace, pod.spec?.serviceAccountName ?? '', request);
        const mode = fsGroup !== undefined && fsGroup !== null ? 0o600 : defaultMode;
        payload.set(tp.path, { data: token.status?.token ?? '', mode });
      }
    } catch (err) {
      errs.push(err);
    }
  }
  const err = aggregateErrors(errs);
  if (err) throw err;
  return payload;
}

export class ProjectedPlugin implements VolumePlugin {
  readonly name = PROJECTED_PLUGIN_NAME;
  readonly requiresRemount = true;

  constructor(private readonly opts: ApiVolumePluginOptions = {}) {}

  canSupport(volume: V1Volume): boolean {
    return volume.projected !== undefined && volume.projected !== null;
  }

  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    ctx.host.logger.v(3).info('Setting up volume', { volume: ctx.volume.name, pod: ctx.pod.metadata?.uid, dir: ctx.dir });
    let data: Map<string, FileProjection>;
    try {
      data = await collectProjectedData(ctx.volume.projected!, ctx.pod, ctx.host, ctx.fsGroup);
    } catch (err) {
      ctx.host.logger.error('Error preparing data for projected volume', err, { volume: ctx.volume.name, pod: podLogName(ctx.pod) });
      throw err;
    }
    return setUpApiVolume(ctx, 'memory', data, this.opts);
  }

  /** Also forgets the pod's cached tokens, as Go's TearDownAt does. */
  async tearDown(dir: string, host: VolumeHost): Promise<void> {
    await tearDownApiVolume(dir, host);
    const uid = podUidOfVolumeDir(host.podsDir, dir);
    if (uid !== undefined) host.tokens.deleteServiceAccountToken?.(uid);
  }
}
