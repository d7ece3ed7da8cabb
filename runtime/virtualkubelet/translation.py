"""How addresses of the provider's pods are seen from the consumer: the network fabric's part of reflection.

Offloaded pods get addresses from the provider's pod CIDR, which may overlap the
consumer's. The network fabric (issue 14) remaps them; until it exists, an address is
reported as the provider gave it (`IdentityTranslator`). Reflectors call the one
`AddressTranslator` they are given, for pod IPs (provider to consumer) and for the
endpoint addresses of reflected EndpointSlices (consumer to provider), so the fabric plugs
in without touching them.
"""

from __future__ import annotations

from typing import Protocol


class AddressTranslator(Protocol):
    def to_local(self, remote_address: str) -> str:
        """The address the consumer reaches a provider's pod at (pod IPs reported back)."""

    def to_remote(self, local_address: str) -> str:
        """The address the provider reaches an address the consumer knows at (reflected endpoints)."""


class IdentityTranslator:
    """No fabric: addresses as they are, both ways."""

    def to_local(self, remote_address: str) -> str:
        return remote_address

    def to_remote(self, local_address: str) -> str:
        return local_address
