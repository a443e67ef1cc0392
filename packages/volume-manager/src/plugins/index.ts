// The plugins the kubelet ships (Go: ProbeVolumePlugins, narrowed to what a node without attach/detach
// and without CSI can set up itself).
import type { VolumePlugin } from '../types.js';
import { EmptyDirPlugin } from './empty-dir.js';
import { HostPathPlugin } from './host-path.js';
import { PersistentClaimPlugin } from './pvc.js';
import { ConfigMapPlugin } from './configmap.js';
import { SecretPlugin } from './secret.js';
import { DownwardAPIPlugin } from './downward-api.js';
import { ProjectedPlugin } from './projected.js';

export function defaultVolumePlugins(): VolumePlugin[] {
  return [new EmptyDirPlugin(), new HostPathPlugin(), new ConfigMapPlugin(), new SecretPlugin(), new DownwardAPIPlugin(), new ProjectedPlugin(), new PersistentClaimPlugin()];
}
