"""The `kubernetes_asyncio` client, which the runtime uses, works against the cluster."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client, config, watch

from .conftest import Cluster

WATCH_SECONDS = 10
#: watched objects carry it, so a real cluster's kube-root-ca.crt stays out of the event lists
WATCHED = {"watched": "yes"}


@pytest.fixture
async def api(cluster: Cluster) -> AsyncIterator[client.ApiClient]:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=configuration)
    async with client.ApiClient(configuration) as api_client:
        yield api_client


@pytest.fixture
def acore(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


async def test_create_read_list_patch_delete(acore: client.CoreV1Api, namespace: str) -> None:
    created = await acore.create_namespaced_config_map(
        namespace, {"metadata": {"name": "a", "labels": {"app": "x"}}, "data": {"k": "1"}}
    )
    await acore.create_namespaced_config_map(namespace, {"metadata": {"name": "b"}})
    assert created.metadata.uid
    assert (await acore.read_namespaced_config_map("a", namespace)).data == {"k": "1"}
    listed = await acore.list_namespaced_config_map(namespace, label_selector="app=x")
    assert [cm.metadata.name for cm in listed.items] == ["a"]
    assert int(listed.metadata.resource_version) >= int(created.metadata.resource_version)
    patched = await acore.patch_namespaced_config_map("a", namespace, {"data": {"k": "2"}})
    assert patched.data == {"k": "2"}
    json_patched = await acore.patch_namespaced_config_map(
        "a", namespace, [{"op": "add", "path": "/data/j", "value": "3"}]
    )
    assert json_patched.data == {"k": "2", "j": "3"}
    await acore.delete_namespaced_config_map("a", namespace)
    with pytest.raises(client.ApiException) as err:
        await acore.read_namespaced_config_map("a", namespace)
    assert err.value.status == 404


async def test_server_side_apply(acore: client.CoreV1Api, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"k": "1"}}
    # `_content_type` is one of the generated methods' `**kwargs` (it picks the patch type), which the
    # annotations leave out.
    applied = await acore.patch_namespaced_config_map(  # type: ignore[call-arg]
        "ssa", namespace, body, field_manager="runtime", _content_type="application/apply-patch+yaml"
    )
    assert applied.data == {"k": "1"}
    assert [(m.manager, m.operation) for m in applied.metadata.managed_fields] == [("runtime", "Apply")]


async def _collect(
    core: client.CoreV1Api, namespace: str, until: str, **kwargs: Any
) -> list[tuple[str, str]]:
    """(type, name) of watch events, up to and including the first of type `until`."""
    seen: list[tuple[str, str]] = []
    stream = watch.Watch()
    async with stream.stream(
        core.list_namespaced_config_map,
        namespace,
        label_selector="watched",
        timeout_seconds=WATCH_SECONDS,
        **kwargs,
    ) as events:
        async for event in events:
            assert isinstance(event["object"], client.V1ConfigMap)
            seen.append((event["type"], event["object"].metadata.name))
            if event["type"] == until:
                break
    return seen


async def test_watch_streams_added_modified_deleted(acore: client.CoreV1Api, namespace: str) -> None:
    listed = await acore.list_namespaced_config_map(namespace)
    watcher = asyncio.create_task(
        _collect(acore, namespace, "DELETED", resource_version=listed.metadata.resource_version)
    )
    await acore.create_namespaced_config_map(namespace, {"metadata": {"name": "w", "labels": WATCHED}})
    await acore.patch_namespaced_config_map("w", namespace, {"data": {"k": "v"}})
    await acore.delete_namespaced_config_map("w", namespace)
    events = await asyncio.wait_for(watcher, WATCH_SECONDS)
    assert events == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_watch_from_a_resource_version_replays_later_events(
    acore: client.CoreV1Api, namespace: str
) -> None:
    await acore.create_namespaced_config_map(namespace, {"metadata": {"name": "before", "labels": WATCHED}})
    rv = (await acore.list_namespaced_config_map(namespace)).metadata.resource_version
    await acore.create_namespaced_config_map(namespace, {"metadata": {"name": "after-1", "labels": WATCHED}})
    await acore.create_namespaced_config_map(namespace, {"metadata": {"name": "after-2", "labels": WATCHED}})
    await acore.delete_namespaced_config_map("after-1", namespace)
    events = await _collect(acore, namespace, "DELETED", resource_version=rv)
    assert events == [("ADDED", "after-1"), ("ADDED", "after-2"), ("DELETED", "after-1")]


async def test_watch_without_a_resource_version_starts_with_the_current_objects(
    acore: client.CoreV1Api, namespace: str
) -> None:
    await acore.create_namespaced_config_map(namespace, {"metadata": {"name": "x", "labels": WATCHED}})
    await acore.create_namespaced_config_map(namespace, {"metadata": {"name": "y", "labels": WATCHED}})
    seen: list[tuple[str, str]] = []
    stream = watch.Watch()
    async with stream.stream(
        acore.list_namespaced_config_map, namespace, label_selector="watched", timeout_seconds=WATCH_SECONDS
    ) as events:
        async for event in events:
            seen.append((event["type"], event["object"].metadata.name))
            if len(seen) == 2:
                stream.stop()
    assert sorted(seen) == [("ADDED", "x"), ("ADDED", "y")]
