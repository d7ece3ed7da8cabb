"""The informer's watch layers against scripted streams: relist on 410, backoff, resume points.

The fake API runs in the test's loop, so backoff delays are asserted in exact loop time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from runtime.core.client import Client
from runtime.core.errors import GoneError
from runtime.core.informer import Informer, InformerFactory, Listed, Selection, list_then_watch, watch_stream
from runtime.core.settings import WatchingSettings

from .fakeapi import FakeAPI, status
from .kinds import CONFIGMAPS, SECRETS

pytestmark = pytest.mark.looptime

SETTINGS = WatchingSettings(
    server_timeout=60, client_timeout=90, reconnect_backoff=0.5, reconnect_backoff_max=2
)


def cm(name: str, rv: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
        "data": data,
    }


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


def bookmark(rv: str) -> dict[str, Any]:
    return {
        "type": "BOOKMARK",
        "object": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": rv}},
    }


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[list[tuple[str, str, str | None]]]:
    """Run the informer; yields the (type, name, old rv) of every change it reports."""
    seen: list[tuple[str, str, str | None]] = []
    informer.add_handler(
        lambda kind, obj, old: seen.append(
            (kind, obj["metadata"]["name"], old["metadata"]["resourceVersion"] if old else None)
        )
    )
    task = asyncio.create_task(informer.run(), name="informer under test")
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def informer(client: Client, settings: WatchingSettings = SETTINGS) -> Informer:
    return Informer(client, Selection(CONFIGMAPS), settings=settings)


async def test_watch_stream_turns_an_error_event_into_a_typed_error(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    fake_api.on_watch(
        CONFIGMAPS, [event("ADDED", cm("a", "3")), event("ERROR", status(410, "Expired", "too old"))]
    )
    seen = []
    with pytest.raises(GoneError, match="too old"):
        async for item in watch_stream(
            fake_client, Selection(CONFIGMAPS), resource_version="2", settings=SETTINGS
        ):
            seen.append(item["object"]["metadata"]["name"])
    assert seen == ["a"]
    assert fake_api.requests(CONFIGMAPS, watch=True)[0].query == {
        "watch": "true",
        "resourceVersion": "2",
        "timeoutSeconds": "60",
        "allowWatchBookmarks": "true",
    }


async def test_list_then_watch_yields_the_list_then_events_and_resumes_where_a_stream_ended(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    fake_api.on_list(CONFIGMAPS, [cm("a", "1")], resource_version="10")
    fake_api.on_watch(CONFIGMAPS, [event("ADDED", cm("b", "11"))])
    fake_api.on_watch(CONFIGMAPS, [bookmark("15")])
    fake_api.on_watch(CONFIGMAPS, [event("DELETED", cm("a", "16"))])
    items: list[Any] = []
    async with contextlib.aclosing(
        list_then_watch(fake_client, Selection(CONFIGMAPS), settings=SETTINGS)
    ) as stream:
        async for item in stream:
            items.append(item)
            if len(items) == 4:
                break
    assert isinstance(items[0], Listed)
    assert (items[0].resource_version, [o["metadata"]["name"] for o in items[0].objects]) == ("10", ["a"])
    assert [(i["type"], i["object"]["metadata"]["resourceVersion"]) for i in items[1:]] == [
        ("ADDED", "11"),
        ("BOOKMARK", "15"),
        ("DELETED", "16"),
    ]
    watches = fake_api.requests(CONFIGMAPS, watch=True)
    assert [w.query["resourceVersion"] for w in watches] == ["10", "11", "15"]
    assert len(fake_api.requests(CONFIGMAPS, watch=False)) == 1


async def test_gone_relists_and_reports_what_changed_while_the_watch_was_lost(
    fake_api: FakeAPI, fake_client: Client, looptime: float
) -> None:
    fake_api.on_list(CONFIGMAPS, [cm("a", "1"), cm("b", "2")], resource_version="2")
    fake_api.on_watch(
        CONFIGMAPS, [event("ERROR", status(410, "Expired", "too old resource version: 2 (40)"))]
    )
    fake_api.on_list(CONFIGMAPS, [cm("a", "41"), cm("c", "42")], resource_version="50")
    fake_api.on_watch(CONFIGMAPS, [event("MODIFIED", cm("c", "51"))])
    subject = informer(fake_client)
    async with running(subject) as seen:
        await asyncio.sleep(1)
    assert seen == [
        ("ADDED", "a", None),
        ("ADDED", "b", None),
        ("MODIFIED", "a", "1"),
        ("ADDED", "c", None),
        ("DELETED", "b", "2"),
        ("MODIFIED", "c", "42"),
    ]
    assert sorted(subject.store.keys()) == ["ns/a", "ns/c"]
    assert [c.query.get("resourceVersion") for c in fake_api.calls] == [None, "2", None, "50", "51"]
    assert {c.at for c in fake_api.calls} == {0}  # a relist is immediate, not backed off


async def test_failed_watches_back_off_exponentially_and_resume_without_relisting(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    fake_api.on_list(CONFIGMAPS, [cm("a", "1")], resource_version="5")
    for _ in range(4):
        fake_api.on_watch(CONFIGMAPS, 500)
    fake_api.on_watch(CONFIGMAPS, [event("ADDED", cm("b", "6"))])
    fake_api.on_watch(CONFIGMAPS, 503)
    subject = informer(fake_client)
    async with running(subject) as seen:
        await asyncio.sleep(10)
    watches = fake_api.requests(CONFIGMAPS, watch=True)
    # 0.5, 1, 2, then capped at 2; a success resets the backoff to 0.5
    assert [w.at for w in watches][:7] == [0, 0.5, 1.5, 3.5, 5.5, 5.5, 6.0]
    assert [w.query["resourceVersion"] for w in watches][:7] == ["5", "5", "5", "5", "5", "6", "6"]
    assert len(fake_api.requests(CONFIGMAPS, watch=False)) == 1
    assert seen == [("ADDED", "a", None), ("ADDED", "b", None)]


async def test_streams_that_end_at_once_without_events_are_backed_off_like_failures(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    fake_api.on_list(CONFIGMAPS, [cm("a", "1")], resource_version="5")
    fake_api.on_watch(CONFIGMAPS, [])
    fake_api.on_watch(CONFIGMAPS, [])
    fake_api.on_watch(CONFIGMAPS, [2.0])  # a quiet stream the server ends: not short, resumed at once
    async with running(informer(fake_client)):
        await asyncio.sleep(10)
    watches = fake_api.requests(CONFIGMAPS, watch=True)
    assert [w.at for w in watches] == [0, 0.5, 1.5, 3.5]
    assert {w.query["resourceVersion"] for w in watches} == {"5"}
    assert len(fake_api.requests(CONFIGMAPS, watch=False)) == 1


async def test_a_failed_first_list_is_retried_and_synced_is_set_only_after_a_list(
    fake_api: FakeAPI, fake_client: Client, looptime: float
) -> None:
    # no list scripted yet: the fake answers 404 to a plain GET of the collection
    subject = informer(fake_client)
    async with running(subject):
        await asyncio.sleep(1)
        assert not subject.synced.is_set()
        fake_api.on_list(CONFIGMAPS, [cm("a", "1")], resource_version="3")
        await asyncio.wait_for(subject.synced.wait(), timeout=10)
        synced_at = float(looptime)
    assert [c.at for c in fake_api.requests(CONFIGMAPS, watch=False)] == [0, 0.5, 1.5]
    assert synced_at == 1.5
    assert subject.store.keys() == ["ns/a"]


async def test_a_handler_added_late_is_replayed_the_cached_objects_and_a_failing_one_does_not_stop_others(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    fake_api.on_list(CONFIGMAPS, [cm("a", "1"), cm("b", "2")], resource_version="2")
    fake_api.on_watch(CONFIGMAPS, [1.0, event("ADDED", cm("c", "3"))])
    subject = informer(fake_client)
    late: list[str] = []

    def broken(kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        raise RuntimeError("handler bug")

    async with running(subject) as seen:
        await subject.synced.wait()
        subject.add_handler(broken)
        remove = subject.add_handler(lambda kind, obj, old: late.append(f"{kind} {obj['metadata']['name']}"))
        await asyncio.sleep(2)
        remove()
        assert late == ["ADDED a", "ADDED b", "ADDED c"]
    assert [name for _, name, _ in seen] == ["a", "b", "c"]


async def test_the_factory_shares_one_informer_per_selection_and_starts_late_ones(
    fake_api: FakeAPI, fake_client: Client
) -> None:
    fake_api.on_list(CONFIGMAPS, [cm("a", "1")], resource_version="1")
    fake_api.on_list(CONFIGMAPS, [], resource_version="1", namespace="ns")
    fake_api.on_list(SECRETS, [], resource_version="1")
    factory = InformerFactory(fake_client, settings=SETTINGS)
    first = factory.informer(CONFIGMAPS)
    assert factory.informer(CONFIGMAPS) is first
    assert factory.informer(CONFIGMAPS, namespace="ns") is not first
    task = asyncio.create_task(factory.run(), name="factory under test")
    try:
        await asyncio.wait_for(first.synced.wait(), timeout=5)
        late = factory.informer(SECRETS)
        await asyncio.wait_for(factory.wait_synced(), timeout=5)
        assert late.synced.is_set()
        assert factory.has_synced()
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
