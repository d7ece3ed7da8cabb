"""Nodes under the Node authorizer and NodeRestriction, as kubeadm (and so kind) configures kube-apiserver.

A kubelet is `system:node:<name>` in `system:nodes`; the tests act as one by
impersonation, so they run against any cluster whose API server authorizes with
`Node,RBAC` and admits with NodeRestriction. Every message is kube-apiserver 1.36's.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import Cluster
from .waiting import eventually

NODES = "/api/v1/nodes"
MERGE = {"Content-Type": "application/merge-patch+json"}


def _as(user: str, *groups: str) -> dict[str, str]:
    headers = {"Impersonate-User": user}
    if groups:
        headers["Impersonate-Group"] = groups[0]
    return headers


@pytest.fixture
def nodes(cluster: Cluster) -> Iterator[tuple[str, str]]:
    """Two node names: the first is the kubelet the tests act as, the second is somebody else's node."""
    suffix = uuid.uuid4().hex[:6]
    names = (f"mine-{suffix}", f"theirs-{suffix}")
    yield names
    for name in names:
        cluster.json("DELETE", f"{NODES}/{name}")


def _node(name: str) -> dict[str, str]:
    return _as(f"system:node:{name}", "system:nodes")


def _message(answer: tuple[int, Any]) -> tuple[int, str]:
    status, body = answer
    return status, body["message"] if isinstance(body, dict) and body.get("kind") == "Status" else ""


def _pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x:1"}], **spec},
    }


def _forbidden(resource: str, name: str, user: str, verb: str, where: str, why: str = "") -> str:
    subject = f'{resource} "{name}"' if name else resource
    shown = resource.split(".", 1)
    group = shown[1] if len(shown) == 2 else ""
    text = f'{subject} is forbidden: User "{user}" cannot {verb} resource "{shown[0]}" in API group "{group}" {where}'
    return f"{text}: {why}" if why else text


def test_a_node_reads_only_its_own_node(cluster: Cluster, nodes: tuple[str, str]) -> None:
    mine, theirs = nodes
    me = _node(mine)
    user = f"system:node:{mine}"
    assert _message(cluster.json("GET", NODES, headers=me)) == (
        403,
        _forbidden(
            "nodes",
            "",
            user,
            "list",
            "at the cluster scope",
            f"node '{mine}' cannot read all nodes, only its own Node object",
        ),
    )
    assert _message(cluster.json("GET", f"{NODES}/{theirs}", headers=me)) == (
        403,
        _forbidden(
            "nodes",
            theirs,
            user,
            "get",
            "at the cluster scope",
            f"node '{mine}' cannot read '{theirs}', only its own Node object",
        ),
    )
    assert cluster.json("GET", f"{NODES}/{mine}", headers=me)[0] == 404
    assert (
        cluster.json("GET", NODES, headers=me, query=[("fieldSelector", f"metadata.name={mine}")])[0] == 200
    )


def test_a_node_writes_only_its_own_node_and_not_its_role_labels_or_taints(
    cluster: Cluster, nodes: tuple[str, str]
) -> None:
    mine, theirs = nodes
    me = _node(mine)
    assert _message(cluster.json("POST", NODES, {"metadata": {"name": theirs}}, headers=me)) == (
        403,
        f'nodes "{theirs}" is forbidden: node "{mine}" is not allowed to modify node "{theirs}"',
    )
    role = {"metadata": {"name": mine, "labels": {"node-role.kubernetes.io/control-plane": ""}}}
    assert _message(cluster.json("POST", NODES, role, headers=me)) == (
        403,
        f'nodes "{mine}" is forbidden: node "{mine}" is not allowed to set the following labels: '
        "node-role.kubernetes.io/control-plane",
    )
    body = {
        "metadata": {
            "name": mine,
            "labels": {
                "kubernetes.io/hostname": mine,
                "node.kubernetes.io/exclude-from-external-load-balancers": "",
            },
        },
        "spec": {"taints": [{"key": "example.com/t", "effect": "NoSchedule"}]},
    }
    assert cluster.json("POST", NODES, body, headers=me)[0] == 201
    assert _message(
        cluster.json("PATCH", f"{NODES}/{mine}", {"spec": {"taints": []}}, headers={**me, **MERGE})
    ) == (
        403,
        f'nodes "{mine}" is forbidden: node "{mine}" is not allowed to modify taints',
    )
    relabel = {"metadata": {"labels": {"node-role.kubernetes.io/worker": ""}}}
    assert _message(cluster.json("PATCH", f"{NODES}/{mine}", relabel, headers={**me, **MERGE})) == (
        403,
        f'nodes "{mine}" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/worker',
    )
    free = {"metadata": {"labels": {"example.com/x": "1"}}}
    assert cluster.json("PATCH", f"{NODES}/{mine}", free, headers={**me, **MERGE})[0] == 200
    assert cluster.json("PATCH", f"{NODES}/{mine}/status", {"status": {}}, headers={**me, **MERGE})[0] == 200
    assert cluster.json("POST", NODES, {"metadata": {"name": theirs}})[0] == 201
    assert _message(
        cluster.json("PATCH", f"{NODES}/{theirs}/status", {"status": {}}, headers={**me, **MERGE})
    ) == (
        403,
        f'nodes "{theirs}" is forbidden: node "{mine}" is not allowed to modify node "{theirs}"',
    )
    assert _message(cluster.json("DELETE", f"{NODES}/{mine}", headers=me)) == (
        403,
        _forbidden("nodes", mine, f"system:node:{mine}", "delete", "at the cluster scope"),
    )


def test_a_node_reads_the_secrets_configmaps_and_service_accounts_its_pods_use(
    cluster: Cluster, namespace: str, nodes: tuple[str, str]
) -> None:
    mine, theirs = nodes
    me = _node(mine)
    user = f"system:node:{mine}"
    where = f'in the namespace "{namespace}"'
    base = f"/api/v1/namespaces/{namespace}"
    for kind, name in (("configmaps", "cfg"), ("secrets", "sec"), ("secrets", "other")):
        assert cluster.json("POST", f"{base}/{kind}", {"metadata": {"name": name}})[0] == 201
    container = {
        "name": "c",
        "image": "x:1",
        "envFrom": [{"configMapRef": {"name": "cfg"}}],
        "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "k"}}}],
    }
    pod = _pod(
        "p", mine, containers=[container], volumes=[{"name": "v", "secret": {"secretName": "missing"}}]
    )
    assert cluster.json("POST", f"{base}/pods", pod)[0] == 201
    assert cluster.json("POST", f"{base}/pods", _pod("q", theirs, serviceAccountName="default"))[0] == 201
    # kube-apiserver's Node authorizer relates a pod to what it uses through an informer-fed graph: a moment
    # after the pod is created (403 "no relationship found" until then; the kubelet retries its mounts so)
    eventually(
        lambda: cluster.json("GET", f"{base}/configmaps/cfg", headers=me)[0] == 200,
        f"node {mine} allowed to read the ConfigMap its new pod uses",
    )
    assert cluster.json("GET", f"{base}/secrets/sec", headers=me)[0] == 200
    assert cluster.json("GET", f"{base}/secrets/missing", headers=me)[0] == 404
    assert cluster.json("GET", f"{base}/serviceaccounts/default", headers=me)[0] in (200, 404)
    no_relationship = f"no relationship found between node '{mine}' and this object"
    assert _message(cluster.json("GET", f"{base}/secrets/other", headers=me)) == (
        403,
        _forbidden("secrets", "other", user, "get", where, no_relationship),
    )
    assert _message(cluster.json("GET", f"{base}/configmaps", headers=me)) == (
        403,
        _forbidden("configmaps", "", user, "list", where, "No Object name found"),
    )
    narrowed = [("fieldSelector", "metadata.name=sec")]
    assert cluster.json("GET", f"{base}/secrets", headers=me, query=narrowed)[0] == 200
    assert _message(
        cluster.json("PUT", f"{base}/secrets/sec", {"metadata": {"name": "sec"}}, headers=me)
    ) == (
        403,
        _forbidden("secrets", "sec", user, "update", where, "can only read resources of this type"),
    )
    assert _message(cluster.json("GET", f"{base}/pods/q", headers=me)) == (
        403,
        _forbidden("pods", "q", user, "get", where, no_relationship),
    )
    assert _message(cluster.json("GET", f"{base}/pods", headers=me)) == (
        403,
        _forbidden(
            "pods", "", user, "list", where, "can only list/watch pods with spec.nodeName field selector"
        ),
    )
    assert (
        cluster.json("GET", "/api/v1/pods", headers=me, query=[("fieldSelector", f"spec.nodeName={mine}")])[0]
        == 200
    )


def _token(name: str, uid: str, *audiences: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid}}
    if audiences:
        spec["audiences"] = list(audiences)
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def test_a_node_gets_tokens_only_for_its_pods_and_their_audiences(
    cluster: Cluster, namespace: str, nodes: tuple[str, str]
) -> None:
    mine, theirs = nodes
    me = _node(mine)
    base = f"/api/v1/namespaces/{namespace}"
    token = f"{base}/serviceaccounts/default/token"
    projected = {
        "name": "t",
        "projected": {"sources": [{"serviceAccountToken": {"path": "t", "audience": "vault"}}]},
    }
    status, pod = cluster.json("POST", f"{base}/pods", _pod("p", mine, volumes=[projected]))
    assert status == 201
    status, other = cluster.json("POST", f"{base}/pods", _pod("q", theirs))
    assert status == 201
    uid = pod["metadata"]["uid"]
    refused = 'serviceaccounts "default" is forbidden: '
    unbound = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    assert _message(cluster.json("POST", token, unbound, headers=me)) == (
        403,
        refused + "node requested token not bound to a pod",
    )
    assert _message(cluster.json("POST", token, _token("p", ""), headers=me)) == (
        403,
        refused + "node requested token with a pod binding without a uid",
    )
    assert _message(cluster.json("POST", token, _token("p", "stale"), headers=me)) == (
        403,
        refused + "the UID in the bound object reference (stale) does not match the UID in record. "
        "The object might have been deleted and then recreated",
    )
    assert _message(cluster.json("POST", token, _token("q", other["metadata"]["uid"]), headers=me)) == (
        403,
        refused + "node requested token bound to a pod scheduled on a different node",
    )
    assert _message(cluster.json("POST", token, _token("p", uid, "a", "b"), headers=me)) == (
        403,
        refused + "node may only request 0 or 1 audiences",
    )
    assert _message(cluster.json("POST", token, _token("p", uid, "other"), headers=me)) == (
        403,
        refused
        + f'audience "other" not found in pod spec volume, system:node:{mine} is not authorized to request tokens '
        "for this audience",
    )
    assert cluster.json("POST", token, _token("p", uid), headers=me)[0] == 201
    assert cluster.json("POST", token, _token("p", uid, "vault"), headers=me)[0] == 201


def test_a_node_writes_the_status_of_its_pods_and_only_mirror_pods(
    cluster: Cluster, namespace: str, nodes: tuple[str, str]
) -> None:
    mine, theirs = nodes
    me = _node(mine)
    base = f"/api/v1/namespaces/{namespace}/pods"
    for name, node in (("p", mine), ("q", theirs)):
        assert cluster.json("POST", base, _pod(name, node))[0] == 201
    running = {"status": {"phase": "Running"}}
    assert cluster.json("PATCH", f"{base}/p/status", running, headers={**me, **MERGE})[0] == 200
    assert _message(cluster.json("PATCH", f"{base}/q/status", running, headers={**me, **MERGE})) == (
        403,
        f'pods "q" is forbidden: node "{mine}" can only update pod status for pods with spec.nodeName set to itself',
    )
    relabel = {"metadata": {"labels": {"a": "b"}}}
    assert _message(cluster.json("PATCH", f"{base}/p/status", relabel, headers={**me, **MERGE})) == (
        403,
        f'pods "p" is forbidden: node "{mine}" cannot update labels through pod status',
    )
    assert _message(cluster.json("POST", base, _pod("plain", mine), headers=me)) == (
        403,
        f'pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "{mine}" '
        "can only create mirror pods",
    )
    assert cluster.json("POST", NODES, {"metadata": {"name": mine}}, headers=me)[0] == 201
    _, node = cluster.json("GET", f"{NODES}/{mine}")
    owner = {
        "apiVersion": "v1",
        "kind": "Node",
        "name": mine,
        "uid": node["metadata"]["uid"],
        "controller": True,
    }
    mirror = _pod("mirror", mine)
    mirror["metadata"].update(annotations={"kubernetes.io/config.mirror": "x"}, ownerReferences=[owner])
    assert cluster.json("POST", base, mirror, headers=me)[0] == 201
    elsewhere = {
        **mirror,
        "metadata": {**mirror["metadata"], "name": "m2"},
        "spec": {**mirror["spec"], "nodeName": theirs},
    }
    assert _message(cluster.json("POST", base, elsewhere, headers=me)) == (
        403,
        f'pods "m2" is forbidden: node "{mine}" can only create pods with spec.nodeName set to itself',
    )
    assert _message(cluster.json("DELETE", f"{base}/q", headers=me)) == (
        403,
        f'pods "q" is forbidden: node "{mine}" can only delete pods with spec.nodeName set to itself',
    )
    assert cluster.json("DELETE", f"{base}/p", headers=me, query=[("gracePeriodSeconds", "0")])[0] == 200


def test_a_node_keeps_only_its_own_lease(cluster: Cluster, nodes: tuple[str, str]) -> None:
    mine, theirs = nodes
    me = _node(mine)
    user = f"system:node:{mine}"
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    lease_where = 'in the namespace "kube-node-lease"'
    assert _message(cluster.json("POST", leases, {"metadata": {"name": theirs}}, headers=me)) == (
        403,
        f'leases.coordination.k8s.io "{theirs}" is forbidden: can only access node lease with the same name as the '
        "requesting node",
    )
    try:
        assert cluster.json("POST", leases, {"metadata": {"name": mine}}, headers=me)[0] == 201
        assert _message(cluster.json("GET", leases, headers=me)) == (
            403,
            _forbidden(
                "leases.coordination.k8s.io",
                "",
                user,
                "list",
                lease_where,
                "can only get, create, update, patch, or delete a node lease",
            ),
        )
        assert _message(cluster.json("GET", f"{leases}/{theirs}", headers=me)) == (
            403,
            _forbidden(
                "leases.coordination.k8s.io",
                theirs,
                user,
                "get",
                lease_where,
                "can only access node lease with the same name as the requesting node",
            ),
        )
    finally:
        cluster.json("DELETE", f"{leases}/{mine}")


def test_a_node_has_no_right_to_endpoint_slices_but_kube_proxy_has(
    cluster: Cluster, nodes: tuple[str, str]
) -> None:
    mine, _ = nodes
    slices = "/apis/discovery.k8s.io/v1/endpointslices"
    assert _message(cluster.json("GET", slices, headers=_node(mine))) == (
        403,
        _forbidden(
            "endpointslices.discovery.k8s.io", "", f"system:node:{mine}", "list", "at the cluster scope"
        ),
    )
    proxy = _as("system:kube-proxy")
    assert cluster.json("GET", slices, headers=proxy)[0] == 200
    assert cluster.json("GET", "/api/v1/services", headers=proxy)[0] == 200
    assert cluster.json("GET", "/api/v1/secrets", headers=proxy)[0] == 403


def test_a_rules_review_of_a_node_is_incomplete(cluster: Cluster, nodes: tuple[str, str]) -> None:
    mine, _ = nodes
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "default"},
    }
    status, body = cluster.json(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", review, headers=_node(mine)
    )
    assert status == 201
    assert (body["status"]["incomplete"], body["status"]["evaluationError"]) == (
        True,
        "node authorizer does not support user rule resolution",
    )


def test_a_namespace_is_authorized_in_its_own_namespace(cluster: Cluster, namespace: str) -> None:
    """RequestInfo puts a Namespace's name in the request's namespace, so a RoleBinding there covers it."""
    user = f"reader-{uuid.uuid4().hex[:6]}"
    status, body = cluster.json("GET", f"/api/v1/namespaces/{namespace}", headers=_as(user))
    assert (status, body["message"]) == (
        403,
        _forbidden("namespaces", namespace, user, "get", f'in the namespace "{namespace}"'),
    )
    role = {
        "metadata": {"name": "ns-reader"},
        "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}],
    }
    binding = {
        "metadata": {"name": "ns-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "ns-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    assert cluster.json("POST", f"{rbac}/roles", role)[0] == 201
    assert cluster.json("POST", f"{rbac}/rolebindings", binding)[0] == 201
    assert cluster.json("GET", f"/api/v1/namespaces/{namespace}", headers=_as(user))[0] == 200
