"""Addresses across a peering: offloaded pods' as the consumer reaches them, the consumer's endpoints as the provider does."""

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


def test_a_local_endpoint_address_moves_to_the_network_the_provider_mapped_this_cluster_to() -> None:
    store = Store()
    translator = RemappingTranslator(store, name="milan", namespace="liqo-tenant-milan")
    mapped = {
        "metadata": {"namespace": "liqo-tenant-milan", "name": "milan"},
        "spec": {"local": {"cidr": {"pod": ["10.244.0.0/16"]}}},
        "status": {},
    }
    store.upsert(mapped)
    assert translator.to_remote("10.244.1.9") == "10.244.1.9"  # the provider's IPAM has not answered yet
    mapped["status"] = {"local": {"cidr": {"pod": ["10.71.0.0/16"]}}}
    store.upsert(mapped)
    assert translator.to_remote("10.244.1.9") == "10.71.1.9"
    assert translator.to_remote("172.30.0.4") == "172.30.0.4"  # not a pod address: as it is
    assert translator.to_remote("fd00::7") == "fd00::7"
