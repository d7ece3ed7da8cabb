"""Pod IPs from the node's pod CIDR, as the host-local IPAM plugin of kind's CNI hands them out.

The network address, the gateway (the first host address, `.1`) and the IPv4 broadcast
address are never given out. Each pod (by uid) holds at most one IP until it is
released; the lowest free address is handed out first, so an IP freed by a deleted pod
is the next one reused. The allocator keeps no files: after a restart the agent
rebuilds it from the pods' `status.podIP` (`reserve`) before it allocates anything,
so a running pod's IP is never given to another pod.
"""

from __future__ import annotations

import heapq
import ipaddress


class IPExhaustedError(Exception):
    """Every address of the range is taken; the message is the CNI plugin's."""


class PodIPAllocator:
    def __init__(self, cidr: str) -> None:
        network = ipaddress.ip_network(cidr, strict=True)
        self.cidr = str(network)
        self._base = int(network.network_address)
        self._version = network.version
        #: offsets from the network address: first and last usable
        self._first = 2
        self._last = network.num_addresses - (2 if network.version == 4 else 1)
        if self._last < self._first:
            raise ValueError(f"pod CIDR {cidr}: too small to hold any pod IP")
        #: offset -> owner, and owner -> offset
        self._owners: dict[int, str] = {}
        self._offsets: dict[str, int] = {}
        #: offsets released below `_next` (a min-heap; may hold offsets reserved again since)
        self._released: list[int] = []
        #: every offset from here up has never been handed out by `allocate`
        self._next = self._first

    @property
    def range(self) -> str:
        """`first-last` usable addresses, as the host-local plugin names its range set."""
        return f"{self._address(self._first)}-{self._address(self._last)}"

    @property
    def size(self) -> int:
        return self._last - self._first + 1

    def __len__(self) -> int:
        """How many IPs are held."""
        return len(self._offsets)

    def ip_of(self, owner: str) -> str | None:
        offset = self._offsets.get(owner)
        return None if offset is None else self._address(offset)

    def owner_of(self, ip: str) -> str | None:
        offset = self._offset(ip)
        return None if offset is None else self._owners.get(offset)

    def allocate(self, owner: str) -> str:
        """The owner's IP, allocating the lowest free one if it has none; IPExhaustedError when full."""
        held = self._offsets.get(owner)
        if held is not None:
            return self._address(held)
        while self._released:
            offset = heapq.heappop(self._released)
            if offset not in self._owners:
                return self._take(owner, offset)
        while self._next <= self._last:
            offset = self._next
            self._next += 1
            if offset not in self._owners:
                return self._take(owner, offset)
        raise IPExhaustedError(
            f"failed to allocate for range 0: no IP addresses available in range set: {self.range}"
        )

    def reserve(self, owner: str, ip: str) -> bool:
        """Give `ip` to `owner` (adopting a pod that already has it); False if it is outside the range or taken."""
        offset = self._offset(ip)
        if offset is None or not self._first <= offset <= self._last:
            return False
        holder = self._owners.get(offset)
        if holder is not None:
            return holder == owner
        if owner in self._offsets:
            return False
        self._take(owner, offset)
        return True

    def release(self, owner: str) -> str | None:
        """Free the owner's IP; returns it (None if the owner held none)."""
        offset = self._offsets.pop(owner, None)
        if offset is None:
            return None
        del self._owners[offset]
        if offset < self._next:
            heapq.heappush(self._released, offset)
        return self._address(offset)

    def _take(self, owner: str, offset: int) -> str:
        self._owners[offset] = owner
        self._offsets[owner] = offset
        return self._address(offset)

    def _address(self, offset: int) -> str:
        value = self._base + offset
        return str(ipaddress.IPv4Address(value) if self._version == 4 else ipaddress.IPv6Address(value))

    def _offset(self, ip: str) -> int | None:
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return None
        if address.version != self._version:
            return None
        return int(address) - self._base
