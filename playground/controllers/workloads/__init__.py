"""What the playground's workload controllers (Deployment, ReplicaSet, DaemonSet, StatefulSet,
EndpointSlice) share: kube's well-known names, pure rules (pod ordering, template hashes,
rollout arithmetic, taints, endpoint shapes) and the few API-facing helpers every one of
them needs (claiming children, creating and deleting pods with Events, expectations).

The rules follow kube-controller-manager so a playground cluster behaves like a kind
cluster; modules name the kube function they mirror where it helps a reader compare.
"""
