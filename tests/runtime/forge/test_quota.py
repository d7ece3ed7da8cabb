"""A consumer's use of its Quotas, as pure functions: what counts, what must be declared, what is refused."""

from __future__ import annotations

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge import quota as forge
from runtime.forge.resourceslice import amounts, formatted


def shadow(name: str = "web", *, phase: str = "Running", deleting: bool = False, **resources: JSON) -> JSON:
    meta: JSON = {"name": name, "namespace": "shop-rome"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    container = {"name": "c", "image": "nginx", "resources": resources}
    return {"metadata": meta, "spec": {"pod": {"containers": [container]}}, "status": {"phase": phase}}


def quota(name: str, *, enforcement: str = "None", cordoned: bool = False, **limits: str) -> JSON:
    return {
        "metadata": {"name": name, "namespace": "liqo-tenant-rome"},
        "spec": {"limits": limits, "limitsEnforcement": enforcement, "cordoned": cordoned},
    }


def test_running_pods_count_and_finished_or_deleted_ones_do_not() -> None:
    pods = [
        shadow("a", requests={"cpu": "500m", "memory": "1Gi"}),
        shadow("b", limits={"cpu": "1"}),
        shadow("done", phase="Succeeded", requests={"cpu": "8"}),
        shadow("failed", phase="Failed", requests={"cpu": "8"}),
        shadow("going", deleting=True, requests={"cpu": "8"}),
        shadow("bare"),
    ]
    assert formatted(forge.used(pods)) == {"cpu": "1500m", "memory": "1Gi", "pods": "3"}


@pytest.mark.parametrize(
    ("enforcement", "resources", "problem"),
    [
        ("None", {}, ""),
        ("Soft", {}, "requests no cpu or memory"),
        ("Soft", {"requests": {"cpu": "1"}}, "requests no memory"),
        ("Soft", {"requests": {"cpu": "1", "memory": "1Gi"}}, ""),
        ("Hard", {"requests": {"cpu": "1", "memory": "1Gi"}}, "limits cpu, memory to other than it requests"),
        (
            "Hard",
            {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}},
            "limits cpu",
        ),
        ("Hard", {"limits": {"cpu": "1", "memory": "1Gi"}}, ""),
    ],
    ids=[
        "none-declares-nothing",
        "soft-without-requests",
        "soft-without-memory",
        "soft-declared",
        "hard-without-limits",
        "hard-limit-above-request",
        "hard-limits-only",
    ],
)
def test_what_each_enforcement_asks_a_pod_to_declare(enforcement: str, resources: JSON, problem: str) -> None:
    problems = forge.enforcement_problems(shadow(**resources), enforced=enforcement)  # type: ignore[arg-type]
    assert (problem in "; ".join(problems)) if problem else problems == []


def test_the_strictest_enforcement_of_a_consumers_quotas_holds() -> None:
    assert forge.enforcement([quota("a"), quota("b", enforcement="Soft")]) == "Soft"
    assert forge.enforcement([quota("a", enforcement="bogus")]) == "Hard"
    assert forge.enforcement([]) == "None"


def test_a_pod_past_the_quota_is_refused_naming_it_as_kubernetes_does() -> None:
    quotas = [quota("rome", cpu="2", memory="4Gi", pods="10"), quota("rome-2", cpu="1")]
    granted = forge.limits(quotas)
    in_use = amounts({"cpu": "2500m", "memory": "1Gi", "pods": "3"})
    requested = amounts({"cpu": "1", "memory": "1Gi", "pods": "1", "nvidia.com/gpu": "1"})
    over = forge.exceeded(requested, in_use=in_use, granted=granted)
    assert over == ["cpu", "nvidia.com/gpu"]
    message = forge.quota_refusal(over, quotas=quotas, requested=requested, in_use=in_use, granted=granted)
    assert message == (
        "exceeded quota: liqo-tenant-rome/rome, liqo-tenant-rome/rome-2, requested: cpu=1,nvidia.com/gpu=1, "
        "used: cpu=2500m,nvidia.com/gpu=0, limited: cpu=3,nvidia.com/gpu=0 (not granted)"
    )
    assert forge.exceeded(amounts({"cpu": "500m", "pods": "1"}), in_use=in_use, granted=granted) == []


def test_the_use_is_filled_into_the_quotas_in_name_order_up_to_their_limits() -> None:
    quotas = [quota("b", cpu="4"), quota("a", cpu="2", memory="1Gi")]
    shares = forge.distributed(amounts({"cpu": "5", "memory": "512Mi", "pods": "2"}), quotas)
    assert shares == {"a": {"cpu": "2", "memory": "512Mi"}, "b": {"cpu": "3", "pods": "2"}}
    assert forge.distributed({}, quotas) == {"a": {}, "b": {}}


def test_a_twin_namespace_names_its_tenant() -> None:
    twin = {"metadata": {"annotations": {c.ANNOTATION_NAMESPACE_MAP: "liqo-tenant-rome/milan"}}}
    assert forge.tenant_of(twin) == "liqo-tenant-rome"
    assert forge.tenant_of({"metadata": {}}) == "" and forge.tenant_of(None) == ""
