"""Webhooks by `clientConfig.service`, routed as kube-apiserver with `--enable-aggregator-routing=true` routes them.

That is how kind-like clusters reach in-cluster webhooks from an API server outside the
pod network, and how real-binary mode starts kube-apiserver. The API server dials an
endpoint of the Service's EndpointSlices (the slice port named like the Service port
the webhook names) and verifies the certificate as `<service>.<namespace>.svc`; the
error of each way that can fail is pinned. Endpoints are at a non-loopback address of
this host: kube-apiserver refuses loopback endpoint addresses.
"""

from __future__ import annotations

import socket
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from .conftest import Cluster
from .test_webhooks import ACTIVATION_SECONDS
from .webhookserver import Configurations, WebhookServer

SLICES = "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"


def _host_address() -> str | None:
    """This host's address on its default route (a UDP connect sends nothing), or None without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address


def _service(name: str, *ports: tuple[str, int], kind: str = "ClusterIP") -> dict[str, Any]:
    spec: dict[str, Any] = {"type": kind}
    if kind == "ExternalName":
        spec["externalName"] = "example.com"
    else:
        spec["ports"] = [{"name": port_name, "port": number} for port_name, number in ports]
    return {"metadata": {"name": name}, "spec": spec}


def _slice(service: str, address: str, *ports: tuple[str, int], ready: bool | None = None) -> dict[str, Any]:
    endpoint: dict[str, Any] = {"addresses": [address]}
    if ready is not None:
        endpoint["conditions"] = {"ready": ready}
    return {
        "metadata": {"generateName": f"{service}-", "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4",
        "endpoints": [endpoint],
        "ports": [{"name": port_name, "port": number, "protocol": "TCP"} for port_name, number in ports],
    }


def _hook(name: str, service: str, namespace: str, *, path: str, ca_bundle: str = "") -> dict[str, Any]:
    reference = {"namespace": namespace, "name": service, "path": path}
    config: dict[str, Any] = {"service": reference}
    if ca_bundle:
        config["caBundle"] = ca_bundle
    return {
        "name": name,
        "clientConfig": config,
        "rules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
        ],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    }


def _refusal(cluster: Cluster, namespace: str, hook: str) -> str:
    """The message of a create the webhook fails, once the API server has picked the webhook up."""
    deadline = time.monotonic() + ACTIVATION_SECONDS
    while True:
        body = {"metadata": {"name": f"c-{uuid.uuid4().hex[:6]}"}}
        status, answer = cluster.json("POST", f"/api/v1/namespaces/{namespace}/configmaps", body)
        message = str((answer or {}).get("message", ""))
        if status >= 400 and hook in message:
            assert (status, answer["reason"]) == (500, "InternalError"), answer
            return message
        assert time.monotonic() < deadline, f"the webhook {hook} was never called ({status}: {message})"
        time.sleep(0.1)


UNREACHABLE = "10.255.255.1"


@pytest.mark.parametrize(
    ("objects", "reason"),
    [
        ([], 'service "hooks" not found'),
        ([_service("hooks", ("web", 80))], 'no service port 443 found for service "hooks"'),
        ([_service("hooks", ("https", 443))], 'no endpoints available for service "hooks"'),
        ([_service("hooks", kind="ExternalName")], 'unsupported service type "ExternalName"'),
        (
            [_service("hooks", ("https", 443)), _slice("hooks", UNREACHABLE, ("https", 8443), ready=False)],
            'no endpoints available for service "hooks"',
        ),
        (
            [_service("hooks", ("https", 443)), _slice("hooks", UNREACHABLE, ("metrics", 8443))],
            'no endpoints available for service "hooks"',
        ),
    ],
    ids=[
        "no-service",
        "no-such-service-port",
        "no-slices",
        "external-name",
        "not-ready",
        "port-name-differs",
    ],
)
def test_a_service_webhook_that_cannot_be_routed_fails_with_kubes_reason(
    cluster: Cluster,
    namespace: str,
    configurations: Configurations,
    objects: list[dict[str, Any]],
    reason: str,
) -> None:
    for obj in objects:
        path = (
            SLICES.format(namespace=namespace)
            if "addressType" in obj
            else f"/api/v1/namespaces/{namespace}/services"
        )
        assert cluster.json("POST", path, obj)[0] == 201
    name = f"route-{uuid.uuid4().hex[:6]}.webhooks.example.com"
    configurations.add("validating", [_hook(name, "hooks", namespace, path="/v")])
    assert _refusal(cluster, namespace, name) == (
        f'Internal error occurred: failed calling webhook "{name}": failed to call webhook: '
        f'Post "https://hooks.{namespace}.svc:443/v?timeout=5s": {reason}'
    )


def test_a_service_webhook_is_called_at_a_ready_endpoint_on_the_slice_port_of_the_service_port(
    cluster: Cluster, namespace: str, configurations: Configurations, tmp_path: Path
) -> None:
    host = _host_address()
    if host is None:
        pytest.skip(
            "this host has no non-loopback address for an endpoint the API server accepts and reaches"
        )
    server = WebhookServer(tmp_path, host=host, dns_names=(f"hooks.{namespace}.svc",))
    server.start()
    try:
        token = uuid.uuid4().hex[:12]
        services = f"/api/v1/namespaces/{namespace}/services"
        assert cluster.json("POST", services, _service("hooks", ("metrics", 9090), ("https", 443)))[0] == 201
        ports = (("metrics", 9), ("https", server.port))
        for obj in (_slice("hooks", UNREACHABLE, *ports, ready=False), _slice("hooks", host, *ports)):
            assert cluster.json("POST", SLICES.format(namespace=namespace), obj)[0] == 201
        hook = _hook(
            "allow.webhooks.example.com",
            "hooks",
            namespace,
            path=f"/allow/{token}",
            ca_bundle=server.ca_bundle,
        )
        configurations.add("validating", [hook])
        deadline = time.monotonic() + ACTIVATION_SECONDS
        while not server.reviews(token):
            status, answer = cluster.json(
                "POST",
                f"/api/v1/namespaces/{namespace}/configmaps",
                {"metadata": {"name": f"c-{uuid.uuid4().hex[:6]}"}},
            )
            assert status in (201, 500), answer
            assert time.monotonic() < deadline, f"the webhook was never called: {answer}"
            time.sleep(0.1)
        assert server.reviews(token)[0]["resource"] == {
            "group": "",
            "version": "v1",
            "resource": "configmaps",
        }
    finally:
        server.stop()
