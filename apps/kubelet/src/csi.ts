// The kubelet's CSI wiring (Go: NewMainKubelet's pluginManager with the CSI and device plugin registration
// handlers, csi.ProbeVolumePlugins and the nodeinfomanager): drivers register through sockets in
// <root-dir>/plugins_registry, are installed on the node's CSINode, and their volumes are set up by the CSI
// volume plugin.
import { join } from 'node:path';
import { instanceCachingFactory, type DependencyContainer } from 'tsyringe';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock, Logger } from '@kubelet-ts/core';
import {
  CsiDriverRegistry,
  CsiRegistrationHandler,
  CsiVolumePlugin,
  NodeInfoManager,
  PluginWatcher,
  CSI_PLUGIN_TYPE,
  DEVICE_PLUGIN_TYPE,
  createCsiApiGetters,
  createNodeInfoApi,
} from '@kubelet-ts/csi';
import type { DeviceManager } from '@kubelet-ts/device-manager';
import type { Mounter } from '@kubelet-ts/volume-manager';
import type { KubeletConfig } from './config.js';
import { Tokens } from './container.js';

const singleton = <T>(factory: (c: DependencyContainer) => T) => ({ useFactory: instanceCachingFactory<T>(factory) });

/** Registers the CSI driver registry, the node info manager, the plugin watcher and the CSI volume plugin. */
export function registerCsiDeps(c: DependencyContainer, config: KubeletConfig): void {
  c.register<CsiDriverRegistry>(Tokens.CsiDrivers, singleton(() => new CsiDriverRegistry()));
  // API server mode only: a standalone kubelet's drivers register without CSINode bookkeeping.
  c.register<NodeInfoManager | undefined>(
    Tokens.CsiNodeInfo,
    singleton((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      if (!kubeConfig) return undefined;
      return new NodeInfoManager({
        nodeName: config.nodeName,
        api: createNodeInfoApi(kubeConfig),
        clock: c.resolve<Clock>(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'csi' }),
      });
    }),
  );
  c.register<PluginWatcher>(
    Tokens.PluginWatcher,
    singleton((c) => {
      const logger = c.resolve<Logger>(Tokens.Logger);
      // Go: the device manager's GetWatcherHandler, for device plugins that register through plugins_registry.
      const devicePlugins = c.resolve<DeviceManager | undefined>(Tokens.DeviceManager)?.watcherHandler();
      return new PluginWatcher({
        rootDir: config.rootDir,
        handlers: {
          [CSI_PLUGIN_TYPE]: new CsiRegistrationHandler({
            registry: c.resolve<CsiDriverRegistry>(Tokens.CsiDrivers),
            nodeInfo: c.resolve<NodeInfoManager | undefined>(Tokens.CsiNodeInfo),
            logger: logger.with({ component: 'csi' }),
          }),
          ...(devicePlugins ? { [DEVICE_PLUGIN_TYPE]: devicePlugins } : {}),
        },
        clock: c.resolve<Clock>(Tokens.Clock),
        logger: logger.with({ component: 'plugin-manager' }),
      });
    }),
  );
  c.register<CsiVolumePlugin>(
    Tokens.CsiVolumePlugin,
    singleton((c) => {
      const kubeConfig = c.resolve<KubeConfig | undefined>(Tokens.KubeConfig);
      const objects = kubeConfig && createCsiApiGetters(kubeConfig);
      return new CsiVolumePlugin({
        drivers: c.resolve<CsiDriverRegistry>(Tokens.CsiDrivers),
        csiDrivers: objects,
        attachments: objects,
        nodeName: config.nodeName,
        pluginsDir: join(config.rootDir, 'plugins'),
        inlineVolumes: config.featureGates.CSIInlineVolume ?? true,
        mounter: c.resolve<Mounter>(Tokens.Mounter),
        clock: c.resolve<Clock>(Tokens.Clock),
        logger: c.resolve<Logger>(Tokens.Logger).with({ component: 'csi' }),
      });
    }),
  );
}
