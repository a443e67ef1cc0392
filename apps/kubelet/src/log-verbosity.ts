import type { Logger, VerboseLogger } from '@kubelet-ts/core';

const MAX_VERBOSITY = 2 ** 31 - 1;
const disabled: VerboseLogger = { enabled: false, info: () => undefined };

/** A logger whose verbosity changes at run time (Go: klog's -v, set through PUT /debug/flags/v). */
export interface AdjustableLogger extends Logger {
  setVerbosity(level: number): void;
}

/**
 * Wraps a logger made with every level enabled (`create(MAX)`): v(level) is logged only while level <= the current
 * verbosity, shared by every logger derived with with().
 */
export function adjustableLogger(create: (verbosity: number) => Logger, initial: number): AdjustableLogger {
  const state = { verbosity: initial };
  const wrap = (inner: Logger): AdjustableLogger => ({
    info: (msg, kv) => inner.info(msg, kv),
    warn: (msg, kv) => inner.warn(msg, kv),
    error: (msg, err, kv) => inner.error(msg, err, kv),
    v: (level) => (level > state.verbosity ? disabled : inner.v(level)),
    with: (kv) => wrap(inner.with(kv)),
    setVerbosity: (level) => {
      state.verbosity = level;
    },
  });
  return wrap(create(MAX_VERBOSITY));
}

/** The setter of a logger made by adjustableLogger, if it is one. */
export function verbositySetter(logger: Logger): ((level: number) => void) | undefined {
  const setter = (logger as Partial<AdjustableLogger>).setVerbosity;
  return typeof setter === 'function' ? setter : undefined;
}
