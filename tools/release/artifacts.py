"""The release files of one version: the zip of a bundle, SHA256SUMS and the registry manifest.

The zip is reproducible: entries in sorted order, one fixed timestamp, modes reduced to
0755 (executables) or 0644, no directory entries, deflate at level 9. Two builds of the
same bundle give the same bytes, so the `h1:` and `zh:` hashes Terraform records in
`.terraform.lock.hcl` hold for every copy of a release.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from . import PROTOCOL_VERSIONS, manifest_name, sums_name, zip_name

#: every entry's time (zip's earliest: the format cannot say 1970)
TIMESTAMP: Final = (1980, 1, 1, 0, 0, 0)


def _files(bundle: Path) -> Iterator[tuple[str, Path]]:
    """(name in the zip, file) for every file under `bundle`, sorted by name; a link is refused."""
    for path in sorted(bundle.rglob("*"), key=lambda item: item.relative_to(bundle).as_posix()):
        if path.is_symlink():
            raise ValueError(f"{path} is a symbolic link: a release zip holds files only")
        if path.is_file():
            yield path.relative_to(bundle).as_posix(), path


def write_zip(bundle: Path, target: Path) -> Path:
    """Zip the files under `bundle` (their paths relative to it) into `target`, reproducibly."""
    with zipfile.ZipFile(target, "w") as archive:
        for name, path in _files(bundle):
            info = zipfile.ZipInfo(name, date_time=TIMESTAMP)
            info.create_system = 3  # Unix: the mode below is read by unzip and by Terraform
            mode = 0o755 if os.access(path, os.X_OK) else 0o644
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with path.open("rb") as source, archive.open(info, "w", force_zip64=True) as entry:
                while chunk := source.read(1 << 20):
                    entry.write(chunk)
    return target


def manifest() -> dict[str, Any]:
    """The registry manifest: the plugin protocol versions the provider speaks."""
    return {"version": 1, "metadata": {"protocol_versions": list(PROTOCOL_VERSIONS)}}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def sums(paths: Iterable[Path]) -> str:
    """SHA256SUMS as `sha256sum` writes it (two spaces, file name), sorted by name."""
    return "".join(f"{sha256(path)}  {path.name}\n" for path in sorted(paths, key=lambda item: item.name))


def write_release(out: Path, *, release: str) -> list[Path]:
    """The manifest and SHA256SUMS of the release's zips in `out`, written beside them; every release file."""
    archives = sorted(out.glob(zip_name(release, "*")))
    if not archives:
        raise FileNotFoundError(f"no {zip_name(release, '<os>_<arch>')} in {out}")
    manifest_path = out / manifest_name(release)
    manifest_path.write_text(json.dumps(manifest(), indent=2) + "\n")
    sums_path = out / sums_name(release)
    sums_path.write_text(sums([*archives, manifest_path]))
    return sorted([*archives, manifest_path, sums_path])
