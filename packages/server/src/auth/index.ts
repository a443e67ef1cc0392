// Authentication and authorization of the kubelet's HTTPS API (Go: pkg/kubelet/server/auth.go,
// cmd/kubelet/app/auth.go and the k8s.io/apiserver pieces they assemble).
export * from './types.js';
export * from './attributes.js';
export * from './expiring-cache.js';
export * from './webhook.js';
export * from './x509.js';
export * from './token.js';
export * from './union.js';
export * from './authorizer.js';
export * from './filter.js';
export * from './builders.js';
