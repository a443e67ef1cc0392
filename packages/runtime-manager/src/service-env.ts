// Service environment variables for containers (Go: pkg/kubelet/envvars FromServices and
// kubelet_pods.go getServiceEnvVarMap): `<SVC>_SERVICE_HOST`, `<SVC>_SERVICE_PORT[_<NAME>]` and the
// Docker-link style `<SVC>_PORT*` variables, for the master service always and, with
// enableServiceLinks, for every service of the pod's namespace.
import type { V1Service } from '@kubernetes/client-node';

/**
 * The cluster's Services as the kubelet caches them (Go: the service lister plus serviceHasSynced).
 * The kubelet app's ServiceLister implements it over a list+watch.
 */
export interface ServiceSource {
  /** True once the services were listed at least once. */
  hasSynced(): boolean;
  /** The services of one namespace. */
  list(namespace: string): V1Service[];
}

/** Go: metav1.NamespaceDefault. */
export const NAMESPACE_DEFAULT = 'default';
/** Services of the default namespace every pod gets variables for (Go: masterServices). */
export const MASTER_SERVICES: ReadonlySet<string> = new Set(['kubernetes']);

/** The error Go's makeEnvironmentVariables returns before the service lister has synced. */
export const SERVICES_NOT_SYNCED_MESSAGE = 'services have not yet been read at least once, cannot construct envvars';

/** A service with a cluster IP, not headless (Go: v1helper.IsServiceIPSet). */
export function isServiceIPSet(service: V1Service): boolean {
  const ip = service.spec?.clusterIP ?? '';
  return ip !== 'None' && ip !== '';
}

/** Go: envvars.makeEnvVariableName: upper case, '-' as '_'. */
function envVariableName(name: string): string {
  return name.replace(/-/g, '_').toUpperCase();
}

/** Go: net.JoinHostPort. */
function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The link variables of a service (Go: envvars.makeLinkVariables). */
function linkVariables(service: V1Service): Array<{ name: string; value: string }> {
  const prefix = envVariableName(service.metadata?.name ?? '');
  const clusterIP = service.spec?.clusterIP ?? '';
  const all: Array<{ name: string; value: string }> = [];
  (service.spec?.ports ?? []).forEach((port, i) => {
    const protocol = port.protocol || 'TCP';
    const url = `${protocol.toLowerCase()}://${joinHostPort(clusterIP, port.port)}`;
    // Docker special-cases the first port.
    if (i === 0) all.push({ name: `${prefix}_PORT`, value: url });
    const portPrefix = `${prefix}_PORT_${port.port}_${protocol.toUpperCase()}`;
    all.push(
      { name: portPrefix, value: url },
      { name: `${portPrefix}_PROTO`, value: protocol.toLowerCase() },
      { name: `${portPrefix}_PORT`, value: String(port.port) },
      { name: `${portPrefix}_ADDR`, value: clusterIP },
    );
  });
  return all;
}

/** The environment variables for services, in the given order (Go: envvars.FromServices). */
export function envVarsFromServices(services: V1Service[]): Array<{ name: string; value: string }> {
  const result: Array<{ name: string; value: string }> = [];
  for (const service of services) {
    // Headless services have no address to hand out.
    if (!isServiceIPSet(service)) continue;
    const ports = service.spec?.ports ?? [];
    const prefix = envVariableName(service.metadata?.name ?? '');
    result.push({ name: `${prefix}_SERVICE_HOST`, value: service.spec?.clusterIP ?? '' });
    // A service with a cluster IP has at least one port (validation); Go would panic without one.
    if (ports.length === 0) continue;
    const portName = `${prefix}_SERVICE_PORT`;
    result.push({ name: portName, value: String(ports[0].port) });
    // Every named port (only the first may be unnamed).
    for (const port of ports) if (port.name) result.push({ name: `${portName}_${envVariableName(port.name)}`, value: String(port.port) });
    result.push(...linkVariables(service));
  }
  return result;
}

/**
 * The service variables a pod in `namespace` sees (Go: getServiceEnvVarMap): the master `kubernetes`
 * service of the default namespace always, the services of the namespace with enableServiceLinks (a
 * namespace's own `kubernetes` service then wins over the master one). Headless services are skipped.
 * Go builds this from a map, so its order is random; here services go by name.
 */
export function serviceEnvVarMap(source: ServiceSource | undefined, namespace: string, enableServiceLinks: boolean): Map<string, string> {
  const env = new Map<string, string>();
  // Without a service source (no API server) there are no service variables.
  if (!source) return env;
  const byName = new Map<string, V1Service>();
  for (const service of source.list(NAMESPACE_DEFAULT)) {
    const name = service.metadata?.name ?? '';
    if (isServiceIPSet(service) && MASTER_SERVICES.has(name)) byName.set(name, service);
  }
  if (enableServiceLinks) {
    for (const service of source.list(namespace)) {
      if (isServiceIPSet(service)) byName.set(service.metadata?.name ?? '', service);
    }
  }
  const services = [...byName.values()].sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
  for (const { name, value } of envVarsFromServices(services)) env.set(name, value);
  return env;
}
