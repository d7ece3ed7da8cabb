"""Names of what the playground network makes on the host: short enough, stable, never another cluster's."""

from __future__ import annotations

from pathlib import Path

import pytest

from playground.network import names


def test_link_names_fit_in_fifteen_characters_and_carry_the_state_dir(tmp_path: Path) -> None:
    longest = "c" * 49
    assert len(names.bridge_name(tmp_path)) <= names.MAX_LINK_NAME
    assert len(names.node_link_name(tmp_path, longest, 99)) <= names.MAX_LINK_NAME
    assert names.bridge_name(tmp_path) == names.bridge_name(tmp_path) != names.bridge_name(tmp_path / "other")
    assert names.node_link_name(tmp_path, "rome", 0) != names.node_link_name(tmp_path / "other", "rome", 0)
    assert names.node_link_name(tmp_path, "rome", 0).startswith(names.node_link_prefix(tmp_path, "rome"))
    assert not names.node_link_name(tmp_path, "milan", 0).startswith(names.node_link_prefix(tmp_path, "rome"))
    assert len(names.pod_veth("8e7f0f5c-1f0c-4c55-9a5e-0f5d3c1c2b1a")) <= names.MAX_LINK_NAME


@pytest.mark.parametrize(
    ("name", "matches"),
    [
        ("rome-control-plane", True),
        ("rome-worker", True),
        ("rome-worker12", True),
        ("rome-worker2_8e7f0f5c-1f0c-4c55-9a5e-0f5d3c1c2b1a", True),
        ("rome-worker-control-plane", False),  # cluster rome-worker's node
        ("rome-worker-worker2_8e7f0f5c", False),
        ("romeo-control-plane", False),
    ],
)
def test_a_clusters_namespaces_are_told_from_every_other_clusters(
    tmp_path: Path, name: str, matches: bool
) -> None:
    state = names.state_id(tmp_path)
    pattern = names.cluster_netns_pattern(tmp_path, "rome")
    assert bool(pattern.match(f"pg_{state}_{name}")) is matches
    assert not pattern.match(f"pg_{names.state_id(tmp_path / 'other')}_rome-control-plane")


def test_pod_namespaces_are_named_after_their_node(tmp_path: Path) -> None:
    node = names.node_netns(tmp_path, "rome-worker")
    pod = names.pod_netns(tmp_path, "rome-worker", "uid-1")
    assert pod.startswith(names.node_pods_netns_prefix(tmp_path, "rome-worker")) and pod.startswith(node)
    assert not pod.startswith(names.node_pods_netns_prefix(tmp_path, "rome-worker2"))
