"""Data sources of the `liqo` provider, one module each: `liqo_cluster` (the cluster's Liqo identity)."""
