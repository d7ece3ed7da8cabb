"""How each side of a peering sees the other's pod addresses: the network fabric's part of reflection.

Offloaded pods get addresses from the provider's pod CIDR, which may overlap the
consumer's. The network fabric remaps them: the peering's Configuration here says which
network the provider's pod CIDR is known by here (`status.remote`, from this IPAM) and
which network this cluster's pod CIDR is known by on the provider (`status.local`, from
the provider's IPAM), and `RemappingTranslator` moves each address to the same offset in
it. Without networking (or before the IPAMs answered) an address is passed as it is. Reflectors call
the one `AddressTranslator` they are given, for pod IPs (provider to consumer) and for the
endpoint addresses of reflected EndpointSlices (consumer to provider).
"""

from __future__ import annotations

from typing import Protocol

from runtime.api.objects import nested
from runtime.core import Store
from runtime.forge.ipam import translate
from runtime.forge.networking import Cidrs


class AddressTranslator(Protocol):
    def to_local(self, remote_address: str) -> str:
        """The address the consumer reaches a provider's pod at (pod IPs reported back)."""

    def to_remote(self, local_address: str) -> str:
        """The address the provider reaches an address the consumer knows at (reflected endpoints)."""


class RemappingTranslator:
    """Addresses moved between the pod CIDRs of a peering and the networks each side's IPAM mapped them to.

    The consumer's Configuration says both: `spec.remote` -> `status.remote` is the provider's
    pod CIDR as the consumer reaches it, `spec.local` -> `status.local` the consumer's pod
    CIDR as the provider reaches it.
    """

    def __init__(self, configurations: Store, *, name: str, namespace: str) -> None:
        self._configurations = configurations
        self._name = name
        self._namespace = namespace

    def to_local(self, remote_address: str) -> str:
        return self._move(remote_address, side="remote")

    def to_remote(self, local_address: str) -> str:
        return self._move(local_address, side="local")

    def _move(self, address: str, *, side: str) -> str:
        configuration = self._configurations.get(self._name, namespace=self._namespace) or {}
        real = Cidrs.of(nested(configuration, "spec", side)).pod
        mapped = Cidrs.of(nested(configuration, "status", side)).pod
        for source, target in zip(real, mapped, strict=False):
            moved = translate(address, source=source, target=target)
            if moved != address:
                return moved
        return address
