variable "rome_kubeconfig" {
  description = "Kubeconfig of the consumer cluster (`playground kubeconfig rome`)."
  type        = string
}

variable "rome_context" {
  description = "Context of rome_kubeconfig to use (null: its current context)."
  type        = string
  default     = null
}

variable "milan_kubeconfig" {
  description = "Kubeconfig of the provider cluster (`playground kubeconfig milan`)."
  type        = string
}

variable "milan_context" {
  description = "Context of milan_kubeconfig to use (null: its current context)."
  type        = string
  default     = null
}

variable "rome_name" {
  description = "Cluster name of the consumer."
  type        = string
  default     = "rome"
}

variable "milan_name" {
  description = "Cluster name of the provider (the virtual node in rome is liqo-<milan_name>)."
  type        = string
  default     = "milan"
}

variable "rome_pod_cidr" {
  description = "Pod CIDR of rome (null: discovered from the cluster, see README.md)."
  type        = string
  default     = null
}

variable "rome_service_cidr" {
  description = "Service CIDR of rome (null: what the cluster tells)."
  type        = string
  default     = null
}

variable "milan_pod_cidr" {
  description = "Pod CIDR of milan (null: discovered from the cluster, see README.md)."
  type        = string
  default     = null
}

variable "milan_service_cidr" {
  description = "Service CIDR of milan (null: what the cluster tells)."
  type        = string
  default     = null
}

variable "cpu" {
  description = "CPU rome asks milan for (null, with memory and pods null too: milan's default share)."
  type        = string
  default     = "2"
}

variable "memory" {
  description = "Memory rome asks milan for."
  type        = string
  default     = "4Gi"
}

variable "pods" {
  description = "Pods rome asks milan for."
  type        = string
  default     = "20"
}

variable "offload_namespace" {
  description = "The namespace of rome offloaded to milan (the guide's liqo-demo)."
  type        = string
  default     = "liqo-demo"
}
