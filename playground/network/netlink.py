"""A minimal rtnetlink client: the link, address and route requests the playground network makes.

Every pod start creates a link pair and configures two namespaces. Running `ip` for that
costs three or four fork-and-execs (10-40 ms on a busy two-core machine), more than a
simulated pod's whole start, so the requests are sent here, from the calling thread,
over a netlink socket of the namespace that thread is in (`netns.entered`). Only what
the playground needs is spelled out: bridges and veth pairs, up/master/hairpin, IPv4
addresses and routes, link deletion. Every request asks for an acknowledgement, and an
error comes back as `OSError` with the kernel's errno, naming the request.

Blocking and quick (a few syscalls): call it from a worker thread, never on an event loop.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
from collections.abc import Iterator

# netlink
NETLINK_ROUTE = 0
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLM_F_REPLACE = 0x100
NLM_F_EXCL = 0x200
NLM_F_CREATE = 0x400
NLA_F_NESTED = 0x8000
# rtnetlink message types
RTM_NEWLINK = 16
RTM_DELLINK = 17
RTM_SETLINK = 19
RTM_NEWADDR = 20
RTM_NEWROUTE = 24
# link attributes
IFLA_IFNAME = 3
IFLA_MTU = 4
IFLA_MASTER = 10
IFLA_PROTINFO = 12
IFLA_LINKINFO = 18
IFLA_IFALIAS = 20
IFLA_NET_NS_FD = 28
IFLA_INFO_KIND = 1
IFLA_INFO_DATA = 2
VETH_INFO_PEER = 1
IFLA_BRPORT_MODE = 4
IFF_UP = 0x1
# address and route attributes
IFA_ADDRESS = 1
IFA_LOCAL = 2
RTA_DST = 1
RTA_OIF = 4
RTA_GATEWAY = 5
RT_TABLE_MAIN = 254
RTPROT_STATIC = 4
RT_SCOPE_UNIVERSE = 0
RTN_UNICAST = 1

_HEADER = struct.Struct("=IHHII")
_IFINFO = struct.Struct("=BxHiII")
_IFADDR = struct.Struct("=BBBBI")
_RTMSG = struct.Struct("=BBBBBBBBI")
_ATTR = struct.Struct("=HH")


def _align(length: int) -> int:
    return (length + 3) & ~3


def attr(kind: int, value: bytes) -> bytes:
    """One rtattr: length, type, value, padded to four bytes."""
    length = _ATTR.size + len(value)
    return _ATTR.pack(length, kind) + value + b"\0" * (_align(length) - length)


def nested(kind: int, *attrs: bytes) -> bytes:
    return attr(kind | NLA_F_NESTED, b"".join(attrs))


def text(value: str) -> bytes:
    return value.encode() + b"\0"


def u32(value: int) -> bytes:
    return struct.pack("=I", value)


def ifinfo(*, index: int = 0, flags: int = 0, change: int = 0, family: int = socket.AF_UNSPEC) -> bytes:
    return _IFINFO.pack(family, 0, index, flags, change)


class Netlink:
    """A NETLINK_ROUTE socket of the calling thread's network namespace; use as a context manager."""

    def __init__(self) -> None:
        self._socket = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, NETLINK_ROUTE)
        self._socket.bind((0, 0))
        self._sequence = 0

    def __enter__(self) -> Netlink:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._socket.close()

    def request(self, kind: int, flags: int, body: bytes, *, what: str) -> None:
        """Send one request and wait for its acknowledgement; OSError(errno, "<what>: ...") on refusal."""
        self._sequence += 1
        header = _HEADER.pack(
            _HEADER.size + len(body), kind, NLM_F_REQUEST | NLM_F_ACK | flags, self._sequence, 0
        )
        self._socket.send(header + body)
        while True:
            for message_type, sequence, payload in self._messages(self._socket.recv(65536)):
                if sequence != self._sequence or message_type != NLMSG_ERROR:
                    continue
                (code,) = struct.unpack_from("=i", payload)
                if code:
                    raise OSError(-code, f"{what}: {os.strerror(-code)}")
                return

    @staticmethod
    def _messages(data: bytes) -> Iterator[tuple[int, int, bytes]]:
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, message_type, _flags, sequence, _pid = _HEADER.unpack_from(data, offset)
            if length < _HEADER.size:
                return
            yield message_type, sequence, data[offset + _HEADER.size : offset + length]
            offset += _align(length)

    # links

    def add_bridge(self, name: str) -> None:
        body = (
            ifinfo()
            + attr(IFLA_IFNAME, text(name))
            + nested(IFLA_LINKINFO, attr(IFLA_INFO_KIND, text("bridge")))
        )
        self.request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, body, what=f"add bridge {name}")

    def add_veth(self, name: str, *, peer: str, peer_netns: int | None = None) -> None:
        """A veth pair: `name` here, `peer` here too or in the namespace open as `peer_netns`."""
        peer_attrs = attr(IFLA_IFNAME, text(peer))
        if peer_netns is not None:
            peer_attrs += attr(IFLA_NET_NS_FD, u32(peer_netns))
        body = (
            ifinfo()
            + attr(IFLA_IFNAME, text(name))
            + nested(
                IFLA_LINKINFO,
                attr(IFLA_INFO_KIND, text("veth")),
                nested(IFLA_INFO_DATA, attr(VETH_INFO_PEER, ifinfo() + peer_attrs)),
            )
        )
        self.request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, body, what=f"add veth {name} (peer {peer})")

    def set_link(
        self,
        name: str,
        *,
        up: bool | None = None,
        master: str | None = None,
        alias: str | None = None,
        netns: int | None = None,
    ) -> None:
        """Bring a link up, attach it to a bridge, describe it, or move it to the namespace open as `netns`."""
        index = self.index(name)
        attrs = b""
        if master is not None:
            attrs += attr(IFLA_MASTER, u32(self.index(master)))
        if alias is not None:
            attrs += attr(IFLA_IFALIAS, alias.encode())
        if netns is not None:
            attrs += attr(IFLA_NET_NS_FD, u32(netns))
        flags = IFF_UP if up else 0
        change = IFF_UP if up is not None else 0
        body = ifinfo(index=index, flags=flags, change=change) + attrs
        self.request(RTM_NEWLINK, 0, body, what=f"set link {name}")

    def set_hairpin(self, name: str) -> None:
        """Let a bridge port send a frame back where it came from (a pod reaching itself through its Service)."""
        body = ifinfo(index=self.index(name), family=socket.AF_BRIDGE) + nested(
            IFLA_PROTINFO, attr(IFLA_BRPORT_MODE, b"\x01")
        )
        self.request(RTM_SETLINK, 0, body, what=f"set hairpin mode on {name}")

    def delete_link(self, name: str) -> bool:
        """Delete a link (its veth peer goes too); False when there was none."""
        try:
            index = self.index(name)
        except OSError as exc:
            if exc.errno == errno.ENODEV:
                return False
            raise
        try:
            self.request(RTM_DELLINK, 0, ifinfo(index=index), what=f"delete link {name}")
        except OSError as exc:
            if exc.errno == errno.ENODEV:
                return False
            raise
        return True

    @staticmethod
    def index(name: str) -> int:
        """The link's index in this thread's namespace; OSError(ENODEV) when there is none."""
        try:
            return socket.if_nametoindex(name)
        except OSError:
            raise OSError(errno.ENODEV, f"no link {name}") from None

    # addresses and routes

    def add_address(self, name: str, interface: str) -> None:
        """An IPv4 address with its prefix (`10.244.0.1/24`) on link `name`."""
        network = ipaddress.IPv4Interface(interface)
        packed = network.ip.packed
        body = _IFADDR.pack(socket.AF_INET, network.network.prefixlen, 0, RT_SCOPE_UNIVERSE, self.index(name))
        body += attr(IFA_LOCAL, packed) + attr(IFA_ADDRESS, packed)
        self.request(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, body, what=f"add address {interface} to {name}")

    def add_route(self, destination: str, *, gateway: str | None = None, device: str | None = None) -> None:
        """An IPv4 route to `destination` (`0.0.0.0/0` for the default) via a gateway and/or out of a device."""
        network = ipaddress.IPv4Network(destination)
        body = _RTMSG.pack(
            socket.AF_INET,
            network.prefixlen,
            0,
            0,
            RT_TABLE_MAIN,
            RTPROT_STATIC,
            RT_SCOPE_UNIVERSE,
            RTN_UNICAST,
            0,
        )
        if network.prefixlen:
            body += attr(RTA_DST, network.network_address.packed)
        if gateway is not None:
            body += attr(RTA_GATEWAY, ipaddress.IPv4Address(gateway).packed)
        if device is not None:
            body += attr(RTA_OIF, u32(self.index(device)))
        self.request(
            RTM_NEWROUTE,
            NLM_F_CREATE | NLM_F_REPLACE,
            body,
            what=f"add route to {destination} via {gateway or device}",
        )
