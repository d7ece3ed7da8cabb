"""How addresses of the provider's pods are seen from the consumer: the network fabric's part of reflection.

Offloaded pods get addresses from the provider's pod CIDR, which may overlap the
consumer's. The network fabric (issue 14) remaps them; until it exists, an address is
reported as the provider gave it (`IdentityTranslator`). Reflectors call the one
`AddressTranslator` they are given, for pod IPs now and for endpoint addresses later, so
the fabric plugs in without touching them.
"""

from __future__ import annotations

from typing import Protocol


class AddressTranslator(Protocol):
    def to_local(self, remote_address: str) -> str:
        """The address the consumer reaches a provider's pod at."""


class IdentityTranslator:
    """No fabric: the provider's addresses as they are."""

    def to_local(self, remote_address: str) -> str:
        return remote_address
