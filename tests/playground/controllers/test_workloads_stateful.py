"""StatefulSet identities: ordinals, pod and claim names, storage, revisions by partition, PVC owners."""

from __future__ import annotations

from typing import Any

import pytest

from playground.controllers.workloads import stateful
from playground.controllers.workloads.history import revision_data, template_of
from runtime.api.objects import JSON


def sts(replicas: int = 3, **spec: Any) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "ns", "uid": "set-uid"},
        "spec": {
            "replicas": replicas,
            "serviceName": "web-svc",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{"name": "c", "image": "x"}],
                    "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cache", "emptyDir": {}}],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data", "labels": {"kind": "db"}},
                    "spec": {"accessModes": ["ReadWriteOnce"]},
                }
            ],
            **spec,
        },
    }


@pytest.mark.parametrize(
    ("pod_name", "parent", "ordinal"),
    [
        ("web-0", "web", 0),
        ("web-12", "web", 12),
        ("my-web-3", "my-web", 3),
        ("web", "", -1),
        ("web-x", "", -1),
    ],
)
def test_ordinals_come_from_the_name(pod_name: str, parent: str, ordinal: int) -> None:
    assert stateful.parent_and_ordinal({"metadata": {"name": pod_name}}) == (parent, ordinal)


def test_a_new_pod_has_identity_storage_and_revision() -> None:
    owner = sts()
    pod = stateful.new_pod(owner, owner, 2, "web-abc")
    assert pod["metadata"]["name"] == "web-2"
    assert pod["metadata"]["labels"] == {
        "app": "web",
        "statefulset.kubernetes.io/pod-name": "web-2",
        "apps.kubernetes.io/pod-index": "2",
        "controller-revision-hash": "web-abc",
    }
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("web-2", "web-svc")
    assert pod["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-2"}},
        {"name": "cache", "emptyDir": {}},
    ]
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "set-uid"
    assert stateful.identity_matches(owner, pod) and stateful.storage_matches(owner, pod)
    claim = stateful.claims_for(owner, 2)["data"]
    assert claim["metadata"] == {
        "name": "data-web-2",
        "labels": {"kind": "db", "app": "web"},
        "namespace": "ns",
    }


def test_ordinals_below_the_partition_keep_the_current_revision() -> None:
    owner = sts(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}})
    old = stateful.at_revision(owner, {"data": revision_data(owner)})
    new = stateful.at_revision(
        owner,
        {
            "data": {
                "spec": {
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "y"}]},
                        "$patch": "replace",
                    }
                }
            }
        },
    )
    chosen = [
        stateful.versioned_pod(
            owner, current=old, update=new, current_revision="web-old", update_revision="web-new", ordinal=i
        )
        for i in range(3)
    ]
    assert [p["metadata"]["labels"]["controller-revision-hash"] for p in chosen] == [
        "web-old",
        "web-old",
        "web-new",
    ]
    assert [p["spec"]["containers"][0]["image"] for p in chosen] == ["x", "x", "y"]
    assert template_of({"data": revision_data(owner)}) == owner["spec"]["template"]


@pytest.mark.parametrize(
    ("policy", "ordinal", "owners"),
    [
        ({}, 0, []),
        ({"whenDeleted": "Delete"}, 0, ["set-uid"]),
        ({"whenScaled": "Delete"}, 0, []),
        ({"whenScaled": "Delete"}, 5, ["pod-uid"]),
        ({"whenDeleted": "Delete", "whenScaled": "Delete"}, 5, ["pod-uid"]),
        ({"whenDeleted": "Delete", "whenScaled": "Delete"}, 1, ["set-uid"]),
    ],
    ids=[
        "retain",
        "deleted-delete",
        "scaled-delete-in-range",
        "scaled-delete-scaled-down",
        "both-scaled-down",
        "both-in-range",
    ],
)
def test_claim_owners_follow_the_retention_policy(policy: JSON, ordinal: int, owners: list[str]) -> None:
    owner = sts(persistentVolumeClaimRetentionPolicy=policy)
    pod = {"metadata": {"name": f"web-{ordinal}", "uid": "pod-uid"}}
    claim = {"metadata": {"name": f"data-web-{ordinal}", "ownerReferences": [{"uid": "someone-else"}]}}
    expected = ["someone-else", *owners]
    assert [ref["uid"] for ref in stateful.claim_owners(owner, pod, claim)] == expected
    claim["metadata"]["ownerReferences"] = stateful.claim_owners(owner, pod, claim)
    assert stateful.claim_owners_match(owner, pod, claim)
