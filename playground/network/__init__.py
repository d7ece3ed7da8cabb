"""The playground's network, as kind gets it from Docker: nodes and pods in network namespaces.

`fabric` puts a cluster's nodes on its state dir's bridge, `subnets` picks the addresses,
`names` names everything so clusters never collide, `netns` and `netlink` are the small
kernel interfaces all of it uses, `hostport` maps the API server to a port of the host,
and `requirements` says what the host must allow. See docs/playground.md, "The network".
"""
