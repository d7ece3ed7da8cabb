"""The Terraform provider's release: a self-contained executable, its zips, SHA256SUMS and manifest.

A release is what a registry would publish for `liqo-iac/liqo` and what Terraform and
OpenTofu install without this repository:

    terraform-provider-liqo_<version>_<os>_<arch>.zip    the provider, interpreter and dependencies bundled
    terraform-provider-liqo_<version>_SHA256SUMS         sha256sum's format, over the zips and the manifest
    terraform-provider-liqo_<version>_manifest.json      {"version": 1, "metadata": {"protocol_versions": ["6.0"]}}

`executable` builds the zip (PyInstaller, cached by the content of what goes in),
`artifacts` writes the three files, `mirror` lays them out as a filesystem mirror both
Terraform and OpenTofu install from; `python -m tools.release` is their command line.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from typing import Final

from provider import HOSTNAME, TYPE
from tools import dist

ROOT: Final = Path(__file__).resolve().parents[2]
#: the registry hosts whose address of the provider the mirror serves: Terraform's and OpenTofu's
HOSTS: Final = (HOSTNAME, "registry.opentofu.org")
PROTOCOL_VERSIONS: Final = ("6.0",)
_ARCHITECTURES: Final = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def version() -> str:
    """The project's version (runtime/version.py, as tools/dist.py reads it), which the provider and the
    runtime image carry."""
    return dist.version()


def target_platform() -> str:
    """Terraform's `<os>_<arch>` for this machine (PyInstaller builds for the machine it runs on)."""
    machine = platform.machine().lower()
    return f"{sys.platform.removesuffix('2')}_{_ARCHITECTURES.get(machine, machine)}"


def executable_name(release: str) -> str:
    """The provider's file name in its zip, as Terraform looks for it: `terraform-provider-liqo_v<version>`."""
    return f"terraform-provider-{TYPE}_v{release}"


def zip_name(release: str, target: str) -> str:
    return f"terraform-provider-{TYPE}_{release}_{target}.zip"


def sums_name(release: str) -> str:
    return f"terraform-provider-{TYPE}_{release}_SHA256SUMS"


def manifest_name(release: str) -> str:
    return f"terraform-provider-{TYPE}_{release}_manifest.json"
