"""Informers against the playground API server: sync, event order, resuming, relisting after a restart."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

from runtime.core.client import Client
from runtime.core.informer import Informer, InformerMetrics, Selection
from runtime.core.settings import WatchingSettings
from tests.apiserver.conftest import start_emulator, stop_emulator

from .kinds import CONFIGMAPS, NAMESPACES, SECRETS
from .waiting import until

Seen = list[tuple[str, str, dict[str, str] | None, dict[str, str] | None]]


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Seen]:
    """Run the informer; yields (type, name, data, old data) of every change it reports."""
    seen: Seen = []
    informer.add_handler(
        lambda kind, obj, old: seen.append(
            (kind, obj["metadata"]["name"], obj.get("data"), old.get("data") if old else None)
        )
    )
    task = asyncio.create_task(informer.run(), name="informer under test")
    try:
        await asyncio.wait_for(informer.synced.wait(), timeout=10)
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def counter(registry: CollectorRegistry, name: str) -> float:
    return registry.get_sample_value(name, {"resource": "configmaps"}) or 0.0


async def test_an_informer_lists_then_reports_creates_updates_and_deletes_in_order(
    client: Client, namespace: str
) -> None:
    await client.create(
        CONFIGMAPS, {"metadata": {"name": "before", "namespace": namespace}, "data": {"v": "0"}}
    )
    informer = Informer(client, Selection(CONFIGMAPS, namespace=namespace), settings=WatchingSettings())
    async with running(informer) as seen:
        assert informer.store.get("before", namespace=namespace)["data"] == {"v": "0"}  # type: ignore[index]
        await client.create(
            CONFIGMAPS, {"metadata": {"name": "x", "namespace": namespace}, "data": {"v": "1"}}
        )
        await client.patch(CONFIGMAPS, "x", {"data": {"v": "2"}}, namespace=namespace)
        await client.patch(CONFIGMAPS, "before", {"data": {"v": "3"}}, namespace=namespace)
        await client.delete(CONFIGMAPS, "x", namespace=namespace)
        await until(lambda: len(seen) == 5)
    assert seen == [
        ("ADDED", "before", {"v": "0"}, None),
        ("ADDED", "x", {"v": "1"}, None),
        ("MODIFIED", "x", {"v": "2"}, {"v": "1"}),
        ("MODIFIED", "before", {"v": "3"}, {"v": "0"}),
        ("DELETED", "x", {"v": "2"}, {"v": "2"}),
    ]
    assert informer.store.keys() == [f"{namespace}/before"]


async def test_label_selected_informers_see_objects_leave_the_selection_as_deleted(
    client: Client, namespace: str
) -> None:
    selection = Selection(CONFIGMAPS, namespace=namespace, label_selector="app=web")
    informer = Informer(client, selection, settings=WatchingSettings())
    async with running(informer) as seen:
        await client.create(
            CONFIGMAPS, {"metadata": {"name": "w", "namespace": namespace, "labels": {"app": "web"}}}
        )
        await client.create(CONFIGMAPS, {"metadata": {"name": "other", "namespace": namespace}})
        await client.patch(CONFIGMAPS, "w", {"metadata": {"labels": {"app": "db"}}}, namespace=namespace)
        await until(lambda: len(seen) == 2)
    assert [(kind, name) for kind, name, *_ in seen] == [("ADDED", "w"), ("DELETED", "w")]
    assert len(informer.store) == 0


async def test_a_watch_ended_by_its_server_timeout_resumes_from_the_last_version_without_missing_events(
    client: Client, namespace: str
) -> None:
    registry = CollectorRegistry()
    settings = WatchingSettings(server_timeout=1, client_timeout=5)
    informer = Informer(
        client,
        Selection(CONFIGMAPS, namespace=namespace),
        settings=settings,
        metrics=InformerMetrics(registry),
    )
    names = [f"c{i}" for i in range(8)]
    async with running(informer) as seen:
        for name in names:
            await client.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": namespace}})
            await asyncio.sleep(0.3)  # real time: the emulator ends each stream after one second
        await until(lambda: len(seen) == len(names))
    assert [name for _, name, *_ in seen] == names
    assert counter(registry, "informer_lists_total") == 1
    assert counter(registry, "informer_watch_requests_total") >= 3
    assert (
        registry.get_sample_value("informer_events_total", {"resource": "configmaps", "type": "ADDED"}) == 8
    )


async def test_after_the_api_server_restarts_the_informer_relists_and_misses_nothing(tmp_path: Path) -> None:
    process, kubeconfig = await asyncio.to_thread(start_emulator, tmp_path)
    config = yaml.safe_load(await asyncio.to_thread(kubeconfig.read_text))
    port = int(config["clusters"][0]["cluster"]["server"].rpartition(":")[2])
    registry = CollectorRegistry()
    settings = WatchingSettings(reconnect_backoff=0.05, reconnect_backoff_max=0.2)
    try:
        async with await Client.from_kubeconfig(kubeconfig) as client:
            await client.create(NAMESPACES, {"metadata": {"name": "r"}})
            for name in ("a", "b"):
                await client.create(
                    CONFIGMAPS, {"metadata": {"name": name, "namespace": "r"}, "data": {"v": "1"}}
                )
            informer = Informer(
                client,
                Selection(CONFIGMAPS, namespace="r"),
                settings=settings,
                metrics=InformerMetrics(registry),
            )
            async with running(informer) as seen:
                # a later write elsewhere: the restarted server's history starts after the informer's last version
                await client.create(SECRETS, {"metadata": {"name": "s", "namespace": "r"}})
                await asyncio.to_thread(stop_emulator, process)
                (tmp_path / "kubeconfig").unlink()
                process, _ = await asyncio.to_thread(start_emulator, tmp_path, port=port)
                await client.delete(CONFIGMAPS, "b", namespace="r")
                await client.patch(CONFIGMAPS, "a", {"data": {"v": "2"}}, namespace="r")
                await client.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": "r"}})
                await until(lambda: sorted(informer.store.keys()) == ["r/a", "r/c"] and len(seen) == 5)
                await until(lambda: informer.store.get("a", namespace="r")["data"] == {"v": "2"})  # type: ignore[index]
    finally:
        stop_emulator(process)
    assert [(kind, name) for kind, name, *_ in seen[:2]] == [("ADDED", "a"), ("ADDED", "b")]
    assert sorted((kind, name) for kind, name, *_ in seen[2:]) == [
        ("ADDED", "c"),
        ("DELETED", "b"),
        ("MODIFIED", "a"),
    ]
    assert counter(registry, "informer_lists_total") == 2


async def test_cached_objects_carry_no_managed_fields_unless_asked_to(client: Client, namespace: str) -> None:
    await client.create(
        CONFIGMAPS,
        {"metadata": {"name": "listed", "namespace": namespace}, "data": {"a": "1"}},
        field_manager="t",
    )
    stripped = Informer(client, Selection(CONFIGMAPS, namespace=namespace), settings=WatchingSettings())
    kept = Informer(
        client,
        Selection(CONFIGMAPS, namespace=namespace),
        settings=WatchingSettings(strip_managed_fields=False),
    )
    async with running(stripped), running(kept):
        await client.create(
            CONFIGMAPS,
            {"metadata": {"name": "watched", "namespace": namespace}, "data": {"a": "1"}},
            field_manager="t",
        )
        await until(lambda: stripped.store.get("watched", namespace=namespace) is not None)
        await until(lambda: kept.store.get("watched", namespace=namespace) is not None)
        for name in ("listed", "watched"):
            assert "managedFields" not in stripped.store.get(name, namespace=namespace)["metadata"]  # type: ignore[index]
            assert kept.store.get(name, namespace=namespace)["metadata"]["managedFields"]  # type: ignore[index]
