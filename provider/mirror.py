"""Builds the filesystem mirror Terraform installs the provider from, offline.

`python -m provider.mirror [--dir DIR]` (or `make mirror`) writes, in Terraform's
unpacked layout:

    DIR/registry.terraform.io/liqo-iac/liqo/<version>/<os>_<arch>/terraform-provider-liqo_v<version>

an executable shim that execs this virtualenv's Python on the `provider` package, and
`DIR/terraform.rc`, a CLI configuration that installs `liqo-iac/*` from the mirror only
(no plugin cache). Point `TF_CLI_CONFIG_FILE` at it (or copy its block into yours) and
`terraform init` works with no network and writes `.terraform.lock.hcl`.

The mirror belongs to the virtualenv it was built from (the shim names its Python), so
by default it lives inside it: `<venv>/terraform-mirror` (`LIQO_TERRAFORM_MIRROR` or
`--dir` to choose another place). The lock file's hash covers the shim, so it differs
between checkouts: lock files made against a mirror are not for committing.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
from importlib import metadata
from pathlib import Path

from . import DISTRIBUTION, HOSTNAME, NAMESPACE, TYPE

ENVIRONMENT = "LIQO_TERRAFORM_MIRROR"
CLI_CONFIG = "terraform.rc"
_ARCHITECTURES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386"}


def default_dir() -> Path:
    return Path(os.environ.get(ENVIRONMENT) or Path(sys.prefix) / "terraform-mirror")


def version() -> str:
    return metadata.version(DISTRIBUTION)


def target_platform() -> str:
    """Terraform's `<os>_<arch>` for this machine."""
    machine = platform.machine().lower()
    return f"{sys.platform.removesuffix('2')}_{_ARCHITECTURES.get(machine, machine)}"


def plugin_path(mirror: Path) -> Path:
    """Where the executable of this version and platform goes."""
    package = mirror / HOSTNAME / NAMESPACE / TYPE / version() / target_platform()
    return package / f"terraform-provider-{TYPE}_v{version()}"


def build(mirror: Path, *, python: str = sys.executable) -> Path:
    """Write the shim and the CLI configuration under `mirror`; returns the CLI configuration's path."""
    mirror = mirror.absolute()
    executable = plugin_path(mirror)
    executable.parent.mkdir(parents=True, exist_ok=True)
    # -I: neither the working directory Terraform runs in, nor PYTHON* variables, nor the
    # user's site-packages can change which code runs as the provider.
    executable.write_text(f'#!/bin/sh\nexec {shlex.quote(python)} -I -m provider "$@"\n')
    executable.chmod(0o755)
    config = mirror / CLI_CONFIG
    config.write_text(cli_config(mirror))
    return config


def cli_config(mirror: Path) -> str:
    """A Terraform CLI configuration that installs our provider from `mirror` and nothing from the network."""
    source = f"{HOSTNAME}/{NAMESPACE}/*"
    return (
        "provider_installation {\n"
        "  filesystem_mirror {\n"
        f"    path    = {_hcl(str(mirror))}\n"
        f'    include = ["{source}"]\n'
        "  }\n"
        "  direct {\n"
        f'    exclude = ["{source}"]\n'
        "  }\n"
        "}\n"
    )


def _hcl(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m provider.mirror", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dir", type=Path, default=default_dir(), help="mirror directory (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    config = build(args.dir)
    print(f"provider mirror: {plugin_path(args.dir.absolute())}")
    print(f"CLI configuration: export TF_CLI_CONFIG_FILE={config}")


if __name__ == "__main__":
    main()
