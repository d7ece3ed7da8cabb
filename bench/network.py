"""Benchmark of the network fabric's data path (`make bench`): pod to pod across the tunnel.

Three paths between a client and a server network namespace, measured in the same run:

- **veth**: the two namespaces joined by one veth pair (the floor: no tunnel at all);
- **raw wireguard-go**: two namespaces joined by an underlay veth and a wireguard-go tunnel
  set up by hand with `wg`, client and server on the tunnel's own addresses;
- **fabric**: what a peering builds, with the runtime's own code (`runtime.fabric.wireguard.Device`
  and `runtime.forge.fabricrules`): a client pod namespace and a server pod namespace with
  the *same* pod CIDR (10.244.0.0/16), each behind a gateway namespace (veth to its pod,
  underlay between the gateways), the gateways' tunnel, routes and remapping NAT (each
  side's IPAM mapping the other to another /16), the client dialling the server's
  remapped address.

For each path: TCP throughput (one stream, 1 MiB writes, `--megabytes` MiB) and latency
(median of `--round-trips` one-byte request/response round trips on one TCP_NODELAY
connection). Targets (issue 14): fabric throughput at least 0.9x raw wireguard-go, fabric
latency at most 0.2 ms above raw wireguard-go. Prints a table and a JSON document
(`--json PATH` writes it there; `--strict` exits 1 when a target is missed).

Needs root (network namespaces) and wireguard-go and wg. Every namespace and link is
named after this process (`lqbn<pid>...`) and removed at the end, whatever happens.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# `python bench/network.py` puts bench/ first on sys.path: the repository root instead (see bench.harness).
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness
from runtime.fabric.wireguard import Device, Peer
from runtime.forge import fabricrules, wireguard

PREFIX = f"lqbn{os.getpid() % 100000}"
PORT = 5201
SERVER = textwrap.dedent(
    """
    import socket, sys
    mode = sys.argv[1]
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(sys.argv[2]))); s.listen(1); print("ready", flush=True)
    c, _ = s.accept(); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode == "bulk":
        buf = bytearray(1 << 20)
        while c.recv_into(buf):
            pass
        c.sendall(b"k")
    else:
        while (b := c.recv(1)):
            c.sendall(b)
    """
)
CLIENT = textwrap.dedent(
    """
    import socket, statistics, sys, time
    mode, host, port, amount = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    c = socket.create_connection((host, port), timeout=30); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if mode == "bulk":
        chunk = b"x" * (1 << 20)
        start = time.perf_counter()
        for _ in range(amount):
            c.sendall(chunk)
        c.shutdown(socket.SHUT_WR); c.recv(1)
        print((amount * 8 * (1 << 20)) / (time.perf_counter() - start) / 1e6)
    else:
        times = []
        for _ in range(amount):
            t = time.perf_counter(); c.sendall(b"p"); c.recv(1); times.append(time.perf_counter() - t)
        print(statistics.median(times) * 1000)
    """
)


def sh(*argv: str, stdin: str | None = None) -> None:
    subprocess.run(argv, input=stdin, text=True, check=True, capture_output=True)


def in_ns(ns: str, *argv: str, stdin: str | None = None) -> None:
    sh("ip", "netns", "exec", ns, *argv, stdin=stdin)


@dataclass
class Topology:
    namespaces: list[str]

    def add(self, name: str) -> str:
        ns = f"{PREFIX}{name}"
        sh("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        in_ns(ns, "ip", "link", "set", "lo", "up")
        return ns

    def link(self, a: str, a_addr: str, b: str, b_addr: str, tag: str) -> None:
        la, lb = f"{PREFIX}{tag}a", f"{PREFIX}{tag}b"
        sh("ip", "link", "add", la, "type", "veth", "peer", "name", lb)
        sh("ip", "link", "set", la, "netns", a)
        sh("ip", "link", "set", lb, "netns", b)
        for ns, link, addr in ((a, la, a_addr), (b, lb, b_addr)):
            in_ns(ns, "ip", "addr", "add", addr, "dev", link)
            in_ns(ns, "ip", "link", "set", link, "up")


@contextmanager
def topology() -> Iterator[Topology]:
    made = Topology([])
    try:
        yield made
    finally:
        for ns in made.namespaces:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                subprocess.run(["kill", pid], check=False)
            subprocess.run(["ip", "netns", "del", ns], check=False)


def measure(
    client_ns: str, server_ns: str, host: str, *, megabytes: int, round_trips: int
) -> dict[str, float]:
    """Throughput (`mbps`, Mbit/s) and median round trip (`rtt_ms`) from client_ns to host (served in server_ns)."""
    results = []
    for mode, amount in (("bulk", megabytes), ("ping", round_trips)):
        server = subprocess.Popen(
            ["ip", "netns", "exec", server_ns, sys.executable, "-c", SERVER, mode, str(PORT)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "ready"
            out = subprocess.run(
                [
                    "ip",
                    "netns",
                    "exec",
                    client_ns,
                    sys.executable,
                    "-c",
                    CLIENT,
                    mode,
                    host,
                    str(PORT),
                    str(amount),
                ],
                capture_output=True,
                text=True,
                check=True,
                timeout=300,
            ).stdout
            results.append(float(out.strip()))
        finally:
            server.wait(timeout=30)
    return {"mbps": results[0], "rtt_ms": results[1]}


async def tunnel(
    a: str, b: str, *, name: str, keys: Path, a_allowed: str, b_allowed: str, mtu: int
) -> tuple[Device, Device]:
    """A wireguard-go tunnel between gateways a (client, dials b at 192.168.250.2) and b (listens)."""
    ka, kb = wireguard.private_key(), wireguard.private_key()
    (keys / f"{name}a").write_text(ka)
    (keys / f"{name}b").write_text(kb)
    devices = []
    for ns, side, key, peer_key, allowed, endpoint in (
        (a, "a", f"{name}a", wireguard.public_key(kb), a_allowed, "192.168.250.2:51840"),
        (b, "b", f"{name}b", wireguard.public_key(ka), b_allowed, ""),
    ):
        device = Device(f"{PREFIX}w{name}{side}", implementation="wireguard-go")
        fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        own = os.open("/proc/self/ns/net", os.O_RDONLY)
        try:
            _setns(fd)
            await device.ensure(mtu=mtu)
            await device.configure(
                key_file=str(keys / key),
                listen_port=51840 if side == "b" else None,
                peer=Peer(public_key=peer_key, allowed_ips=[allowed], endpoint=endpoint, keepalive=25),
            )
        finally:
            _setns(own)
            os.close(fd)
            os.close(own)
        devices.append(device)
    return devices[0], devices[1]


def _setns(fd: int) -> None:
    """Enter a network namespace (Python 3.11 has no os.setns); its subprocesses start there."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, 0x40000000) != 0:
        raise OSError(ctypes.get_errno(), "setns")


async def run(megabytes: int, round_trips: int, mtu: int) -> dict[str, dict[str, float]]:
    figures: dict[str, dict[str, float]] = {}
    with topology() as topo, tempfile.TemporaryDirectory() as keys_dir:
        keys = Path(keys_dir)
        # veth
        c, s = topo.add("vc"), topo.add("vs")
        topo.link(c, "192.168.251.1/24", s, "192.168.251.2/24", "v")
        figures["veth"] = measure(c, s, "192.168.251.2", megabytes=megabytes, round_trips=round_trips)
        # raw wireguard-go between two namespaces
        ga, gb = topo.add("ra"), topo.add("rb")
        topo.link(ga, "192.168.250.1/24", gb, "192.168.250.2/24", "u")
        da, db = await tunnel(
            ga, gb, name="r", keys=keys, a_allowed="10.99.0.2/32", b_allowed="10.99.0.1/32", mtu=mtu
        )
        in_ns(ga, "ip", "addr", "add", "10.99.0.1/32", "peer", "10.99.0.2", "dev", da.name)
        in_ns(gb, "ip", "addr", "add", "10.99.0.2/32", "peer", "10.99.0.1", "dev", db.name)
        figures["raw wireguard-go"] = measure(
            ga, gb, "10.99.0.2", megabytes=megabytes, round_trips=round_trips
        )
        await da.close()
        await db.close()
        # the fabric: overlapping pod CIDRs, each side mapping the other elsewhere
        pa, fa, fb, pb = topo.add("pa"), topo.add("fa"), topo.add("fb"), topo.add("pb")
        topo.link(pa, "10.244.0.5/24", fa, "10.244.0.1/24", "pa")
        topo.link(pb, "10.244.0.7/24", fb, "10.244.0.1/24", "pb")
        for pod in (pa, pb):
            in_ns(pod, "ip", "route", "add", "default", "via", "10.244.0.1")
        topo.link(fa, "192.168.250.1/24", fb, "192.168.250.2/24", "f")
        # A maps B's pods to 10.1/16; B maps A's to 10.0/16
        ta, tb = await tunnel(
            fa, fb, name="f", keys=keys, a_allowed="10.1.0.0/16", b_allowed="10.0.0.0/16", mtu=mtu
        )
        for gw, device, remote_here, local_there in (
            (fa, ta, "10.1.0.0/16", "10.0.0.0/16"),
            (fb, tb, "10.0.0.0/16", "10.1.0.0/16"),
        ):
            in_ns(gw, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            in_ns(gw, "ip", "route", "replace", remote_here, "dev", device.name)
            in_ns(
                gw,
                "nft",
                "-f",
                "-",
                stdin=fabricrules.gateway_rules(
                    interface=device.name, local_pod="10.244.0.0/16", local_seen_remotely=local_there
                ),
            )
        figures["fabric"] = measure(pa, pb, "10.1.0.7", megabytes=megabytes, round_trips=round_trips)
        await ta.close()
        await tb.close()
    return figures


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--megabytes", type=int, default=256)
    parser.add_argument("--round-trips", type=int, default=2000)
    parser.add_argument("--mtu", type=int, default=1340)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/network.py needs root (network namespaces)", file=sys.stderr)
        return 1
    figures = asyncio.run(run(args.megabytes, args.round_trips, args.mtu))
    fabric, raw = figures["fabric"], figures["raw wireguard-go"]
    ratio = fabric["mbps"] / raw["mbps"]
    added = fabric["rtt_ms"] - raw["rtt_ms"]
    targets = {
        "throughput fabric / raw wireguard-go >= 0.9": ratio >= 0.9,
        "latency fabric - raw wireguard-go <= 0.2 ms": added <= 0.2,
    }
    lines = [f"{'path':<18} {'Mbit/s':>10} {'RTT ms':>8}"]
    lines += [
        f"{path:<18} {values['mbps']:>10.0f} {values['rtt_ms']:>8.3f}" for path, values in figures.items()
    ]
    lines.append(f"fabric / raw wireguard-go throughput: {ratio:.2f}x; added round trip {added:+.3f} ms")
    lines.append(f"raw wireguard-go / veth throughput: {raw['mbps'] / figures['veth']['mbps']:.2f}x")
    lines += [f"{'ok  ' if met else 'MISS'} {target}" for target, met in targets.items()]
    report = {"figures": figures, "throughput_ratio": ratio, "added_rtt_ms": added, "targets": targets}
    harness.publish("\n".join(lines), report, args.json, announce=False)
    return harness.exit_code(args.strict, targets.values())


if __name__ == "__main__":
    sys.exit(main())
