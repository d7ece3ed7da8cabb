"""Build the real Kubernetes the playground's real-binary mode runs (`make real-k8s`).

    python3 tools/realk8s/build.py [--cache-dir DIR] [--skip-without-go]

Builds, from the Go modules pinned next to this script (`kubernetes/go.mod`, `etcd/go.mod`,
`coredns/go.mod`; one module each, so that every binary is built with exactly the
dependencies its release pins), everything a real cluster needs into
`<cache>/kubernetes/<kubernetes version>/`, the envtest layout `KUBEBUILDER_ASSETS` names:
etcd; kube-apiserver, kube-controller-manager and kube-scheduler (the control plane);
kubelet and kube-proxy (real nodes) and kubectl of the same release; CoreDNS (the cluster
DNS addon). Then `images/` there: the sandbox (pause) image and the CoreDNS image, OCI
archives made by tools/images without any registry, which real nodes import into their
containerd. It prints that folder on stdout. The cache is `$XDG_CACHE_HOME/liqo-iac`
(default `~/.cache/liqo-iac`); nothing there is ever committed.

A folder that holds the pinned versions is used as it is (the build runs once per
version). A folder that lacks something (one built before kubelet was added, or before
an image recipe changed) is completed: a new folder is made with what the old one has
and the rest built. A build goes into a temporary folder beside it and is swapped into
place when every binary is built and reports its version and every image is there, so
an interrupted build never leaves a folder that looks complete, and a program starting
a binary of the folder meanwhile always finds one; builds of the same version wait for
each other (a lock file).

The binaries are built as Kubernetes' release builds them (`CGO_ENABLED=0`, `-trimpath`,
stripped), with the version fields `hack/lib/version.sh` sets: `gitVersion` (so the API
server's `/version` and `--version` say v1.36.3), `gitMajor`, `gitMinor`, `buildDate` (the
module's release time, so builds are reproducible) and `gitTreeState` `archive`, kube's
word for a source without its git history (a module zip from the proxy). `gitCommit`
keeps its placeholder: the module proxy does not record the tag's commit.

Standard library only: it runs before any virtual environment exists.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# the repository root, so that the shared build helpers import as `tools.*` from a plain `python3`
if str(Path(__file__).resolve().parents[2]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.buildlock import locked
from tools.gobuild import BuildError, GoMissingError, go_environment, log, run
from tools.gobuild import main as build_main

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
KUBERNETES_MODULE = "k8s.io/kubernetes"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"
COREDNS_MODULE = "github.com/coredns/coredns"
#: the packages `hack/lib/version.sh` sets the version of, and the fields it sets
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
MANIFEST = "versions.json"
#: the image builder (tools/images/build.py IMAGE --out DIR prints the archive it made)
IMAGES_TOOL = REPO / "tools" / "images" / "build.py"
IMAGES_DIR = "images"
#: the manifest's digest of the image recipes (tools/images): a change rebuilds the images
IMAGE_RECIPES = "image-recipes"
#: the OCI index annotations that name an image (containerd's, then the OCI one)
IMAGE_NAME_ANNOTATIONS = ("io.containerd.image.name", "org.opencontainers.image.ref.name")


@dataclass(frozen=True)
class Binary:
    name: str
    #: the Go package of its command
    package: str
    #: the arguments that make it print its version, and the line it prints
    version_args: tuple[str, ...] = ("--version",)


@dataclass(frozen=True)
class GoModule:
    """One module of ours under tools/realk8s and the commands it builds."""

    #: its key in the manifest
    key: str
    directory: Path
    #: the module whose version the binaries carry
    pinned: str
    binaries: tuple[Binary, ...]

    def version(self) -> str:
        return pinned_version(self.directory / "go.mod", self.pinned)


KUBERNETES = GoModule(
    "kubernetes",
    HERE / "kubernetes",
    KUBERNETES_MODULE,
    (
        *(
            Binary(name, f"{KUBERNETES_MODULE}/cmd/{name}")
            for name in (
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler",
                "kubelet",
                "kube-proxy",
            )
        ),
        Binary("kubectl", f"{KUBERNETES_MODULE}/cmd/kubectl", ("version", "--client")),
    ),
)
ETCD = GoModule("etcd", HERE / "etcd", ETCD_MODULE, (Binary("etcd", ETCD_MODULE),))
COREDNS = GoModule(
    "coredns", HERE / "coredns", COREDNS_MODULE, (Binary("coredns", COREDNS_MODULE, ("-version",)),)
)
MODULES = (ETCD, KUBERNETES, COREDNS)
BINARIES = tuple(binary.name for module in MODULES for binary in module.binaries)


@dataclass(frozen=True)
class Image:
    """An image real nodes need, made by tools/images from what is built here."""

    name: str
    #: tools/images/build.py's arguments besides `--out`, given the folder being built
    arguments: tuple[str, ...]


def images_to_build(folder: Path) -> tuple[Image, ...]:
    """The sandbox image every pod needs, and the cluster DNS addon's image from the coredns just built."""
    return (Image("pause", ("pause",)), Image("coredns", ("coredns", "--binary", str(folder / "coredns"))))


IMAGES = tuple(image.name for image in images_to_build(Path()))


def pinned_version(go_mod: Path, module: str) -> str:
    """The version `go_mod` requires `module` at (a `require` line or a line of a `require` block)."""
    pattern = re.compile(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)\s*(?://.*)?$")
    for line in go_mod.read_text().splitlines():
        match = pattern.match(line)
        if match:
            return match.group(1)
    raise BuildError(f"{go_mod} does not require {module}")


def kubernetes_ldflags(version: str, build_date: str) -> list[str]:
    """The `-X` flags `hack/lib/version.sh` gives a release build of `version`."""
    major, minor = version.removeprefix("v").split(".")[:2]
    fields = {
        "gitVersion": version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "archive",
        "buildDate": build_date,
    }
    return [f"-X {package}.{key}={value}" for package in VERSION_PACKAGES for key, value in fields.items()]


def cache_root(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "liqo-iac" / "kubernetes"


def recipes_digest() -> str:
    """A digest of every file of the image recipes (so a changed recipe makes new images)."""
    directory = IMAGES_TOOL.parent
    if not directory.is_dir():
        raise BuildError(f"{directory} is missing: the images real nodes need are built by tools/images")
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(directory)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def expected_manifest() -> dict[str, str]:
    return {**{module.key: module.version() for module in MODULES}, IMAGE_RECIPES: recipes_digest()}


def _read_manifest(folder: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def _images_present(folder: Path, manifest: Mapping[str, Any]) -> bool:
    images = manifest.get("images")
    if not isinstance(images, dict):
        return False
    return all(
        isinstance(images.get(name), dict) and (folder / str(images[name].get("archive", ""))).is_file()
        for name in IMAGES
    )


def is_complete(folder: Path, expected: Mapping[str, str]) -> bool:
    """Whether `folder` holds every binary, built from the versions `expected` pins, and every image."""
    manifest = _read_manifest(folder)
    if not manifest or any(manifest.get(key) != value for key, value in expected.items()):
        return False
    return all(os.access(folder / name, os.X_OK) for name in BINARIES) and _images_present(folder, manifest)


def module_time(module: GoModule, env: Mapping[str, str]) -> str:
    """When the pinned module was released (the proxy's time of its version), as `buildDate` wants it."""
    info = json.loads(run(["go", "list", "-m", "-json", module.pinned], cwd=module.directory, env=env))
    released = time.strptime(info["Time"], "%Y-%m-%dT%H:%M:%SZ")
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", released)


def build_binary(
    module: GoModule, binary: Binary, output: Path, *, ldflags: Sequence[str], env: Mapping[str, str]
) -> None:
    flags = " ".join(["-s", "-w", *ldflags])
    started = time.monotonic()
    run(
        ["go", "build", "-trimpath", f"-ldflags={flags}", "-o", str(output / binary.name), binary.package],
        cwd=module.directory,
        env=env,
    )
    log(f"  {binary.name}: built in {time.monotonic() - started:.0f} s")


def reported_version(module: GoModule, version: str) -> str:
    """The line each binary of `module` prints when asked its version."""
    if module is KUBERNETES:
        return f"Kubernetes {version}"
    if module is ETCD:
        return f"etcd Version: {version.removeprefix('v')}"
    return f"CoreDNS-{version.removeprefix('v')}"


def check_versions(folder: Path, expected: Mapping[str, str]) -> None:
    """Every binary reports the version it was built from (a wrong ldflag fails here, not in a test)."""
    for module in MODULES:
        for binary in module.binaries:
            text = reported_version(module, expected[module.key])
            if binary.name == "kubectl":
                text = f"Client Version: {expected[module.key]}"
            reported = subprocess.run(
                [str(folder / binary.name), *binary.version_args], capture_output=True, text=True, check=False
            ).stdout
            if text not in reported.splitlines():
                raise BuildError(f"{folder / binary.name} says {reported.strip()!r}, not {text!r}")


def archive_image_name(archive: Path) -> str:
    """The name an OCI archive's index gives its image (what `ctr images import` names it)."""
    try:
        with tarfile.open(archive) as tar:
            member = tar.extractfile("index.json")
            index = json.load(member) if member is not None else {}
    except (tarfile.TarError, KeyError, ValueError, OSError) as exc:
        raise BuildError(f"{archive} is not an OCI archive with an index.json: {exc}") from None
    for manifest in index.get("manifests") or []:
        annotations = manifest.get("annotations") or {}
        for key in IMAGE_NAME_ANNOTATIONS:
            if annotations.get(key):
                return str(annotations[key])
    raise BuildError(f"{archive}: its index.json names no image ({' or '.join(IMAGE_NAME_ANNOTATIONS)})")


def build_images(folder: Path, environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Make the images under `folder`/images with tools/images; each one's archive (relative) and name."""
    output = folder / IMAGES_DIR
    made: dict[str, dict[str, str]] = {}
    for image in images_to_build(folder):
        started = time.monotonic()
        printed = run(
            [sys.executable, str(IMAGES_TOOL), *image.arguments, "--out", str(output)], cwd=REPO, env=environ
        )
        archives = [Path(line.strip()).resolve() for line in printed.splitlines() if line.strip()]
        if (
            len(archives) != 1
            or not archives[0].is_relative_to(output.resolve())
            or not archives[0].is_file()
        ):
            raise BuildError(
                f"{IMAGES_TOOL} {image.name} printed {printed!r}, not one archive under {output}"
            )
        made[image.name] = {
            "archive": str(archives[0].relative_to(folder.resolve())),
            "name": archive_image_name(archives[0]),
        }
        log(f"  {image.name} image: {made[image.name]['name']} in {time.monotonic() - started:.0f} s")
    return made


def _take(previous: Path, staging: Path, names: Sequence[str]) -> bool:
    """Link `names` of the previous folder into the new one (False, taking nothing, when one is missing)."""
    if not all((previous / name).is_file() for name in names):
        return False
    for name in names:
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        os.link(previous / name, staging / name)
    return True


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def swap_into_place(staging: Path, target: Path) -> None:
    """Put `staging` at `target` in one step (the old folder is exchanged out, then removed)."""
    if not target.exists():
        staging.rename(target)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None and not renameat2(
        _AT_FDCWD, os.fsencode(staging), _AT_FDCWD, os.fsencode(target), _RENAME_EXCHANGE
    ):
        shutil.rmtree(staging, ignore_errors=True)
        return
    code = ctypes.get_errno() if renameat2 is not None else errno.ENOSYS
    if code not in (errno.ENOSYS, errno.EINVAL):
        raise BuildError(f"cannot swap {staging} into {target}: {os.strerror(code)}")
    retired = target.with_name(f"{staging.name}-retired")
    target.rename(retired)
    staging.rename(target)
    shutil.rmtree(retired, ignore_errors=True)


def _fill(
    staging: Path, previous: Path, expected: Mapping[str, str], environ: Mapping[str, str]
) -> dict[str, Any]:
    """Build into `staging` what the previous folder lacks (taking what it has); the new manifest."""
    old = _read_manifest(previous)
    env = go_environment(environ)
    for module in MODULES:
        missing = [
            binary
            for binary in module.binaries
            if old.get(module.key) != expected[module.key] or not _take(previous, staging, [binary.name])
        ]
        kept = [binary.name for binary in module.binaries if binary not in missing]
        if kept:
            log(f"  {', '.join(kept)}: kept from {previous}")
        if not missing:
            continue
        ldflags = (
            kubernetes_ldflags(expected[module.key], module_time(module, env)) if module is KUBERNETES else []
        )
        for binary in missing:
            build_binary(module, binary, staging, ldflags=ldflags, env=env)
    check_versions(staging, expected)
    images = old.get("images") if old.get(IMAGE_RECIPES) == expected[IMAGE_RECIPES] else None
    if not (
        isinstance(images, dict)
        and _images_present(previous, old)
        and _take(previous, staging, [images[name]["archive"] for name in IMAGES])
    ):
        images = build_images(staging, environ)
    return {**expected, "images": images}


def build(root: Path, environ: Mapping[str, str]) -> Path:
    """The folder of the pinned binaries and images under `root`, built first when it is missing, stale
    or incomplete."""
    expected = expected_manifest()
    target = root / expected["kubernetes"]
    if is_complete(target, expected):
        return target
    if shutil.which("go") is None:
        raise GoMissingError(
            "no `go` on PATH: the real Kubernetes binaries are built from Go modules (install Go 1.26 or later)"
        )
    with locked(root / f".{target.name}.lock"):
        if is_complete(target, expected):
            return target
        # Holding the lock, any temporary folder of this version is what an interrupted build left.
        for stale in root.glob(f".{target.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        staging = root / f".{target.name}.tmp-{os.getpid()}"
        staging.mkdir(parents=True)
        try:
            started = time.monotonic()
            log(
                f"building etcd {expected['etcd']}, Kubernetes {expected['kubernetes']}, CoreDNS "
                f"{expected['coredns']} and their images into {target} (minutes the first time) ..."
            )
            manifest = _fill(staging, target, expected, environ)
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
            swap_into_place(staging, target)
            log(f"built in {time.monotonic() - started:.0f} s")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    return build_main(
        argv,
        description=__doc__.split("\n\n")[0],
        cache="~/.cache/liqo-iac/kubernetes",
        build=build,
        cache_root=cache_root,
        built_what="the binaries",
        skipped="real-binary test leg skipped",
    )


if __name__ == "__main__":
    sys.exit(main())
