"""The namespace controller empties a deleted namespace, reports progress in conditions, then finalizes it."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from playground.controllers import namespace as namespace_controller
from playground.controllers.namespace import Pass, recheck_delay, updated_conditions
from runtime.api.kinds import CONFIGMAPS, CRDS, DEPLOYMENTS, NAMESPACES, PODS, SECRETS, SERVICEACCOUNTS
from runtime.api.resource import Resource
from runtime.core import Client, NotFoundError, Request, Store
from tests.playground.conftest import eventually, running


async def _gone(client: Client, resource: Resource, name: str, namespace: str | None = None) -> bool:
    try:
        await client.get(resource, name, namespace=namespace)
    except NotFoundError:
        return True
    return False


async def gadget_crd(client: Client) -> Resource:
    """A new namespaced CRD (kind Gadget, in a group of its own), once it is established."""
    group = f"t{uuid.uuid4().hex[:8]}.example.com"
    await client.create(
        CRDS,
        {
            "metadata": {"name": f"gadgets.{group}"},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        },
    )

    async def established() -> bool:
        crd = await client.get(CRDS, f"gadgets.{group}")
        conditions = (crd.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    await eventually(established)
    return Resource(group, "v1", "gadgets", kind="Gadget")


def _condition(ns: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in ns["status"].get("conditions") or [] if c["type"] == kind)


async def test_deleting_a_namespace_removes_its_content_and_then_the_namespace(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    gadgets = await gadget_crd(client)
    await client.create(SERVICEACCOUNTS, {"metadata": {"name": "default"}}, namespace=namespace)
    await client.create(
        CONFIGMAPS, {"metadata": {"name": "settings"}, "data": {"a": "1"}}, namespace=namespace
    )
    await client.create(
        SECRETS, {"metadata": {"name": "token"}, "stringData": {"t": "x"}}, namespace=namespace
    )
    labels = {"app": "web"}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    await client.create(
        DEPLOYMENTS,
        {"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": labels}, "template": template}},
        namespace=namespace,
    )
    await client.create(
        PODS,
        {"metadata": {"name": "unbound", "labels": labels}, "spec": template["spec"]},
        namespace=namespace,
    )
    await client.create(
        gadgets,
        {"apiVersion": gadgets.api_version, "kind": "Gadget", "metadata": {"name": "g"}},
        namespace=namespace,
    )

    async with running(emulator_kubeconfig, namespace_controller.setup):
        await client.delete(NAMESPACES, namespace)
        await eventually(lambda: _gone(client, NAMESPACES, namespace), within=20)

    # the namespace went only after its content, so nothing of it is left behind
    for resource in (CONFIGMAPS, SECRETS, DEPLOYMENTS, PODS, SERVICEACCOUNTS, gadgets):
        assert (await client.list(resource, namespace=namespace)).items == [], resource.plural


async def test_an_object_with_a_foreign_finalizer_keeps_the_namespace_terminating_until_it_goes(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await client.create(
        CONFIGMAPS, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}, namespace=namespace
    )
    await client.create(CONFIGMAPS, {"metadata": {"name": "free"}}, namespace=namespace)

    async with running(emulator_kubeconfig, namespace_controller.setup):
        await client.delete(NAMESPACES, namespace)

        async def reports_the_finalizer() -> bool:
            ns = await client.get(NAMESPACES, namespace)
            conditions = {c["type"]: c for c in ns["status"].get("conditions") or []}
            held = conditions.get("NamespaceFinalizersRemaining", {})
            return bool(held.get("status") == "True")

        await eventually(reports_the_finalizer, within=20)
        ns = await client.get(NAMESPACES, namespace)
        assert ns["status"]["phase"] == "Terminating"
        assert ns["spec"]["finalizers"] == ["kubernetes"]
        held = _condition(ns, "NamespaceFinalizersRemaining")
        assert (held["reason"], held["message"]) == (
            "SomeFinalizerRemain",
            "Some finalizers are remaining: example.com/hold in 1 resource instances",
        )
        remaining = _condition(ns, "NamespaceContentRemaining")
        assert (remaining["status"], remaining["reason"], remaining["message"]) == (
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: configmaps. has 1 resource instances",
        )
        discovered = _condition(ns, "NamespaceDeletionDiscoveryFailure")
        assert (discovered["status"], discovered["reason"]) == ("False", "ResourcesDiscovered")
        assert await _gone(client, CONFIGMAPS, "free", namespace)
        held_cm = await client.get(CONFIGMAPS, "held", namespace=namespace)
        assert held_cm["metadata"]["deletionTimestamp"]

        await client.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, namespace=namespace)
        await eventually(lambda: _gone(client, NAMESPACES, namespace), within=20)


async def test_a_namespace_that_is_not_deleted_is_left_alone(
    emulator_kubeconfig: Path, client: Client, namespace: str
) -> None:
    await client.create(CONFIGMAPS, {"metadata": {"name": "kept"}}, namespace=namespace)
    async with running(emulator_kubeconfig, namespace_controller.setup):
        other = f"t-{uuid.uuid4().hex[:10]}"
        await client.create(NAMESPACES, {"metadata": {"name": other}})
        await client.delete(NAMESPACES, other)
        # a namespace deleted after ours was set up is finalized, so ours was seen and skipped by then
        await eventually(lambda: _gone(client, NAMESPACES, other), within=20)
    ns = await client.get(NAMESPACES, namespace)
    assert ns["status"]["phase"] == "Active"
    assert ns["spec"]["finalizers"] == ["kubernetes"]
    assert (await client.get(CONFIGMAPS, "kept", namespace=namespace))["metadata"]["name"] == "kept"


async def test_a_stale_cache_of_a_deleted_namespace_leaves_the_new_one_by_that_name_alone(
    client: Client, namespace: str
) -> None:
    # the cache still holds the deleted namespace while a new one of the same name exists (a tenant
    # namespace re-created by its controller right after an unpeer): nothing of the new one may go
    live = await client.get(NAMESPACES, namespace)
    await client.create(CONFIGMAPS, {"metadata": {"name": "kept"}}, namespace=namespace)
    stale = {
        "metadata": {
            "name": namespace,
            "uid": str(uuid.uuid4()),
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Terminating"},
    }
    cache = Store()
    cache.upsert(stale)
    reconciler = namespace_controller.NamespaceReconciler(client, cache)

    assert await reconciler.reconcile(Request("", namespace)) is None

    ns = await client.get(NAMESPACES, namespace)
    assert ns["metadata"]["uid"] == live["metadata"]["uid"]
    assert ns["status"]["phase"] == "Active"
    assert ns["spec"]["finalizers"] == ["kubernetes"]
    assert (await client.get(CONFIGMAPS, "kept", namespace=namespace))["metadata"]["name"] == "kept"


@pytest.mark.parametrize(
    ("estimate", "waited", "delay"),
    [(0, 0.0, 0.2), (0, -3.0, 0.2), (15, 2.0, 1.0), (15, 100.0, 8.5), (30, 100.0, 16.0), (0, 100.0, 1.0)],
    ids=["fresh", "clock-skew", "young", "finalizers-cap", "pods-cap", "no-estimate-cap"],
)
def test_recheck_delay_grows_with_the_wait_up_to_kubes_estimate(
    estimate: int, waited: float, delay: float
) -> None:
    assert recheck_delay(estimate, waited=waited) == delay


def _held() -> Pass:
    return Pass(finalizers=Counter({"x": 1}), remaining=Counter({"configmaps.": 1}))


def test_conditions_keep_their_transition_time_unless_their_status_flips() -> None:
    first = updated_conditions([], _held().conditions(), now="t1")
    assert first is not None
    by_type = {c["type"]: c for c in first}
    assert set(by_type) == {
        "NamespaceDeletionDiscoveryFailure",
        "NamespaceDeletionGroupVersionParsingFailure",
        "NamespaceDeletionContentFailure",
        "NamespaceContentRemaining",
        "NamespaceFinalizersRemaining",
    }
    assert by_type["NamespaceContentRemaining"]["status"] == "True"
    assert by_type["NamespaceDeletionContentFailure"] == {
        "type": "NamespaceDeletionContentFailure",
        "status": "False",
        "lastTransitionTime": "t1",
        "reason": "ContentDeleted",
        "message": "All content successfully deleted, may be waiting on finalization",
    }
    assert updated_conditions(first, _held().conditions(), now="t2") is None

    cleared = updated_conditions(first, Pass().conditions(), now="t3")
    assert cleared is not None
    by_type = {c["type"]: c for c in cleared}
    assert by_type["NamespaceContentRemaining"]["lastTransitionTime"] == "t3"
    assert by_type["NamespaceContentRemaining"]["reason"] == "ContentRemoved"
    assert by_type["NamespaceDeletionContentFailure"]["lastTransitionTime"] == "t1"
