"""Admission webhooks called by the cluster: a real HTTPS webhook server on 127.0.0.1.

The server runs aiohttp on a thread with its own event loop, with a certificate from a
CA made here (the configurations carry it as `caBundle`). Each webhook URL names a
behaviour (`allow`, `label`, `deny`, `warn`) and a token unique to the test, so the
AdmissionReviews a test receives are its own. Webhook configurations are cluster-wide:
every test deletes the ones it made. A real kube-apiserver picks configurations up
asynchronously, so each test first probes (with dry-run creates) until its webhooks
are being called.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.ports import free_port

from .conftest import Cluster
from .webhookserver import DENIAL, WARNING, Configurations, WebhookServer

Obj = dict[str, Any]
ACTIVATION_SECONDS = 30


@pytest.fixture(scope="module")
def webhook_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    server = WebhookServer(tmp_path_factory.mktemp("webhook"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --- configurations ------------------------------------------------------------------------------------


def webhook(
    name: str,
    url: str,
    ca_bundle: str,
    namespace: str,
    *,
    operations: tuple[str, ...] = ("CREATE",),
    failure_policy: str = "Fail",
    object_selector: Obj | None = None,
) -> Obj:
    """A webhook for configmaps in one namespace (the selector keeps other tests out of its way)."""
    rule = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": list(operations),
        "resources": ["configmaps"],
        "scope": "Namespaced",
    }
    return {
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [rule],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "objectSelector": object_selector or {},
        "failurePolicy": failure_policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    }


@pytest.fixture
def token() -> str:
    return uuid.uuid4().hex[:12]


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + ACTIVATION_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.05)


def probe_create(core: client.CoreV1Api, namespace: str, labels: dict[str, str] | None = None) -> int:
    """A dry-run create a configmap webhook sees; returns the HTTP status."""
    body = {"metadata": {"name": f"probe-{uuid.uuid4().hex[:6]}", "labels": labels or {}}}
    try:
        core.create_namespaced_config_map(namespace, body, dry_run="All")
    except client.ApiException as exc:
        return int(exc.status)
    return 201


def await_calls(
    server: WebhookServer,
    core: client.CoreV1Api,
    namespace: str,
    token: str,
    labels: dict[str, str] | None = None,
) -> None:
    """Probe until the webhooks of `token` are called, then forget the probes' reviews."""

    def called() -> bool:
        probe_create(core, namespace, labels)
        return bool(server.reviews(token))

    wait_until(called, "the webhooks are called")
    server.forget(token)


# --- the tests -----------------------------------------------------------------------------------------


def test_mutating_webhook_adds_a_label_with_a_json_patch(
    core: client.CoreV1Api,
    namespace: str,
    webhook_server: WebhookServer,
    configurations: Configurations,
    token: str,
) -> None:
    hook = webhook(
        "label.webhooks.example.com", webhook_server.url("label", token), webhook_server.ca_bundle, namespace
    )
    configurations.add("mutating", [hook])
    await_calls(webhook_server, core, namespace, token)
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "m", "labels": {"own": "x"}}})
    assert cm.metadata.labels == {"own": "x", "mutated": "yes"}
    assert core.read_namespaced_config_map("m", namespace).metadata.labels == {"own": "x", "mutated": "yes"}
    bare = core.create_namespaced_config_map(namespace, {"metadata": {"name": "bare"}})
    assert bare.metadata.labels == {"mutated": "yes"}


def test_validating_webhook_denies_with_its_message_and_code(
    cluster: Cluster,
    core: client.CoreV1Api,
    namespace: str,
    webhook_server: WebhookServer,
    configurations: Configurations,
    token: str,
) -> None:
    name = "deny.webhooks.example.com"
    configurations.add(
        "validating", [webhook(name, webhook_server.url("deny", token), webhook_server.ca_bundle, namespace)]
    )
    await_calls(webhook_server, core, namespace, token)
    status, body = cluster.json(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "no"}}
    )
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == f'admission webhook "{name}" denied the request: {DENIAL}'
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_config_map("no", namespace)
    assert err.value.status == 404


def test_kubectl_shows_the_denial(
    cluster: Cluster,
    core: client.CoreV1Api,
    namespace: str,
    webhook_server: WebhookServer,
    configurations: Configurations,
    token: str,
    kubectl_available: None,
) -> None:
    name = "deny.webhooks.example.com"
    configurations.add(
        "validating", [webhook(name, webhook_server.url("deny", token), webhook_server.ca_bundle, namespace)]
    )
    await_calls(webhook_server, core, namespace, token)
    manifest = json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kc", "namespace": namespace}}
    )
    result = cluster.kubectl("create", "-f", "-", input=manifest, check=False)
    assert result.returncode != 0
    assert f'admission webhook "{name}" denied the request: {DENIAL}' in result.stderr


def test_namespace_selector_limits_the_webhook_to_matching_namespaces(
    core: client.CoreV1Api,
    namespace: str,
    webhook_server: WebhookServer,
    configurations: Configurations,
    token: str,
) -> None:
    configurations.add(
        "validating",
        [
            webhook(
                "ns.webhooks.example.com",
                webhook_server.url("deny", token),
                webhook_server.ca_bundle,
                namespace,
            )
        ],
    )
    await_calls(webhook_server, core, namespace, token)
    other = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace({"metadata": {"name": other}})
    try:
        core.create_namespaced_config_map(other, {"metadata": {"name": "free"}})
    finally:
        core.delete_namespace(other)
    assert webhook_server.reviews(token) == []
    assert probe_create(core, namespace) == 403


def test_object_selector_limits_the_webhook_to_matching_objects(
    core: client.CoreV1Api,
    namespace: str,
    webhook_server: WebhookServer,
    configurations: Configurations,
    token: str,
) -> None:
    selector = {"matchExpressions": [{"key": "guarded", "operator": "In", "values": ["true"]}]}
    hook = webhook(
        "obj.webhooks.example.com",
        webhook_server.url("deny", token),
        webhook_server.ca_bundle,
        namespace,
        object_selector=selector,
    )
    configurations.add("validating", [hook])
    await_calls(webhook_server, core, namespace, token, labels={"guarded": "true"})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "free", "labels": {"guarded": "no"}}})
    assert webhook_server.reviews(token) == []
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": "held", "labels": {"guarded": "true"}}}
        )
    assert err.value.status == 403
    assert [r["name"] for r in webhook_server.reviews(token)] == ["held"]


def test_unreachable_webhook_fails_closed_unless_ignored(
    cluster: Cluster,
    core: client.CoreV1Api,
    namespace: str,
    webhook_server: WebhookServer,
    configurations: Configurations,
    token: str,
) -> None:
    dead = f"https://127.0.0.1:{free_port()}/dead"
    ca = webhook_server.ca_bundle
    ignored = webhook("ignored.webhooks.example.com", dead, ca, namespace, failure_policy="Ignore")
    witness = webhook("witness.webhooks.example.com", webhook_server.url("allow", token), ca, namespace)
    configurations.add("validating", [ignored, witness])
    await_calls(webhook_server, core, namespace, token)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "passes"}})

    name = "failing.webhooks.example.com"
    configurations.add("validating", [webhook(name, dead, ca, namespace, failure_policy="Fail")])
    wait_until(lambda: probe_create(core, namespace) == 500, "the failing webhook is called")
    status, body = cluster.json(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "stops"}}
    )
    assert status == 500
    assert body["reason"] == "InternalError"
    assert f'failed calling webhook "{name}"' in body["message"]
    assert dead in body["message"]


def test_webhook_warnings_come_back_as_warning_headers(
    cluster: Cluster,
    core: client.CoreV1Api,
    namespace: str,
    webhook_server: WebhookServer,
    configurations: Configurations,
    token: str,
) -> None:
    hook = webhook(
        "warn.webhooks.example.com", webhook_server.url("warn", token), webhook_server.ca_bundle, namespace
    )
    configurations.add("validating", [hook])
    await_calls(webhook_server, core, namespace, token)
    response = cluster.raw("POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "w"}})
    assert response.status == 201
    assert response.headers.get("Warning") == f'299 - "{WARNING}"'


def test_dry_run_requests_reach_webhooks_marked_dry_run(
    core: client.CoreV1Api,
    namespace: str,
    webhook_server: WebhookServer,
    configurations: Configurations,
    token: str,
) -> None:
    hook = webhook(
        "dry.webhooks.example.com", webhook_server.url("label", token), webhook_server.ca_bundle, namespace
    )
    configurations.add("mutating", [hook])
    await_calls(webhook_server, core, namespace, token)
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "dry"}}, dry_run="All")
    assert cm.metadata.labels == {"mutated": "yes"}
    [review] = webhook_server.reviews(token)
    assert review["dryRun"] is True
    assert review["options"]["dryRun"] == ["All"]
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "wet"}})
    assert [r["dryRun"] for r in webhook_server.reviews(token)] == [True, False]


def test_admission_review_carries_user_old_object_and_delete(
    cluster: Cluster,
    core: client.CoreV1Api,
    namespace: str,
    webhook_server: WebhookServer,
    configurations: Configurations,
    token: str,
) -> None:
    hook = webhook(
        "audit.webhooks.example.com",
        webhook_server.url("allow", token),
        webhook_server.ca_bundle,
        namespace,
        operations=("CREATE", "UPDATE", "DELETE"),
    )
    configurations.add("validating", [hook])
    await_calls(webhook_server, core, namespace, token)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "r"}, "data": {"v": "1"}})
    core.patch_namespaced_config_map("r", namespace, {"data": {"v": "2"}})
    core.delete_namespaced_config_map("r", namespace)
    create, update, delete = webhook_server.reviews(token)

    me = client.AuthenticationV1Api(cluster.api).create_self_subject_review({}).status.user_info
    for review in (create, update, delete):
        assert review["userInfo"]["username"] == me.username
        assert set(me.groups) <= set(review["userInfo"]["groups"])
        assert review["namespace"] == namespace
        assert review["name"] == "r"
        assert review["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
        assert review["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
        assert review["dryRun"] is False

    assert create["operation"] == "CREATE"
    assert create["object"]["data"] == {"v": "1"}
    assert create["oldObject"] is None
    assert create["options"]["kind"] == "CreateOptions"

    assert update["operation"] == "UPDATE"
    assert update["object"]["data"] == {"v": "2"}
    assert update["oldObject"]["data"] == {"v": "1"}
    assert update["options"]["kind"] == "UpdateOptions"

    assert delete["operation"] == "DELETE"
    assert delete["object"] is None
    assert delete["oldObject"]["data"] == {"v": "2"}
    assert delete["options"]["kind"] == "DeleteOptions"
