// Original file: proto/api.proto


export interface RuntimeConfigRequest {
}

export interface RuntimeConfigRequest__Output {
}
