// Original file: proto/api.proto


export interface RemoveContainerResponse {
}

export interface RemoveContainerResponse__Output {
}
