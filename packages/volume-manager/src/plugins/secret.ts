// The secret volume plugin (Go: pkg/volume/secret): a Secret's keys as files, on tmpfs so that
// secrets never reach the node's disk.
import type { V1KeyToPath, V1Secret, V1Volume } from '@kubernetes/client-node';
import { isNotFound } from '@kubelet-ts/core';
import type { FileProjection } from '../atomic-writer.js';
import { VolumeSetupError, type MountedVolume, type VolumeContext, type VolumeHost, type VolumePlugin } from '../types.js';
import { DEFAULT_MODE, podLogName, setUpApiVolume, tearDownApiVolume, type ApiVolumePluginOptions } from './api-volume.js';

export const SECRET_PLUGIN_NAME = 'kubernetes.io/secret';

/**
 * Go: secret.MakePayload: the Secret's data (base64 in the API object, decoded here) as files with
 * defaultMode, or only the listed items. stringData is write-only: the API server folds it into data.
 */
export function makeSecretPayload(
  items: V1KeyToPath[] | undefined,
  secret: V1Secret,
  defaultMode: number | undefined,
  optional: boolean,
): Map<string, FileProjection> {
  const mode = defaultMode ?? DEFAULT_MODE;
  const data = secret.data ?? {};
  const payload = new Map<string, FileProjection>();
  if (!items || items.length === 0) {
    for (const [name, value] of Object.entries(data)) payload.set(name, { data: Buffer.from(value, 'base64'), mode });
    return payload;
  }
  for (const ktp of items) {
    if (!Object.hasOwn(data, ktp.key)) {
      if (optional) continue;
      throw new VolumeSetupError(`references non-existent secret key: ${ktp.key}`);
    }
    payload.set(ktp.path, { data: Buffer.from(data[ktp.key], 'base64'), mode: ktp.mode ?? mode });
  }
  return payload;
}

export class SecretPlugin implements VolumePlugin {
  readonly name = SECRET_PLUGIN_NAME;
  readonly requiresRemount = true;

  constructor(private readonly opts: ApiVolumePluginOptions = {}) {}

  canSupport(volume: V1Volume): boolean {
    return volume.secret !== undefined && volume.secret !== null;
  }

  async setUp(ctx: VolumeContext): Promise<MountedVolume> {
    const source = ctx.volume.secret!;
    const namespace = ctx.pod.metadata?.namespace ?? '';
    const name = source.secretName ?? '';
    const optional = source.optional === true;
    ctx.host.logger.v(3).info('Setting up volume', { volume: ctx.volume.name, pod: ctx.pod.metadata?.uid, dir: ctx.dir });
    let secret: V1Secret;
    try {
      secret = await ctx.host.secrets.getSecret(namespace, name);
    } catch (err) {
      if (!(isNotFound(err) && optional)) {
        ctx.host.logger.error("Couldn't get secret", err, { secret: `${namespace}/${name}` });
        throw err;
      }
      secret = { metadata: { namespace, name } };
    }
    ctx.host.logger.v(3).info('Received secret', {
      secret: `${namespace}/${name}`,
      pieces: Object.keys(secret.data ?? {}).length,
      pod: podLogName(ctx.pod),
    });
    const payload = makeSecretPayload(source.items, secret, source.defaultMode, optional);
    return setUpApiVolume(ctx, 'memory', payload, this.opts);
  }

  tearDown(dir: string, host: VolumeHost): Promise<void> {
    return tearDownApiVolume(dir, host);
  }
}
