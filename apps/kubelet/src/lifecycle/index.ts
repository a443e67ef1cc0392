export * from './admission.js';
export * from './predicate.js';
export * from './node-info.js';
export * from './node-selection.js';
export * from './sysctl.js';
export * from './active-deadline.js';
export * from './apparmor.js';
