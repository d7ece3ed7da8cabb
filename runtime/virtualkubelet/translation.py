"""How addresses of the provider's pods are seen from the consumer: the network fabric's part of reflection.

Offloaded pods get addresses from the provider's pod CIDR, which may overlap the
consumer's. The network fabric remaps them: the peering's Configuration here says which
network the provider's pod CIDR is known by (`status.remote`, from the IPAM), and
`RemappingTranslator` moves each address to the same offset in it. Without networking (or
before the IPAM answered) an address is reported as the provider gave it. Reflectors call
the one `AddressTranslator` they are given, for pod IPs (provider to consumer) and for the
endpoint addresses of reflected EndpointSlices (consumer to provider).
"""

from __future__ import annotations

from typing import Protocol

from runtime.core import Store
from runtime.forge.ipam import translate
from runtime.forge.networking import Cidrs


class AddressTranslator(Protocol):
    def to_local(self, remote_address: str) -> str:
        """The address the consumer reaches a provider's pod at (pod IPs reported back)."""

    def to_remote(self, local_address: str) -> str:
        """The address the provider reaches an address the consumer knows at (reflected endpoints)."""


class RemappingTranslator:
    """Addresses moved into the network the peering's Configuration maps the provider's pod CIDR to."""

    def __init__(self, configurations: Store, *, name: str, namespace: str) -> None:
        self._configurations = configurations
        self._name = name
        self._namespace = namespace

    def to_local(self, remote_address: str) -> str:
        configuration = self._configurations.get(self._name, namespace=self._namespace) or {}
        real = Cidrs.of((configuration.get("spec") or {}).get("remote")).pod
        mapped = Cidrs.of((configuration.get("status") or {}).get("remote")).pod
        for source, target in zip(real, mapped, strict=False):
            moved = translate(remote_address, source=source, target=target)
            if moved != remote_address:
                return moved
        return remote_address

    def to_remote(self, local_address: str) -> str:
        """As it is: the provider does not reach the consumer's endpoints through a remapped network yet."""
        return local_address
