"""Loopback blocks: unique across agents, taken back after a restart, taken over from dead claimers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from playground.nodeagent.loopback import claim_block


def test_two_agents_get_different_blocks_and_a_released_block_is_free_again(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    (tmp_path / "a").mkdir()
    first = claim_block(tmp_path / "a", registry=registry)
    # The same process claiming for another state dir (another node) gets another block.
    (tmp_path / "b").mkdir()
    second = claim_block(tmp_path / "b", registry=registry)
    assert first.cidr != second.cidr
    assert first.cidr.startswith("127.") and first.cidr.endswith(".0/24")
    assert not first.cidr.startswith("127.0.")
    # Claiming again for the first node gives back its own block, not the second node's.
    assert claim_block(tmp_path / "a", registry=registry).cidr == first.cidr
    (tmp_path / "b" / "loopback-block").write_text(first.cidr)
    assert claim_block(tmp_path / "b", registry=registry).cidr != first.cidr
    first.release()
    assert not (registry / first.cidr.removesuffix("/24")).exists()


def test_an_agent_takes_back_its_block_after_a_restart(tmp_path: Path) -> None:
    registry, state = tmp_path / "registry", tmp_path / "node"
    state.mkdir()
    block = claim_block(state, registry=registry)
    block.release()
    assert claim_block(state, registry=registry).cidr == block.cidr


def test_a_block_held_by_a_live_process_is_skipped_and_one_of_a_dead_process_taken_over(
    tmp_path: Path,
) -> None:
    registry, state = tmp_path / "registry", tmp_path / "node"
    state.mkdir()
    script = (
        "import sys; from pathlib import Path; from playground.nodeagent.loopback import claim_block; "
        f"print(claim_block(Path({str(state)!r}), registry=Path({str(registry)!r})).cidr); sys.stdout.flush(); "
        "sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        held = holder.stdout.readline().strip()
        # This process remembers the same block (same state dir) but its holder is alive: another one.
        assert claim_block(state, registry=registry).cidr != held
    finally:
        holder.communicate("")
    # The holder is gone without releasing: its claim is taken over.
    (state / "loopback-block").write_text(held)
    assert claim_block(state, registry=registry).cidr == held


@pytest.mark.parametrize("junk", ["", "not a pid", "999999999 1"])
def test_a_claim_file_with_junk_counts_as_dead(tmp_path: Path, junk: str) -> None:
    registry, state = tmp_path / "registry", tmp_path / "node"
    state.mkdir()
    block = claim_block(state, registry=registry)
    (registry / block.cidr.removesuffix("/24")).write_text(junk)
    assert claim_block(state, registry=registry).cidr == block.cidr
