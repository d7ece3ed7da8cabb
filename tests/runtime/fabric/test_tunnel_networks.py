"""The gateway checks a Configuration's networks again before it makes a tunnel from them (pure)."""

from __future__ import annotations

import pytest

from runtime.fabric.tunnel import refusals

GIVEN = {"10.0.0.0/16", "8.8.8.0/24"}


def test_the_networks_the_ipams_gave_make_a_tunnel() -> None:
    assert (
        refusals(local_pod="10.244.0.0/16", remote_here="10.0.0.0/16", local_there="10.1.0.0/16", given=GIVEN)
        == []
    )


@pytest.mark.parametrize(
    ("remote_here", "local_there", "reason"),
    [
        ("8.8.8.0/24", "10.1.0.0/16", "outside the IPAM's pool"),
        ("10.0.0.0/16", "10.1.0.0/24", "is not the size of 10.244.0.0/16"),
        ("10.5.0.0/16", "10.1.0.0/16", "is not a network the IPAM gave"),
    ],
    ids=["remote-outside-the-pool", "local-another-size", "remote-not-given"],
)
def test_networks_a_peer_patched_make_no_tunnel(remote_here: str, local_there: str, reason: str) -> None:
    found = refusals(local_pod="10.244.0.0/16", remote_here=remote_here, local_there=local_there, given=GIVEN)
    assert len(found) == 1 and reason in found[0]
