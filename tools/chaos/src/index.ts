// The chaos and soak suite: each scenario injects faults into a kubelet on the real control plane and containerd
// while a Deployment churns, then checks the invariants (nothing lost, nothing leaked, nothing stuck).
export {};
