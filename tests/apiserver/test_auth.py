"""Authentication (certificates, tokens), RBAC authorization and the review APIs."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
import yaml
from kubernetes import client

from .conftest import Cluster
from .waiting import eventually


def _server_and_ca(cluster: Cluster) -> tuple[str, str]:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]["server"]
    ca = config["clusters"][0]["cluster"]["certificate-authority-data"]
    return server, ca


def _token_request(core: client.CoreV1Api, namespace: str, account: str) -> str:
    core.create_namespaced_service_account(namespace, {"metadata": {"name": account}})
    request = core.create_namespaced_service_account_token(
        account, namespace, {"spec": {"expirationSeconds": 3600}}
    )
    return str(request.status.token)


def _as_token(cluster: Cluster, token: str, tmp_path: Path) -> client.ApiClient:
    server, ca = _server_and_ca(cluster)
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(base64.b64decode(ca))
    configuration = client.Configuration()
    configuration.host = server
    configuration.ssl_ca_cert = str(ca_file)
    configuration.api_key = {"authorization": f"Bearer {token}"}
    return client.ApiClient(configuration)


def _anonymous(
    cluster: Cluster, path: str, headers: dict[str, str] | None = None
) -> urllib3.BaseHTTPResponse:
    server, _ = _server_and_ca(cluster)
    pool = urllib3.PoolManager(cert_reqs="CERT_NONE")
    return pool.request("GET", server + path, headers=headers or {}, retries=False)


@pytest.fixture
def token_api(
    cluster: Cluster, core: client.CoreV1Api, namespace: str, tmp_path: Path
) -> Iterator[client.ApiClient]:
    token = _token_request(core, namespace, "robot")
    api = _as_token(cluster, token, tmp_path)
    yield api
    api.close()


def test_request_without_credentials_is_unauthorized(cluster: Cluster) -> None:
    urllib3.disable_warnings()
    response = _anonymous(cluster, "/api/v1/namespaces")
    assert response.status in (401, 403)
    if response.status == 401:
        assert json.loads(response.data)["reason"] == "Unauthorized"


def test_garbage_bearer_token_is_unauthorized(cluster: Cluster) -> None:
    urllib3.disable_warnings()
    response = _anonymous(cluster, "/api/v1/namespaces", {"Authorization": "Bearer not-a-token"})
    assert response.status == 401


def test_health_endpoints_answer(cluster: Cluster) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        response = cluster.raw("GET", path)
        assert response.status == 200
        assert response.data == b"ok"


def test_service_account_token_is_forbidden_without_rbac(token_api: client.ApiClient, namespace: str) -> None:
    with pytest.raises(client.ApiException) as err:
        client.CoreV1Api(token_api).list_namespaced_secret(namespace)
    assert err.value.status == 403
    body = json.loads(err.value.body)
    assert body["reason"] == "Forbidden"
    assert body["message"].startswith(
        f'secrets is forbidden: User "system:serviceaccount:{namespace}:robot" cannot list resource "secrets" in API group "" in the namespace "{namespace}"'
    )


def test_role_binding_grants_exactly_the_rules(
    cluster: Cluster, token_api: client.ApiClient, namespace: str
) -> None:
    rbac = client.RbacAuthorizationV1Api(cluster.api)
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "cm-reader"},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["allowed"]},
            ],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "robot-reads"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": namespace}],
        },
    )
    core = client.CoreV1Api(cluster.api)
    core.create_namespaced_secret(namespace, {"metadata": {"name": "allowed"}})
    core.create_namespaced_secret(namespace, {"metadata": {"name": "denied"}})
    robot = client.CoreV1Api(token_api)
    assert robot.list_namespaced_config_map(namespace).items is not None
    assert robot.read_namespaced_secret("allowed", namespace).metadata.name == "allowed"
    for call in (
        lambda: robot.read_namespaced_secret("denied", namespace),
        lambda: robot.create_namespaced_config_map(namespace, {"metadata": {"name": "no"}}),
        lambda: robot.list_config_map_for_all_namespaces(),
    ):
        with pytest.raises(client.ApiException) as err:
            call()
        assert err.value.status == 403
    with pytest.raises(client.ApiException) as err:
        robot.list_config_map_for_all_namespaces()
    assert "at the cluster scope" in str(err.value.body)


def test_token_of_deleted_service_account_is_rejected(
    cluster: Cluster, core: client.CoreV1Api, namespace: str, tmp_path: Path
) -> None:
    token = _token_request(core, namespace, "temp")
    core.delete_namespaced_service_account("temp", namespace)
    api = _as_token(cluster, token, tmp_path)
    with pytest.raises(client.ApiException) as err:
        client.CoreV1Api(api).list_namespaced_config_map(namespace)
    assert err.value.status == 401


def test_token_review_authenticates_tokens(cluster: Cluster, core: client.CoreV1Api, namespace: str) -> None:
    token = _token_request(core, namespace, "reviewed")
    auth = client.AuthenticationV1Api(cluster.api)
    review = auth.create_token_review({"spec": {"token": token}})
    assert review.status.authenticated is True
    assert review.status.user.username == f"system:serviceaccount:{namespace}:reviewed"
    bad = auth.create_token_review({"spec": {"token": "nope"}})
    assert not bad.status.authenticated


def _access(cluster: Cluster, body: dict[str, Any]) -> Any:
    return client.AuthorizationV1Api(cluster.api).create_subject_access_review(body)


def test_subject_access_review_follows_bindings(cluster: Cluster, namespace: str) -> None:
    rbac = client.RbacAuthorizationV1Api(cluster.api)
    # a Role of the test's own: `view` is an aggregated ClusterRole, empty until kube-controller-manager's
    # aggregation controller fills it, and the suite runs against kube-apiserver alone
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "alice-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}],
        },
    )

    # kube-apiserver's RBAC authorizer reads bindings from its informers: a new one counts a moment later
    def allows() -> Any:
        review = _access(
            cluster,
            {
                "spec": {
                    "user": "alice",
                    "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": namespace},
                }
            },
        )
        return review if review.status.allowed else None

    eventually(allows, "alice allowed to list pods through her new RoleBinding")
    denied = _access(
        cluster,
        {
            "spec": {
                "user": "alice",
                "resourceAttributes": {"verb": "delete", "resource": "pods", "namespace": namespace},
            }
        },
    )
    assert denied.status.allowed is False
    elsewhere = _access(
        cluster,
        {
            "spec": {
                "user": "alice",
                "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"},
            }
        },
    )
    assert elsewhere.status.allowed is False


def test_self_subject_review_names_the_admin(cluster: Cluster) -> None:
    status, body = cluster.json(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    assert status == 201
    assert "system:masters" in body["status"]["userInfo"]["groups"]


def test_rbac_prevents_granting_permissions_not_held(
    cluster: Cluster, core: client.CoreV1Api, namespace: str, tmp_path: Path
) -> None:
    token = _token_request(core, namespace, "limited")
    rbac = client.RbacAuthorizationV1Api(cluster.api)
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "role-writer"},
            "rules": [
                {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["create"]}
            ],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "limited-writes-roles"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "role-writer"},
            "subjects": [{"kind": "ServiceAccount", "name": "limited", "namespace": namespace}],
        },
    )
    api = _as_token(cluster, token, tmp_path)
    with pytest.raises(client.ApiException) as err:
        client.RbacAuthorizationV1Api(api).create_namespaced_role(
            namespace,
            {
                "metadata": {"name": "escalate"},
                "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
            },
        )
    assert err.value.status == 403
    assert "attempting to grant RBAC permissions not currently held" in str(err.value.body)


def test_impersonation_needs_permission_and_switches_user(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        headers={"Impersonate-User": "bob"},
    )
    assert status == 201
    assert body["status"]["userInfo"]["username"] == "bob"
    status, body = cluster.json(
        "GET", f"/api/v1/namespaces/{namespace}/pods", headers={"Impersonate-User": "bob"}
    )
    assert status == 403
    assert 'User "bob" cannot list resource "pods"' in body["message"]


def test_an_apply_that_creates_is_authorized_as_a_create_of_that_name(
    cluster: Cluster, token_api: client.ApiClient, namespace: str
) -> None:
    rbac = client.RbacAuthorizationV1Api(cluster.api)
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "cm-applier"},
            "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "patch"]},
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "verbs": ["create"],
                    "resourceNames": ["named"],
                },
            ],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "robot-applies"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-applier"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": namespace}],
        },
    )
    robot = client.CoreV1Api(token_api)

    def apply(name: str) -> Any:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}}
        return robot.patch_namespaced_config_map(
            name, namespace, body, field_manager="robot", _content_type="application/apply-patch+yaml"
        )

    with pytest.raises(client.ApiException) as err:
        apply("other")
    assert err.value.status == 403
    assert json.loads(err.value.body)["message"].startswith(
        f'configmaps "other" is forbidden: User "system:serviceaccount:{namespace}:robot" cannot create '
        f'resource "configmaps" in API group "" in the namespace "{namespace}"'
    )
    assert apply("named").metadata.name == "named"
    client.CoreV1Api(cluster.api).create_namespaced_config_map(namespace, {"metadata": {"name": "other"}})
    assert apply("other").data == {"a": "b"}
