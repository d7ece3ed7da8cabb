"""list and watch: selectors, pagination, resourceVersion semantics, event streams."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client, watch

from .conftest import Cluster


def _names(items: list[Any]) -> list[str]:
    return sorted(i.metadata.name for i in items)


# Tests that need a kind with nothing in a fresh namespace use Secrets: on a real cluster
# the controller manager publishes the `kube-root-ca.crt` ConfigMap into every namespace
# (so ConfigMaps never start empty there), and nothing creates Secrets.


@pytest.fixture
def labelled(core: client.CoreV1Api, namespace: str) -> str:
    for name, labels in [
        ("a", {"app": "web", "tier": "fe"}),
        ("b", {"app": "web", "tier": "be"}),
        ("c", {"app": "db"}),
        ("d", {}),
    ]:
        core.create_namespaced_secret(namespace, {"metadata": {"name": name, "labels": labels}})
    return namespace


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("app in (web,db)", ["a", "b", "c"]),
        ("app notin (web)", ["c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("app=web,tier=be", ["b"]),
    ],
    ids=["equals", "double-equals", "not-equals", "in", "notin", "exists", "not-exists", "and"],
)
def test_label_selectors(core: client.CoreV1Api, labelled: str, selector: str, expected: list[str]) -> None:
    assert _names(core.list_namespaced_secret(labelled, label_selector=selector).items) == expected


def test_field_selector_on_name(core: client.CoreV1Api, labelled: str) -> None:
    items = core.list_namespaced_secret(labelled, field_selector="metadata.name=c").items
    assert _names(items) == ["c"]


def test_unsupported_field_selector_is_bad_request(cluster: Cluster, labelled: str) -> None:
    status, body = cluster.json(
        "GET", f"/api/v1/namespaces/{labelled}/secrets", query=[("fieldSelector", "spec.nodeName=x")]
    )
    assert status == 400
    assert (
        "is not a known field selector" in body["message"] or "field label not supported" in body["message"]
    )


def test_pod_field_selectors(core: client.CoreV1Api, namespace: str) -> None:
    for name in ("p1", "p2"):
        core.create_namespaced_pod(
            namespace, {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
        )
    binding = {"metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "node-a"}}
    core.create_namespaced_pod_binding("p1", namespace, binding, _preload_content=False)
    on_node = core.list_namespaced_pod(namespace, field_selector="spec.nodeName=node-a").items
    assert _names(on_node) == ["p1"]
    pending = core.list_namespaced_pod(
        namespace, field_selector="status.phase=Pending,spec.nodeName!=node-a"
    ).items
    assert _names(pending) == ["p2"]


def test_event_field_selectors_on_involved_object(core: client.CoreV1Api, namespace: str) -> None:
    for i, target in enumerate(["x", "y"]):
        core.create_namespaced_event(
            namespace,
            {
                "metadata": {"name": f"ev{i}"},
                "involvedObject": {"kind": "Pod", "name": target, "namespace": namespace},
                "reason": "Test",
                "message": "m",
                "type": "Normal",
            },
        )
    items = core.list_namespaced_event(
        namespace, field_selector="involvedObject.name=y,involvedObject.kind=Pod"
    ).items
    assert _names(items) == ["ev1"]


def test_pagination_with_limit_and_continue(core: client.CoreV1Api, namespace: str) -> None:
    for i in range(7):
        core.create_namespaced_secret(namespace, {"metadata": {"name": f"s-{i}"}})
    first = core.list_namespaced_secret(namespace, limit=3)
    assert len(first.items) == 3
    assert first.metadata._continue
    assert first.metadata.remaining_item_count == 4
    second = core.list_namespaced_secret(namespace, limit=3, _continue=first.metadata._continue)
    third = core.list_namespaced_secret(namespace, limit=3, _continue=second.metadata._continue)
    assert not third.metadata._continue
    names = [i.metadata.name for i in first.items + second.items + third.items]
    assert names == sorted(f"s-{i}" for i in range(7))


def test_malformed_continue_token_is_bad_request(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "GET", f"/api/v1/namespaces/{namespace}/configmaps", query=[("continue", "!!!"), ("limit", "1")]
    )
    assert status == 400
    assert body["reason"] == "BadRequest"


def test_list_across_namespaces(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "everywhere"}})
    items = core.list_config_map_for_all_namespaces(field_selector="metadata.name=everywhere").items
    assert [(i.metadata.namespace, i.metadata.name) for i in items] == [(namespace, "everywhere")]


def test_list_resource_version_is_current(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "rv"}})
    listed = core.list_namespaced_config_map(namespace)
    assert int(listed.metadata.resource_version) >= int(cm.metadata.resource_version)


def _stream(cluster: Cluster, path: str, query: list[tuple[str, str]], count: int) -> list[dict[str, Any]]:
    response = cluster.raw("GET", path, query=[("watch", "true"), *query], stream=True)
    assert response.status == 200
    events = []
    buffer = b""
    for chunk in response.stream(1024, decode_content=True):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                events.append(json.loads(line))
        if len(events) >= count:
            break
    response.release_conn()
    return events


def _resource_version(obj: client.V1ConfigMap) -> str:
    """The resourceVersion the server gave an object it returned."""
    version = obj.metadata.resource_version
    assert version, obj
    return version


def test_watch_from_resource_version_replays_changes(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    start = _resource_version(core.create_namespaced_config_map(namespace, {"metadata": {"name": "w"}}))
    core.patch_namespaced_config_map("w", namespace, {"data": {"a": "1"}})
    core.delete_namespaced_config_map("w", namespace)
    events = _stream(
        cluster,
        f"/api/v1/namespaces/{namespace}/configmaps",
        [("resourceVersion", start), ("timeoutSeconds", "5")],
        2,
    )
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert events[0]["object"]["data"] == {"a": "1"}


def test_watch_without_resource_version_starts_with_current_objects(
    core: client.CoreV1Api, namespace: str
) -> None:
    core.create_namespaced_secret(namespace, {"metadata": {"name": "existing"}})
    w = watch.Watch()
    seen = []
    for event in w.stream(core.list_namespaced_secret, namespace, timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 1:
            core.create_namespaced_secret(namespace, {"metadata": {"name": "new"}})
        if len(seen) == 2:
            w.stop()
    assert seen == [("ADDED", "existing"), ("ADDED", "new")]


def test_watch_with_selector_reports_objects_leaving_it_as_deleted(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    start = _resource_version(
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "s", "labels": {"keep": "yes"}}})
    )
    core.patch_namespaced_config_map("s", namespace, {"metadata": {"labels": {"keep": "no"}}})
    core.patch_namespaced_config_map("s", namespace, {"metadata": {"labels": {"keep": "yes"}}})
    events = _stream(
        cluster,
        f"/api/v1/namespaces/{namespace}/configmaps",
        [("resourceVersion", start), ("labelSelector", "keep=yes"), ("timeoutSeconds", "5")],
        2,
    )
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


def test_watch_bookmarks_when_allowed(cluster: Cluster, namespace: str) -> None:
    events = _stream(
        cluster,
        f"/api/v1/namespaces/{namespace}/secrets",
        [
            ("allowWatchBookmarks", "true"),
            ("sendInitialEvents", "true"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("resourceVersion", ""),
            ("timeoutSeconds", "5"),
        ],
        1,
    )
    assert events[0]["type"] == "BOOKMARK"
    assert events[0]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"


def test_watch_ends_after_timeout_seconds(cluster: Cluster, namespace: str) -> None:
    response = cluster.raw(
        "GET",
        f"/api/v1/namespaces/{namespace}/secrets",
        query=[("watch", "1"), ("timeoutSeconds", "1")],
        stream=True,
        timeout=10,
    )
    body = response.read()
    assert response.status == 200
    assert body == b""


def test_watch_single_object_by_name(cluster: Cluster, core: client.CoreV1Api, namespace: str) -> None:
    start = _resource_version(core.create_namespaced_config_map(namespace, {"metadata": {"name": "one"}}))
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "other"}})
    core.patch_namespaced_config_map("one", namespace, {"data": {"k": "v"}})
    events = _stream(
        cluster,
        f"/api/v1/namespaces/{namespace}/configmaps",
        [("resourceVersion", start), ("fieldSelector", "metadata.name=one"), ("timeoutSeconds", "5")],
        1,
    )
    assert events[0]["type"] == "MODIFIED"
    assert events[0]["object"]["metadata"]["name"] == "one"


def test_pagination_across_namespaces_with_shared_prefixes_loses_nothing(
    core: client.CoreV1Api, namespace: str
) -> None:
    """Namespaces `x` and `x-b` sort apart from `x/`: a continue token must not skip the second one."""
    other = f"{namespace}-b"
    core.create_namespace({"metadata": {"name": other}})
    try:
        expected = set()
        for ns in (namespace, other):
            for i in range(3):
                core.create_namespaced_config_map(
                    ns, {"metadata": {"name": f"page-{i}", "labels": {"paged": namespace}}}
                )
                expected.add((ns, f"page-{i}"))
        seen: set[tuple[str | None, str | None]] = set()
        token = None
        while True:
            page = core.list_config_map_for_all_namespaces(
                label_selector=f"paged={namespace}", limit=2, _continue=token
            )
            seen |= {(i.metadata.namespace, i.metadata.name) for i in page.items}
            token = page.metadata._continue
            if not token:
                break
        assert seen == expected
    finally:
        core.delete_namespace(other)
