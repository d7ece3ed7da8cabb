"""What `playground up` says when the host cannot make the network."""

from __future__ import annotations

from pathlib import Path

from playground.network import requirements


def _status(tmp_path: Path, capabilities: int) -> Path:
    path = tmp_path / "status"
    path.write_text(f"Name:\tpython\nCapInh:\t0000000000000000\nCapEff:\t{capabilities:016x}\n")
    return path


def test_without_cap_net_admin_up_says_so_and_names_the_fallback(tmp_path: Path) -> None:
    (problem,) = requirements.problems(_status(tmp_path, 1 << requirements.CAP_SYS_ADMIN))
    assert "lacks CAP_NET_ADMIN:" in problem
    assert "run `playground up` as root" in problem and "--network loopback" in problem


def test_root_has_what_the_network_needs(tmp_path: Path) -> None:
    everything = (1 << requirements.CAP_NET_ADMIN) | (1 << requirements.CAP_SYS_ADMIN)
    assert requirements.problems(_status(tmp_path, everything)) == []
