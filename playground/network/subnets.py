"""Which /24 of the host a state dir's playground network uses, and which of its addresses each node gets.

kind puts every cluster's nodes on one Docker network (`kind`, 172.18.0.0/16). The
playground gives each state dir one such network: a /24 of `POOL` (172.30.0.0/16, clear
of this host's routes: `ip route` shows only 192.0.2.0/24 on eth0 here), never one that
a route of the host already covers, and never one another state dir holds. A hold is a
file in `REGISTRY` (on /run, so a reboot, which also removes every bridge, frees them
all) naming the holder's bridge and state dir; it is void once that bridge is gone (and
the hold older than `CLAIM_GRACE`, the time a starting cluster takes to make it). The
state dir remembers its /24 in `network.json`, so it gets the same one back when it is
still free, and its nodes keep their addresses across `playground down --keep` and up.

The first address of the /24 is the host's (the bridge's, kind's 172.18.0.1); nodes
get the others, the lowest free first, each cluster's stored in its `cluster.json`.
All blocking file I/O: callers on an event loop run it in a thread, under the state
dir's network lock (`lock`).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import socket
import struct
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from .names import bridge_name

#: where the state dirs' networks come from (kind's is 172.18.0.0/16)
POOL = ipaddress.IPv4Network("172.30.0.0/16")
PREFIX = 24
REGISTRY = Path(os.environ.get("PLAYGROUND_NETWORK_REGISTRY", "/run/liqo-playground/networks"))
NETWORK_FILE = "network.json"
LOCK_FILE = ".network.lock"
SYS_CLASS_NET = Path("/sys/class/net")
#: a hold whose bridge does not exist yet is respected this long (seconds)
CLAIM_GRACE = 120.0


class NetworkExhaustedError(RuntimeError):
    """No /24 of the pool is free (or a network has no address left for a node)."""


@contextlib.contextmanager
def lock(state_dir: Path) -> Iterator[None]:
    """The state dir's network lock: one `up` or `down` at a time changes its bridge and addresses."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with (state_dir / LOCK_FILE).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def host_routes(proc_route: Path = Path("/proc/net/route")) -> list[ipaddress.IPv4Network]:
    """The IPv4 destinations of the host's main routing table, default route excluded."""
    routes = []
    try:
        lines = proc_route.read_text().splitlines()[1:]
    except FileNotFoundError:
        return []
    for line in lines:
        fields = line.split()
        if len(fields) < 8:
            continue
        destination = socket.inet_ntoa(struct.pack("<I", int(fields[1], 16)))
        mask = socket.inet_ntoa(struct.pack("<I", int(fields[7], 16)))
        network = ipaddress.IPv4Network(f"{destination}/{mask}", strict=False)
        if network.prefixlen:
            routes.append(network)
    return routes


def _claim_path(subnet: ipaddress.IPv4Network, registry: Path) -> Path:
    return registry / str(subnet.network_address)


def _claim_holder(path: Path) -> tuple[str, str] | None:
    """(bridge, state dir) of a live claim, None when there is none or its bridge is gone (and not coming)."""
    try:
        bridge, state = path.read_text().split("\n", 1)
        age = time.time() - path.stat().st_mtime
    except (OSError, ValueError):
        return None
    alive = (SYS_CLASS_NET / bridge).exists() or age < CLAIM_GRACE
    return (bridge, state.strip()) if alive else None


def subnet_for(
    state_dir: Path, *, registry: Path = REGISTRY, routes: Iterable[ipaddress.IPv4Network] | None = None
) -> str:
    """The state dir's /24: the one it had when still free, else the first free one of the pool; claimed."""
    state = str(state_dir.absolute())
    bridge = bridge_name(state_dir)
    claim = f"{bridge}\n{state}\n"
    taken_by_routes = list(host_routes() if routes is None else routes)
    registry.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(parents=True, exist_ok=True)
    remembered: list[ipaddress.IPv4Network] = []
    with contextlib.suppress(OSError, ValueError, KeyError):
        remembered.append(ipaddress.IPv4Network(json.loads((state_dir / NETWORK_FILE).read_text())["subnet"]))
    for subnet in (*remembered, *POOL.subnets(new_prefix=PREFIX)):
        path = _claim_path(subnet, registry)
        holder = _claim_holder(path)
        if holder is not None and holder[1] != state:
            continue
        ours_already = holder is not None or _read(path) == claim
        if not ours_already and any(subnet.overlaps(route) for route in taken_by_routes):
            continue
        if not ours_already and not _take(path, claim):
            continue
        (state_dir / NETWORK_FILE).write_text(json.dumps({"subnet": str(subnet), "bridge": bridge}) + "\n")
        return str(subnet)
    raise NetworkExhaustedError(
        f"every /{PREFIX} of {POOL} is used by another playground state dir or covered by a route of this host: "
        "remove playgrounds you no longer need (`playground down` in their state dirs)"
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _take(path: Path, claim: str) -> bool:
    """Write the claim unless a live claim holds the file (a void one is replaced)."""
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            if _claim_holder(path) is not None:
                return False
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as file:
            file.write(claim)
        return True
    return False


def release(state_dir: Path, *, registry: Path = REGISTRY) -> None:
    """Give back the state dir's claim (its bridge is gone); `network.json` stays to get the same /24 again."""
    with contextlib.suppress(OSError, ValueError, KeyError):
        subnet = ipaddress.IPv4Network(json.loads((state_dir / NETWORK_FILE).read_text())["subnet"])
        path = _claim_path(subnet, registry)
        if _read(path) == f"{bridge_name(state_dir)}\n{state_dir.absolute()}\n":
            path.unlink()


def gateway(subnet: str) -> str:
    """The host's address on the network (the bridge's)."""
    return str(ipaddress.IPv4Network(subnet).network_address + 1)


def node_addresses(subnet: str, count: int, *, used: Iterable[str]) -> list[str]:
    """`count` free node addresses of `subnet`, lowest first (the first address is the host's)."""
    network = ipaddress.IPv4Network(subnet)
    taken = {ipaddress.IPv4Address(address) for address in used} | {network.network_address + 1}
    free = (address for address in network.hosts() if address not in taken)
    chosen = [str(address) for address, _ in zip(free, range(count), strict=False)]
    if len(chosen) < count:
        raise NetworkExhaustedError(
            f"the playground network {subnet} has only {len(chosen)} free node addresses for {count} nodes: "
            "use another state dir for more clusters"
        )
    return chosen
