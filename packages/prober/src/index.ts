export {
  type ProbeOutcome,
  type ProbeResponse,
  MAX_PROBE_OUTPUT_BYTES,
  DEFAULT_PROBE_USER_AGENT,
  probeUserAgent,
} from './probe.js';
export { execProbe, expandCommand, isExecTimeout, type ExecRunner, type ExecSyncOutput } from './exec.js';
export { httpProbe, httpGetUrl, probeRequestHeaders, createProbeAgent, type HttpProbeOptions, type ProbeHeaders } from './http.js';
export { tcpProbe, type TcpProbeOptions } from './tcp.js';
export { grpcProbe, healthCheckService, type GrpcProbeOptions } from './grpc.js';
export { ResultsManager, type ProbeResult, type ProbeResultLookup, type ResultUpdate, type ResultsManagerOptions } from './results.js';
export {
  Prober,
  MAX_PROBE_RETRIES,
  probeTypeName,
  probeSpecOf,
  type ProbeType,
  type ContainerProber,
  type ProberOptions,
} from './prober.js';
export { Worker, probeSettings, type ProbeSettings, type ProbeWorkerInfo, type WorkerContext } from './worker.js';
export { ProbeManager, type ProbeManagerOptions, type ProbeManagerInterface } from './manager.js';
