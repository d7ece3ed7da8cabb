"""The fabric's nftables scripts, checked by nft itself (`nft --check`: parsed and validated against the
kernel, nothing applied); making and removing whole networks is tests/playground/test_network.py's."""

from __future__ import annotations

import subprocess

import pytest

from playground.network.fabric import isolation_rules, masquerade_rules


@pytest.mark.parametrize(
    "script",
    [isolation_rules("pgbr-abc123"), masquerade_rules("10.244.0.0/16")],
    ids=["isolation", "masquerade"],
)
def test_the_scripts_are_valid_nftables(script: str) -> None:
    result = subprocess.run(["nft", "--check", "-f", "-"], input=script, text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


def test_the_host_forwards_nothing_between_the_playground_network_and_another_interface() -> None:
    rules = isolation_rules("pgbr-abc123")
    assert "hook forward" in rules
    assert 'iifname "pgbr-abc123" oifname != "pgbr-abc123" drop' in rules
    assert 'oifname "pgbr-abc123" iifname != "pgbr-abc123" drop' in rules
