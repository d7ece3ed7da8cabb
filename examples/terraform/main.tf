# The quick start, on two playground clusters: install Liqo on both, issue a peering token on
# the provider (milan), peer the consumer (rome) with it and offload the namespace liqo-demo,
# as in Liqo's "Provision with Terraform" guide. See README.md next to this file.

terraform {
  required_providers {
    liqo = {
      source  = "liqo-iac/liqo"
      version = "~> 0.1"
    }
  }
}

provider "liqo" {
  alias = "rome"
  kubernetes = {
    config_path    = var.rome_kubeconfig
    config_context = var.rome_context
  }
}

provider "liqo" {
  alias = "milan"
  kubernetes = {
    config_path    = var.milan_kubeconfig
    config_context = var.milan_context
  }
}

resource "liqo_install" "milan" {
  provider = liqo.milan

  cluster_name = var.milan_name
  cluster_labels = {
    "topology.liqo.io/region" = "north"
  }
  pod_cidr     = var.milan_pod_cidr
  service_cidr = var.milan_service_cidr
}

resource "liqo_install" "rome" {
  provider = liqo.rome

  cluster_name = var.rome_name
  pod_cidr     = var.rome_pod_cidr
  service_cidr = var.rome_service_cidr
}

# On the provider: a peering token for one consumer (revoked when destroyed).
resource "liqo_generate" "generate" {
  depends_on = [
    liqo_install.milan
  ]

  provider = liqo.milan
}

# On the consumer: the peering, up to a Ready virtual node standing for milan.
resource "liqo_peer" "peer" {
  depends_on = [
    liqo_install.rome
  ]

  provider = liqo.rome

  cluster_id      = liqo_generate.generate.cluster_id
  cluster_name    = liqo_generate.generate.cluster_name
  cluster_authurl = liqo_generate.generate.auth_ep
  cluster_token   = liqo_generate.generate.local_token

  # the provider's auth service key: another key at cluster_authurl is refused, even on the first contact
  auth_key_fingerprint = liqo_generate.generate.auth_key_fingerprint

  cpu    = var.cpu
  memory = var.memory
  pods   = var.pods
}

data "liqo_peering" "milan" {
  provider = liqo.rome

  cluster_name = liqo_peer.peer.cluster_name
}

# The namespace to offload. The guide creates it with hashicorp/kubernetes' kubernetes_namespace;
# that provider cannot be installed from this project's offline mirror, so kubectl does it
# here (and deletes it on destroy, after the offloading is gone).
resource "terraform_data" "liqo_demo_namespace" {
  input = {
    kubeconfig = var.rome_kubeconfig
    name       = var.offload_namespace
  }

  provisioner "local-exec" {
    command = "kubectl --kubeconfig '${self.input.kubeconfig}' create namespace '${self.input.name}' --dry-run=client -o yaml | kubectl --kubeconfig '${self.input.kubeconfig}' apply -f -"
  }

  provisioner "local-exec" {
    when    = destroy
    command = "kubectl --kubeconfig '${self.input.kubeconfig}' delete namespace '${self.input.name}' --ignore-not-found --wait=false"
  }
}

# On the consumer: liqo-demo offloaded to milan (a twin namespace liqo-demo-rome there).
resource "liqo_offload" "offload" {
  depends_on = [
    liqo_install.rome,
    liqo_peer.peer,
    terraform_data.liqo_demo_namespace
  ]

  provider = liqo.rome

  namespace = var.offload_namespace
}
