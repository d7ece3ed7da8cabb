"""Loopback ports a test picks before something listens on them, or keeps closed, that nothing else takes.

The kernel hands out the ports of its ephemeral range (`net.ipv4.ip_local_port_range`,
32768-60999 by default) to every `bind()` on port 0 and to the source side of every outgoing
connection, machine-wide. A port found free that way and used a moment later, or freed by
a server the test restarts on it, can meanwhile be given to another worker's server or to
any process's connection (even to the test's own client connecting to it: TCP's
self-connect), and the server then cannot listen there. The ports picked here lie below
that range, where the kernel gives out none: only another caller of this module could pick
the same one, at random among thousands, and the bind check below sees that it is taken.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: the lowest port picked (below: the well-known and registered ports of the host's own services)
LOWEST = 10000


def ephemeral_range(path: Path = EPHEMERAL_RANGE) -> tuple[int, int]:
    """The kernel's ephemeral port range, both ends included."""
    low, high = path.read_text().split()
    return int(low), int(high)


def free_port(host: str = "127.0.0.1", *, ephemeral: tuple[int, int] | None = None) -> int:
    """A port nothing listens on at `host` now, below the ephemeral range: no one else is handed it meanwhile."""
    low, _ = ephemeral or ephemeral_range()
    if low - LOWEST < 1000:
        raise RuntimeError(
            f"the ephemeral port range starts at {low} ({EPHEMERAL_RANGE}): tests need it to start above"
            f" {LOWEST + 1000} to pick ports no other process is given"
        )
    for _ in range(100):
        port = random.randrange(LOWEST, low)
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port on {host} among 100 picked at random between {LOWEST} and {low}")
