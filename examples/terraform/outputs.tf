output "virtual_node" {
  description = "The node standing for milan in rome."
  value       = liqo_peer.peer.virtual_node
}

output "peering" {
  description = "The peering's phases, as `kubectl get foreignclusters` shows them in rome."
  value = {
    authentication = data.liqo_peering.milan.authentication_status
    offloading     = data.liqo_peering.milan.offloading_status
    networking     = data.liqo_peering.milan.networking_status
    remote_version = data.liqo_peering.milan.remote_version
  }
}

output "cluster_ids" {
  description = "The clusters' IDs."
  value = {
    rome  = liqo_install.rome.cluster_id
    milan = liqo_install.milan.cluster_id
  }
}

output "offloading" {
  description = "The offloaded namespace: its phase and its twin namespace on milan."
  value = {
    phase            = liqo_offload.offload.offloading_phase
    remote_namespace = liqo_offload.offload.remote_namespace_name
  }
}
