"""Which /24 a state dir's network gets, and its nodes' addresses."""

from __future__ import annotations

import ipaddress
import json
import os
import time
from pathlib import Path

import pytest

from playground.network import subnets


def test_the_first_free_subnet_clear_of_the_hosts_routes_is_claimed_and_kept(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    routes = [ipaddress.IPv4Network("172.30.0.0/23"), ipaddress.IPv4Network("192.0.2.0/24")]
    first = subnets.subnet_for(tmp_path / "a", registry=registry, routes=routes)
    assert first == "172.30.2.0/24"
    assert json.loads((tmp_path / "a" / subnets.NETWORK_FILE).read_text())["subnet"] == first
    assert subnets.subnet_for(tmp_path / "a", registry=registry, routes=routes) == first


def test_a_claim_whose_bridge_is_gone_is_taken_over_and_a_fresh_one_is_not(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    registry.mkdir()
    claim = registry / "172.30.0.0"
    claim.write_text("pgbr-gone00\n/elsewhere\n")
    # a cluster starting elsewhere has claimed it and is about to make its bridge
    assert subnets.subnet_for(tmp_path / "b", registry=registry, routes=[]) == "172.30.1.0/24"
    old = time.time() - subnets.CLAIM_GRACE - 1
    os.utime(claim, (old, old))
    assert subnets.subnet_for(tmp_path / "c", registry=registry, routes=[]) == "172.30.0.0/24"


def test_the_host_routes_come_from_proc(tmp_path: Path) -> None:
    table = tmp_path / "route"
    table.write_text(
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n"
        "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
        "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
    )
    assert subnets.host_routes(table) == [ipaddress.IPv4Network("192.0.2.0/24")]


def test_nodes_get_the_lowest_free_addresses_after_the_hosts() -> None:
    assert subnets.gateway("172.30.4.0/24") == "172.30.4.1"
    assert subnets.node_addresses("172.30.4.0/24", 2, used=[]) == ["172.30.4.2", "172.30.4.3"]
    assert subnets.node_addresses("172.30.4.0/24", 2, used=["172.30.4.2", "172.30.4.4"]) == [
        "172.30.4.3",
        "172.30.4.5",
    ]
    with pytest.raises(subnets.NetworkExhaustedError, match="only 253 free node addresses for 254 nodes"):
        subnets.node_addresses("172.30.4.0/24", 254, used=[])
