"""Expectations: a controller waits until its informer shows its own creates, updates and deletes."""

from __future__ import annotations

from playground.controllers.workloads.expectations import Expectations
from runtime.api.objects import JSON
from runtime.core import Store


def obj(name: str, rv: str = "1", *, deleting: bool = False) -> JSON:
    meta: JSON = {"name": name, "namespace": "ns", "resourceVersion": rv}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": meta}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_creations_wait_for_the_informer_unless_it_was_faster() -> None:
    store = Store()
    expectations = Expectations(store)
    store.upsert(obj("seen"))
    expectations.expect_created("ns/rs", [obj("seen"), obj("new")])
    assert not expectations.satisfied("ns/rs")
    store.upsert(obj("new"))
    expectations.observe("ADDED", obj("new"), None)
    assert expectations.satisfied("ns/rs")


def test_deletions_count_once_the_object_is_deleting_or_gone() -> None:
    store = Store()
    expectations = Expectations(store)
    for name in ("a", "b"):
        store.upsert(obj(name))
    expectations.expect_deleted("ns/rs", [obj("a"), obj("b")])
    expectations.observe("MODIFIED", obj("a", "2", deleting=True), obj("a"))
    assert not expectations.satisfied("ns/rs")
    expectations.observe("DELETED", obj("b"), obj("b"))
    assert expectations.satisfied("ns/rs")


def test_updates_count_once_another_version_shows() -> None:
    store = Store()
    expectations = Expectations(store)
    store.upsert(obj("slice", "5"))
    expectations.expect_updated("ns/svc", [obj("slice", "5")])
    expectations.observe("MODIFIED", obj("slice", "5"), None)
    assert not expectations.satisfied("ns/svc")
    expectations.observe("MODIFIED", obj("slice", "6"), obj("slice", "5"))
    assert expectations.satisfied("ns/svc")
    store.upsert(obj("slice", "7"))
    expectations.expect_updated("ns/svc", [obj("slice", "6")])
    assert expectations.satisfied("ns/svc")


def test_expectations_expire() -> None:
    clock = Clock()
    expectations = Expectations(Store(), timeout=10, clock=clock)
    expectations.expect_created("ns/rs", [obj("lost")])
    clock.now = 4
    assert not expectations.satisfied("ns/rs")
    assert expectations.expires_in("ns/rs") == 6
    clock.now = 10
    assert expectations.satisfied("ns/rs")
    assert expectations.expires_in("ns/rs") is None
