"""`python -m playground`: the `playground` command (see `playground.cli`)."""

from __future__ import annotations

import sys

from playground.cli import main

if __name__ == "__main__":
    sys.exit(main())
