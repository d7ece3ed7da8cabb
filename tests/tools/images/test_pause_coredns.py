"""The pause and CoreDNS images: named as Kubernetes names them, imported into containerd under that name.

The import tests run Debian's containerd on a throwaway root (`containerd` fixture) and
are skipped, saying why, where it, Go (pause.c comes from the Kubernetes module) or gcc
is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.tools.images.conftest import Containerd
from tools.images import coredns, pause
from tools.images.errors import BuildError

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "tools" / "images" / "build.py"


def _build(tmp_path: Path, *args: str) -> list[Path]:
    completed = subprocess.run(
        [
            sys.executable,
            str(BUILD),
            *args,
            "--out",
            str(tmp_path / "out"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return [Path(line) for line in completed.stdout.splitlines()]


def _config(archive: Path) -> dict[str, object]:
    with tarfile.open(archive) as tar:

        def blob(digest: str) -> bytes:
            member = tar.extractfile(f"blobs/sha256/{digest.removeprefix('sha256:')}")
            assert member is not None
            return member.read()

        index_file = tar.extractfile("index.json")
        assert index_file is not None
        manifest = json.loads(blob(json.load(index_file)["manifests"][0]["digest"]))
        config: dict[str, object] = json.loads(blob(manifest["config"]["digest"]))["config"]
        return config


def test_the_pause_tag_is_kubeadms_pause_version_constant() -> None:
    constants = 'const (\n\t// PauseVersion indicates the default pause image version for kubeadm\n\tPauseVersion = "3.10.2"\n)\n'
    assert pause.pause_version(constants) == "3.10.2"


def test_a_module_without_the_constant_is_an_error() -> None:
    with pytest.raises(BuildError, match="no PauseVersion"):
        pause.pause_version("package constants\n")


def test_the_coredns_capability_is_net_bind_service_effective_and_permitted() -> None:
    # what `setcap cap_net_bind_service=+ep` writes: revision 2 with the effective flag, bit 10 permitted
    assert coredns.file_capability(coredns.CAP_NET_BIND_SERVICE) == bytes.fromhex(
        "0100000200040000000000000000000000000000"
    )


def _fake_coredns(folder: Path, output: str) -> Path:
    binary = folder / "coredns"
    binary.write_text(f"#!/bin/sh\nprintf '{output}'\n")
    binary.chmod(0o755)
    return binary


def test_the_coredns_tag_is_the_binarys_version(tmp_path: Path) -> None:
    binary = _fake_coredns(tmp_path, "CoreDNS-1.15.0\\nlinux/amd64, go1.26.8, \\n")
    assert coredns.binary_version(binary) == "1.15.0"
    assert coredns.image_name("1.15.0") == "registry.k8s.io/coredns/coredns:v1.15.0"


def test_a_binary_that_is_not_coredns_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="not CoreDNS-<version>"):
        coredns.binary_version(_fake_coredns(tmp_path, "hello\\n"))


def test_the_coredns_image_runs_the_binary_as_nonroot_like_upstream(tmp_path: Path) -> None:
    (archive,) = _build(tmp_path, "coredns", "--binary", str(_fake_coredns(tmp_path, "CoreDNS-1.15.0\\n")))
    assert archive == tmp_path / "out" / "coredns-v1.15.0.tar"
    config = _config(archive)
    assert config["Entrypoint"] == ["/coredns"]
    assert config["User"] == "65532:65532"
    assert config["ExposedPorts"] == {"53/tcp": {}, "53/udp": {}}


def test_coredns_without_a_binary_says_what_to_give(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, str(BUILD), "coredns", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1
    assert "give its path with --binary PATH" in completed.stderr


@pytest.mark.slow
def test_the_coredns_archive_imports_under_its_name_with_its_capability(
    tmp_path: Path, containerd: Containerd
) -> None:
    (archive,) = _build(tmp_path, "coredns", "--binary", str(_fake_coredns(tmp_path, "CoreDNS-1.15.0\\n")))
    containerd.ctr("images", "import", str(archive))
    assert containerd.image_names() == {"registry.k8s.io/coredns/coredns:v1.15.0"}
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    containerd.ctr("images", "mount", "registry.k8s.io/coredns/coredns:v1.15.0", str(mountpoint))
    try:
        capability = os.getxattr(mountpoint / "coredns", "security.capability")
    finally:
        containerd.ctr("images", "unmount", "--rm", str(mountpoint))
    assert capability == coredns.file_capability(coredns.CAP_NET_BIND_SERVICE)


@pytest.mark.slow
def test_pause_is_built_from_the_kubernetes_module_and_runs_in_containerd(
    tmp_path: Path, containerd: Containerd
) -> None:
    for tool in ("go", "gcc"):
        if shutil.which(tool) is None:
            pytest.skip(
                f"no {tool} on PATH: pause.c comes from the k8s.io/kubernetes Go module, compiled with gcc"
            )
    (archive,) = _build(tmp_path, "pause")
    assert archive.name == "pause-3.10.2.tar"
    assert _config(archive)["Entrypoint"] == ["/pause"]
    assert _config(archive)["User"] == "65535:65535"
    containerd.ctr("images", "import", str(archive))
    assert containerd.image_names() == {"registry.k8s.io/pause:3.10.2"}
    output = containerd.ctr("run", "--rm", "registry.k8s.io/pause:3.10.2", "pause-version", "/pause", "-v")
    assert output.strip() == "pause.c v3.10.2-v1.36.3"
    # the second build is the cached archive
    assert _build(tmp_path, "pause") == [archive]
