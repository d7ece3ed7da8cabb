"""The emulator's own state: what survives a restart, its watch window, and shutting down.

Emulator-only: a real cluster's persistence is etcd's business. One emulator is
started, given objects, stopped with SIGTERM while a watch is open and started again on
the same state directory and port; the tests compare what the two runs show. The watch
window is tested in process, with a history of a few events.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes_asyncio import client as aclient
from kubernetes_asyncio import config as aconfig
from kubernetes_asyncio import watch as awatch

from playground.apiserver.identity import UserInfo
from playground.apiserver.registry import Registry, WriteOptions
from playground.apiserver.resources.builtin import builtin_types
from playground.apiserver.resources.catalog import Catalog
from playground.apiserver.server import APIServer, Settings
from playground.apiserver.storage import Storage
from tests.apiserver.conftest import Cluster, api_client, start_emulator, stop_emulator
from tests.apiserver.test_crds import wait_established, wait_served, widget_crd
from tests.apiserver.waiting import eventually

NAMESPACE = "persisted"
PROMPT_SECONDS = 5
SELF_REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


@dataclass
class Run:
    """What one run of the emulator showed."""

    objects: dict[str, dict[str, Any]]
    list_rv: int


@dataclass
class FirstRun:
    """The run before the restart, ended by SIGTERM while a watch was open."""

    port: int
    token: str
    shown: Run
    exit_code: int
    stop_seconds: float
    #: what the open watch read after SIGTERM, up to its end
    watch_rest: bytes


@dataclass
class Restart:
    first: FirstRun
    after: Run
    old_kubeconfig: Path
    pki_before: dict[str, bytes]
    pki_after: dict[str, bytes]
    cluster: Cluster


def _pki(state_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((state_dir / "pki").iterdir())}


def _snapshot(cluster: Cluster) -> Run:
    objects = {}
    for path in (
        f"/api/v1/namespaces/{NAMESPACE}/configmaps/settings",
        f"/api/v1/namespaces/{NAMESPACE}/configmaps/last-second",
        f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/web",
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/robot",
        f"/api/v1/namespaces/{NAMESPACE}",
    ):
        status, body = cluster.json("GET", path)
        assert status == 200, (path, body)
        objects[path] = body
    _, listed = cluster.json("GET", "/api/v1/configmaps")
    return Run(objects, int(listed["metadata"]["resourceVersion"]))


def _populate(cluster: Cluster) -> str:
    """Objects of several kinds and a ServiceAccount token; returns the token."""
    core = client.CoreV1Api(cluster.api)
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": "settings"}, "data": {"mode": "fast"}})
    core.patch_namespaced_config_map("settings", NAMESPACE, {"data": {"mode": "safe"}})
    client.AppsV1Api(cluster.api).create_namespaced_deployment(
        NAMESPACE,
        {
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
                },
            },
        },
    )
    core.create_namespaced_service_account(NAMESPACE, {"metadata": {"name": "robot"}})
    request = core.create_namespaced_service_account_token(
        "robot", NAMESPACE, {"spec": {"expirationSeconds": 3600}}
    )
    return str(request.status.token)


def _first_run(state_dir: Path) -> FirstRun:
    process, kubeconfig = start_emulator(state_dir)
    try:
        cluster = Cluster(kubeconfig, api_client(kubeconfig), emulated=True, process=process)
        token = _populate(cluster)
        client.CoreV1Api(cluster.api).create_namespaced_config_map(
            NAMESPACE, {"metadata": {"name": "last-second"}}
        )
        shown = _snapshot(cluster)
        watch = cluster.raw("GET", "/api/v1/namespaces", query=[("watch", "true")], stream=True, timeout=30)
        assert json.loads(watch.readline())["type"] == "ADDED"
        started = time.monotonic()
    finally:
        stop_emulator(process)
    return FirstRun(
        port=int(cluster.api.configuration.host.rsplit(":", 1)[1]),
        token=token,
        shown=shown,
        exit_code=int(process.returncode),
        stop_seconds=time.monotonic() - started,
        watch_rest=watch.read(),
    )


@pytest.fixture(scope="module")
def restart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restart]:
    state_dir = tmp_path_factory.mktemp("state")
    first = _first_run(state_dir)
    old_kubeconfig = state_dir.parent / f"{state_dir.name}-old-kubeconfig"
    shutil.move(state_dir / "kubeconfig", old_kubeconfig)
    pki_before = _pki(state_dir)
    process, kubeconfig = start_emulator(state_dir, port=first.port)
    try:
        cluster = Cluster(
            kubeconfig, api_client(kubeconfig), emulated=True, process=process, state_dir=state_dir
        )
        yield Restart(first, _snapshot(cluster), old_kubeconfig, pki_before, _pki(state_dir), cluster)
    finally:
        stop_emulator(process)


def test_objects_keep_their_content_uid_and_resource_version(restart: Restart) -> None:
    assert restart.after.objects == restart.first.shown.objects
    settings = restart.after.objects[f"/api/v1/namespaces/{NAMESPACE}/configmaps/settings"]
    assert settings["data"] == {"mode": "safe"}


def test_an_object_written_just_before_sigterm_survives(restart: Restart) -> None:
    assert f"/api/v1/namespaces/{NAMESPACE}/configmaps/last-second" in restart.after.objects


def test_new_resource_versions_are_higher_than_any_before(restart: Restart) -> None:
    assert restart.after.list_rv >= restart.first.shown.list_rv
    core = client.CoreV1Api(restart.cluster.api)
    fresh = core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": "after-restart"}})
    before = [int(o["metadata"]["resourceVersion"]) for o in restart.first.shown.objects.values()]
    assert int(fresh.metadata.resource_version) > max([*before, restart.first.shown.list_rv])


def test_ca_and_service_account_signing_key_are_reused(restart: Restart) -> None:
    assert restart.pki_after["ca.crt"] == restart.pki_before["ca.crt"]
    assert restart.pki_after["sa.key"] == restart.pki_before["sa.key"]


def test_old_kubeconfig_still_works(restart: Restart) -> None:
    old = api_client(restart.old_kubeconfig)
    assert client.CoreV1Api(old).read_namespace(NAMESPACE).metadata.name == NAMESPACE


def test_old_service_account_token_still_works(restart: Restart) -> None:
    assert restart.cluster.state_dir is not None
    pool = urllib3.PoolManager(ca_certs=str(restart.cluster.state_dir / "pki" / "ca.crt"))
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    response = pool.request(
        "POST",
        restart.cluster.api.configuration.host + SELF_REVIEW,
        body=json.dumps(review).encode(),
        headers={"Authorization": f"Bearer {restart.first.token}", "Content-Type": "application/json"},
        retries=False,
    )
    assert response.status == 201, response.data
    username = json.loads(response.data)["status"]["userInfo"]["username"]
    assert username == f"system:serviceaccount:{NAMESPACE}:robot"


def test_sigterm_with_an_open_watch_stops_promptly_and_ends_the_watch(restart: Restart) -> None:
    assert restart.first.stop_seconds < PROMPT_SECONDS
    assert restart.first.exit_code == 0
    assert all(json.loads(line)["type"] == "ADDED" for line in restart.first.watch_rest.splitlines())


def test_a_crd_terminating_at_shutdown_finishes_after_the_restart(tmp_path: Path) -> None:
    """The CRD finalizer picks up a CRD that was still waiting for its objects when the server stopped."""
    group = "restart.example.com"
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}"
    held_path = f"/apis/{group}/v1/namespaces/default/widgets/held"
    process, kubeconfig = start_emulator(tmp_path)
    try:
        cluster = Cluster(kubeconfig, api_client(kubeconfig), emulated=True, process=process)
        ext = client.ApiextensionsV1Api(cluster.api)
        ext.create_custom_resource_definition(widget_crd(group))
        wait_established(ext, f"widgets.{group}")
        wait_served(cluster, f"/apis/{group}/v1/widgets")
        held = {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
            "spec": {"size": 1},
        }
        assert cluster.json("POST", f"/apis/{group}/v1/namespaces/default/widgets", held)[0] == 201
        ext.delete_custom_resource_definition(f"widgets.{group}")
        eventually(
            lambda: cluster.json("GET", held_path)[1]["metadata"].get("deletionTimestamp"),
            "the widget of the deleted CRD with a deletionTimestamp",
            within=60,
        )
    finally:
        stop_emulator(process)
    process, kubeconfig = start_emulator(tmp_path)
    try:
        cluster = Cluster(kubeconfig, api_client(kubeconfig), emulated=True, process=process)
        assert cluster.raw("GET", crd_path).status == 200
        status, _ = cluster.json(
            "PATCH",
            held_path,
            {"metadata": {"finalizers": None}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert status == 200
        eventually(
            lambda: cluster.raw("GET", crd_path).status == 404, "the CRD gone after its objects", within=60
        )
    finally:
        stop_emulator(process)


# --- the watch window, in process -------------------------------------------------------------------


async def test_watch_from_before_the_event_window_is_gone() -> None:
    storage = Storage(history=3)
    catalog = Catalog(
        builtin_types(service_cidr="10.96.0.0/12", services=lambda: storage.objects("services"))
    )
    registry = Registry(storage, catalog)
    configmaps = catalog.get("", "v1", "configmaps")
    assert configmaps is not None
    opts = WriteOptions(user=UserInfo(name="tester", groups=()))
    created = [
        await registry.create(configmaps, "ns", {"metadata": {"name": f"c{i}"}}, opts) for i in range(6)
    ]
    oldest = created[0]["metadata"]["resourceVersion"]

    events = registry.watch(configmaps, "ns", resource_version=oldest)
    assert isinstance(events, AsyncGenerator)  # closed below as a watch handler closes it
    expired = await anext(events)
    await events.aclose()
    assert expired["type"] == "ERROR"
    status = expired["object"]
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"] == f"too old resource version: {oldest} ({storage.compacted_rv})"

    recent = registry.watch(configmaps, "ns", resource_version=created[-2]["metadata"]["resourceVersion"])
    assert isinstance(recent, AsyncGenerator)
    replayed = await anext(recent)
    await recent.aclose()
    assert (replayed["type"], replayed["object"]["metadata"]["name"]) == ("ADDED", "c5")


async def test_watch_client_gets_410_past_the_window(tmp_path: Path) -> None:
    server = APIServer(Settings(state_dir=tmp_path, watch_history=3, persist=False))
    await server.start()
    try:
        configuration = aclient.Configuration()
        await aconfig.load_kube_config(
            config_file=str(server.kubeconfig_path), client_configuration=configuration
        )
        async with aclient.ApiClient(configuration) as api:
            core = aclient.CoreV1Api(api)
            first = await core.create_namespaced_config_map("default", {"metadata": {"name": "w0"}})
            for i in range(1, 5):
                await core.create_namespaced_config_map("default", {"metadata": {"name": f"w{i}"}})
            stream = awatch.Watch().stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=first.metadata.resource_version,
                timeout_seconds=5,
            )
            with pytest.raises(aclient.ApiException) as err:
                async for _ in stream:
                    pass
            assert err.value.status == 410
    finally:
        await server.stop()
