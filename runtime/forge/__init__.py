"""Pure builders of Kubernetes objects (no I/O): the one way the runtime, the Terraform provider
and the Pulumi components describe what they create."""
