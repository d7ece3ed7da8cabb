"""The pause image: Kubernetes' own `pause.c`, compiled static, under the name kubeadm gives it.

The source is `build/pause/linux/pause.c` of the k8s.io/kubernetes module pinned in
tools/realk8s/kubernetes/go.mod (from the Go module cache: `go mod download`). kubelet
v1.36 has no sandbox image of its own (the container runtime's configuration names
it); the name Kubernetes gives the pause image is kubeadm's, `PauseVersion` in
`cmd/kubeadm/app/constants/constants.go`: registry.k8s.io/pause:3.10.2 for v1.36.3.
It is built as `build/pause/Makefile` builds it (`-Os -Wall -Werror -static`, the
version compiled in, stripped) and runs as the upstream image does: `/pause`, user
65535.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tools.images import oci
from tools.images.errors import BuildError
from tools.realk8s.build import KUBERNETES

REPOSITORY = "registry.k8s.io/pause"
SOURCE = "build/pause/linux/pause.c"
CONSTANTS = "cmd/kubeadm/app/constants/constants.go"
USER = "65535:65535"


@dataclass(frozen=True)
class PauseSource:
    kubernetes_version: str
    tag: str
    source: bytes

    @property
    def name(self) -> str:
        return f"{REPOSITORY}:{self.tag}"


def pause_version(constants: str) -> str:
    """kubeadm's `PauseVersion` constant, from the text of constants.go."""
    match = re.search(r'^\s*PauseVersion\s*=\s*"([^"]+)"', constants, re.MULTILINE)
    if match is None:
        raise BuildError(f"no PauseVersion constant in {CONSTANTS}")
    return match.group(1)


def module_dir() -> Path:
    """Where the Go module cache holds the pinned k8s.io/kubernetes (downloaded when missing)."""
    if shutil.which("go") is None:
        raise BuildError("no `go` on PATH: pause.c comes from the k8s.io/kubernetes Go module (install Go)")
    version = KUBERNETES.version()
    completed = subprocess.run(
        ["go", "mod", "download", "-json", f"{KUBERNETES.pinned}@{version}"],
        cwd=KUBERNETES.directory,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise BuildError(f"go mod download {KUBERNETES.pinned}@{version} failed: {completed.stderr.strip()}")
    return Path(json.loads(completed.stdout)["Dir"])


def pause_source() -> PauseSource:
    directory = module_dir()
    return PauseSource(
        kubernetes_version=KUBERNETES.version(),
        tag=pause_version((directory / CONSTANTS).read_text()),
        source=(directory / SOURCE).read_bytes(),
    )


def compiler() -> str:
    """The C compiler's identity (part of the cache key: another compiler makes another binary)."""
    if shutil.which("gcc") is None:
        raise BuildError("no `gcc` on PATH: the pause image is compiled from pause.c")
    return subprocess.run(
        ["gcc", "--version"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[0]


def compile_pause(source: PauseSource, work: Path) -> Path:
    """pause.c built as build/pause/Makefile builds it; the stripped static binary's path."""
    c_file = work / "pause.c"
    c_file.write_bytes(source.source)
    binary = work / "pause"
    version = f"v{source.tag}-{source.kubernetes_version}"
    for command in (
        ["gcc", "-Os", "-Wall", "-Werror", "-static", f"-DVERSION={version}", "-o", str(binary), str(c_file)],
        ["strip", str(binary)],
    ):
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            hint = " (a static build needs the C library's static archive: apt-get install libc6-dev)"
            raise BuildError(f"`{' '.join(command)}` failed: {completed.stderr.strip()}{hint}")
    return binary


def write_image(source: PauseSource, folder: Path, filename: str, *, architecture: str) -> None:
    binary = compile_pause(source, folder)
    contents = oci.LayerContents()
    contents.add_file("pause", binary.read_bytes(), mode=0o755)
    binary.unlink()
    (folder / "pause.c").unlink()
    oci.write_image(
        folder / filename,
        names=[source.name],
        layers=[contents],
        config=oci.ImageConfig(entrypoint=("/pause",), user=USER),
        architecture=architecture,
        history=[f"pause.c of {KUBERNETES.pinned} {source.kubernetes_version}, gcc -Os -static, stripped"],
    )
