"""Required pod affinity and anti-affinity over topology domains, both directions."""

from __future__ import annotations

from playground.scheduler.interpod import (
    AFFINITY_MISMATCH,
    ANTI_AFFINITY_MISMATCH,
    EXISTING_ANTI_AFFINITY_MISMATCH,
    InterPodAffinity,
)
from playground.scheduler.nodeinfo import PodInfo, Snapshot
from runtime.api.objects import JSON

from .builders import node, pod

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def cluster(*placed: tuple[JSON, str], namespaces: dict[str, dict[str, str]] | None = None) -> Snapshot:
    nodes = [
        node("a1", labels={ZONE: "a"}),
        node("a2", labels={ZONE: "a"}),
        node("b1", labels={ZONE: "b"}),
        node("bare"),
    ]
    labels = namespaces or {}
    return Snapshot.of(
        nodes,
        [(PodInfo.of(body), where) for body, where in placed],
        [{"metadata": {"name": name, "labels": value}} for name, value in labels.items()],
    )


def term(key: str, **selector: str) -> JSON:
    return {"labelSelector": {"matchLabels": selector}, "topologyKey": key}


def affine(kind: str, *terms: JSON, **labels: str) -> JSON:
    return pod(
        "new", labels=labels, affinity={kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}
    )


def verdicts(body: JSON, snapshot: Snapshot) -> dict[str, tuple[str, ...]]:
    check = InterPodAffinity(PodInfo.of(body), snapshot)
    return {name: check.reasons(info) for name, info in snapshot.nodes.items()}


def test_anti_affinity_on_hostname_avoids_nodes_with_a_match() -> None:
    snapshot = cluster((pod("db-0", labels={"app": "db"}), "a1"), (pod("web", labels={"app": "web"}), "b1"))
    found = verdicts(affine("podAntiAffinity", term(HOST, app="db"), app="db"), snapshot)
    assert found == {"a1": (ANTI_AFFINITY_MISMATCH,), "a2": (), "b1": (), "bare": ()}


def test_anti_affinity_on_zone_avoids_the_whole_zone() -> None:
    snapshot = cluster((pod("db-0", labels={"app": "db"}), "a1"))
    found = verdicts(affine("podAntiAffinity", term(ZONE, app="db")), snapshot)
    assert found == {"a1": (ANTI_AFFINITY_MISMATCH,), "a2": (ANTI_AFFINITY_MISMATCH,), "b1": (), "bare": ()}


def test_anti_affinity_of_placed_pods_is_symmetric() -> None:
    loner = affine("podAntiAffinity", term(ZONE, app="web"), app="loner")
    snapshot = cluster((loner, "b1"))
    found = verdicts(pod("web", labels={"app": "web"}), snapshot)
    assert found == {"a1": (), "a2": (), "b1": (EXISTING_ANTI_AFFINITY_MISMATCH,), "bare": ()}


def test_affinity_needs_a_matching_pod_in_the_domain() -> None:
    snapshot = cluster((pod("cache", labels={"app": "cache"}), "a2"))
    found = verdicts(affine("podAffinity", term(ZONE, app="cache")), snapshot)
    assert found == {"a1": (), "a2": (), "b1": (AFFINITY_MISMATCH,), "bare": (AFFINITY_MISMATCH,)}


def test_first_pod_of_a_self_affine_group_goes_where_the_topology_label_exists() -> None:
    found = verdicts(affine("podAffinity", term(ZONE, app="group"), app="group"), cluster())
    assert found == {"a1": (), "a2": (), "b1": (), "bare": (AFFINITY_MISMATCH,)}
    # not self-affine: nothing matches anywhere, so nowhere fits
    lonely = verdicts(affine("podAffinity", term(ZONE, app="group"), app="other"), cluster())
    assert set(lonely.values()) == {(AFFINITY_MISMATCH,)}


def test_terms_look_in_the_pods_own_namespace_by_default() -> None:
    elsewhere = pod("db-0", namespace="other", labels={"app": "db"})
    assert set(
        verdicts(affine("podAntiAffinity", term(HOST, app="db")), cluster((elsewhere, "a1"))).values()
    ) == {()}


def test_namespace_selector_reads_namespace_labels() -> None:
    spread = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "namespaceSelector": {"matchLabels": {"team": "x"}},
        "topologyKey": HOST,
    }
    snapshot = cluster(
        (pod("db-0", namespace="x1", labels={"app": "db"}), "a1"),
        (pod("db-1", namespace="y1", labels={"app": "db"}), "a2"),
        namespaces={"x1": {"team": "x"}, "y1": {"team": "y"}},
    )
    found = verdicts(affine("podAntiAffinity", spread), snapshot)
    assert found["a1"] == (ANTI_AFFINITY_MISMATCH,)
    assert found["a2"] == ()


def test_affinity_is_checked_before_anti_affinity() -> None:
    both = pod(
        "new",
        affinity={
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(HOST, app="cache")]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(HOST, app="db")]},
        },
    )
    snapshot = cluster((pod("db", labels={"app": "db"}), "a1"), (pod("cache", labels={"app": "cache"}), "a2"))
    found = verdicts(both, snapshot)
    assert found == {
        "a1": (AFFINITY_MISMATCH,),
        "a2": (),
        "b1": (AFFINITY_MISMATCH,),
        "bare": (AFFINITY_MISMATCH,),
    }
