// Original file: proto/api.proto


export interface RuntimeFeatures {
  'supplementalGroupsPolicy'?: (boolean);
}

export interface RuntimeFeatures__Output {
  'supplementalGroupsPolicy': (boolean);
}
