"""A filesystem mirror of the release zips that Terraform and OpenTofu both install `liqo-iac/liqo` from.

Terraform's packed layout, once per registry host, so that the short source
`liqo-iac/liqo` works for both tools (Terraform reads it as
`registry.terraform.io/liqo-iac/liqo`, OpenTofu as `registry.opentofu.org/liqo-iac/liqo`):

    DIR/registry.terraform.io/liqo-iac/liqo/terraform-provider-liqo_<version>_<os>_<arch>.zip
    DIR/registry.opentofu.org/liqo-iac/liqo/terraform-provider-liqo_<version>_<os>_<arch>.zip
    DIR/terraform.rc

The zips are the release's own files (hard links when the file system allows), so the
hashes `terraform init` records in `.terraform.lock.hcl` are those of the release: a lock
file made from one copy of the mirror is valid with any other copy, on any machine.
`terraform.rc` is a CLI configuration (for `TF_CLI_CONFIG_FILE`, which both tools read)
that installs `liqo-iac/*` from this folder only and everything else as usual.

`of_checkout` makes the mirror of this checkout's provider (`make mirror`, `make demo`
and the Terraform tests use it): the executable comes from its cache, built first when
the sources changed (tools/release/executable.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from provider import NAMESPACE, TYPE

from . import HOSTS, ROOT, executable, version, zip_name

CLI_CONFIG: Final = "terraform.rc"
#: where `make mirror` and `make demo` put the mirror unless told otherwise
ENVIRONMENT: Final = "LIQO_TERRAFORM_MIRROR"


def default_dir() -> Path:
    return Path(os.environ.get(ENVIRONMENT) or ROOT / "build" / "terraform-mirror")


def of_checkout(mirror: Path) -> Path:
    """The mirror of this checkout's release under `mirror`; returns its CLI configuration's path."""
    folder = executable.build()
    return build(mirror, sorted(folder.glob(zip_name(version(), "*"))))


def package_dir(mirror: Path, host: str) -> Path:
    return mirror / host / NAMESPACE / TYPE


def build(mirror: Path, zips: Iterable[Path]) -> Path:
    """Lay `zips` out under `mirror` for every host, write the CLI configuration; returns its path."""
    mirror = mirror.absolute()
    archives = list(zips)
    if not archives:
        raise ValueError("a mirror needs at least one release zip")
    for host in HOSTS:
        target = package_dir(mirror, host)
        target.mkdir(parents=True, exist_ok=True)
        for stale in target.glob(f"terraform-provider-{TYPE}_*.zip"):
            stale.unlink()
        for archive in archives:
            _place(archive, target / archive.name)
    config = mirror / CLI_CONFIG
    config.write_text(cli_config(mirror))
    return config


def _place(source: Path, target: Path) -> None:
    """`target` becomes the same bytes as `source`: a hard link, or a copy across file systems."""
    try:
        os.link(source, target)
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        shutil.copyfile(source, target)


def cli_config(mirror: Path) -> str:
    """A CLI configuration that installs our provider from `mirror`, and any other provider as usual."""
    sources = ", ".join(f'"{host}/{NAMESPACE}/*"' for host in HOSTS)
    return (
        "provider_installation {\n"
        "  filesystem_mirror {\n"
        f"    path    = {_hcl(str(mirror))}\n"
        f"    include = [{sources}]\n"
        "  }\n"
        "  direct {\n"
        f"    exclude = [{sources}]\n"
        "  }\n"
        "}\n"
    )


def _hcl(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
