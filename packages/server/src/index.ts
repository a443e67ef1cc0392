export { KubeletServer, HostNotFoundError, metricsPathBucket, type KubeletServerOptions, type ServerHost, type RequestGate, type MetricsSource, type HttpRequestLabels, type ServerTLSOptions } from './server.js';
export { HealthzServer, serveHealthz, type HealthzCheck } from './healthz.js';
export { generateSelfSignedCertKey, loadOrCreateServingCert, type CertKeyPair, type ServingCertOptions } from './certs.js';
export { parseStreamOptions, parsePortForwardPorts, isUpgradeRequest, proxyUpgradedConnection, StreamRequestError, type StreamOptions } from './streaming.js';
export { serveNodeLogs } from './node-logs.js';
export * from './metrics.js';
export * from './auth/index.js';
