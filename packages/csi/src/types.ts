// The contracts between the parts of this package: the CSI node service as the kubelet calls it (CSI
// spec v1, messages as @grpc/proto-loader gives them with camelCase fields, enums as strings, int64 as
// number), and the registry of drivers the plugin watcher fills and the volume plugin reads.
import type { V1CSIDriver, V1VolumeAttachment } from '@kubernetes/client-node';

/** csi.v1.VolumeCapability.AccessMode.Mode. */
export type CsiAccessMode =
  | 'UNKNOWN'
  | 'SINGLE_NODE_WRITER'
  | 'SINGLE_NODE_READER_ONLY'
  | 'MULTI_NODE_READER_ONLY'
  | 'MULTI_NODE_SINGLE_WRITER'
  | 'MULTI_NODE_MULTI_WRITER'
  | 'SINGLE_NODE_SINGLE_WRITER'
  | 'SINGLE_NODE_MULTI_WRITER';

/** csi.v1.VolumeCapability: exactly one of block or mount. */
export interface CsiVolumeCapability {
  block?: Record<string, never>;
  mount?: { fsType: string; mountFlags: string[]; volumeMountGroup?: string };
  accessMode: { mode: CsiAccessMode };
}

export interface NodeStageVolumeRequest {
  volumeId: string;
  publishContext: Record<string, string>;
  stagingTargetPath: string;
  volumeCapability: CsiVolumeCapability;
  secrets: Record<string, string>;
  volumeContext: Record<string, string>;
}

export interface NodeUnstageVolumeRequest {
  volumeId: string;
  stagingTargetPath: string;
}

export interface NodePublishVolumeRequest {
  volumeId: string;
  publishContext: Record<string, string>;
  /** Set when the driver offers STAGE_UNSTAGE_VOLUME. */
  stagingTargetPath?: string;
  targetPath: string;
  volumeCapability: CsiVolumeCapability;
  readonly: boolean;
  secrets: Record<string, string>;
  volumeContext: Record<string, string>;
}

export interface NodeUnpublishVolumeRequest {
  volumeId: string;
  targetPath: string;
}

export interface NodeGetVolumeStatsRequest {
  volumeId: string;
  volumePath: string;
  stagingTargetPath?: string;
}

/** csi.v1.VolumeUsage. */
export interface CsiVolumeUsage {
  available: number;
  total: number;
  used: number;
  unit: 'UNKNOWN' | 'BYTES' | 'INODES';
}

export interface NodeGetVolumeStatsResponse {
  usage: CsiVolumeUsage[];
  volumeCondition?: { abnormal: boolean; message: string };
}

export interface NodeExpandVolumeRequest {
  volumeId: string;
  volumePath: string;
  capacityRange?: { requiredBytes: number; limitBytes: number };
  stagingTargetPath?: string;
  volumeCapability?: CsiVolumeCapability;
}

/** csi.v1.NodeServiceCapability.RPC.Type. */
export type CsiNodeCapability =
  | 'UNKNOWN'
  | 'STAGE_UNSTAGE_VOLUME'
  | 'GET_VOLUME_STATS'
  | 'EXPAND_VOLUME'
  | 'VOLUME_CONDITION'
  | 'SINGLE_NODE_MULTI_WRITER'
  | 'VOLUME_MOUNT_GROUP';

export interface NodeGetInfoResponse {
  nodeId: string;
  /** 0: the driver sets no limit. */
  maxVolumesPerNode: number;
  accessibleTopology?: { segments: Record<string, string> };
}

/**
 * The CSI Node service of one driver, as the kubelet calls it (Go: csiClient). Every call rejects with a
 * {@link CsiCallError} carrying the gRPC status code; messages read as Go's do: `rpc error: code = X desc = Y`.
 */
export interface CsiNodeClient {
  nodeGetInfo(signal?: AbortSignal): Promise<NodeGetInfoResponse>;
  nodeGetCapabilities(signal?: AbortSignal): Promise<CsiNodeCapability[]>;
  nodeStageVolume(request: NodeStageVolumeRequest, signal?: AbortSignal): Promise<void>;
  nodeUnstageVolume(request: NodeUnstageVolumeRequest, signal?: AbortSignal): Promise<void>;
  nodePublishVolume(request: NodePublishVolumeRequest, signal?: AbortSignal): Promise<void>;
  nodeUnpublishVolume(request: NodeUnpublishVolumeRequest, signal?: AbortSignal): Promise<void>;
  nodeGetVolumeStats(request: NodeGetVolumeStatsRequest, signal?: AbortSignal): Promise<NodeGetVolumeStatsResponse>;
  nodeExpandVolume(request: NodeExpandVolumeRequest, signal?: AbortSignal): Promise<{ capacityBytes: number }>;
  close(): void;
}

/** A driver registered through the plugin watcher (Go: csiDriversStore's Driver). */
export interface RegisteredCsiDriver {
  name: string;
  /** The driver's CSI socket (`unix://` prefix stripped), as GetInfo's endpoint gave it. */
  endpoint: string;
  /** The versions GetInfo named (e.g. `1.0.0`); the highest supported is used. */
  highestSupportedVersion: string;
}

/**
 * Where the volume plugin finds a driver's client. `client` throws Go's error when the driver is not
 * registered: `driver name <name> not found in the list of registered CSI drivers`.
 */
export interface CsiDriverLookup {
  has(driverName: string): boolean;
  client(driverName: string): CsiNodeClient;
}

/** Reads CSIDriver objects (storage.k8s.io/v1); resolves undefined when there is none of that name. */
export interface CsiDriverObjectGetter {
  getCSIDriver(name: string, signal?: AbortSignal): Promise<V1CSIDriver | undefined>;
}

/** Reads VolumeAttachment objects (storage.k8s.io/v1); resolves undefined when there is none of that name. */
export interface VolumeAttachmentGetter {
  getVolumeAttachment(name: string, signal?: AbortSignal): Promise<V1VolumeAttachment | undefined>;
}
