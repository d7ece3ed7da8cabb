"""The gateway checks a Configuration's networks again before it makes a tunnel from them (pure)."""

from __future__ import annotations

import pytest

from runtime.fabric.tunnel import refusals


def test_the_networks_the_ipams_gave_make_a_tunnel() -> None:
    assert refusals(local_pod="10.244.0.0/16", remote_here="10.0.0.0/16", local_there="10.1.0.0/16") == []


@pytest.mark.parametrize(
    ("remote_here", "local_there", "reason"),
    [
        ("8.8.8.0/24", "10.1.0.0/16", "outside the IPAM's pool"),
        ("10.0.0.0/16", "10.1.0.0/24", "is not the size of 10.244.0.0/16"),
    ],
    ids=["remote-outside-the-pool", "local-another-size"],
)
def test_networks_a_peer_patched_make_no_tunnel(remote_here: str, local_there: str, reason: str) -> None:
    found = refusals(local_pod="10.244.0.0/16", remote_here=remote_here, local_there=local_there)
    assert len(found) == 1 and reason in found[0]
