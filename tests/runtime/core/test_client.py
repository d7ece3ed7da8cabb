"""The client against the playground API server: operations, pagination, subresources, discovery, typed errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtime.api.kinds import PODS
from runtime.core.client import Client, Resource, group_version_path
from runtime.core.errors import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    UnauthorizedError,
)

from .conftest import Emulator
from .kinds import CONFIGMAPS, DEPLOYMENTS, NAMESPACES, SERVICEACCOUNTS


def cm(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "data": data}


async def test_create_get_replace_and_delete_a_config_map(client: Client, namespace: str) -> None:
    created = await client.create(CONFIGMAPS, cm("a", namespace, k="1"))
    assert created["metadata"]["uid"]
    fetched = await client.get(CONFIGMAPS, "a", namespace=namespace)
    assert fetched["data"] == {"k": "1"}
    fetched["data"]["k"] = "2"
    replaced = await client.replace(CONFIGMAPS, fetched)
    assert int(replaced["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    await client.delete(CONFIGMAPS, "a", namespace=namespace)
    with pytest.raises(NotFoundError) as err:
        await client.get(CONFIGMAPS, "a", namespace=namespace)
    assert err.value.code == 404
    assert err.value.status["details"]["name"] == "a"


async def test_list_follows_continue_tokens_and_fills_in_kind(client: Client, namespace: str) -> None:
    for i in range(5):
        await client.create(
            CONFIGMAPS, {"metadata": {"name": f"c{i}", "namespace": namespace, "labels": {"i": str(i % 2)}}}
        )
    page = await client.list_page(CONFIGMAPS, namespace=namespace, limit=2)
    assert len(page.items) == 2 and page.continue_token
    listed = await client.list(CONFIGMAPS, namespace=namespace, page_size=2)
    assert [o["metadata"]["name"] for o in listed.items] == [f"c{i}" for i in range(5)]
    assert {(o["apiVersion"], o["kind"]) for o in listed.items} == {("v1", "ConfigMap")}
    assert listed.continue_token is None and int(listed.resource_version) > 0
    odd = await client.list(CONFIGMAPS, namespace=namespace, label_selector="i=1")
    assert [o["metadata"]["name"] for o in odd.items] == ["c1", "c3"]
    named = await client.list(CONFIGMAPS, namespace=namespace, field_selector="metadata.name=c4")
    assert [o["metadata"]["name"] for o in named.items] == ["c4"]


@pytest.mark.parametrize(
    ("patch_type", "patch", "expected"),
    [
        ("merge", {"data": {"b": "2", "a": None}}, {"b": "2"}),
        ("json", [{"op": "add", "path": "/data/b", "value": "2"}], {"a": "1", "b": "2"}),
        ("strategic", {"data": {"b": "2"}}, {"a": "1", "b": "2"}),
    ],
    ids=["merge", "json", "strategic"],
)
async def test_merge_json_and_strategic_patches_each_apply_their_own_semantics(
    client: Client, namespace: str, patch_type: Any, patch: Any, expected: dict[str, str]
) -> None:
    await client.create(CONFIGMAPS, cm("p", namespace, a="1"))
    patched = await client.patch(CONFIGMAPS, "p", patch, namespace=namespace, patch_type=patch_type)
    assert patched["data"] == expected


async def test_apply_owns_fields_per_manager_and_force_takes_them_over(
    client: Client, namespace: str
) -> None:
    applied = await client.apply(CONFIGMAPS, cm("s", namespace, k="1"), field_manager="one")
    assert [m["manager"] for m in applied["metadata"]["managedFields"]] == ["one"]
    with pytest.raises(ConflictError, match='conflict with "one"'):
        await client.apply(CONFIGMAPS, cm("s", namespace, k="2"), field_manager="two")
    forced = await client.apply(CONFIGMAPS, cm("s", namespace, k="2"), field_manager="two", force=True)
    assert forced["data"] == {"k": "2"}
    dry = await client.apply(CONFIGMAPS, cm("s", namespace, k="3"), field_manager="two", dry_run=True)
    assert dry["data"] == {"k": "3"}
    assert (await client.get(CONFIGMAPS, "s", namespace=namespace))["data"] == {"k": "2"}


async def test_a_stale_replace_is_a_conflict(client: Client, namespace: str) -> None:
    first = await client.create(CONFIGMAPS, cm("r", namespace, k="1"))
    await client.patch(CONFIGMAPS, "r", {"data": {"k": "2"}}, namespace=namespace)
    with pytest.raises(ConflictError) as err:
        await client.replace(CONFIGMAPS, {**first, "data": {"k": "3"}})
    assert err.value.reason == "Conflict"


async def test_delete_with_a_failed_precondition_is_a_conflict_and_keeps_the_object(
    client: Client, namespace: str
) -> None:
    await client.create(CONFIGMAPS, cm("d", namespace))
    with pytest.raises(ConflictError):
        await client.delete(CONFIGMAPS, "d", namespace=namespace, preconditions={"uid": "not-the-uid"})
    assert await client.get(CONFIGMAPS, "d", namespace=namespace)
    await client.delete(
        CONFIGMAPS, "d", namespace=namespace, propagation_policy="Foreground", grace_period_seconds=0
    )


async def test_creating_a_taken_name_is_already_exists(client: Client, namespace: str) -> None:
    await client.create(CONFIGMAPS, cm("x", namespace))
    with pytest.raises(AlreadyExistsError):
        await client.create(CONFIGMAPS, cm("x", namespace))


async def test_an_invalid_object_is_invalid_with_its_causes(client: Client, namespace: str) -> None:
    with pytest.raises(InvalidError) as err:
        await client.create(CONFIGMAPS, cm("Not_A_Name", namespace))
    assert [c["field"] for c in err.value.causes] == ["metadata.name"]


async def test_status_goes_through_the_status_subresource(client: Client, namespace: str) -> None:
    deployment = {
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    created = await client.create(DEPLOYMENTS, deployment)
    patched = await client.patch_status(
        DEPLOYMENTS, "web", {"status": {"observedGeneration": 1}}, namespace=namespace
    )
    assert patched["status"]["observedGeneration"] == 1
    patched["status"]["replicas"] = 0
    patched["spec"]["replicas"] = 5  # ignored by /status
    updated = await client.update_status(DEPLOYMENTS, patched)
    assert updated["spec"]["replicas"] == created["spec"]["replicas"]
    assert updated["metadata"]["generation"] == created["metadata"]["generation"]


async def test_discovery_finds_resources_by_api_version_and_kind(client: Client) -> None:
    assert await client.resource_for("v1", "ConfigMap") == CONFIGMAPS
    assert await client.resource_for("apps/v1", "Deployment") == DEPLOYMENTS
    assert await client.resource_for("v1", "Namespace") == NAMESPACES
    assert await client.resource_for("coordination.k8s.io/v1", "Lease") == Resource(
        "coordination.k8s.io", "v1", "leases", True, "Lease"
    )
    with pytest.raises(NotFoundError, match="Nonsense"):
        await client.resource_for("v1", "Nonsense")
    with pytest.raises(NotFoundError):
        await client.resource_for("nowhere.example.com/v1", "Thing")


async def test_get_path_reads_discovery_documents(client: Client) -> None:
    groups = await client.get_path("/apis")
    assert groups["kind"] == "APIGroupList"
    assert "apps" in {group["name"] for group in groups["groups"]}
    core = await client.get_path(group_version_path("v1"))
    assert core["groupVersion"] == "v1"
    assert "configmaps" in {entry["name"] for entry in core["resources"]}
    apps = await client.get_path(group_version_path("apps/v1"))
    assert apps["groupVersion"] == "apps/v1"
    with pytest.raises(NotFoundError):
        await client.get_path(group_version_path("nowhere.example.com/v1"))


async def _token_client(emulator: Emulator, token: str) -> Client:
    admin = yaml.safe_load(await asyncio.to_thread(Path(emulator.kubeconfig).read_text))
    admin["users"][0]["user"] = {"token": token}
    return await Client.from_kubeconfig_dict(admin)


async def test_a_service_account_without_rights_is_forbidden_and_a_bad_token_unauthorized(
    client: Client, emulator: Emulator, namespace: str
) -> None:
    await client.create(SERVICEACCOUNTS, {"metadata": {"name": "nobody", "namespace": namespace}})
    review = await client.create(
        SERVICEACCOUNTS,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
        namespace=namespace,
        name="nobody",
        subresource="token",
    )
    token = review["status"]["token"]
    async with await _token_client(emulator, token) as nobody:
        with pytest.raises(ForbiddenError, match="cannot list resource"):
            await nobody.list(CONFIGMAPS, namespace=namespace)
    async with await _token_client(emulator, "not-a-token") as stranger:
        with pytest.raises(UnauthorizedError):
            await stranger.get(CONFIGMAPS, "x", namespace=namespace)


def test_paths_of_core_and_grouped_resources() -> None:
    assert CONFIGMAPS.path() == "/api/v1/configmaps"
    assert CONFIGMAPS.path(namespace="ns", name="a") == "/api/v1/namespaces/ns/configmaps/a"
    assert (
        DEPLOYMENTS.path(namespace="ns", name="w", subresource="scale")
        == "/apis/apps/v1/namespaces/ns/deployments/w/scale"
    )
    assert (
        NAMESPACES.path(namespace="ignored", name="n", subresource="finalize")
        == "/api/v1/namespaces/n/finalize"
    )
    with pytest.raises(ValueError, match="needs an object name"):
        CONFIGMAPS.path(subresource="status")


async def test_namespaced_operations_need_a_namespace_and_cluster_scoped_ones_ignore_it(
    client: Client,
) -> None:
    with pytest.raises(ValueError, match="namespaced"):
        await client.get(CONFIGMAPS, "a")
    assert (await client.get(NAMESPACES, "default", namespace="ignored"))["metadata"]["name"] == "default"


async def test_every_request_is_told_with_its_verb_and_status(client: Client, namespace: str) -> None:
    seen: list[tuple[str, int]] = []
    client.on_request = lambda verb, code: seen.append((verb, code))
    try:
        created = await client.create(CONFIGMAPS, {"metadata": {"name": "counted", "namespace": namespace}})
        await client.get(CONFIGMAPS, "counted", namespace=namespace)
        listed = await client.list(CONFIGMAPS, namespace=namespace)
        await client.replace(CONFIGMAPS, {**created, "data": {"a": "b"}})
        await client.patch(CONFIGMAPS, "counted", {"data": {"a": "c"}}, namespace=namespace)
        events = client.watch(
            CONFIGMAPS, namespace=namespace, resource_version=listed.resource_version, timeout_seconds=1
        )
        async for _ in events:
            break
        await events.aclose()
        await client.delete(CONFIGMAPS, "counted", namespace=namespace)
        with pytest.raises(NotFoundError):
            await client.get(CONFIGMAPS, "counted", namespace=namespace)
    finally:
        client.on_request = None
    assert seen == [
        ("create", 201),
        ("get", 200),
        ("list", 200),
        ("update", 200),
        ("patch", 200),
        ("watch", 200),
        ("delete", 200),
        ("get", 404),
    ]


async def test_the_environments_proxy_is_used_unless_no_proxy_covers_the_server(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runtime.core.errors import APIConnectionError

    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readline())
        writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    try:
        async with await Client.from_kubeconfig(emulator.kubeconfig) as proxied:
            with pytest.raises(APIConnectionError):
                await proxied.get(NAMESPACES, "default")
        assert seen and seen[0].startswith(b"CONNECT 127.0.0.1:")
        proxied_requests = len(seen)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with await Client.from_kubeconfig(emulator.kubeconfig) as direct:
            assert (await direct.get(NAMESPACES, "default"))["metadata"]["name"] == "default"
        assert len(seen) == proxied_requests
    finally:
        server.close()
        await server.wait_closed()


class UpgradingServer:
    """An API server's answer to a streaming subresource: 101 and an echo, or `refusal` (status, body)."""

    def __init__(self, refusal: tuple[int, bytes] | None = None) -> None:
        self.refusal = refusal
        self.heads: list[str] = []

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.heads.append((await reader.readuntil(b"\r\n\r\n")).decode())
        if self.refusal is not None:
            status, body = self.refusal
            writer.write(f"HTTP/1.1 {status} No\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        else:
            writer.write(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\n\r\n"
            )
            writer.write(await reader.read(100))
        await writer.drain()
        writer.close()


async def _upgrade_client(server: UpgradingServer) -> tuple[Client, asyncio.Server]:
    listening = await asyncio.start_server(server, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    config = {
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "secret-token"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    return await Client.from_kubeconfig_dict(config), listening


async def test_upgrade_switches_protocols_with_every_header_line_and_relays_raw_bytes() -> None:
    server = UpgradingServer()
    client, listening = await _upgrade_client(server)
    async with client, listening:
        stream = await client.upgrade(
            PODS,
            "web",
            namespace="demo",
            subresource="exec",
            query=[("command", "ls"), ("command", "-l"), ("stdout", "true")],
            headers=[
                ("Upgrade", "SPDY/3.1"),
                ("X-Stream-Protocol-Version", "v4.channel.k8s.io"),
                ("X-Stream-Protocol-Version", "channel.k8s.io"),
            ],
        )
        assert stream.headers["upgrade"] == "SPDY/3.1"
        stream.writer.write(b"frames")
        assert await stream.reader.read(100) == b"frames"
        stream.writer.close()
    head = server.heads[0]
    assert head.startswith(
        "POST /api/v1/namespaces/demo/pods/web/exec?command=ls&command=-l&stdout=true HTTP/1.1"
    )
    assert (
        "X-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: channel.k8s.io\r\n"
        in head
    )
    assert "Authorization: Bearer secret-token\r\n" in head


async def test_an_upgrade_the_server_refuses_is_its_typed_error() -> None:
    status = b'{"kind":"Status","status":"Failure","code":403,"reason":"Forbidden","message":"pods \\"web\\" is forbidden"}'
    client, listening = await _upgrade_client(UpgradingServer((403, status)))
    async with client, listening:
        with pytest.raises(ForbiddenError, match='pods "web" is forbidden'):
            await client.upgrade(
                PODS, "web", namespace="demo", subresource="exec", headers=[("Upgrade", "SPDY/3.1")]
            )
