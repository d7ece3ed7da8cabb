"""Root file systems from Debian packages: `mmdebstrap` into a folder, then made fit for an image.

mmdebstrap (Debian's) installs a suite's packages into a folder with apt from Debian's
mirror, without a container runtime: the runtime image uses bookworm's `essential` variant
(the Essential packages: a shell, coreutils, dpkg) and the packages it names, the test images the
`extract` variant (only the named packages and their dependencies, unpacked, no dpkg,
apt, shell or maintainer scripts: a few MB, like distroless images). `/usr` is merged
(mmdebstrap's `merged-usr` hook, as debootstrap does; the `usrmerge` package would pull
in perl). What dpkg leaves out of every package (documentation, manual pages,
translations) comes from a dpkg configuration file.

`layer` then takes the folder as one image layer, keeping the owners packages gave their
files; what a container runtime provides at run time (`/dev`, `/proc`, `/sys` contents)
and what only the build wrote (apt's and dpkg's logs and caches) stay out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.images import oci
from tools.images.errors import BuildError

SUITE = "bookworm"
MERGED_USR_HOOK = Path("/usr/share/mmdebstrap/hooks/merged-usr")
#: mounted by the container runtime: only the folders themselves go into a layer
RUNTIME_MOUNTS = ("dev", "proc", "sys")
#: what only the build wrote: logs, caches, the package lists (their contents vary from build to build)
BUILD_LEFTOVERS = (
    "var/log",
    "var/cache/apt",
    "var/cache/ldconfig",
    "var/lib/apt/lists",
)
DEBCONF_BACKUPS = ("var/cache/debconf/config.dat-old", "var/cache/debconf/templates.dat-old")


@dataclass(frozen=True)
class Bootstrap:
    """What mmdebstrap installs: a variant of a suite, packages, dpkg options from files."""

    packages: tuple[str, ...]
    variant: str = "minbase"
    suite: str = SUITE
    dpkg_config: Path | None = None

    def command(self, target: Path) -> list[str]:
        command = ["mmdebstrap", "--quiet", f"--variant={self.variant}", "--mode=root"]
        if self.variant != "extract":
            command.append(f"--hook-dir={MERGED_USR_HOOK}")
        if self.dpkg_config is not None:
            command.append(f"--dpkgopt={self.dpkg_config}")
        if self.packages:
            command.append(f"--include={','.join(self.packages)}")
        return [*command, self.suite, str(target)]


def read_list(path: Path) -> tuple[str, ...]:
    """The words of a list file: one item a line, `#` starting a comment."""
    items = []
    for line in path.read_text().splitlines():
        item = line.split("#", 1)[0].strip()
        if item:
            items.append(item)
    return tuple(items)


def require_mmdebstrap() -> None:
    if shutil.which("mmdebstrap") is None:
        raise BuildError(
            "no `mmdebstrap` on PATH: images are built from Debian packages (apt-get install mmdebstrap)"
        )
    if os.geteuid() != 0:
        raise BuildError("mmdebstrap runs as root here (it installs packages into a folder through chroot)")


def bootstrap(spec: Bootstrap, target: Path) -> None:
    """Install `spec` into the folder `target` (which must not exist yet)."""
    require_mmdebstrap()
    command = spec.command(target)
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(oci.FIXED_MTIME)}
    completed = subprocess.run(
        command, env=env, stdout=sys.stderr, stderr=subprocess.PIPE, text=True, check=False
    )
    if completed.returncode != 0:
        raise BuildError(
            f"`{' '.join(command)}` failed: {completed.stderr.strip()[-2000:]}"
            " (it installs from Debian's mirror: is it reachable?)"
        )


def remove_build_leftovers(root: Path) -> None:
    """Remove the files only the build wrote (the folders stay, as packages made them)."""
    for relative in BUILD_LEFTOVERS:
        for directory, _, filenames in os.walk(root / relative):
            for filename in filenames:
                os.unlink(os.path.join(directory, filename))
    for relative in ("var/lib/dpkg/status-old", "var/lib/dpkg/diversions-old", *DEBCONF_BACKUPS):
        (root / relative).unlink(missing_ok=True)


def chroot(root: Path, command: Sequence[str]) -> None:
    """Run `command` inside the root file system (its own programs: the image's Python, say)."""
    completed = subprocess.run(
        ["chroot", str(root), *command], stdout=sys.stderr, stderr=subprocess.PIPE, text=True, check=False
    )
    if completed.returncode != 0:
        raise BuildError(f"`{' '.join(command)}` in {root} failed: {completed.stderr.strip()[-2000:]}")


def add_user(root: Path, name: str, uid: int, *, home: str) -> None:
    """An account without a password or a shell (distroless' `nonroot`), and its home folder."""
    shell = "/usr/sbin/nologin"
    with (root / "etc" / "passwd").open("a") as passwd:
        passwd.write(f"{name}:x:{uid}:{uid}:{name}:{home}:{shell}\n")
    with (root / "etc" / "group").open("a") as group:
        group.write(f"{name}:x:{uid}:\n")
    folder = root / home.lstrip("/")
    folder.mkdir(parents=True, exist_ok=True)
    os.chown(folder, uid, uid)
    folder.chmod(0o750)


def is_runtime_mount_content(name: str) -> bool:
    return any(name.startswith(f"{mount}/") for mount in RUNTIME_MOUNTS)


def layer(root: Path, *, exclude: Sequence[str] = ()) -> oci.LayerContents:
    """The root file system as one layer (owners kept); `exclude` leaves paths out, with what is under them."""
    left_out = tuple(exclude)

    def excluded(name: str) -> bool:
        return (
            is_runtime_mount_content(name)
            or name in left_out
            or name.startswith(tuple(f"{p}/" for p in left_out))
        )

    contents = oci.LayerContents()
    contents.add_tree(root, keep_owners=True, exclude=excluded)
    return contents
