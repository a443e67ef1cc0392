// Simulated mode's pod-annotation conventions: how a simulated container behaves (start delay, exit, usage, probe
// results, image size, log), read from the pod's annotations as the kubelet hands them to RunPodSandbox and to
// PullImage's sandbox config. `simulated.kubelet-ts.io/<key>` applies to every container of the pod,
// `simulated.kubelet-ts.io/<key>.<container-name>` to one container, overriding it.
import { createHash } from 'node:crypto';
import { parseDuration, quantityMilliValue, quantityValue, type Logger } from '@kubelet-ts/core';

/** The prefix of every simulation annotation. */
export const SIMULATED_ANNOTATION_PREFIX = 'simulated.kubelet-ts.io/';

/** The probes a simulated container answers. */
export type SimulatedProbeType = 'readiness' | 'liveness' | 'startup';
/** A simulated probe's result. */
export type SimulatedProbeResult = 'success' | 'failure';

/** A probe's scripted behaviour: `result` from `afterMs` after the container's start, the other result before. */
export interface ProbeBehaviour {
  result: SimulatedProbeResult;
  afterMs: number;
}

/** How one simulated container behaves (the annotations resolved over the runtime's defaults). */
export interface ContainerSimulation {
  startDelayMs: number;
  /** Exits this long after each start; undefined: runs until stopped. */
  exitAfterMs: number | undefined;
  exitCode: number;
  /** CPU used while running, in nanocores (1m = 1e6). */
  cpuNanoCores: number;
  /** Working set while running, bytes. */
  memoryBytes: number;
  readiness: ProbeBehaviour;
  liveness: ProbeBehaviour;
  startup: ProbeBehaviour;
  /** Written to the log at each start; undefined: `simulated container <name> started`. */
  log: string | undefined;
}

type Key = 'start-delay' | 'exit-after' | 'exit-code' | 'cpu' | 'memory' | 'readiness' | 'liveness' | 'startup' | 'log';
type Parsed = Partial<{
  'start-delay': number;
  'exit-after': number;
  'exit-code': number;
  cpu: number;
  memory: number;
  readiness: ProbeBehaviour;
  liveness: ProbeBehaviour;
  startup: ProbeBehaviour;
  log: string;
}>;

const DEFAULT_CPU_NANO_CORES = 1_000_000; // 1m
const DEFAULT_MEMORY_BYTES = 4 * 1024 * 1024; // 4Mi
const ALWAYS_SUCCEEDS: ProbeBehaviour = Object.freeze({ result: 'success', afterMs: 0 });
const MIB = 1024 * 1024;

function duration(value: string): number {
  const ms = parseDuration(value);
  if (!(ms >= 0) || !Number.isFinite(ms)) throw new Error('a duration must not be negative');
  return ms;
}

function nonNegativeQuantity(value: string, milli: boolean): number {
  const n = milli ? quantityMilliValue(value.trim()) : quantityValue(value.trim());
  if (n < 0) throw new Error('a quantity must not be negative');
  return n;
}

function probe(value: string): ProbeBehaviour {
  const text = value.trim();
  if (text === 'success' || text === 'failure') return { result: text, afterMs: 0 };
  const match = /^(success|failure)-after=(.+)$/.exec(text);
  if (!match) throw new Error('want success, failure, success-after=<duration> or failure-after=<duration>');
  const afterMs = duration(match[2]);
  return { result: match[1] as SimulatedProbeResult, afterMs };
}

const parsers: Record<Key, (value: string) => Parsed[Key]> = {
  'start-delay': duration,
  'exit-after': duration,
  'exit-code': (value) => {
    const text = value.trim();
    if (!/^\d{1,3}$/.test(text) || Number(text) > 255) throw new Error('want an exit code from 0 to 255');
    return Number(text);
  },
  cpu: (value) => nonNegativeQuantity(value, true) * 1_000_000,
  memory: (value) => nonNegativeQuantity(value, false),
  readiness: probe,
  liveness: probe,
  startup: probe,
  log: (value) => value,
};

/** The runtime-wide defaults a pod's annotations override (SimulatedOptions). */
export interface SimulationDefaults {
  startDelayMs: number;
  exitAfterMs?: number;
  exitCode: number;
}

/** The simulation annotations of one pod, parsed once (at RunPodSandbox); bad values warned about and dropped. */
export class PodSimulation {
  private readonly all: Parsed = {};
  private readonly byContainer = new Map<string, Parsed>();
  private readonly resolved = new Map<string, ContainerSimulation>();

  constructor(
    annotations: Record<string, string> | undefined,
    private readonly pod: string,
    private readonly defaults: SimulationDefaults,
    logger: Logger,
  ) {
    for (const annotation in annotations) {
      if (!annotation.startsWith(SIMULATED_ANNOTATION_PREFIX)) continue;
      const rest = annotation.slice(SIMULATED_ANNOTATION_PREFIX.length);
      const dot = rest.indexOf('.');
      const key = (dot < 0 ? rest : rest.slice(0, dot)) as Key;
      const container = dot < 0 ? undefined : rest.slice(dot + 1);
      const value = annotations[annotation];
      if (key === ('image-size' as Key)) continue; // read by PullImage
      const parse = parsers[key];
      if (!parse) {
        warnBad(logger, pod, annotation, value, `unknown simulation annotation: the keys are ${[...Object.keys(parsers), 'image-size'].join(', ')}`);
        continue;
      }
      let parsed: Parsed[Key];
      try {
        parsed = parse(value);
      } catch (error) {
        warnBad(logger, pod, annotation, value, (error as Error).message);
        continue;
      }
      let target = this.all;
      if (container !== undefined) {
        target = this.byContainer.get(container) ?? {};
        this.byContainer.set(container, target);
      }
      (target as Record<string, unknown>)[key] = parsed;
    }
  }

  /** True when the pod has no simulation annotation: every container behaves as the defaults say. */
  get isDefault(): boolean {
    return Object.keys(this.all).length === 0 && this.byContainer.size === 0;
  }

  /** How the pod's container `name` behaves; the same object for every restart (attempt) of it. */
  container(name: string): ContainerSimulation {
    let spec = this.resolved.get(name);
    if (!spec) {
      spec = resolve(this.defaults, this.all, this.byContainer.get(name));
      this.resolved.set(name, spec);
    }
    return spec;
  }

  /** The pod, `namespace/name`, as warnings name it. */
  get podName(): string {
    return this.pod;
  }
}

function warnBad(logger: Logger, pod: string, annotation: string, value: string, reason: string): void {
  logger.warn('Invalid simulation annotation ignored, using the default', { pod, annotation, value, err: reason });
}

/** Defaults, then the pod's annotations, then the container's. */
function resolve(defaults: SimulationDefaults, all: Parsed, own: Parsed | undefined): ContainerSimulation {
  const get = <K extends Key>(key: K): Parsed[K] => (own && own[key] !== undefined ? own[key] : all[key]);
  const exitCode = get('exit-code');
  const exitAfter = get('exit-after');
  return {
    startDelayMs: get('start-delay') ?? defaults.startDelayMs,
    // An exit code without exit-after: the container exits right after it starts.
    exitAfterMs: exitAfter ?? (exitCode !== undefined ? 0 : defaults.exitAfterMs),
    exitCode: exitCode ?? defaults.exitCode,
    cpuNanoCores: get('cpu') ?? DEFAULT_CPU_NANO_CORES,
    memoryBytes: get('memory') ?? DEFAULT_MEMORY_BYTES,
    readiness: get('readiness') ?? ALWAYS_SUCCEEDS,
    liveness: get('liveness') ?? ALWAYS_SUCCEEDS,
    startup: get('startup') ?? ALWAYS_SUCCEEDS,
    log: get('log'),
  };
}

/** A default behaviour shared by every container of pods without annotations (one object, not one per container). */
export function defaultSimulation(defaults: SimulationDefaults): ContainerSimulation {
  return resolve(defaults, {}, undefined);
}

/** The probe's result `elapsedMs` after the container started. */
export function probeResult(behaviour: ProbeBehaviour, elapsedMs: number): SimulatedProbeResult {
  if (elapsedMs >= behaviour.afterMs) return behaviour.result;
  return behaviour.result === 'success' ? 'failure' : 'success';
}

/**
 * The image size of `simulated.kubelet-ts.io/image-size` in a pull's sandbox annotations, or undefined (bad values
 * warned about). The kubelet's PullImage does not say for which container it pulls, so only the pod-wide key applies.
 */
export function annotatedImageSize(annotations: Record<string, string> | undefined, pod: string, logger: Logger): number | undefined {
  const annotation = `${SIMULATED_ANNOTATION_PREFIX}image-size`;
  const value = annotations?.[annotation];
  if (value === undefined) return undefined;
  try {
    return nonNegativeQuantity(value, false);
  } catch (error) {
    warnBad(logger, pod, annotation, value, (error as Error).message);
    return undefined;
  }
}

/** The default simulated size of an image: a deterministic 5 to 200 MiB from its name. */
export function defaultImageSize(normalizedName: string): number {
  const hash = createHash('sha256').update(`size:${normalizedName}`).digest().readUInt32BE(0);
  return 5 * MIB + (hash % (195 * MIB + 1));
}
