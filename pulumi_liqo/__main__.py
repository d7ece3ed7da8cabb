"""`python -m pulumi_liqo`: the package as a Pulumi component provider, for programs in other languages.

Pulumi runs this (through `PulumiPlugin.yaml` beside it) when a program in TypeScript, Go,
C#, Java or YAML uses the `liqo` package (`pulumi package add`); the schema is inferred
from the components' typed Args and Outputs (`pulumi.provider.experimental`), and each
`liqo:index:<Name>` is constructed by the same Python class a Python program uses.
"""

from pulumi.provider.experimental import component_provider_host

from . import Generate, Install, Offload, Peer
from ._schema import NAME, version

if __name__ == "__main__":
    component_provider_host(components=[Install, Generate, Peer, Offload], name=NAME, version=version())
