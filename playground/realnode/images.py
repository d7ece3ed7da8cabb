"""Images on real nodes: archives imported into a node's containerd, as `kind load image-archive` does.

Nothing is ever pulled: the playground's pod traffic stays on the machine, and so do its
nodes'. Every image a pod runs comes from an OCI archive imported into the CRI's
containerd namespace (`k8s.io`) of each node: the sandbox and CoreDNS images of the
assets folder when a node starts (before its kubelet runs), and any other by
`playground load-image CLUSTER ARCHIVE`. `ctr` talks to the node's containerd at its
socket inside the node's mount namespace (`nsenter --mount`), with kind's flags
(`--digests`: the image is also known by its digest; unpacked for the overlayfs
snapshotter the CRI uses).

Blocking (subprocesses): call from a worker thread.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from .config import CONTAINERD_SOCKET, CRI_NAMESPACE

_POLL = 0.1


class ImageError(RuntimeError):
    """An archive could not be imported; the message says which, where and why."""


def _ctr(mount_namespace: Path, *args: str) -> list[str]:
    return [
        "nsenter",
        f"--mount={mount_namespace}",
        "--",
        "ctr",
        "--address",
        CONTAINERD_SOCKET,
        "--namespace",
        CRI_NAMESPACE,
        *args,
    ]


def wait_for_containerd(mount_namespace: Path, *, node: str, timeout: float) -> None:
    """Until the node's containerd answers (ImageError after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        result = subprocess.run(_ctr(mount_namespace, "version"), capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise ImageError(
                f"node {node}: containerd did not answer on {CONTAINERD_SOCKET} within {timeout:g} s "
                f"({result.stderr.strip()}); see its log"
            )
        time.sleep(_POLL)


def import_archive(mount_namespace: Path, archive: Path, *, node: str) -> None:
    """Import the OCI (or Docker) archive into the node's containerd."""
    result = subprocess.run(
        _ctr(mount_namespace, "images", "import", "--digests", "--snapshotter=overlayfs", str(archive)),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode:
        raise ImageError(f"node {node}: importing {archive} failed: {result.stderr.strip()}")


def image_names(mount_namespace: Path) -> list[str]:
    """The images the node's containerd holds for the CRI (names and digests)."""
    result = subprocess.run(
        _ctr(mount_namespace, "images", "list", "--quiet"), capture_output=True, text=True
    )
    if result.returncode:
        raise ImageError(f"listing the images of {mount_namespace} failed: {result.stderr.strip()}")
    return result.stdout.split()
