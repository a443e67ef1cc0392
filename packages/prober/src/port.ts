// Probe port resolution (Go: probe.ResolveContainerPort / findPortByName).
import type { V1Container } from '@kubernetes/client-node';

/** Go's strconv.Atoi: an optional sign and decimal digits, nothing else. */
function atoi(text: string): number {
  if (!/^[+-]?\d+$/.test(text)) throw new Error(`strconv.Atoi: parsing ${JSON.stringify(text)}: invalid syntax`);
  return Number.parseInt(text, 10);
}

/**
 * The port number of a probe's `port` (a number, a container port name, or a number written as a
 * string), with Go's error messages: `strconv.Atoi: parsing "web": invalid syntax` for a name the
 * container does not declare, `invalid port number: 0` out of 1..65535.
 */
export function resolveContainerPort(port: number | string | undefined, container: V1Container | undefined): number {
  let value: number;
  if (typeof port === 'number') value = port;
  else if (typeof port === 'string') {
    const named = container?.ports?.find((p) => p.name === port);
    value = named ? named.containerPort : atoi(port);
  } else throw new Error(`intOrString had no kind: ${JSON.stringify(port)}`);
  if (Number.isInteger(value) && value > 0 && value < 65536) return value;
  throw new Error(`invalid port number: ${value}`);
}
