"""The network fabric's in-cluster processes: each peering's gateway (`gateway.py`: the WireGuard end of the
tunnel, `tunnel.py`, `wireguard.py`) and the agent on every node (`agent.py`: routes to remote pod networks
through their gateways and the masquerade bypass, `routes.py`). Both shell out to `ip`, `wg` and `nft`
(`commands.py`), in the network namespace they run in."""
