// Original file: proto/api.proto


export interface ReopenContainerLogRequest {
  'containerId'?: (string);
}

export interface ReopenContainerLogRequest__Output {
  'containerId': (string);
}
