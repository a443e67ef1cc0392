/**
 * Turns a CRI endpoint as the kubelet's `--container-runtime-endpoint` takes it into a gRPC target:
 * `unix:///run/containerd/containerd.sock`, a bare absolute socket path, or `tcp://host:port` (tests).
 */
export function grpcTarget(endpoint: string): string {
  if (endpoint.startsWith('unix://')) {
    const path = endpoint.slice('unix://'.length);
    if (!path.startsWith('/')) throw new Error(`invalid CRI endpoint ${JSON.stringify(endpoint)}: unix socket path must be absolute (unix:///path)`);
    return `unix://${path}`;
  }
  if (endpoint.startsWith('/')) return `unix://${endpoint}`;
  if (endpoint.startsWith('tcp://')) {
    const hostPort = endpoint.slice('tcp://'.length).replace(/\/$/, '');
    if (!/^(\[[0-9a-fA-F:.]+\]|[^:/\s]+):\d{1,5}$/.test(hostPort)) {
      throw new Error(`invalid CRI endpoint ${JSON.stringify(endpoint)}: expected tcp://host:port`);
    }
    return hostPort;
  }
  throw new Error(`invalid CRI endpoint ${JSON.stringify(endpoint)}: only unix:// and tcp:// endpoints are supported`);
}
