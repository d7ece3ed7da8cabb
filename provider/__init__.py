"""The Terraform provider `liqo`: tfplugin6 over gRPC (the `tf` package, with our lifecycle), its
configuration, a lazy Kubernetes client, and the resources and data sources.

Terraform starts the provider several times per command, so this package imports
nothing heavy at import time: gRPC, the Kubernetes client and the runtime are imported
where they are first needed. The constants below are the provider's identity.
"""

from __future__ import annotations

from typing import Final

#: the registry namespace and type of our source address (`liqo-iac/liqo`; not Liqo's `liqotech/`)
NAMESPACE: Final = "liqo-iac"
TYPE: Final = "liqo"
HOSTNAME: Final = "registry.terraform.io"
SOURCE_ADDRESS: Final = f"{HOSTNAME}/{NAMESPACE}/{TYPE}"
