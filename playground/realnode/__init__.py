"""Real nodes: containerd, a real kubelet and a real kube-proxy per node, as a kind node container runs them.

With `KUBEBUILDER_ASSETS` naming a folder that also has kubelet, kube-proxy and the
sandbox and CoreDNS images (`make real-k8s`), each node of a playground cluster is what a
kind node container is, out of Linux namespaces instead of a container:

- its network namespace (`playground.network`, as for every node), where its
  processes run and the bridge CNI plugin attaches pods to `cni0`;
- its mount namespace (`mountns`), a copy of the host's in which `/run/containerd` is a
  tmpfs of its own and `/var/lib/kubelet`, `/var/log/pods` and `/var/log/containers`
  are the node's folders under the state dir (kubelet writes there whatever
  `--root-dir` says), so every mount containerd and kubelet make (container root
  filesystems, volumes, pod network namespaces) lives and dies with it;
- its cgroup (`cgroups`), created in every hierarchy before kubelet starts: kubelet's
  `cgroupRoot`, under which it puts every pod;
- Debian's containerd with its own root, state, socket and runc root, kubelet as
  `system:node:<name>` and kube-proxy in nftables mode as `system:kube-proxy`, started
  by the cluster's supervisor with `nsenter --net=... --mount=...` (`config` has their
  configuration files and command lines).

`host` prepares and removes all of that, and undoes what kubelet changes on the host
(`tunables`: the kernel settings it sets); `images` imports image archives into a
node's containerd (the sandbox and CoreDNS images at start, `playground load-image`).
"""
