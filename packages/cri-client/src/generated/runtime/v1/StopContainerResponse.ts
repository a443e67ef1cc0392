// Original file: proto/api.proto


export interface StopContainerResponse {
}

export interface StopContainerResponse__Output {
}
