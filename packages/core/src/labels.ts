// The labels the kubelet puts on every sandbox and container it creates (Go:
// pkg/kubelet/types/labels.go). Everything that reads containers back from the runtime (stats,
// garbage collection, the runtime manager, metrics) finds their pod and name by these.

/** Go: KubernetesPodNameLabel. */
export const KUBERNETES_POD_NAME_LABEL = 'io.kubernetes.pod.name';
/** Go: KubernetesPodNamespaceLabel. */
export const KUBERNETES_POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
/** Go: KubernetesPodUIDLabel. */
export const KUBERNETES_POD_UID_LABEL = 'io.kubernetes.pod.uid';
/** Go: KubernetesContainerNameLabel. */
export const KUBERNETES_CONTAINER_NAME_LABEL = 'io.kubernetes.container.name';
