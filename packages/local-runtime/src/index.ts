export { LocalRuntime, type LocalRuntimeOptions, type SimulatedOptions } from './runtime.js';
export { SIMULATED_ANNOTATION_PREFIX, type SimulatedProbeType, type SimulatedProbeResult } from './simulation.js';
export { normalizeImageName, imageIdFor } from './images.js';
export { MAX_LOG_LINE_BYTES } from './log-writer.js';
export { LOCAL_RUNTIME_NAME, LOCAL_RUNTIME_VERSION } from './version.js';
