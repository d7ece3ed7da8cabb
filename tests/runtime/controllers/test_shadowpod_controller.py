"""The ShadowPod controller's writes, against a client that records them (no API server).

What the consumer waits for is the provider's Pod: a ShadowPod seen for the first time gets its
Pod before anything else is written (the finalizer and the status follow), so an offloaded pod
pays one round trip less, and one admission review less, before the provider's kubelet sees it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from runtime.api import constants as c
from runtime.api.crds import SHADOWPODS
from runtime.api.kinds import PODS
from runtime.api.objects import JSON
from runtime.controllers.offloading.shadowpod import ShadowPodReconciler
from runtime.core import Client, Informer, NotFoundError, Request, Resource, Store

TWIN = "work-rome"


class RecordingClient:
    """The writes the reconciler makes, in order; each answers with the object as written."""

    def __init__(self, *, gone: Resource | None = None) -> None:
        self.writes: list[tuple[str, str]] = []
        self._gone = gone
        self._version = 10

    def _answer(self, verb: str, resource: Resource, obj: JSON) -> JSON:
        self.writes.append((verb, resource.plural))
        if resource == self._gone:
            raise NotFoundError({"code": 404, "reason": "NotFound", "message": f"{resource.plural} gone"})
        self._version += 1
        return {
            **obj,
            "metadata": {**obj["metadata"], "uid": "new-uid", "resourceVersion": str(self._version)},
        }

    async def create(self, resource: Resource, body: JSON, **_: Any) -> JSON:
        return self._answer("create", resource, body)

    async def patch(self, resource: Resource, name: str, body: JSON, *, namespace: str, **_: Any) -> JSON:
        return self._answer(
            "patch", resource, {"metadata": {**body["metadata"], "name": name, "namespace": namespace}}
        )

    async def patch_status(
        self, resource: Resource, name: str, body: JSON, *, namespace: str, **_: Any
    ) -> JSON:
        return self._answer(
            "patch_status", resource, {**body, "metadata": {"name": name, "namespace": namespace}}
        )


def informer(*objects: JSON) -> Informer:
    store = Store()
    for obj in objects:
        store.upsert(obj)
    return cast(Informer, SimpleNamespace(store=store))


def shadow(**meta: Any) -> JSON:
    return {
        "apiVersion": SHADOWPODS.api_version,
        "kind": SHADOWPODS.kind,
        "metadata": {"name": "web", "namespace": TWIN, "uid": "shadow-uid", "resourceVersion": "3", **meta},
        "spec": {"pod": {"containers": [{"name": "web", "image": "nginx"}]}},
    }


def reconciler(client: RecordingClient, *shadows: JSON) -> ShadowPodReconciler:
    twin = {
        "metadata": {
            "name": TWIN,
            "labels": {c.LABEL_ORIGIN_CLUSTER_ID: "rome-id"},
            "annotations": {c.ANNOTATION_NAMESPACE_MAP: "liqo-tenant-rome/rome"},
        }
    }
    tenant = {"metadata": {"name": "rome", "namespace": "liqo-tenant-rome"}, "spec": {}}
    return ShadowPodReconciler(
        cast(Client, client),
        shadow_pods=informer(*shadows),
        pods=informer(),
        twins=informer(twin),
        tenants=informer(tenant),
    )


async def test_a_new_shadow_pod_gets_its_pod_first_then_the_finalizer_and_the_status() -> None:
    client = RecordingClient()
    await reconciler(client, shadow()).reconcile(Request(TWIN, "web"))
    assert client.writes == [
        ("create", PODS.plural),
        ("patch", SHADOWPODS.plural),
        ("patch_status", SHADOWPODS.plural),
    ]


async def test_a_shadow_pod_deleted_right_after_its_pod_was_made_is_left_to_go() -> None:
    client = RecordingClient(gone=SHADOWPODS)
    await reconciler(client, shadow()).reconcile(Request(TWIN, "web"))
    assert client.writes == [("create", PODS.plural), ("patch", SHADOWPODS.plural)]


async def test_a_shadow_pod_with_its_finalizer_gets_no_second_one() -> None:
    client = RecordingClient()
    await reconciler(client, shadow(finalizers=[c.FINALIZER_SHADOWPOD])).reconcile(Request(TWIN, "web"))
    assert client.writes == [("create", PODS.plural), ("patch_status", SHADOWPODS.plural)]
