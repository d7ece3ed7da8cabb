"""What the netns network needs from the host, checked before `playground up` touches anything.

kind needs Docker; the playground's network needs the rights and tools to make network
namespaces, links and nftables rules: CAP_NET_ADMIN (links, routes, rules) and
CAP_SYS_ADMIN (a named namespace is a bind mount; entering one is `setns`), which root
has, and the Debian packages nftables (`nft`) and util-linux (`nsenter`). Real nodes
(`playground.realnode`) also run Debian's containerd, runc and CNI plugins. `make venv`
installs the packages when they are missing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21
#: program -> the Debian package that has it
TOOLS = {"nft": "nftables", "nsenter": "util-linux"}
#: what real nodes run besides: program (or CNI plugin path) -> the Debian package that has it
REAL_NODE_TOOLS = {
    "containerd": "containerd",
    "ctr": "containerd",
    "containerd-shim-runc-v2": "containerd",
    "runc": "runc",
    "unshare": "util-linux",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
    "/usr/lib/cni/host-local": "containernetworking-plugins",
    "/usr/lib/cni/portmap": "containernetworking-plugins",
}
_SBIN = "/usr/local/sbin:/usr/sbin:/sbin"


def effective_capabilities(status: Path = Path("/proc/self/status")) -> int:
    for line in status.read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def tool(name: str) -> str | None:
    """The path of `name` on PATH or in the sbin directories (which a non-root PATH may lack); a name
    with a slash is a path, found when it is an executable file."""
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return shutil.which(name, path=f"{os.environ.get('PATH', os.defpath)}:{_SBIN}")


def problems(status: Path = Path("/proc/self/status"), *, real_nodes: bool = False) -> list[str]:
    """What is missing for the netns network, and with `real_nodes` for real nodes (empty: nothing);
    `status` is this process's /proc status."""
    found: list[str] = []
    capabilities = effective_capabilities(status)
    missing = [
        name
        for bit, name in ((CAP_NET_ADMIN, "CAP_NET_ADMIN"), (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"))
        if not capabilities >> bit & 1
    ]
    if missing:
        found.append(
            f"this process lacks {' and '.join(missing)}: nodes and pods get network namespaces, links and "
            "nftables rules of their own (as kind's get from Docker), which needs root: run `playground up` as root "
            "(sudo), or use `--network loopback`, the emulator-only fallback whose processes share the host's "
            "loopback addresses and which has no Services (docs/playground.md)"
        )
    packages = [package for name, package in TOOLS.items() if tool(name) is None]
    if packages:
        found.append(
            f"the playground network needs {', '.join(sorted(TOOLS))}: install the Debian packages "
            f"{' '.join(packages)} (`apt-get install {' '.join(packages)}`; `make venv` does it)"
        )
    if real_nodes:
        missing_tools = {name: package for name, package in REAL_NODE_TOOLS.items() if tool(name) is None}
        packages = sorted(set(missing_tools.values()))
        if packages:
            found.append(
                f"real nodes need {', '.join(missing_tools)}: install the Debian packages {' '.join(packages)} "
                f"(`apt-get install {' '.join(packages)}`; `make venv` does it)"
            )
    return found
