"""The fabric's nftables rules (pure), and that nft accepts them in a scratch network namespace."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from runtime.forge.cidrs import CidrError
from runtime.forge.fabricrules import gateway_rules, node_rules


def test_the_gateway_moves_this_clusters_pods_into_the_network_the_remote_maps_them_to() -> None:
    script = gateway_rules(
        interface="liqo-0123456789", local_pod="10.244.0.0/16", local_seen_remotely="10.0.0.0/16"
    )
    assert (
        'iifname "liqo-0123456789" ip daddr 10.0.0.0/16 dnat ip prefix to ip daddr map { 10.0.0.0/16 : 10.244.0.0/16 }'
        in script
    )
    assert (
        'oifname "liqo-0123456789" ip saddr 10.244.0.0/16 snat ip prefix to ip saddr map { 10.244.0.0/16 : 10.0.0.0/16 }'
        in script
    )


@pytest.mark.parametrize(
    "hostile",
    ["10.0.0.0/16 } ; flush ruleset ; table ip x {", "10.0.0.0/16\nflush ruleset", "any", "10.0.0.1/16"],
)
def test_nothing_but_a_network_ever_reaches_a_script(hostile: str) -> None:
    """A value a peer wrote into a Configuration is never pasted into nft: it raises before a script exists."""
    with pytest.raises(CidrError):
        gateway_rules(interface="liqo-x", local_pod="10.244.0.0/16", local_seen_remotely=hostile)
    with pytest.raises(CidrError):
        node_rules(pod_cidr="10.244.0.0/16", remote_cidrs=["10.0.0.0/16", hostile])


def test_nothing_is_translated_when_the_remote_did_not_remap_us() -> None:
    script = gateway_rules(interface="liqo-x", local_pod="10.244.0.0/16", local_seen_remotely="10.244.0.0/16")
    assert "nat" not in script and "table ip liqo-gateway {" in script


def test_the_node_keeps_pod_sources_towards_every_remote_network_and_only_them() -> None:
    script = node_rules(pod_cidr="10.244.0.0/16", remote_cidrs=["10.1.0.0/16", "10.0.0.0/16", "10.1.0.0/16"])
    assert "priority srcnat - 1;" in script
    assert (
        "ip saddr 10.244.0.0/16 ip daddr { 10.0.0.0/16, 10.1.0.0/16 } "
        "snat ip prefix to ip saddr map { 10.244.0.0/16 : 10.244.0.0/16 }" in script
    )
    assert "chain" not in node_rules(pod_cidr="10.244.0.0/16", remote_cidrs=[])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for a network namespace")
def test_nft_accepts_the_rules_and_applying_them_twice_replaces_them() -> None:
    name = f"fabric-rules-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        for script in (
            gateway_rules(interface="liqo-x", local_pod="10.244.0.0/16", local_seen_remotely="10.0.0.0/16"),
            gateway_rules(interface="liqo-x", local_pod="10.244.0.0/16", local_seen_remotely="10.0.0.0/16"),
            node_rules(pod_cidr="10.244.0.0/16", remote_cidrs=["10.0.0.0/16"]),
            node_rules(pod_cidr="10.244.0.0/16", remote_cidrs=[]),
        ):
            subprocess.run(
                ["ip", "netns", "exec", name, "nft", "-f", "-"], input=script, text=True, check=True
            )
        listed = subprocess.run(
            ["ip", "netns", "exec", name, "nft", "list", "ruleset"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert listed.count("table ip liqo-gateway") == 1
        assert "snat" not in listed.split("table ip liqo-fabric")[1]
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)
