import { GrpcCaller, type RemoteClientOptions } from './grpc-caller.js';
import { loadCriServices } from './proto.js';
import type * as api from './runtimeapi.js';
import type { CallOptions, ImageService } from './services.js';

export interface RemoteImageServiceOptions extends RemoteClientOptions {
  /** Deadline of PullImage in ms. Default 0: no deadline, as the Go kubelet (pulls are cancelled, not timed out). */
  pullTimeoutMs?: number;
}

const image = (spec: api.ImageSpecInit) => `image ${JSON.stringify(spec.image ?? '')}`;

/** ImageService over gRPC; like RemoteRuntimeService it survives runtime restarts. */
export class RemoteImageService implements ImageService {
  private readonly caller: GrpcCaller;
  private readonly pullTimeoutMs: number;

  constructor(options: RemoteImageServiceOptions) {
    this.caller = new GrpcCaller('ImageService', () => loadCriServices().ImageService, options);
    this.pullTimeoutMs = options.pullTimeoutMs ?? 0;
  }

  get endpoint(): string {
    return this.caller.endpoint;
  }

  async listImages(filter?: api.ImageFilterInit, options?: CallOptions): Promise<api.Image[]> {
    const response = await this.caller.unary<api.ListImagesResponse>('ListImages', { filter }, undefined, options);
    return response.images;
  }

  imageStatus(spec: api.ImageSpecInit, verbose = false, options?: CallOptions): Promise<api.ImageStatusResponse> {
    return this.caller.unary('ImageStatus', { image: spec, verbose }, image(spec), options);
  }

  async pullImage(
    spec: api.ImageSpecInit,
    auth?: api.AuthConfigInit,
    sandboxConfig?: api.PodSandboxConfigInit,
    options?: CallOptions,
  ): Promise<string> {
    const response = await this.caller.unary<api.PullImageResponse>(
      'PullImage',
      { image: spec, auth, sandboxConfig },
      image(spec),
      options,
      this.pullTimeoutMs,
    );
    return response.imageRef;
  }

  async removeImage(spec: api.ImageSpecInit, options?: CallOptions): Promise<void> {
    await this.caller.unary('RemoveImage', { image: spec }, image(spec), options);
  }

  imageFsInfo(options?: CallOptions): Promise<api.ImageFsInfoResponse> {
    return this.caller.unary('ImageFsInfo', {}, undefined, options);
  }

  close(): void {
    this.caller.close();
  }
}
