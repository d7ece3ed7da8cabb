"""The network fabric's controllers: the IPAM of peerings' Configurations and each peering's gateway."""
