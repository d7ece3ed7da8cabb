"""The informer's cache: keys, reads, indexes, and the changes a relist makes."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.core.store import Store, label_index, object_key, owner_uid_index


def obj(
    name: str, *, ns: str | None = "ns", rv: str = "1", labels: dict[str, str] | None = None, **meta: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "resourceVersion": rv, **meta}
    if ns is not None:
        metadata["namespace"] = ns
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


@pytest.mark.parametrize(
    ("item", "key"),
    [(obj("a"), "ns/a"), (obj("node-1", ns=None), "node-1"), (obj("b", ns=""), "b")],
    ids=["namespaced", "cluster-scoped", "empty-namespace"],
)
def test_object_key_is_namespace_slash_name_or_just_the_name(item: dict[str, Any], key: str) -> None:
    assert object_key(item) == key


def test_upsert_and_remove_return_the_previous_version() -> None:
    store = Store()
    first, second = obj("a", rv="1"), obj("a", rv="2")
    assert store.upsert(first) is None
    assert store.upsert(second) is first
    assert store.get("a", namespace="ns") is second
    assert store.get_by_key("ns/a") is second
    assert store.remove(obj("a", rv="3")) is second
    assert store.get("a", namespace="ns") is None
    assert store.remove(obj("a")) is None


def test_items_filter_by_namespace_and_labels() -> None:
    store = Store()
    store.upsert(obj("a", ns="x", labels={"app": "web", "tier": "front"}))
    store.upsert(obj("b", ns="x", labels={"app": "db"}))
    store.upsert(obj("c", ns="y", labels={"app": "web"}))

    def names(items: list[dict[str, Any]]) -> list[str]:
        return sorted(i["metadata"]["name"] for i in items)

    assert names(store.items()) == ["a", "b", "c"]
    assert names(store.items(namespace="x")) == ["a", "b"]
    assert names(store.items(labels={"app": "web"})) == ["a", "c"]
    assert names(store.items(namespace="x", labels={"app": "web", "tier": "front"})) == ["a"]
    assert store.items(labels={"app": "none"}) == []


def test_a_label_index_follows_label_changes_and_removals() -> None:
    store = Store()
    store.add_index("app", label_index("app"))
    store.upsert(obj("a", labels={"app": "web"}))
    store.upsert(obj("b", labels={"app": "web"}))
    store.upsert(obj("c"))
    assert [o["metadata"]["name"] for o in store.by_index("app", "web")] == ["a", "b"]
    store.upsert(obj("a", rv="2", labels={"app": "db"}))
    assert [o["metadata"]["name"] for o in store.by_index("app", "web")] == ["b"]
    assert [o["metadata"]["name"] for o in store.by_index("app", "db")] == ["a"]
    store.remove(obj("b"))
    assert store.by_index("app", "web") == []


def test_an_index_added_late_covers_the_objects_already_cached() -> None:
    store = Store()
    owned = obj("a", ownerReferences=[{"uid": "u1", "kind": "X", "name": "x", "apiVersion": "v1"}])
    store.upsert(owned)
    store.upsert(obj("b"))
    store.add_index("owner", owner_uid_index)
    assert store.by_index("owner", "u1") == [owned]
    with pytest.raises(ValueError, match="already has an index"):
        store.add_index("owner", owner_uid_index)


def test_replace_reports_added_modified_and_deleted_but_not_unchanged_objects() -> None:
    store = Store()
    store.add_index("app", label_index("app"))
    kept, changed, gone = (
        obj("kept", rv="1"),
        obj("changed", rv="1"),
        obj("gone", rv="1", labels={"app": "x"}),
    )
    for item in (kept, changed, gone):
        store.upsert(item)
    new_changed, new = obj("changed", rv="5"), obj("new", rv="6")
    changes = store.replace([obj("kept", rv="1"), new_changed, new])
    assert changes == [("MODIFIED", new_changed, changed), ("ADDED", new, None), ("DELETED", gone, gone)]
    assert sorted(store.keys()) == ["ns/changed", "ns/kept", "ns/new"]
    assert store.get("kept", namespace="ns") is kept
    assert store.by_index("app", "x") == []
