"""The garbage collector: background, foreground and orphan propagation by ownerReferences."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from playground.controllers import gc
from playground.controllers.gc import blocks, invalid_owner_message, is_deleting_dependents
from runtime.api.kinds import CLUSTERROLES, CONFIGMAPS, EVENTS, NAMESPACES
from runtime.api.objects import JSON
from runtime.api.resource import Resource
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually, running
from tests.playground.controllers.test_namespace import gadget_crd


def _owner_ref(owner: JSON, *, block: bool = False) -> JSON:
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    return {**ref, "blockOwnerDeletion": True} if block else ref


async def _configmap(client: Client, namespace: str, name: str, *owners: JSON, **meta: Any) -> JSON:
    metadata: JSON = {"name": name, **meta}
    if owners:
        metadata["ownerReferences"] = list(owners)
    return await client.create(CONFIGMAPS, {"metadata": metadata}, namespace=namespace)


async def _get(client: Client, resource: Resource, name: str, namespace: str | None = None) -> JSON | None:
    try:
        return await client.get(resource, name, namespace=namespace)
    except NotFoundError:
        return None


async def _gone(client: Client, name: str, namespace: str) -> bool:
    return await _get(client, CONFIGMAPS, name, namespace) is None


async def _namespace(client: Client) -> str:
    name = f"t-{uuid.uuid4().hex[:10]}"
    await client.create(NAMESPACES, {"metadata": {"name": name}})
    return name


async def test_dependents_of_a_deleted_owner_are_deleted(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, gc.setup) as client:
        ns = await _namespace(client)
        owner = await _configmap(client, ns, "owner")
        await _configmap(client, ns, "first", _owner_ref(owner))
        await _configmap(client, ns, "second", _owner_ref(owner))
        role = await client.create(CLUSTERROLES, {"metadata": {"name": f"owner-{ns}"}})
        # a cluster-scoped owner of a namespaced dependent is valid
        await _configmap(client, ns, "of-role", _owner_ref(role))
        await _configmap(client, ns, "bystander")

        await client.delete(CONFIGMAPS, "owner", namespace=ns)
        await client.delete(CLUSTERROLES, f"owner-{ns}")

        async def dependents_gone() -> bool:
            return all([await _gone(client, name, ns) for name in ("first", "second", "of-role")])

        await eventually(dependents_gone, within=20)
        assert await _get(client, CONFIGMAPS, "bystander", ns) is not None


async def test_an_owner_recreated_with_the_same_name_does_not_keep_old_dependents(
    fresh_emulator: Path,
) -> None:
    async with await Client.from_kubeconfig(fresh_emulator) as client:
        ns = await _namespace(client)
        old = await _configmap(client, ns, "owner")
        await _configmap(client, ns, "of-old", _owner_ref(old))
        await client.delete(CONFIGMAPS, "owner", namespace=ns)
        new = await _configmap(client, ns, "owner")
        await _configmap(client, ns, "of-new", _owner_ref(new))

    async with running(fresh_emulator, gc.setup) as client:
        await eventually(lambda: _gone(client, "of-old", ns), within=20)
        assert await _get(client, CONFIGMAPS, "of-new", ns) is not None
        assert await _get(client, CONFIGMAPS, "owner", ns) is not None


async def test_a_dependent_with_a_live_owner_stays_and_loses_the_reference_to_the_gone_one(
    fresh_emulator: Path,
) -> None:
    async with running(fresh_emulator, gc.setup) as client:
        ns = await _namespace(client)
        alive = await _configmap(client, ns, "alive")
        doomed = await _configmap(client, ns, "doomed")
        await _configmap(client, ns, "shared", _owner_ref(alive), _owner_ref(doomed))
        await client.delete(CONFIGMAPS, "doomed", namespace=ns)

        async def only_the_live_owner() -> bool:
            shared = await client.get(CONFIGMAPS, "shared", namespace=ns)
            return [r["name"] for r in shared["metadata"].get("ownerReferences") or []] == ["alive"]

        await eventually(only_the_live_owner, within=20)


async def test_foreground_deletion_keeps_the_owner_until_blocking_dependents_are_gone(
    fresh_emulator: Path,
) -> None:
    async with running(fresh_emulator, gc.setup) as client:
        ns = await _namespace(client)
        owner = await _configmap(client, ns, "owner")
        await _configmap(
            client, ns, "blocker", _owner_ref(owner, block=True), finalizers=["example.com/hold"]
        )
        await _configmap(client, ns, "plain", _owner_ref(owner))

        await client.delete(CONFIGMAPS, "owner", namespace=ns, propagation_policy="Foreground")
        await eventually(lambda: _gone(client, "plain", ns), within=20)

        async def blocker_deleting() -> bool:
            blocker = await _get(client, CONFIGMAPS, "blocker", ns)
            return blocker is not None and bool(blocker["metadata"].get("deletionTimestamp"))

        await eventually(blocker_deleting, within=20)
        waiting = await client.get(CONFIGMAPS, "owner", namespace=ns)
        assert is_deleting_dependents(waiting)
        assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]

        await client.patch(CONFIGMAPS, "blocker", {"metadata": {"finalizers": None}}, namespace=ns)
        await eventually(lambda: _gone(client, "owner", ns), within=20)
        assert await _gone(client, "blocker", ns)


async def test_orphan_deletion_removes_the_reference_and_keeps_the_dependents(fresh_emulator: Path) -> None:
    async with running(fresh_emulator, gc.setup) as client:
        ns = await _namespace(client)
        owner = await _configmap(client, ns, "owner")
        other = await _configmap(client, ns, "other")
        await _configmap(client, ns, "single", _owner_ref(owner, block=True))
        await _configmap(client, ns, "double", _owner_ref(owner), _owner_ref(other))

        await client.delete(CONFIGMAPS, "owner", namespace=ns, propagation_policy="Orphan")
        await eventually(lambda: _gone(client, "owner", ns), within=20)

        single = await client.get(CONFIGMAPS, "single", namespace=ns)
        assert "ownerReferences" not in single["metadata"]
        double = await client.get(CONFIGMAPS, "double", namespace=ns)
        assert [r["name"] for r in double["metadata"]["ownerReferences"]] == ["other"]


async def test_a_cluster_scoped_object_with_a_namespaced_owner_is_reported_and_kept(
    fresh_emulator: Path,
) -> None:
    async with running(fresh_emulator, gc.setup) as client:
        ns = await _namespace(client)
        owner = await _configmap(client, ns, "owner")
        name = f"dependent-{ns}"
        await client.create(
            CLUSTERROLES, {"metadata": {"name": name, "ownerReferences": [_owner_ref(owner)]}}
        )
        await client.delete(CONFIGMAPS, "owner", namespace=ns)

        async def reported() -> list[JSON]:
            events = (await client.list(EVENTS, namespace="default")).items
            return [e for e in events if e["involvedObject"].get("name") == name]

        await eventually(reported, within=20)
        (event,) = await reported()
        assert (event["type"], event["reason"]) == ("Warning", "OwnerRefInvalidNamespace")
        assert event["message"] == invalid_owner_message(_owner_ref(owner))
        assert await _get(client, CLUSTERROLES, name) is not None


async def test_custom_resources_of_a_crd_created_later_are_owners_and_dependents(
    fresh_emulator: Path,
) -> None:
    async with running(fresh_emulator, gc.setup) as client:
        ns = await _namespace(client)
        gadgets = await gadget_crd(client)
        body = {"apiVersion": gadgets.api_version, "kind": "Gadget"}
        owner = await client.create(gadgets, {**body, "metadata": {"name": "owner"}}, namespace=ns)
        await _configmap(client, ns, "of-gadget", _owner_ref(owner))
        config = await _configmap(client, ns, "config")
        await client.create(
            gadgets,
            {**body, "metadata": {"name": "of-config", "ownerReferences": [_owner_ref(config)]}},
            namespace=ns,
        )

        await client.delete(gadgets, "owner", namespace=ns)
        await client.delete(CONFIGMAPS, "config", namespace=ns)
        await eventually(lambda: _gone(client, "of-gadget", ns), within=20)

        async def custom_dependent_gone() -> bool:
            return await _get(client, gadgets, "of-config", ns) is None

        await eventually(custom_dependent_gone, within=20)


def test_only_a_reference_with_block_owner_deletion_blocks() -> None:
    dependent = {"metadata": {"ownerReferences": [{"uid": "a", "blockOwnerDeletion": True}, {"uid": "b"}]}}
    assert blocks(dependent, "a")
    assert not blocks(dependent, "b")
    assert not blocks(dependent, "c")


def test_the_invalid_owner_message_is_kubes() -> None:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u-1"}
    assert invalid_owner_message(ref) == (
        'ownerRef [v1/ConfigMap, namespace: , name: cm, uid: u-1] does not exist in namespace ""'
    )
