"""The install manifests: valid options only, accepted by the API server, least privilege that holds."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.api import constants as c
from runtime.api.kinds import CLUSTERROLEBINDINGS, CONFIGMAPS, NODES, SERVICES
from runtime.core import Client, ForbiddenError
from runtime.forge.install import InstallOptions, InstallOptionsError, install_manifests
from runtime.forge.reflection import APIServerSupport, ReflectionOptions
from tests.apiserver.conftest import start_emulator, stop_emulator
from tests.runtime.serviceaccounts import service_account_client

OPTIONS = InstallOptions(
    cluster_id="7d7c3b5e-2f0a-4c1e-9a51-3c0d6f0f5a10",
    cluster_name="milan",
    api_server_url="https://127.0.0.1:6443",
    pod_cidr="10.244.0.0/16",
    service_cidr="10.96.0.0/16",
    cluster_labels={"topology.liqo.io/region": "north"},
)


@pytest.mark.parametrize(
    ("change", "attribute"),
    [
        ({"cluster_id": "not-a-uuid"}, "cluster_id"),
        ({"cluster_name": "Milan_1"}, "cluster_name"),
        ({"cluster_name": "m" * 59}, "cluster_name"),
        ({"namespace": "Liqo"}, "namespace"),
        ({"pod_cidr": "10.244.0.0/33"}, "pod_cidr"),
        ({"service_cidr": "nope"}, "service_cidr"),
        ({"sharing_percentage": 0}, "sharing_percentage"),
        ({"sharing_percentage": 101}, "sharing_percentage"),
        ({"api_server_url": "http://x"}, "api_server_url"),
        ({"auth_url": "ftp://x"}, "auth_url"),
        ({"auth_service_type": "ExternalName"}, "auth_service_type"),
        ({"cluster_labels": {"a": "bad value"}}, "cluster_labels"),
        ({"reflection": ReflectionOptions(secret_workers=-1)}, "reflection.secret_workers"),
        ({"reflection": ReflectionOptions(ingress_classes={"a": "B_"})}, "reflection.ingress_classes"),
    ],
)
def test_invalid_options_name_the_attribute(change: dict[str, object], attribute: str) -> None:
    with pytest.raises(InstallOptionsError) as caught:
        install_manifests(dataclasses.replace(OPTIONS, **change))  # type: ignore[arg-type]
    assert caught.value.attribute == attribute
    assert str(caught.value).startswith(f"{attribute}: ")


def test_manifests_are_ordered_and_unique() -> None:
    objects = install_manifests(OPTIONS)
    assert objects[0]["kind"] == "Namespace"
    kinds = [obj["kind"] for obj in objects]
    assert kinds.index("CustomResourceDefinition") < kinds.index("Deployment")
    keys = [(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]) for obj in objects]
    assert len(keys) == len(set(keys))
    identity = next(obj for obj in objects if obj["metadata"]["name"] == c.CLUSTER_IDENTITY_CONFIGMAP)
    assert identity["data"][c.IDENTITY_CLUSTER_ID] == OPTIONS.cluster_id
    assert identity["data"][c.IDENTITY_SHARING_PERCENTAGE] == "90"


def test_liqos_tools_find_the_cluster_id_and_the_controller_manager_as_in_liqo() -> None:
    """What liqoctl v1 looks up: in the Liqo namespace, the ConfigMap labelled
    app.kubernetes.io/name=clusterid-configmap and its CLUSTER_ID; the one Deployment labelled
    controller-manager as both app.kubernetes.io/name and component, whose container controller-manager's
    image tag is the version."""
    objects = install_manifests(OPTIONS)
    in_namespace = [obj for obj in objects if obj["metadata"].get("namespace") == "liqo"]
    (identity,) = [
        obj
        for obj in in_namespace
        if obj["kind"] == "ConfigMap"
        and obj["metadata"]["labels"].get("app.kubernetes.io/name") == "clusterid-configmap"
    ]
    assert identity["metadata"]["name"] == "liqo-clusterid-configmap"
    assert identity["metadata"]["labels"]["app.kubernetes.io/component"] == "clusterid-configmap"
    assert identity["metadata"]["labels"]["app.kubernetes.io/part-of"] == "liqo"
    assert (identity["data"]["CLUSTER_ID"], identity["data"]["CLUSTER_NAME"]) == (OPTIONS.cluster_id, "milan")
    (manager,) = [
        obj
        for obj in in_namespace
        if obj["kind"] == "Deployment"
        and obj["metadata"]["labels"].get("app.kubernetes.io/name") == "controller-manager"
        and obj["metadata"]["labels"].get("app.kubernetes.io/component") == "controller-manager"
    ]
    (container,) = manager["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "controller-manager"
    assert container["image"].rsplit(":", 1)[1] == OPTIONS.image.rsplit(":", 1)[1]


def test_the_reflection_options_reach_the_controller_manager_as_the_virtual_kubelets_flags() -> None:
    options = dataclasses.replace(
        OPTIONS, reflection=ReflectionOptions(event_workers=0, ingress_classes={"a": "b"})
    )
    deployment = next(
        o
        for o in install_manifests(options)
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "liqo-controller-manager"
    )
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert set(options.reflection.args()) <= set(args)
    assert "--event-reflection-workers=0" in args and "--ingress-class=a=b" in args


@pytest.mark.parametrize(("support", "granted"), [("TokenAPI", True), ("Disabled", False)])
def test_virtual_kubelets_may_request_pod_tokens_only_when_pods_get_them(
    support: APIServerSupport, granted: bool
) -> None:
    options = dataclasses.replace(OPTIONS, reflection=ReflectionOptions(api_server_support=support))
    role = next(
        o
        for o in install_manifests(options)
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "liqo-virtual-kubelet-reflection"
    )
    assert any("serviceaccounts/token" in rule["resources"] for rule in role["rules"]) is granted


def test_url_mode_webhooks_call_a_url_and_service_mode_a_service() -> None:
    def config(options: InstallOptions) -> dict[str, object]:
        webhook = next(o for o in install_manifests(options) if o["kind"] == "ValidatingWebhookConfiguration")
        client_config: dict[str, object] = webhook["webhooks"][0]["clientConfig"]
        return client_config

    assert "service" in config(OPTIONS)
    assert "url" in config(dataclasses.replace(OPTIONS, webhook_mode="url"))


def test_the_auth_service_is_a_node_port_by_default_and_knows_its_node() -> None:
    def auth_objects(options: InstallOptions) -> tuple[dict[str, Any], dict[str, Any]]:
        objects = install_manifests(options)
        service = next(o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == "liqo-auth")
        deployment = next(
            o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "liqo-auth"
        )
        return service, deployment

    service, deployment = auth_objects(OPTIONS)
    assert service["spec"]["type"] == "NodePort"
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert not any(
        arg.startswith("--advertise-url")
        for arg in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    service, _ = auth_objects(dataclasses.replace(OPTIONS, auth_service_type="LoadBalancer"))
    assert service["spec"]["type"] == "LoadBalancer"
    webhook = next(
        o
        for o in install_manifests(OPTIONS)
        if o["kind"] == "Service" and o["metadata"]["name"] == "liqo-webhook"
    )
    assert webhook["spec"]["type"] == "ClusterIP"


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    process, path = start_emulator(tmp_path_factory.mktemp("install"))
    try:
        yield path
    finally:
        stop_emulator(process)


@pytest.fixture
async def admin(kubeconfig: Path) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(kubeconfig) as api:
        yield api


async def _apply_all(admin: Client) -> None:
    for obj in install_manifests(OPTIONS):
        resource = await admin.resource_for(obj["apiVersion"], obj["kind"])
        await admin.apply(
            resource,
            obj,
            namespace=obj["metadata"].get("namespace"),
            field_manager=c.FIELD_MANAGER_INSTALL,
            force=True,
        )


async def test_the_api_server_accepts_the_whole_installation_twice(admin: Client) -> None:
    await _apply_all(admin)
    await _apply_all(admin)
    identity = await admin.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=OPTIONS.namespace)
    assert identity["data"][c.IDENTITY_CLUSTER_NAME] == "milan"


async def test_the_auth_service_reads_nodes_and_its_own_service_only(admin: Client, kubeconfig: Path) -> None:
    await _apply_all(admin)
    ns = OPTIONS.namespace
    async with await service_account_client(admin, kubeconfig, "liqo-auth", namespace=ns, ttl=600) as auth:
        await auth.list(NODES)
        await auth.get(SERVICES, c.AUTH_SERVICE, namespace=ns)
        listed = await auth.list(SERVICES, namespace=ns, field_selector=f"metadata.name={c.AUTH_SERVICE}")
        assert [s["metadata"]["name"] for s in listed.items] == [c.AUTH_SERVICE]
        with pytest.raises(ForbiddenError):
            await auth.get(SERVICES, "liqo-webhook", namespace=ns)
        with pytest.raises(ForbiddenError):
            await auth.list(SERVICES, namespace=ns)
        with pytest.raises(ForbiddenError):
            await auth.patch(NODES, "any", {"metadata": {"labels": {"a": "b"}}})


async def test_the_controller_manager_may_bind_the_reflection_role_but_nothing_else(
    admin: Client, kubeconfig: Path
) -> None:
    await _apply_all(admin)
    async with await service_account_client(
        admin, kubeconfig, "liqo-controller-manager", namespace=OPTIONS.namespace, ttl=600
    ) as manager:
        binding: dict[str, Any] = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "vk-test"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "liqo-virtual-kubelet-reflection",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "vk", "namespace": "liqo-tenant-x"}],
        }
        await manager.create(CLUSTERROLEBINDINGS, binding)
        escalation = {
            **binding,
            "metadata": {"name": "vk-admin"},
            "roleRef": {**binding["roleRef"], "name": "cluster-admin"},
        }
        with pytest.raises(ForbiddenError):
            await manager.create(CLUSTERROLEBINDINGS, escalation)
