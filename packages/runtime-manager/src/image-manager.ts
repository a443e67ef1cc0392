// Image pulling per imagePullPolicy with a per pod+image pull backoff (Go: pkg/kubelet/images
// image_manager.go and puller.go, kuberuntime_image.go).
import type { V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  abortReason,
  Backoff,
  containerSpecFieldPath,
  formatDuration,
  KubeletEventReason,
  podRef,
  realClock,
  type Clock,
  type EventRecorder,
  type Logger,
} from '@kubelet-ts/core';
import type { ImageService, runtimeapi } from '@kubelet-ts/cri-client';
import { grpcErrorText } from './helpers.js';

/** Image pull backoff of the Go kubelet: 10 s doubling to 300 s per pod+image. */
export const imagePullBackoff = (clock?: Clock): Backoff => new Backoff({ initialMs: 10_000, maxMs: 300_000, clock });

export type EnsureImageResult =
  | {
      ok: true;
      imageRef: string;
      /**
       * The runtime's ImageStatus of the image when it was read on the way (null: the runtime reported
       * none), for its user; undefined when it was not read.
       */
      image?: runtimeapi.Image | null;
    }
  | { ok: false; reason: 'ErrImagePull' | 'ImagePullBackOff' | 'ErrImageNeverPull' | 'InvalidImageName' | 'ImageInspectError'; message: string };

export interface ImageManagerOptions {
  imageService: ImageService;
  logger: Logger;
  recorder: EventRecorder;
  clock?: Clock;
  backoff?: Backoff;
  /** Go --serialize-image-pulls (default true): one pull at a time. */
  serializeImagePulls?: boolean;
}

/** The pull policy the API server would default: Always for :latest or untagged images, else IfNotPresent. */
export function defaultPullPolicy(image: string): 'Always' | 'IfNotPresent' {
  if (image.includes('@')) return 'IfNotPresent';
  const lastSlash = image.lastIndexOf('/');
  const lastComponent = image.slice(lastSlash + 1);
  const colon = lastComponent.lastIndexOf(':');
  if (colon < 0) return 'Always';
  return lastComponent.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent';
}

const imageReferencePattern = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?::[0-9]+)?(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$/;

/** Adds `:latest` to a reference without tag or digest; throws on an invalid reference (Go: applyDefaultImageTag). */
export function applyDefaultImageTag(image: string): string {
  if (!imageReferencePattern.test(image)) throw new Error(`couldn't parse image name ${JSON.stringify(image)}: invalid reference format`);
  if (image.includes('@')) return image;
  const lastComponent = image.slice(image.lastIndexOf('/') + 1);
  return lastComponent.includes(':') ? image : `${image}:latest`;
}

/** The registry host of an image reference, docker.io when it names none. */
export function registryOf(image: string): string {
  const slash = image.indexOf('/');
  if (slash < 0) return 'docker.io';
  const first = image.slice(0, slash);
  if (first.includes('.') || first.includes(':') || first === 'localhost') return first;
  return 'docker.io';
}

function normalizeRegistryKey(key: string): string {
  let host = key.replace(/^[a-z]+:\/\//, '');
  host = host.split('/')[0] ?? host;
  if (host === 'index.docker.io' || host === 'registry-1.docker.io') return 'docker.io';
  return host;
}

/** Credentials for the image's registry from dockerconfigjson / dockercfg pull secrets. */
export function authsForImage(image: string, secrets: V1Secret[]): runtimeapi.AuthConfigInit[] {
  const registry = registryOf(image);
  const auths: runtimeapi.AuthConfigInit[] = [];
  for (const secret of secrets) {
    const data = secret.data ?? {};
    let entries: Record<string, { username?: string; password?: string; auth?: string; identitytoken?: string; registrytoken?: string }> = {};
    try {
      if (data['.dockerconfigjson']) entries = JSON.parse(Buffer.from(data['.dockerconfigjson'], 'base64').toString('utf8')).auths ?? {};
      else if (data['.dockercfg']) entries = JSON.parse(Buffer.from(data['.dockercfg'], 'base64').toString('utf8'));
    } catch {
      continue;
    }
    for (const [key, entry] of Object.entries(entries)) {
      if (normalizeRegistryKey(key) !== registry) continue;
      let { username, password } = entry;
      if (entry.auth && (!username || !password)) {
        const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        if (colon >= 0) {
          username = decoded.slice(0, colon);
          password = decoded.slice(colon + 1);
        }
      }
      auths.push({
        username: username ?? '',
        password: password ?? '',
        serverAddress: key,
        identityToken: entry.identitytoken ?? '',
        registryToken: entry.registrytoken ?? '',
      });
    }
  }
  return auths;
}

/** Go's imageManager: EnsureImageExists over the CRI ImageService. */
export class ImageManager {
  readonly backoff: Backoff;
  private readonly clock: Clock;
  private pullChain: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: ImageManagerOptions) {
    this.clock = opts.clock ?? realClock;
    this.backoff = opts.backoff ?? imagePullBackoff(this.clock);
  }

  /** The image id when the runtime has the image, '' when not (Go: GetImageRef). */
  async getImageRef(spec: runtimeapi.ImageSpecInit, signal?: AbortSignal): Promise<string> {
    const response = await this.opts.imageService.imageStatus(spec, false, { signal });
    return response.image?.id ?? '';
  }

  /**
   * Makes sure the container's image is present, pulling it as its policy says. Checks ImageStatus
   * first for every policy: PullImage always contacts a registry, even for an imported image. When
   * `options.signal` aborts, the wait for a serialized pull and the pull itself are cancelled and the
   * promise rejects with the signal's reason (no failure event, no backoff).
   */
  async ensureImageExists(
    pod: V1Pod,
    container: V1Container,
    pullSecrets: V1Secret[],
    sandboxConfig: runtimeapi.PodSandboxConfigInit | undefined,
    runtimeHandler = '',
    options?: { signal?: AbortSignal },
  ): Promise<EnsureImageResult> {
    const signal = options?.signal;
    if (signal?.aborted) throw abortReason(signal);
    const imgRef = container.image ?? '';
    const event = (type: 'Normal' | 'Warning', reason: string, message: string) =>
      this.opts.recorder.event(pod, type, reason, message, { fieldPath: containerSpecFieldPath(pod, container.name), containerName: container.name });
    const log = this.opts.logger.with({ pod: podRef(pod), image: imgRef });

    let image: string;
    try {
      image = applyDefaultImageTag(imgRef);
    } catch (err) {
      const message = `Failed to apply default image tag ${JSON.stringify(imgRef)}: ${(err as Error).message}`;
      event('Warning', KubeletEventReason.FailedToInspectImage, message);
      log.warn(message);
      return { ok: false, reason: 'InvalidImageName', message };
    }
    const annotations = { ...(pod.metadata?.annotations ?? {}) };
    const spec: runtimeapi.ImageSpecInit = { image, annotations, runtimeHandler, userSpecifiedImage: imgRef };

    let imageRef: string;
    let status: runtimeapi.Image | null;
    try {
      status = (await this.opts.imageService.imageStatus(spec, false, { signal })).image ?? null;
      imageRef = status?.id ?? '';
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      const message = `Failed to inspect image ${JSON.stringify(image)}: ${grpcErrorText(err)}`;
      event('Warning', KubeletEventReason.FailedToInspectImage, message);
      log.warn(message);
      return { ok: false, reason: 'ImageInspectError', message };
    }
    const present = imageRef !== '';
    const policy = container.imagePullPolicy ?? defaultPullPolicy(imgRef);
    if (!shouldPullImage(policy, present)) {
      if (present) {
        event('Normal', KubeletEventReason.PulledImage, `Container image ${JSON.stringify(imgRef)} already present on machine`);
        return { ok: true, imageRef, image: status };
      }
      const message = `Container image ${JSON.stringify(imgRef)} is not present with pull policy of Never`;
      event('Warning', KubeletEventReason.ErrImageNeverPullPolicy, message);
      log.warn(message);
      return { ok: false, reason: 'ErrImageNeverPull', message };
    }

    const backoffKey = `${pod.metadata?.uid ?? ''}_${imgRef}`;
    if (this.backoff.isInBackOffSinceUpdate(backoffKey, this.clock.now())) {
      const message = `Back-off pulling image ${JSON.stringify(imgRef)}`;
      event('Normal', KubeletEventReason.BackOffPullImage, message);
      log.v(2).info(message);
      return { ok: false, reason: 'ImagePullBackOff', message };
    }

    event('Normal', KubeletEventReason.PullingImage, `Pulling image ${JSON.stringify(imgRef)}`);
    const queuedAt = this.clock.now();
    const auths = authsForImage(image, pullSecrets);
    const pull = async (): Promise<{ ref: string; pullMs: number }> => {
      const startedAt = this.clock.now();
      let lastError: unknown;
      for (const auth of auths.length > 0 ? auths : [undefined]) {
        try {
          const ref = await this.opts.imageService.pullImage(spec, auth, sandboxConfig, { signal });
          return { ref, pullMs: this.clock.now() - startedAt };
        } catch (err) {
          if (signal?.aborted) throw abortReason(signal);
          lastError = err;
        }
      }
      throw lastError;
    };
    let pulled: { ref: string; pullMs: number };
    try {
      pulled = await this.serialize(pull, signal);
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      event('Warning', KubeletEventReason.FailedToPullImage, `Failed to pull image ${JSON.stringify(imgRef)}: ${grpcErrorText(err)}`);
      log.warn('Failed to pull image', { err: grpcErrorText(err) });
      this.backoff.next(backoffKey, this.clock.now());
      return { ok: false, reason: 'ErrImagePull', message: grpcErrorText(err) };
    }
    let size = 0;
    let pulledImage: runtimeapi.Image | null | undefined;
    try {
      pulledImage = (await this.opts.imageService.imageStatus({ image: pulled.ref }, false, { signal })).image ?? null;
      size = Number(pulledImage?.size ?? 0);
    } catch {
      // the size is only for the event message; the runtime manager asks again for the image's user
    }
    const total = this.clock.now() - queuedAt;
    event(
      'Normal',
      KubeletEventReason.PulledImage,
      `Successfully pulled image ${JSON.stringify(imgRef)} in ${formatDuration(Math.round(pulled.pullMs))} (${formatDuration(Math.round(total))} including waiting). Image size: ${size} bytes.`,
    );
    this.backoff.gc();
    return { ok: true, imageRef: pulled.ref, image: pulledImage };
  }

  /**
   * Runs fn after every pull queued before it (Go: serialImagePuller). A caller whose signal aborts
   * while queued leaves at once; its turn passes to the next without pulling.
   */
  private async serialize<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.opts.serializeImagePulls === false) return fn();
    const turn = this.pullChain;
    let release!: () => void;
    this.pullChain = new Promise<void>((resolve) => (release = resolve));
    if (signal) {
      let onAbort: (() => void) | undefined;
      const aborted = new Promise<'aborted'>((resolve) => {
        onAbort = () => resolve('aborted');
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
      const outcome = await Promise.race([turn.then(() => 'turn' as const), aborted]);
      signal.removeEventListener('abort', onAbort!);
      if (outcome === 'aborted') {
        void turn.then(release);
        throw abortReason(signal);
      }
    } else {
      await turn;
    }
    try {
      return await fn();
    } finally {
      release();
    }
  }
}

/** Go: shouldPullImage. */
export function shouldPullImage(policy: string, present: boolean): boolean {
  if (policy === 'Never') return false;
  return policy === 'Always' || (policy === 'IfNotPresent' && !present);
}
