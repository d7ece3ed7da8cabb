"""Data sources of the `liqo` provider, one module each: `liqo_cluster` (the cluster's Liqo identity) and
`liqo_peering` (a peering as the consumer's ForeignCluster reports it)."""
