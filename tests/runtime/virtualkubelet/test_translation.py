"""Offloaded pods' addresses as the consumer reaches them: moved into the network its IPAM mapped the provider to."""

from __future__ import annotations

from runtime.core import Store
from runtime.virtualkubelet.translation import RemappingTranslator


def configuration(*, mapped: str | None) -> dict[str, object]:
    return {
        "metadata": {"namespace": "liqo-tenant-milan", "name": "milan"},
        "spec": {"remote": {"cidr": {"pod": ["10.244.0.0/16"]}}},
        "status": {"remote": {"cidr": {"pod": [mapped]}}} if mapped else {},
    }


def test_a_provider_pod_address_moves_to_the_mapped_network_once_the_ipam_answered() -> None:
    store = Store()
    translator = RemappingTranslator(store, name="milan", namespace="liqo-tenant-milan")
    assert translator.to_local("10.244.0.7") == "10.244.0.7"
    store.upsert(configuration(mapped=None))
    assert translator.to_local("10.244.0.7") == "10.244.0.7"
    store.upsert(configuration(mapped="10.0.0.0/16"))
    assert translator.to_local("10.244.0.7") == "10.0.0.7"
    assert translator.to_local("192.0.2.1") == "192.0.2.1"
