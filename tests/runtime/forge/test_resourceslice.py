"""Resource negotiation, pure: what a provider has free, the default share, and answers to explicit requests."""

from __future__ import annotations

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge import resourceslice as rs
from runtime.forge.quota import quota, service_account_user


def node(
    name: str,
    *,
    ready: bool = True,
    unschedulable: bool = False,
    virtual: bool = False,
    allocatable: dict[str, str] | None = None,
) -> JSON:
    labels = {c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE} if virtual else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", **(allocatable or {})},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    node_name: str | None,
    *,
    phase: str = "Running",
    labels: dict[str, str] | None = None,
    containers: list[JSON] | None = None,
    init: list[JSON] | None = None,
    overhead: dict[str, str] | None = None,
) -> JSON:
    spec: JSON = {
        "containers": containers
        or [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    if init:
        spec["initContainers"] = init
    if overhead:
        spec["overhead"] = overhead
    return {
        "metadata": {"name": "p", "namespace": "default", "labels": labels or {}},
        "spec": spec,
        "status": {"phase": phase},
    }


def requests(**values: str) -> JSON:
    return {"name": "c", "resources": {"requests": values}}


NODES = [
    node("a"),
    node("b"),
    node("virtual", virtual=True),
    node("down", ready=False),
    node("cordoned", unschedulable=True),
]
PODS = [
    pod("a"),
    pod("a", phase="Succeeded"),
    pod(None),
    pod("b", labels={c.LABEL_ORIGIN_CLUSTER_ID: "consumer"}),
    pod("virtual"),
    pod("down"),
]


def formatted(values: rs.Amounts) -> dict[str, str]:
    return rs.formatted(values)


def test_free_resources_count_ready_schedulable_real_nodes_minus_bound_running_local_pods() -> None:
    free = rs.free_resources(NODES, PODS)
    assert formatted(free) == {"cpu": "7500m", "memory": "15Gi", "pods": "219"}


def test_default_share_is_the_sharing_percentage_of_what_is_free() -> None:
    available = rs.available(rs.free_resources(NODES, PODS), sharing_percentage=90, held_by_others={})
    answer = rs.grant({}, available=available, sharing_percentage=90)
    assert answer.reason == c.REASON_ACCEPTED
    # 90% of 7.5 cpu, 15Gi and 219 pods, rounded down to millicores, Mi and units
    assert answer.resources == {"cpu": "6750m", "memory": "13824Mi", "pods": "197"}
    assert "90%" in answer.message


def test_other_slices_reduce_what_is_available() -> None:
    free = rs.free_resources(NODES, PODS)
    held = rs.total([rs.amounts({"cpu": "6", "memory": "10Gi"}), rs.amounts({"cpu": "500m", "pods": "100"})])
    answer = rs.grant(
        {}, available=rs.available(free, sharing_percentage=90, held_by_others=held), sharing_percentage=90
    )
    assert answer.resources == {"cpu": "250m", "memory": "3584Mi", "pods": "97"}


def test_default_share_is_denied_when_nothing_is_left_of_a_core_resource() -> None:
    free = rs.free_resources(NODES, PODS)
    held = rs.amounts({"cpu": "7"})
    answer = rs.grant(
        {}, available=rs.available(free, sharing_percentage=90, held_by_others=held), sharing_percentage=90
    )
    assert answer.reason == c.REASON_DENIED
    assert answer.resources == {}
    assert "nothing is left to share of cpu" in answer.message


def test_a_second_evaluation_gives_the_same_grant() -> None:
    """The slice's own grant is not among the others', and a default share does not shrink as it is granted."""
    free = rs.free_resources(NODES, PODS)
    first = rs.grant(
        {}, available=rs.available(free, sharing_percentage=90, held_by_others={}), sharing_percentage=90
    )
    granted_slice = {
        "metadata": {"generation": 1},
        "spec": {"resources": {}},
        "status": {
            "observedGeneration": 1,
            "resources": first.resources,
            "conditions": [{"type": c.CONDITION_RESOURCES, "status": "True", "reason": first.reason}],
        },
    }
    again = rs.grant(
        {},
        available=rs.available(free, sharing_percentage=90, held_by_others={}),
        sharing_percentage=90,
        keep=rs.floor(granted_slice, in_use={}),
    )
    assert again == first
    # the other slice sees it as held
    other = rs.grant(
        {},
        available=rs.available(free, sharing_percentage=90, held_by_others=rs.granted(granted_slice)),
        sharing_percentage=90,
    )
    assert other.reason == c.REASON_DENIED


AVAILABLE = rs.amounts({"cpu": "6750m", "memory": "13824Mi", "pods": "197", "example.com/fpga": "1800m"})


@pytest.mark.parametrize(
    ("requested", "reason", "granted", "says"),
    [
        ({"cpu": "2", "memory": "4Gi"}, c.REASON_ACCEPTED, {"cpu": "2", "memory": "4Gi"}, "as requested"),
        (
            {"cpu": "1.5", "memory": "1024Mi"},
            c.REASON_ACCEPTED,
            {"cpu": "1500m", "memory": "1Gi"},
            "as requested",
        ),
        ({"cpu": 3, "pods": "10"}, c.REASON_ACCEPTED, {"cpu": "3", "pods": "10"}, "as requested"),
        (
            {"cpu": "10", "memory": "4Gi"},
            c.REASON_RESIZED,
            {"cpu": "6750m", "memory": "4Gi"},
            "cpu 6750m of 10 requested",
        ),
        ({"memory": "64Gi"}, c.REASON_RESIZED, {"memory": "13824Mi"}, "memory 13824Mi of 64Gi requested"),
        ({"example.com/fpga": "1"}, c.REASON_ACCEPTED, {"example.com/fpga": "1"}, "as requested"),
        (
            {"example.com/fpga": "4"},
            c.REASON_RESIZED,
            {"example.com/fpga": "1"},
            "example.com/fpga 1 of 4 requested",
        ),
        (
            {"cpu": "1", "nvidia.com/gpu": "1"},
            c.REASON_DENIED,
            {},
            "nvidia.com/gpu (requested 1; this provider has none)",
        ),
        ({"cpu": "1x"}, c.REASON_DENIED, {}, "the request is invalid: cpu"),
        ({"cpu": "-1"}, c.REASON_DENIED, {}, "cpu must not be negative"),
    ],
    ids=[
        "fits",
        "canonical",
        "json-numbers",
        "cpu-resized",
        "memory-resized",
        "extended-fits",
        "extended-resized",
        "missing-resource-denied",
        "invalid",
        "negative",
    ],
)
def test_explicit_requests(requested: JSON, reason: str, granted: dict[str, str], says: str) -> None:
    answer = rs.grant(requested, available=AVAILABLE, sharing_percentage=90)
    assert (answer.reason, answer.resources) == (reason, granted)
    assert says in answer.message


def test_a_request_is_denied_when_nothing_is_left_of_a_resource_the_provider_has() -> None:
    available = {**AVAILABLE, **rs.amounts({"cpu": "0"})}
    answer = rs.grant({"cpu": "1", "memory": "1Gi"}, available=available, sharing_percentage=90)
    assert answer.reason == c.REASON_DENIED
    assert "cpu (requested 1; nothing is left)" in answer.message


def test_an_unchanged_explicit_grant_holds_when_the_provider_fills_up_and_grows_back_towards_the_request() -> (
    None
):
    def slice_with(granted: dict[str, str], *, generation: int = 1) -> JSON:
        return {
            "metadata": {"generation": generation},
            "spec": {"resources": {"cpu": "4"}},
            "status": {
                "observedGeneration": 1,
                "resources": granted,
                "conditions": [{"type": c.CONDITION_RESOURCES, "status": "True"}],
            },
        }

    scarce = rs.amounts({"cpu": "1"})
    held = rs.grant(
        {"cpu": "4"},
        available=scarce,
        sharing_percentage=90,
        keep=rs.floor(slice_with({"cpu": "4"}), in_use={}),
    )
    assert (held.reason, held.resources) == (c.REASON_ACCEPTED, {"cpu": "4"})
    grown = rs.grant(
        {"cpu": "4"},
        available=rs.amounts({"cpu": "3"}),
        sharing_percentage=90,
        keep=rs.floor(slice_with({"cpu": "2"}), in_use={}),
    )
    assert (grown.reason, grown.resources) == (c.REASON_RESIZED, {"cpu": "3"})
    # a changed request starts again from what is available, never below what is in use
    changed = rs.grant(
        {"cpu": "4"},
        available=scarce,
        sharing_percentage=90,
        keep=rs.floor(slice_with({"cpu": "4"}, generation=2), in_use=rs.amounts({"cpu": "1500m"})),
    )
    assert (changed.reason, changed.resources) == (c.REASON_RESIZED, {"cpu": "1500m"})


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"containers": [requests(cpu="1"), requests(cpu="250m", memory="1Gi")]},
            {"cpu": "1250m", "memory": "1Gi"},
        ),
        (
            {"containers": [requests(cpu="1")], "initContainers": [requests(cpu="2"), requests(cpu="500m")]},
            {"cpu": "2"},
        ),
        (
            {
                "containers": [requests(cpu="1")],
                "initContainers": [
                    {**requests(cpu="500m"), "restartPolicy": "Always"},
                    requests(cpu="1200m"),
                ],
            },
            {"cpu": "1700m"},
        ),
        (
            {"containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]},
            {"cpu": "2", "memory": "1Gi"},
        ),
        ({"containers": [requests(cpu="1")], "overhead": {"cpu": "100m"}}, {"cpu": "1100m"}),
        ({"containers": [requests(**{"example.com/fpga": "1"})]}, {"example.com/fpga": "1"}),
    ],
    ids=[
        "containers-add-up",
        "largest-init",
        "sidecar-runs-alongside",
        "limits-default-requests",
        "overhead",
        "extended",
    ],
)
def test_pod_requests_count_as_the_scheduler_does(spec: JSON, expected: dict[str, str]) -> None:
    assert formatted(rs.pod_requests({"spec": spec})) == {**expected, "pods": "1"}


def test_extended_resources_are_shared_too() -> None:
    nodes = [
        node("a", allocatable={"example.com/fpga": "2"}),
        node("b", allocatable={"example.com/fpga": "1"}),
    ]
    free = rs.free_resources(nodes, [pod("a", containers=[requests(**{"example.com/fpga": "1"})])])
    answer = rs.grant(
        {}, available=rs.available(free, sharing_percentage=100, held_by_others={}), sharing_percentage=100
    )
    assert answer.resources["example.com/fpga"] == "2"


def test_decimal_byte_amounts_round_to_whole_megabytes() -> None:
    free = rs.free_resources([node("a", allocatable={"memory": "10G", "ephemeral-storage": "100G"})], [])
    answer = rs.grant(
        {}, available=rs.available(free, sharing_percentage=33, held_by_others={}), sharing_percentage=33
    )
    assert answer.resources["memory"] == "3300M"
    assert answer.resources["ephemeral-storage"] == "33G"


def test_the_slice_a_consumer_requests_and_its_status() -> None:
    body = rs.resource_slice(
        "rome",
        namespace="liqo-tenant-rome",
        consumer_cluster_id="c-id",
        provider_cluster_id="p-id",
        resources={"cpu": "2"},
    )
    assert body["kind"] == "ResourceSlice"
    assert body["spec"] == {
        "class": "default",
        "consumerClusterID": "c-id",
        "providerClusterID": "p-id",
        "resources": {"cpu": "2"},
    }
    answer = rs.grant({"cpu": "2"}, available=AVAILABLE, sharing_percentage=90)
    status = rs.status(generation=3, authenticated=True, authentication_message="ok", answer=answer)
    assert status["resources"] == {"cpu": "2"}
    assert [(e["type"], e["status"], e["reason"]) for e in status["conditions"]] == [
        (c.CONDITION_AUTHENTICATION, "True", c.REASON_ACCEPTED),
        (c.CONDITION_RESOURCES, "True", c.REASON_ACCEPTED),
    ]


def test_the_quota_of_a_grant() -> None:
    owner = {
        "apiVersion": "authentication.liqo.io/v1beta1",
        "kind": "ResourceSlice",
        "metadata": {"name": "rome", "namespace": "liqo-tenant-rome", "uid": "u-1"},
    }
    body = quota(
        owner,
        user=service_account_user("liqo-tenant-rome", "liqo-consumer"),
        limits={"cpu": "2"},
        enforcement="Hard",
        cordoned=False,
    )
    assert body["spec"] == {
        "user": "system:serviceaccount:liqo-tenant-rome:liqo-consumer",
        "limits": {"cpu": "2"},
        "limitsEnforcement": "Hard",
        "cordoned": False,
    }
    assert body["metadata"]["ownerReferences"][0]["uid"] == "u-1"


def _answered(resources: dict[str, str], reason: str, *, observed: int = 1) -> JSON:
    return {
        "metadata": {"generation": 1},
        "spec": {"resources": resources},
        "status": {
            "observedGeneration": observed,
            "conditions": [{"type": c.CONDITION_RESOURCES, "status": "True", "reason": reason}],
        },
    }


@pytest.mark.parametrize(
    ("resource_slice", "follows"),
    [
        (_answered({}, c.REASON_ACCEPTED), True),
        (_answered({"cpu": "1"}, c.REASON_ACCEPTED), False),
        (_answered({"cpu": "1"}, c.REASON_RESIZED), True),
        (_answered({"cpu": "1"}, c.REASON_DENIED), True),
        (_answered({"cpu": "1"}, c.REASON_ACCEPTED, observed=0), True),
    ],
    ids=["default-share", "granted-as-asked", "resized", "denied", "request-changed"],
)
def test_which_grants_follow_the_providers_free_resources(resource_slice: JSON, follows: bool) -> None:
    assert rs.follows_free_resources(resource_slice) is follows


def test_what_a_pod_takes_from_its_node() -> None:
    pod: JSON = {
        "metadata": {},
        "spec": {"nodeName": "a", "containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}}}]},
        "status": {"phase": "Running"},
    }
    assert rs.node_usage(pod) == ("a", {"cpu": "250m", "pods": "1"})
    assert rs.node_usage({**pod, "status": {"phase": "Running", "conditions": [{"type": "Ready"}]}}) == (
        rs.node_usage(pod)
    )
    for gone in (
        {**pod, "status": {"phase": "Succeeded"}},
        {**pod, "spec": {**pod["spec"], "nodeName": ""}},
        {**pod, "metadata": {"labels": {c.LABEL_ORIGIN_CLUSTER_ID: "rome"}}},
        None,
    ):
        assert rs.node_usage(gone) is None
