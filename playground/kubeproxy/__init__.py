"""kube-proxy for playground nodes, in nftables mode: `rules` renders a node's ruleset, `proxier` applies it.

Run as `python -m playground.kubeproxy` in the node's network namespace, one per node.
"""
