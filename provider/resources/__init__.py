"""Resources of the `liqo` provider, one module each (`install`: `liqo_install`, `generate`: `liqo_generate`,
`peer`: `liqo_peer`), plus the cluster work and checks they share (`installer`, `foreigncluster`, `checks`).
`liqo_offload` will be one more module here, with the offloading runtime.

A resource module holds its schema and maps Terraform's lifecycle onto the cluster; the
objects it writes come from `runtime.forge`, so Terraform and Pulumi apply the same ones.
Heavy imports (`runtime.core`, the cluster work) happen inside the operations: Terraform
starts the provider several times per command and most starts only ask for the schema.
"""
