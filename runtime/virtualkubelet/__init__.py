"""The virtual kubelet, node side: the Node standing for one provider cluster, as virtual-kubelet's
node controller keeps a node, with the provider behind a tiny `Remote` protocol.

| module | job |
| --- | --- |
| `remote.py` | the provider: `ping()` and `version()`, over the credential kubeconfig (renewals swapped in) |
| `health.py` | periodic pings, the failure threshold, the Ready condition's content |
| `node.py` | the Node's labels, taints, capacity and conditions (pure), and the reconciler registering it |
| `lease.py` | the node Lease heartbeat (generic over any node) |
| `kubelet.py`, `main.py` | the assembly for one VirtualNode, and its command line |
"""
