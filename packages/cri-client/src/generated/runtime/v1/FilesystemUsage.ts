// Original file: proto/api.proto

import type { FilesystemIdentifier as _runtime_v1_FilesystemIdentifier, FilesystemIdentifier__Output as _runtime_v1_FilesystemIdentifier__Output } from '../../runtime/v1/FilesystemIdentifier.js';
import type { UInt64Value as _runtime_v1_UInt64Value, UInt64Value__Output as _runtime_v1_UInt64Value__Output } from '../../runtime/v1/UInt64Value.js';
import type { Long } from '@grpc/proto-loader';

export interface FilesystemUsage {
  'timestamp'?: (number | string | Long);
  'fsId'?: (_runtime_v1_FilesystemIdentifier | null);
  'usedBytes'?: (_runtime_v1_UInt64Value | null);
  'inodesUsed'?: (_runtime_v1_UInt64Value | null);
}

export interface FilesystemUsage__Output {
  'timestamp': (number);
  'fsId': (_runtime_v1_FilesystemIdentifier__Output | null);
  'usedBytes': (_runtime_v1_UInt64Value__Output | null);
  'inodesUsed': (_runtime_v1_UInt64Value__Output | null);
}
