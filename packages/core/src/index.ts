export * from './clock.js';
export * from './logger.js';
export * from './backoff.js';
export * from './wait.js';
export * from './workqueue.js';
export * from './pod-update.js';
export * from './runtime-model.js';
export * from './pod-cache.js';
