"""`python -m pulumi_liqo` or `python <this folder>`: the package as a Pulumi component provider.

Pulumi runs this (through `PulumiPlugin.yaml` beside it) when a program in TypeScript, Go,
C#, Java or YAML uses the `liqo` package (`pulumi package add`): its Python language host
starts `python <plugin folder> <engine address>`, with the folder itself first on
`sys.path` and no parent package. The schema is inferred from the components' typed Args
and Outputs (`_schema.provider()`, credentials marked secret), and each
`liqo:index:<Name>` is constructed by the same Python class a Python program uses.
"""

import sys
from pathlib import Path


def main() -> None:
    if not __package__:
        # Started as a folder: its modules (install, peer, providers, ...) would shadow top-level ones,
        # and `pulumi_liqo` imports from the folder above it (site-packages, or a checkout).
        sys.path[0] = str(Path(__file__).resolve().parent.parent)
    from pulumi.provider import main as serve

    from pulumi_liqo._schema import provider

    serve(provider(), sys.argv[1:])


if __name__ == "__main__":
    main()
