"""The Node authorizer's decisions over a store given as dicts (the behaviour suite holds its messages to kube's)."""

from __future__ import annotations

from typing import Any

import pytest

from playground.apiserver.identity import RequestAttributes, UserInfo
from playground.apiserver.node_authorizer import (
    NodeAuthorizer,
    NodeGraph,
    pod_configmap_names,
    pod_secret_names,
)
from playground.apiserver.rbac import node_rules
from runtime.api.objects import JSON

NODE = UserInfo("system:node:n1", ("system:nodes", "system:authenticated"))


class Store:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], JSON] = {}

    def put(self, key: str, obj: JSON) -> None:
        meta = obj["metadata"]
        self.objects[(key, meta.get("namespace", ""), meta["name"])] = obj

    def get(self, key: str, namespace: str, name: str) -> JSON | None:
        return self.objects.get((key, namespace, name))

    def pods(self, namespace: str | None) -> list[JSON]:
        return [o for (k, ns, _), o in self.objects.items() if k == "pods" and namespace in (None, ns)]


def pod(name: str, node: str, rv: str = "1", **spec: Any) -> JSON:
    return {
        "metadata": {"name": name, "namespace": "a", "uid": f"uid-{name}", "resourceVersion": rv},
        "spec": {"nodeName": node, "containers": [{"name": "c"}], **spec},
    }


@pytest.fixture
def store() -> Store:
    return Store()


@pytest.fixture
def authorizer(store: Store) -> NodeAuthorizer:
    return NodeAuthorizer(NodeGraph(get=store.get, pods=store.pods), node_rules=node_rules())


def get(resource: str, name: str, namespace: str = "a", group: str = "") -> RequestAttributes:
    return RequestAttributes(
        user=NODE, verb="get", api_group=group, resource=resource, name=name, namespace=namespace
    )


def allowed(authorizer: NodeAuthorizer, attrs: RequestAttributes) -> bool:
    decision = authorizer.authorize(attrs)
    assert decision is not None, "a node's request gets an answer"
    return decision.allowed


def test_a_pod_that_starts_referencing_a_secret_opens_it_to_its_node(
    store: Store, authorizer: NodeAuthorizer
) -> None:
    store.put("pods", pod("p", "n1"))
    assert not allowed(authorizer, get("secrets", "s"))
    env = [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    store.put("pods", pod("p", "n1", rv="2", containers=[{"name": "c", "env": env}]))
    assert allowed(authorizer, get("secrets", "s"))
    store.put("pods", pod("p", "n2", rv="3", containers=[{"name": "c", "env": env}]))
    assert not allowed(authorizer, get("secrets", "s"))


def test_a_volume_of_a_claim_bound_to_a_pod_on_the_node_is_readable(
    store: Store, authorizer: NodeAuthorizer
) -> None:
    store.put("pods", pod("p", "n1", volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]))
    store.put(
        "persistentvolumeclaims",
        {"metadata": {"name": "data", "namespace": "a"}, "spec": {"volumeName": "pv1"}},
    )
    assert allowed(authorizer, get("persistentvolumeclaims", "data"))
    assert allowed(authorizer, get("persistentvolumes", "pv1", namespace=""))
    assert not allowed(authorizer, get("persistentvolumes", "pv2", namespace=""))


def test_users_that_are_not_nodes_get_no_opinion(authorizer: NodeAuthorizer) -> None:
    someone = RequestAttributes(
        user=UserInfo("system:node:n1", ("devs",)), verb="get", resource="secrets", name="s"
    )
    assert authorizer.authorize(someone) is None


def test_a_node_without_a_name_is_refused(authorizer: NodeAuthorizer) -> None:
    nameless = RequestAttributes(
        user=UserInfo("system:node:", ("system:nodes",)), verb="get", resource="nodes"
    )
    decision = authorizer.authorize(nameless)
    assert decision is not None and (decision.allowed, decision.reason) == (
        False,
        'unknown node for user "system:node:"',
    )


def test_other_resources_follow_the_system_node_rules(authorizer: NodeAuthorizer) -> None:
    services = RequestAttributes(user=NODE, verb="list", resource="services")
    deployments = RequestAttributes(user=NODE, verb="list", api_group="apps", resource="deployments")
    assert allowed(authorizer, services)
    assert not allowed(authorizer, deployments)


def test_pod_references_include_every_place_kube_visits() -> None:
    spec = {
        "imagePullSecrets": [{"name": "pull"}],
        "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-env"}}]}],
        "containers": [
            {
                "name": "c",
                "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm-env", "key": "k"}}}],
            }
        ],
        "volumes": [
            {"name": "s", "secret": {"secretName": "vol"}},
            {"name": "c", "configMap": {"name": "cm-vol"}},
            {
                "name": "p",
                "projected": {"sources": [{"secret": {"name": "proj"}}, {"configMap": {"name": "cm-proj"}}]},
            },
            {"name": "csi", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi"}}},
        ],
    }
    subject = {"metadata": {"name": "p"}, "spec": spec}
    assert pod_secret_names(subject) == {"pull", "init-env", "vol", "proj", "csi"}
    assert pod_configmap_names(subject) == {"cm-env", "cm-vol", "cm-proj"}
