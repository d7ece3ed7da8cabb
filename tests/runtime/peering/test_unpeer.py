"""The unpeer step by step, on caches filled by hand: a reconcile that reads the caches before they show
the unpeer's own writes (as the informers' events arrive after the writes) repeats nothing."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import cast

import pytest

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, IDENTITIES, VIRTUALNODES
from runtime.api.kinds import SECRETS
from runtime.api.objects import JSON
from runtime.controllers.core import unpeer
from runtime.controllers.core.peering import Caches
from runtime.controllers.core.unpeer import Unpeering
from runtime.core import Client, EventRecorder, NotFoundError, Resource, Result, Store

from .harness import CONTROLLER_OPTIONS

TENANT = "liqo-tenant-milan"


class RecordingClient:
    """Records the writes; objects named in `gone` answer NotFound, as the API server does once they went."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.gone: set[tuple[str, str]] = set()

    async def delete(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON:
        return self._write("delete", resource, name)

    async def patch(self, resource: Resource, name: str, patch: JSON) -> JSON:
        return self._write("patch", resource, name)

    def _write(self, verb: str, resource: Resource, name: str) -> JSON:
        self.calls.append((verb, resource.plural, name))
        if (resource.plural, name) in self.gone:
            raise NotFoundError(
                {"code": 404, "reason": "NotFound", "message": f"{resource.plural} {name!r} not found"}
            )
        return {}


def caches() -> Caches:
    return Caches(*(Store() for _ in range(8)))


def foreign_cluster(*, uid: str = "uid-1", version: str = "10") -> JSON:
    return {
        "metadata": {
            "name": "milan",
            "uid": uid,
            "resourceVersion": version,
            "deletionTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "finalizers": [c.FINALIZER_FOREIGNCLUSTER],
        },
        "spec": {"clusterID": "milan-id"},
    }


def virtual_node(*, deleting: bool = False) -> JSON:
    meta: JSON = {"name": "milan", "namespace": TENANT, "uid": "vn-1"}
    if deleting:
        meta["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    return {"metadata": meta}


def unpeering(client: RecordingClient, stores: Caches) -> Unpeering:
    fake = cast(Client, client)
    return Unpeering(fake, stores, options=CONTROLLER_OPTIONS, recorder=EventRecorder(fake, component="test"))


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == unpeer.__name__]


@pytest.fixture(autouse=True)
def _logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=unpeer.__name__)


async def test_a_virtual_node_not_yet_seen_terminating_is_deleted_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, stores = RecordingClient(), caches()
    stores.virtual_nodes.upsert(virtual_node())
    steps = unpeering(client, stores)

    for _ in range(2):  # the second reconcile's cache does not show the deletion yet
        assert await steps.run(foreign_cluster(), None) == Result(requeue_after=unpeer.VIRTUAL_NODE_RECHECK)
    stores.virtual_nodes.upsert(virtual_node(deleting=True))
    assert await steps.run(foreign_cluster(), None) == Result(requeue_after=unpeer.VIRTUAL_NODE_RECHECK)

    assert client.calls == [("delete", VIRTUALNODES.plural, "milan")]
    assert said(caplog) == [f"milan: deleting the VirtualNode {TENANT}/milan"]


async def test_a_virtual_node_made_again_is_deleted_again() -> None:
    client, stores = RecordingClient(), caches()
    stores.virtual_nodes.upsert(virtual_node())
    steps = unpeering(client, stores)
    await steps.run(foreign_cluster(), None)
    stores.virtual_nodes.upsert({"metadata": {"name": "milan", "namespace": TENANT, "uid": "vn-2"}})
    await steps.run(foreign_cluster(), None)
    assert client.calls == [("delete", VIRTUALNODES.plural, "milan")] * 2


async def test_a_reconcile_that_still_sees_the_finalizer_it_removed_does_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, stores = RecordingClient(), caches()
    steps = unpeering(client, stores)

    assert await steps.run(foreign_cluster(), None) is None
    assert client.calls == [
        ("delete", IDENTITIES.plural, "milan"),
        ("delete", SECRETS.plural, f"{c.CREDENTIAL_SECRET_PREFIX}milan"),
        ("delete", SECRETS.plural, f"{c.KEYS_SECRET_PREFIX}milan"),
        ("patch", FOREIGNCLUSTERS.plural, "milan"),
    ]
    client.calls.clear()
    client.gone |= {(FOREIGNCLUSTERS.plural, "milan"), (IDENTITIES.plural, "milan")}

    # an event on one of the deleted objects wakes the key before the ForeignCluster's own deletion arrives
    assert await steps.run(foreign_cluster(), None) is None
    assert client.calls == []
    assert said(caplog).count("milan: unpeered") == 1


async def test_a_foreign_cluster_already_gone_is_not_said_to_be_unpeered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, stores = RecordingClient(), caches()
    client.gone.add((FOREIGNCLUSTERS.plural, "milan"))
    assert await unpeering(client, stores).run(foreign_cluster(), None) is None
    assert ("patch", FOREIGNCLUSTERS.plural, "milan") in client.calls
    assert "milan: unpeered" not in said(caplog)


@pytest.mark.parametrize("change", ["newer version", "new uid", "forgotten"])
async def test_what_was_done_is_remembered_only_for_the_version_the_finalizer_left(
    change: str, caplog: pytest.LogCaptureFixture
) -> None:
    client, stores = RecordingClient(), caches()
    steps = unpeering(client, stores)
    await steps.run(foreign_cluster(), None)
    client.calls.clear()

    if change == "newer version":  # the finalizer was added again
        again = foreign_cluster(version="12")
    elif change == "new uid":  # a new ForeignCluster of the same name, deleted too
        again = foreign_cluster(uid="uid-2")
    else:
        steps.forget("milan")
        again = foreign_cluster()
    await steps.run(again, None)

    assert ("patch", FOREIGNCLUSTERS.plural, "milan") in client.calls
    assert said(caplog).count("milan: unpeered") == 2
