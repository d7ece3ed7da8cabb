"""OCI images written by us: deterministic layers, an image config, and an image-layout archive.

A layer is a gzipped tar built from files, directory trees and other tar files
(`LayerContents`); `write_archive` wraps layers and a config into an OCI image layout
(`oci-layout`, `index.json`, `blobs/sha256/...`) packed as one tar, which
`ctr images import`, `docker load` (25 and later), `podman load` and
`skopeo copy oci-archive:...` read.

The same inputs give the same bytes, so the same digests: entries are sorted by path,
every mtime is one fixed value, owners are uid/gid 0 unless given (a root filesystem
keeps the owners its packages gave its files), user and group names are left empty,
and gzip writes neither a timestamp nor a file name. Hard links inside a layer point
at the first of their paths in that order, whatever order the source had.

The name goes into `index.json` twice: containerd registers an imported image under
`io.containerd.image.name`, and OCI tools (podman, skopeo, Docker's loader when the first
is missing) read `org.opencontainers.image.ref.name`.

Standard library only: it runs before any virtual environment exists.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import platform
import shutil
import stat
import tarfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol, cast

from runtime.api.objects import JSON

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
#: the name containerd registers an imported image under
ANNOTATION_CONTAINERD_NAME = "io.containerd.image.name"
#: the OCI image-layout annotation podman, skopeo and Docker read
ANNOTATION_REF_NAME = "org.opencontainers.image.ref.name"
#: every mtime in a layer and in the archive, and the config's creation time: 1980-01-01, the
#: earliest a zip (a wheel) records; the inputs decide the bytes, not the clock
FIXED_MTIME = 315532800
CREATED = "1980-01-01T00:00:00Z"
_ARCHITECTURES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


class ImageError(Exception):
    """An image cannot be written as asked; the message names the path or field."""


class _Sink(Protocol):
    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


class _Digesting:
    """A write-only stream that hashes and counts what passes through to `target`."""

    def __init__(self, target: _Sink) -> None:
        self._target = target
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.size += len(data)
        self._target.write(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self._target.flush()


@dataclass(frozen=True)
class Blob:
    """A content-addressed file: its digest (`sha256:<hex>`), size and where it is."""

    digest: str
    size: int
    path: Path

    def descriptor(self, media_type: str, **extra: Any) -> JSON:
        return {"mediaType": media_type, "digest": self.digest, "size": self.size, **extra}


@dataclass(frozen=True)
class Layer:
    """A gzipped layer blob and the digest of its uncompressed tar (the config's `diff_id`)."""

    blob: Blob
    diff_id: str


Opener = Callable[[], IO[bytes]]


@dataclass
class _Entry:
    info: tarfile.TarInfo
    #: the content of a regular file
    opener: Opener | None = None
    #: entries with the same identity are one file: the first in path order holds the content
    identity: object = None


def _clean(name: str) -> str:
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise ImageError(f"{name!r} is not a path inside a layer")
    return "/".join(parts)


@dataclass
class LayerContents:
    """What goes into one layer, path by path (a later addition of a path replaces the earlier one)."""

    _entries: dict[str, _Entry] = field(default_factory=dict)
    #: tar files whose members are added, open until the layer is written
    _archives: list[tarfile.TarFile] = field(default_factory=list)

    def _put(self, info: tarfile.TarInfo, opener: Opener | None = None, identity: object = None) -> None:
        info.name = _clean(info.name)
        self._entries[info.name] = _Entry(info, opener, identity)

    def add_file(
        self,
        name: str,
        data: bytes,
        *,
        mode: int = 0o644,
        uid: int = 0,
        gid: int = 0,
        xattrs: Mapping[str, bytes] | None = None,
    ) -> None:
        info = _info(name, tarfile.REGTYPE, mode=mode, uid=uid, gid=gid, size=len(data))
        _set_xattrs(info, xattrs or {})
        self._put(info, lambda: io.BytesIO(data))

    def add_directory(self, name: str, *, mode: int = 0o755, uid: int = 0, gid: int = 0) -> None:
        self._put(_info(name, tarfile.DIRTYPE, mode=mode, uid=uid, gid=gid))

    def add_symlink(self, name: str, target: str) -> None:
        info = _info(name, tarfile.SYMTYPE, mode=0o777)
        info.linkname = target
        self._put(info)

    def add_tree(
        self,
        root: Path,
        *,
        prefix: str = "",
        keep_owners: bool = False,
        exclude: Callable[[str], bool] = lambda name: False,
        xattrs: Mapping[str, Mapping[str, bytes]] | None = None,
    ) -> None:
        """Everything under `root` (not `root` itself), at `prefix`; `exclude(name)` leaves a path out
        (a directory with everything in it). `xattrs` gives extended attributes by path (file
        capabilities, say); owners are 0 unless `keep_owners`."""
        for directory, dirnames, filenames in os.walk(root):
            relative = os.path.relpath(directory, root)
            base = "" if relative == "." else relative
            kept = []
            for dirname in sorted(dirnames):
                name = _join(prefix, base, dirname)
                if exclude(name):
                    continue
                path = os.path.join(directory, dirname)
                if os.path.islink(path):
                    # os.walk lists a symlink to a directory with the directories; it is a link here
                    self._add_path(path, name, keep_owners=keep_owners, xattrs=xattrs)
                    continue
                kept.append(dirname)
                self._add_path(path, name, keep_owners=keep_owners, xattrs=xattrs)
            dirnames[:] = kept
            for filename in sorted(filenames):
                name = _join(prefix, base, filename)
                if not exclude(name):
                    self._add_path(
                        os.path.join(directory, filename), name, keep_owners=keep_owners, xattrs=xattrs
                    )

    def _add_path(
        self,
        path: str,
        name: str,
        *,
        keep_owners: bool,
        xattrs: Mapping[str, Mapping[str, bytes]] | None,
    ) -> None:
        status = os.lstat(path)
        mode = stat.S_IMODE(status.st_mode)
        uid, gid = (status.st_uid, status.st_gid) if keep_owners else (0, 0)
        kind = stat.S_IFMT(status.st_mode)
        if kind == stat.S_IFDIR:
            info = _info(name, tarfile.DIRTYPE, mode=mode, uid=uid, gid=gid)
            identity = None
            opener = None
        elif kind == stat.S_IFREG:
            info = _info(name, tarfile.REGTYPE, mode=mode, uid=uid, gid=gid, size=status.st_size)
            identity = ("inode", status.st_dev, status.st_ino) if status.st_nlink > 1 else None

            def opener(path: str = path) -> IO[bytes]:
                return open(path, "rb")

        elif kind == stat.S_IFLNK:
            info = _info(name, tarfile.SYMTYPE, mode=mode, uid=uid, gid=gid)
            info.linkname = os.readlink(path)
            identity = None
            opener = None
        else:
            raise ImageError(f"{path}: only directories, regular files and symbolic links go into a layer")
        _set_xattrs(info, (xattrs or {}).get(name, {}))
        self._put(info, opener, identity)

    def add_tar(
        self, path: Path, *, keep_owners: bool = False, exclude: Callable[[str], bool] = lambda n: False
    ) -> None:
        """The members of an uncompressed or compressed tar file (hard links kept, devices and fifos left out)."""
        archive = tarfile.open(path)  # noqa: SIM115 (closed by `write`)
        self._archives.append(archive)
        for member in archive.getmembers():
            name = _clean(member.name) if member.name.strip("./") else ""
            if not name or exclude(name):
                continue
            info = _info(
                name,
                member.type,
                mode=member.mode,
                uid=member.uid if keep_owners else 0,
                gid=member.gid if keep_owners else 0,
                size=member.size if member.isreg() else 0,
            )
            _set_xattrs(info, _member_xattrs(member))
            if member.isdir() or member.issym():
                info.linkname = member.linkname
                self._put(info)
            elif member.isreg():
                self._put(info, _tar_opener(archive, member), ("tar", str(path), name))
            elif member.islnk():
                target = archive.getmember(member.linkname)
                info.type = tarfile.REGTYPE
                info.size = target.size
                self._put(info, _tar_opener(archive, target), ("tar", str(path), _clean(member.linkname)))

    def names(self) -> list[str]:
        return sorted(self._entries)

    def write(self, blobs: Path, *, mtime: int = FIXED_MTIME) -> Layer:
        """Write the layer into the blob folder `blobs` (blobs/sha256/<hex>); the tar files added are
        closed afterwards, so contents are written once."""
        temporary = blobs / f".layer-{os.getpid()}.tmp"
        blobs.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            for archive in self._archives:
                stack.callback(archive.close)
            raw = stack.enter_context(temporary.open("wb"))
            compressed = _Digesting(raw)
            with gzip.GzipFile(
                filename="", mode="wb", fileobj=compressed, mtime=0, compresslevel=6
            ) as zipped:
                plain = _Digesting(zipped)
                # tarfile only writes and tells in "w" mode: the stream needs no reading or seeking
                stream = cast(IO[bytes], plain)
                with tarfile.TarFile(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    self._write_entries(tar, mtime)
        blob = _store(temporary, blobs, compressed.sha256.hexdigest(), compressed.size)
        return Layer(blob=blob, diff_id=f"sha256:{plain.sha256.hexdigest()}")

    def _write_entries(self, tar: tarfile.TarFile, mtime: int) -> None:
        first: dict[object, str] = {}
        for name in sorted(self._entries):
            entry = self._entries[name]
            info = entry.info
            info.mtime = mtime
            info.uname = info.gname = ""
            if entry.identity is not None and entry.identity in first:
                link = tarfile.TarInfo(name)
                link.type = tarfile.LNKTYPE
                link.linkname = first[entry.identity]
                link.mode, link.uid, link.gid, link.mtime = info.mode, info.uid, info.gid, mtime
                link.uname = link.gname = ""
                tar.addfile(link)
                continue
            if entry.identity is not None:
                first[entry.identity] = name
            if entry.opener is None:
                tar.addfile(info)
                continue
            with entry.opener() as content:
                tar.addfile(info, content)


def _join(*parts: str) -> str:
    return "/".join(part for part in parts if part)


def _info(name: str, kind: bytes, *, mode: int, uid: int = 0, gid: int = 0, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.uid, info.gid = uid, gid
    info.size = size
    info.mtime = FIXED_MTIME
    return info


def _set_xattrs(info: tarfile.TarInfo, xattrs: Mapping[str, bytes]) -> None:
    # PAX carries extended attributes as SCHILY.xattr.<name> records, raw bytes (hdrcharset=BINARY)
    info.pax_headers = {
        f"SCHILY.xattr.{key}": value.decode("utf-8", "surrogateescape")
        for key, value in sorted(xattrs.items())
    }


def _member_xattrs(member: tarfile.TarInfo) -> dict[str, bytes]:
    prefix = "SCHILY.xattr."
    return {
        key.removeprefix(prefix): value.encode("utf-8", "surrogateescape")
        for key, value in member.pax_headers.items()
        if key.startswith(prefix)
    }


def _tar_opener(archive: tarfile.TarFile, member: tarfile.TarInfo) -> Opener:
    def opener() -> IO[bytes]:
        content = archive.extractfile(member)
        if content is None:
            raise ImageError(f"{member.name} in a tar file has no content")
        return content

    return opener


def _store(temporary: Path, blobs: Path, hexdigest: str, size: int) -> Blob:
    target = blobs / "sha256" / hexdigest
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(temporary, target)
    return Blob(digest=f"sha256:{hexdigest}", size=size, path=target)


def write_blob(blobs: Path, data: bytes) -> Blob:
    hexdigest = hashlib.sha256(data).hexdigest()
    target = blobs / "sha256" / hexdigest
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return Blob(digest=f"sha256:{hexdigest}", size=len(data), path=target)


def _canonical(document: JSON) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class ImageConfig:
    """The runtime part of an image config: what a container of it runs, as whom, with what."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    user: str = ""
    env: tuple[str, ...] = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)
    working_dir: str = "/"
    exposed_ports: tuple[str, ...] = ()
    stop_signal: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)

    def document(self) -> JSON:
        config: JSON = {"Env": list(self.env), "WorkingDir": self.working_dir}
        if self.entrypoint:
            config["Entrypoint"] = list(self.entrypoint)
        if self.cmd:
            config["Cmd"] = list(self.cmd)
        if self.user:
            config["User"] = self.user
        if self.exposed_ports:
            config["ExposedPorts"] = {port: {} for port in self.exposed_ports}
        if self.stop_signal:
            config["StopSignal"] = self.stop_signal
        if self.labels:
            config["Labels"] = dict(self.labels)
        return config


@dataclass(frozen=True)
class Image:
    """An image as written: its names, manifest blob and the archive's path."""

    names: tuple[str, ...]
    manifest: Blob
    archive: Path


def image_config(
    layers: Iterable[Layer], config: ImageConfig, *, architecture: str, history: Iterable[str]
) -> JSON:
    layers = list(layers)
    return {
        "architecture": architecture,
        "os": "linux",
        "created": CREATED,
        "config": config.document(),
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created": CREATED, "created_by": step} for step in history],
    }


def write_archive(
    archive: Path,
    *,
    names: Sequence[str],
    layers: Iterable[Layer],
    config: ImageConfig,
    blobs: Path,
    architecture: str = "amd64",
    history: Iterable[str] = (),
) -> Image:
    """The image under each of `names` (full references: `registry.k8s.io/pause:3.10.2`) as an OCI
    layout archive: one manifest, listed in the index once per name."""
    if not names:
        raise ImageError(f"{archive}: an image needs a name")
    for name in names:
        if ":" not in name.rsplit("/", 1)[-1]:
            raise ImageError(f"{name!r}: an image name needs its tag (`{name}:<tag>`)")
    layers = list(layers)
    config_blob = write_blob(
        blobs, _canonical(image_config(layers, config, architecture=architecture, history=history))
    )
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": config_blob.descriptor(MEDIA_CONFIG),
        "layers": [layer.blob.descriptor(MEDIA_LAYER) for layer in layers],
    }
    manifest_blob = write_blob(blobs, _canonical(manifest))
    index = {
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [
            manifest_blob.descriptor(
                MEDIA_MANIFEST,
                platform={"architecture": architecture, "os": "linux"},
                annotations={ANNOTATION_CONTAINERD_NAME: name, ANNOTATION_REF_NAME: name},
            )
            for name in names
        ],
    }
    members: dict[str, bytes | Path] = {
        "oci-layout": _canonical({"imageLayoutVersion": "1.0.0"}),
        "index.json": _canonical(index),
    }
    for blob in (config_blob, manifest_blob, *(layer.blob for layer in layers)):
        members[f"blobs/sha256/{blob.digest.removeprefix('sha256:')}"] = blob.path
    archive.parent.mkdir(parents=True, exist_ok=True)
    temporary = archive.with_name(f".{archive.name}.{os.getpid()}.tmp")
    with tarfile.open(temporary, "w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("blobs", "blobs/sha256"):
            tar.addfile(_info(directory, tarfile.DIRTYPE, mode=0o755))
        for member in sorted(members):
            content = members[member]
            if isinstance(content, bytes):
                tar.addfile(
                    _info(member, tarfile.REGTYPE, mode=0o644, size=len(content)), io.BytesIO(content)
                )
                continue
            with content.open("rb") as handle:
                info = _info(member, tarfile.REGTYPE, mode=0o644, size=os.fstat(handle.fileno()).st_size)
                tar.addfile(info, handle)
    os.replace(temporary, archive)
    return Image(names=tuple(names), manifest=manifest_blob, archive=archive)


def write_image(
    archive: Path,
    *,
    names: Sequence[str],
    layers: Sequence[LayerContents],
    config: ImageConfig,
    architecture: str,
    history: Iterable[str] = (),
) -> Image:
    """Write `layers` and `config` as the archive of the image `names`; the blobs go through a
    temporary folder beside the archive, removed afterwards."""
    blobs = archive.parent / f".blobs-{archive.name}-{os.getpid()}"
    try:
        return write_archive(
            archive,
            names=names,
            layers=[contents.write(blobs) for contents in layers],
            config=config,
            blobs=blobs,
            architecture=architecture,
            history=history,
        )
    finally:
        shutil.rmtree(blobs, ignore_errors=True)


def unpacked_size(archive: Path) -> int:
    """The bytes of an image archive's layers uncompressed (what `docker images` shows as its size)."""
    total = 0
    with tarfile.open(archive) as tar:
        index = json.load(tar.extractfile("index.json") or io.BytesIO(b"{}"))
        manifest = json.load(
            tar.extractfile(f"blobs/sha256/{index['manifests'][0]['digest'][7:]}") or io.BytesIO()
        )
        for layer in manifest["layers"]:
            with gzip.open(tar.extractfile(f"blobs/sha256/{layer['digest'][7:]}") or io.BytesIO()) as stream:
                while chunk := stream.read(1 << 20):
                    total += len(chunk)
    return total


def architecture() -> str:
    """This machine's architecture as OCI names it (`amd64`, `arm64`)."""
    machine = platform.machine().lower()
    return _ARCHITECTURES.get(machine, machine)
