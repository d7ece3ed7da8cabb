"""The CoreDNS image: a static `coredns` binary (built from its Go module elsewhere) packed as upstream packs it.

Upstream's image is the binary on distroless `static:nonroot`: `/coredns` as the
entrypoint, user 65532 (nonroot), ports 53/udp and 53/tcp, and the file capability
`cap_net_bind_service=+ep` on the binary so that, not being root, it can still bind
port 53 (the Deployment adds NET_BIND_SERVICE to the container's capabilities for it, as
kubeadm's does). The tag is the binary's own version (`coredns -version`), so the image
is named `registry.k8s.io/coredns/coredns:v<version>`, as kubeadm names it.
"""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

from tools.images import oci
from tools.images.errors import BuildError

REPOSITORY = "registry.k8s.io/coredns/coredns"
USER = "65532:65532"
#: CAP_NET_BIND_SERVICE (linux/capability.h)
CAP_NET_BIND_SERVICE = 10
#: VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE: the capability is effective as soon as the binary runs
_VFS_CAP_MAGIC = 0x02000000 | 0x000001


def file_capability(*capabilities: int) -> bytes:
    """The `security.capability` value (struct vfs_cap_data, revision 2) granting `capabilities` as `+ep`."""
    permitted = 0
    for capability in capabilities:
        permitted |= 1 << capability
    low, high = permitted & 0xFFFFFFFF, permitted >> 32
    return struct.pack("<5I", _VFS_CAP_MAGIC, low, 0, high, 0)


def binary_version(binary: Path) -> str:
    """The CoreDNS version the binary reports (`CoreDNS-1.15.0` -> `1.15.0`)."""
    try:
        completed = subprocess.run(
            [str(binary.resolve()), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as exc:
        raise BuildError(
            f"{binary} cannot run ({exc.strerror}): give --binary a CoreDNS executable"
        ) from None
    match = re.search(r"CoreDNS-(\d+\.\d+\.\d+\S*)", completed.stdout)
    if completed.returncode != 0 or match is None:
        raise BuildError(
            f"`{binary} -version` says {(completed.stdout + completed.stderr).strip()!r}, not CoreDNS-<version>"
        )
    return match.group(1)


def image_name(version: str) -> str:
    return f"{REPOSITORY}:v{version}"


def write_image(binary: Path, folder: Path, filename: str, *, version: str, architecture: str) -> None:
    contents = oci.LayerContents()
    contents.add_file(
        "coredns",
        binary.read_bytes(),
        mode=0o755,
        xattrs={"security.capability": file_capability(CAP_NET_BIND_SERVICE)},
    )
    oci.write_image(
        folder / filename,
        names=[image_name(version)],
        layers=[contents],
        config=oci.ImageConfig(entrypoint=("/coredns",), user=USER, exposed_ports=("53/tcp", "53/udp")),
        architecture=architecture,
        history=[f"CoreDNS {version}: /coredns with cap_net_bind_service=+ep"],
    )
