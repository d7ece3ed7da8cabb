"""`terraform-provider-liqo` (or `python -m provider`): the plugin binary Terraform launches."""

from __future__ import annotations

import sys

from .server import serve


def _provider() -> object:
    from .provider import LiqoProvider

    return LiqoProvider()


def main() -> None:
    sys.exit(serve(_provider))


if __name__ == "__main__":
    main()
