import type { KubeConfig } from '@kubernetes/client-node';
import { PodSource, defaultLogger, type Clock, type EventRecorder, type Logger } from '@kubelet-ts/core';
import { ApiserverSource, type ApiPodSource, type PodListerWatcher } from './apiserver-source.js';
import { PodConfig, type PodConfigMode } from './config.js';
import { FileSource } from './file-source.js';
import { HttpSource, parseManifestUrlHeader, type ManifestUrlHeader } from './http-source.js';
import type { SharedPodWatch } from './shared-pod-watch.js';

export interface PodSourceConfigOptions {
  nodeName: string;
  /** staticPodPath: a manifest file or directory. */
  staticPodPath?: string;
  /** fileCheckFrequency. Default 20 s. */
  fileCheckFrequencyMs?: number;
  /** staticPodURL */
  staticPodURL?: string;
  /** staticPodURLHeader: `key:value` or a map of header name to values. */
  staticPodURLHeader?: ManifestUrlHeader;
  /** httpCheckFrequency. Default 20 s. */
  httpCheckFrequencyMs?: number;
  /** Adds the API server source (Go: when a kube client exists). */
  kubeConfig?: KubeConfig;
  /** Instead of kubeConfig: the list/watch the API server source uses (tests). */
  podListerWatcher?: PodListerWatcher;
  /**
   * The API server source is this node's share of a watch of many nodes' pods (a fleet) instead of a
   * watch of its own: kubeConfig and podListerWatcher are then not used for pods. stop() unsubscribes
   * only this node; the watch is started and stopped by its owner.
   */
  sharedPodWatch?: SharedPodWatch;
  /** The API server source starts once this is true (Go: the node is registered). */
  nodeHasSynced?: () => boolean;
  /** Default 'incremental', as the kubelet. */
  mode?: PodConfigMode;
  /** Update buffer size before sources wait. Default 50. */
  bufferSize?: number;
  clock?: Clock;
  logger?: Logger;
  recorder?: EventRecorder;
}

/** What makePodSourceConfig built: the merged config and the running sources. */
export interface PodSourceConfig {
  podConfig: PodConfig;
  file?: FileSource;
  http?: HttpSource;
  /** An ApiserverSource, or a NodePodSource of sharedPodWatch. */
  api?: ApiPodSource;
  /** Stops every source and closes the config (ending its updates stream). */
  stop(): Promise<void>;
}

/**
 * Go's makePodSourceConfig: one PodConfig with a file source (staticPodPath), an HTTP source
 * (staticPodURL, headers validated first) and an API server source (kubeConfig, or a node source of
 * sharedPodWatch), each on its own channel, started at once. Throws before starting anything when the options are invalid.
 */
export function makePodSourceConfig(opts: PodSourceConfigOptions): PodSourceConfig {
  if (!opts.nodeName) throw new Error('nodeName is required');
  const logger = opts.logger ?? defaultLogger;
  // Validate everything before anything starts.
  const header = parseManifestUrlHeader(opts.staticPodURLHeader);
  if (opts.staticPodURL) new URL(opts.staticPodURL);

  const podConfig = new PodConfig({ mode: opts.mode ?? 'incremental', clock: opts.clock, logger, recorder: opts.recorder, bufferSize: opts.bufferSize });
  const result: PodSourceConfig = {
    podConfig,
    async stop() {
      await Promise.all([result.file?.stop(), result.http?.stop(), result.api?.stop()]);
      podConfig.close();
    },
  };
  if (opts.staticPodPath) {
    logger.info('Adding static pod path', { path: opts.staticPodPath });
    result.file = new FileSource({
      path: opts.staticPodPath,
      nodeName: opts.nodeName,
      periodMs: opts.fileCheckFrequencyMs,
      sink: podConfig.channel(PodSource.File),
      clock: opts.clock,
      logger,
    });
  }
  if (opts.staticPodURL) {
    logger.info('Adding pod URL with HTTP header', { URL: opts.staticPodURL, header: Object.keys(header) });
    result.http = new HttpSource({
      url: opts.staticPodURL,
      header,
      nodeName: opts.nodeName,
      periodMs: opts.httpCheckFrequencyMs,
      sink: podConfig.channel(PodSource.HTTP),
      clock: opts.clock,
      logger,
    });
  }
  if (opts.sharedPodWatch) {
    logger.info('Adding apiserver pod source (shared pod watch)');
    result.api = opts.sharedPodWatch.nodeSource({
      nodeName: opts.nodeName,
      nodeHasSynced: opts.nodeHasSynced,
      sink: podConfig.channel(PodSource.API),
      logger,
    });
  } else if (opts.kubeConfig || opts.podListerWatcher) {
    logger.info('Adding apiserver pod source');
    result.api = new ApiserverSource({
      nodeName: opts.nodeName,
      kubeConfig: opts.kubeConfig,
      listerWatcher: opts.podListerWatcher,
      nodeHasSynced: opts.nodeHasSynced,
      sink: podConfig.channel(PodSource.API),
      clock: opts.clock,
      logger,
    });
  }
  result.file?.start();
  result.http?.start();
  result.api?.start();
  return result;
}
