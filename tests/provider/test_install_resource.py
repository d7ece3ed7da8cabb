"""`liqo_install`: validation and planning without a cluster, then create, read, update, import and destroy
against an API server emulator with a stand-in for the runtime's components."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from tf.types import Unknown

from playground.controllers import namespace as namespace_controller
from provider.kube import Kube
from provider.resources.install import InstallResource
from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, NAMESPACEOFFLOADINGS, TENANTS
from runtime.api.image import package_version, runtime_image
from runtime.api.kinds import (
    CONFIGMAPS,
    CRDS,
    DEPLOYMENTS,
    NAMESPACES,
    NODES,
    PODS,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    VALIDATINGWEBHOOKS,
)
from runtime.auth.servingkey import generate_key, serving_key_secret
from runtime.core import AlreadyExistsError, Client, NotFoundError
from runtime.forge.install import VALIDATING_WEBHOOK
from runtime.operations.install import covering_network
from tests.playground.conftest import running

from . import harness
from .harness import Provider
from .runtime_double import AUTH_URL, CA_BUNDLE, installed_runtime

POD_CIDR = "10.244.0.0/16"
LEGACY_CLUSTER_ID = "0b3c9d1e-7f2a-4c5b-8e6d-1a2b3c4d5e6f"
#: `reflection` as planned when the configuration leaves it out
DEFAULT_REFLECTION = {
    "pod_workers": 20,
    "configmap_workers": 20,
    "secret_workers": 20,
    "service_workers": 10,
    "endpointslice_workers": 20,
    "ingress_workers": 5,
    "event_workers": 10,
    "configmap_type": "DenyList",
    "secret_type": "DenyList",
    "service_type": "DenyList",
    "ingress_type": "DenyList",
    "ingress_classes": {},
    "labels_not_reflected": [],
    "annotations_not_reflected": [],
    "api_server_support": "TokenAPI",
}


def resource(provider: Provider | None = None) -> InstallResource:
    return InstallResource(provider or Provider(Kube.unavailable("not configured in this test")))


def config(**values: Any) -> dict[str, Any]:
    return harness.config(InstallResource, **{"cluster_name": "rome", **values})


# validation


@pytest.mark.parametrize(
    ("attribute", "value", "summary", "says"),
    [
        ("cluster_name", "Rome_1", "Invalid cluster_name", "must be a DNS label of at most 58 characters"),
        ("cluster_name", "r" * 59, "Invalid cluster_name", "because the virtual node on consumers is called"),
        ("namespace", "Liqo", "Invalid namespace", "is not a valid namespace name"),
        ("pod_cidr", "10.0.0.0/33", "Invalid pod_cidr", "is not a CIDR"),
        ("service_cidr", "services", "Invalid service_cidr", "is not a CIDR"),
        ("sharing_percentage", 0, "Invalid sharing_percentage", "0 is not in 1..100"),
        ("sharing_percentage", 101, "Invalid sharing_percentage", "101 is not in 1..100"),
        ("sharing_percentage", 50.5, "Invalid sharing_percentage", "50.5 is not a whole percentage"),
        ("quota_enforcement", "Strict", "Invalid quota_enforcement", "is not one of None, Soft, Hard"),
        ("max_twin_namespaces", 0, "Invalid max_twin_namespaces", "0 is not in 1..10000"),
        ("max_twin_namespaces", 2.5, "Invalid max_twin_namespaces", "2.5 is not a whole number"),
        ("max_consumer_service_type", "ExternalName", "Invalid max_consumer_service_type", "is not one of"),
        ("api_server_url", "http://10.0.0.1:6443", "Invalid api_server_url", "must be an https:// URL"),
        ("auth_url", "ftp://auth", "Invalid auth_url", "must be an https:// URL"),
        ("cluster_labels", {"zone": "not valid!"}, "Invalid cluster_labels", "is not a valid label value"),
        ("webhook_mode", "proxy", "Invalid webhook_mode", 'is not a webhook mode: use "service"'),
        ("auth_service_type", "ExternalName", "Invalid auth_service_type", 'use "NodePort"'),
        ("image", " ", "Invalid image", "cannot be empty"),
    ],
    ids=lambda value: str(value)[:20],
)
def test_an_invalid_value_is_an_error_on_its_attribute(
    attribute: str, value: Any, summary: str, says: str
) -> None:
    outcome = harness.validate(resource(), config(**{attribute: value}))

    [(got_summary, detail, path)] = outcome.errors
    assert (got_summary, path) == (summary, [attribute])
    assert says in detail


@pytest.mark.parametrize(
    ("reflection", "path", "says"),
    [
        ({"secret_workers": -1}, ["reflection", "secret_workers"], "is not a worker count in 0..1000"),
        ({"pod_workers": 2.5}, ["reflection", "pod_workers"], "is not a whole number of workers"),
        (
            {"ingress_classes": {"nginx": "Not A Class"}},
            ["reflection", "ingress_classes"],
            "is not an ingress class",
        ),
        ({"secret_type": "allowlist"}, ["reflection", "secret_type"], "'allowlist' is not a reflection type"),
        (
            {"labels_not_reflected": ["team", "bad key"]},
            ["reflection", "labels_not_reflected"],
            "'bad key' is not a label or annotation key",
        ),
        (
            {"api_server_support": "Legacy"},
            ["reflection", "api_server_support"],
            "'Legacy' is not an API server support",
        ),
    ],
    ids=["negative", "fraction", "class", "type", "key", "api-server-support"],
)
def test_an_invalid_reflection_option_is_an_error_on_its_field(
    reflection: dict[str, Any], path: list[str], says: str
) -> None:
    outcome = harness.validate(resource(), config(reflection=reflection))

    [(_, detail, got)] = outcome.errors
    assert got == path
    assert says in detail


def test_every_invalid_value_is_reported_at_once() -> None:
    outcome = harness.validate(
        resource(), config(cluster_name="Bad", pod_cidr="x", sharing_percentage=500, webhook_mode="y")
    )

    assert [path for _, _, path in outcome.errors] == [
        ["cluster_name"],
        ["pod_cidr"],
        ["sharing_percentage"],
        ["webhook_mode"],
    ]


def test_values_not_known_yet_are_not_checked() -> None:
    outcome = harness.validate(
        resource(), config(cluster_name=Unknown, pod_cidr=Unknown, webhook_mode=Unknown)
    )

    assert outcome.errors == []


# planning without a cluster


def test_a_create_plan_has_the_defaults_and_leaves_cluster_values_to_apply() -> None:
    outcome = harness.plan(resource(), config(pod_cidr=POD_CIDR, service_cidr="10.96.0.0/12"))

    assert outcome.errors == []
    assert outcome.state == {
        **config(pod_cidr=POD_CIDR, service_cidr="10.96.0.0/12"),
        "id": "liqo",
        "namespace": "liqo",
        "sharing_percentage": 90,
        "image": runtime_image(),
        "webhook_mode": "service",
        "auth_service_type": "NodePort",
        "gateway_service_type": "NodePort",
        "gateway_mtu": 1340,
        "wireguard_implementation": "auto",
        "quota_enforcement": "None",
        "max_twin_namespaces": 50,
        "max_consumer_service_type": "ClusterIP",
        "api_server_url": Unknown,
        "auth_url": Unknown,
        "reflection": DEFAULT_REFLECTION,
        "force": False,
        "purge": False,
        "cluster_id": Unknown,
        "version": package_version(),
        "missing_objects": [],
    }


def applied_state(**values: Any) -> dict[str, Any]:
    """A state as create leaves it."""
    return {
        **config(),
        "id": "liqo",
        "namespace": "liqo",
        "pod_cidr": POD_CIDR,
        "service_cidr": "10.96.0.0/12",
        "sharing_percentage": 90,
        "image": runtime_image(),
        "webhook_mode": "service",
        "auth_service_type": "NodePort",
        "gateway_service_type": "NodePort",
        "gateway_mtu": 1340,
        "wireguard_implementation": "auto",
        "quota_enforcement": "None",
        "max_twin_namespaces": 50,
        "max_consumer_service_type": "ClusterIP",
        "api_server_url": "https://127.0.0.1:6443",
        "auth_url": AUTH_URL,
        "reflection": DEFAULT_REFLECTION,
        "force": False,
        "purge": False,
        "cluster_id": str(uuid.uuid4()),
        "version": package_version(),
        "missing_objects": [],
        **values,
    }


def test_a_plan_right_after_apply_changes_nothing() -> None:
    prior = applied_state()

    outcome = harness.plan(resource(), config(api_server_url="https://127.0.0.1:6443"), prior=prior)

    assert outcome.state == prior
    assert outcome.replace == []


def test_dropping_a_value_from_the_config_plans_its_default() -> None:
    prior = applied_state(sharing_percentage=50, webhook_mode="url")

    outcome = harness.plan(resource(), config(api_server_url="https://127.0.0.1:6443"), prior=prior)

    assert outcome.state is not None
    assert (outcome.state["sharing_percentage"], outcome.state["webhook_mode"]) == (90, "service")
    assert outcome.state["cluster_id"] == prior["cluster_id"]
    assert outcome.state["auth_url"] == AUTH_URL, "the auth service does not restart: its URL stays"


def test_a_new_image_leaves_the_auth_url_to_apply() -> None:
    prior = applied_state()

    outcome = harness.plan(
        resource(), config(api_server_url="https://127.0.0.1:6443", image="example.org/r:2"), prior=prior
    )

    assert outcome.state is not None
    assert outcome.state["auth_url"] is Unknown
    assert outcome.state["cluster_id"] == prior["cluster_id"]


def test_another_auth_service_type_changes_in_place_and_leaves_the_auth_url_to_apply() -> None:
    prior = applied_state()

    outcome = harness.plan(
        resource(),
        config(api_server_url="https://127.0.0.1:6443", auth_service_type="LoadBalancer"),
        prior=prior,
    )

    assert outcome.state is not None
    assert outcome.replace == []
    assert outcome.state["auth_service_type"] == "LoadBalancer"
    assert outcome.state["auth_url"] is Unknown, "the URL follows the Service"


def test_reflection_options_change_in_place_and_the_others_keep_their_defaults() -> None:
    prior = applied_state()

    outcome = harness.plan(
        resource(),
        config(
            api_server_url="https://127.0.0.1:6443",
            reflection={
                "secret_workers": 0,
                "ingress_classes": {"a": "b"},
                "secret_type": "AllowList",
                "labels_not_reflected": ["team"],
                "api_server_support": "Disabled",
            },
        ),
        prior=prior,
    )

    assert outcome.state is not None
    assert outcome.replace == []
    assert outcome.state["reflection"] == {
        **DEFAULT_REFLECTION,
        "secret_workers": 0,
        "ingress_classes": {"a": "b"},
        "secret_type": "AllowList",
        "labels_not_reflected": ["team"],
        "api_server_support": "Disabled",
    }
    assert outcome.state["auth_url"] == AUTH_URL, "the auth service does not restart for reflection options"


def test_another_namespace_forces_a_reinstall() -> None:
    outcome = harness.plan(resource(), config(namespace="other"), prior=applied_state())

    assert outcome.replace == [["namespace"]]


def test_missing_objects_plan_an_update_that_recreates_them() -> None:
    prior = applied_state(missing_objects=["Deployment liqo/liqo-auth"])

    outcome = harness.plan(resource(), config(api_server_url="https://127.0.0.1:6443"), prior=prior)

    assert outcome.state is not None
    assert outcome.state["missing_objects"] == []
    assert outcome.replace == []


# against a cluster


def plan_create(provider: Provider, **values: Any) -> tuple[InstallResource, dict[str, Any], dict[str, Any]]:
    element = resource(provider)
    cfg = config(**values)
    outcome = harness.plan(element, cfg)
    assert outcome.errors == []
    assert outcome.state is not None
    return element, outcome.state, cfg


def test_a_create_plan_shows_what_the_cluster_tells(provider: Provider) -> None:
    outcome = harness.plan(resource(provider), config())

    assert outcome.state is not None
    assert outcome.state["service_cidr"] == "10.96.0.0/12", "the API server's Service range"
    assert outcome.state["api_server_url"] == provider.kube.host
    [(summary, detail, path)] = outcome.errors
    assert (summary, path) == ("Cannot discover pod_cidr", ["pod_cidr"])
    assert "set pod_cidr in the liqo_install resource" in detail


async def test_without_kubeadm_or_a_controller_manager_the_pod_cidr_covers_the_nodes_pod_cidrs(
    provider: Provider, api: Client
) -> None:
    for name, cidrs in (
        ("rome-control-plane", ["10.244.0.0/24"]),
        ("rome-worker", ["10.244.1.0/24", "fd00::/64"]),
    ):
        await api.create(
            NODES, {"metadata": {"name": name}, "spec": {"podCIDR": cidrs[0], "podCIDRs": cidrs}}
        )
    virtual = {"metadata": {"name": "liqo-milan", "labels": {c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE}}}
    await api.create(NODES, {**virtual, "spec": {"podCIDR": "10.250.0.0/24"}})

    outcome = await asyncio.to_thread(harness.plan, resource(provider), config())

    assert outcome.errors == []
    assert outcome.state is not None
    assert outcome.state["pod_cidr"] == "10.244.0.0/23"


@pytest.mark.parametrize(
    ("cidrs", "expected"),
    [
        (["10.244.0.0/24"], "10.244.0.0/24"),
        (["10.244.0.0/24", "10.244.2.0/24"], "10.244.0.0/22"),
        (["10.244.3.0/24", "10.244.4.0/24"], "10.244.0.0/21"),
        (["fd00::/64", "10.244.0.0/24", "fd00:0:0:1::/64"], "fd00::/63"),
        (["not a cidr", None, "10.1.0.0/16"], "10.1.0.0/16"),
        ([], None),
    ],
)
def test_the_covering_network_is_the_smallest_holding_every_cidr_of_the_first_family(
    cidrs: list[Any], expected: str | None
) -> None:
    assert covering_network(cidrs) == expected


async def test_a_cidr_left_to_apply_that_the_cluster_does_not_tell_is_an_error_on_it(
    provider: Provider,
) -> None:
    planned = harness.plan(resource(), config()).state  # the cluster was not known while planning
    assert planned is not None
    assert planned["pod_cidr"] is Unknown

    outcome = await asyncio.to_thread(harness.create, resource(provider), planned, config())

    assert outcome.state is None
    [(summary, detail, path)] = outcome.errors
    assert (summary, path) == ("Cannot discover pod_cidr", ["pod_cidr"])
    assert "set pod_cidr in the liqo_install resource" in detail


async def test_a_create_plan_reuses_the_cluster_id_of_an_earlier_install(
    provider: Provider, api: Client
) -> None:
    await api.create(NAMESPACES, {"metadata": {"name": "liqo"}})
    identity = {
        "metadata": {"name": c.CLUSTER_IDENTITY_CONFIGMAP},
        "data": {c.IDENTITY_CLUSTER_ID: "kept-id"},
    }
    await api.create(CONFIGMAPS, identity, namespace="liqo")

    outcome = await asyncio.to_thread(harness.plan, resource(provider), config(pod_cidr=POD_CIDR))

    assert outcome.state is not None
    assert outcome.state["cluster_id"] == "kept-id"


async def test_an_upgrade_keeps_the_cluster_id_of_the_legacy_identity_and_deletes_it(
    provider: Provider, api: Client
) -> None:
    """An installation from before the identity took Liqo's names (`liqo-cluster-identity`, key `clusterID`):
    the upgrade keeps its cluster id, or every peering of the cluster would break, and removes the old one."""
    await api.create(NAMESPACES, {"metadata": {"name": "liqo"}})
    legacy = {
        "metadata": {"name": c.LEGACY_CLUSTER_IDENTITY_CONFIGMAP},
        "data": {c.LEGACY_IDENTITY_CLUSTER_ID: LEGACY_CLUSTER_ID, "clusterName": "rome"},
    }
    await api.create(CONFIGMAPS, legacy, namespace="liqo")

    _, state = await create_installed(provider, api)

    assert state["cluster_id"] == LEGACY_CLUSTER_ID
    identity = await api.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace="liqo")
    assert identity["data"][c.IDENTITY_CLUSTER_ID] == LEGACY_CLUSTER_ID
    with pytest.raises(NotFoundError):
        await api.get(CONFIGMAPS, c.LEGACY_CLUSTER_IDENTITY_CONFIGMAP, namespace="liqo")


async def create_installed(
    provider: Provider, api: Client, **values: Any
) -> tuple[InstallResource, dict[str, Any]]:
    element, planned, cfg = await asyncio.to_thread(plan_create, provider, pod_cidr=POD_CIDR, **values)
    async with installed_runtime(api, planned["namespace"]):
        outcome = await asyncio.to_thread(harness.create, element, planned, cfg)
    assert outcome.errors == []
    assert outcome.state is not None
    return element, outcome.state


async def test_create_applies_the_runtime_and_waits_until_it_runs(provider: Provider, api: Client) -> None:
    _, state = await create_installed(provider, api, cluster_labels={"region": "eu"}, webhook_mode="url")

    assert state["auth_url"] == AUTH_URL
    assert state["version"] == package_version()
    uuid.UUID(state["cluster_id"])
    identity = await api.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace="liqo")
    assert identity["data"][c.IDENTITY_CLUSTER_ID] == state["cluster_id"]
    assert identity["data"][c.IDENTITY_CLUSTER_LABELS] == '{"region": "eu"}'
    deployment = await api.get(DEPLOYMENTS, "liqo-controller-manager", namespace="liqo")
    managers = {entry["manager"] for entry in deployment["metadata"]["managedFields"]}
    assert c.FIELD_MANAGER_TERRAFORM in managers


async def test_a_create_that_times_out_says_what_is_pending_and_keeps_the_state(
    provider: Provider, api: Client
) -> None:
    element, planned, cfg = await asyncio.to_thread(
        # nothing runs the runtime here, so it never becomes ready: the bound only has to leave room for
        # applying its objects, which takes more than 4 s on a loaded machine
        plan_create,
        provider,
        pod_cidr=POD_CIDR,
        timeouts={"create": "12s", "update": None, "delete": None},
    )

    outcome = await asyncio.to_thread(harness.create, element, planned, cfg)

    [(summary, detail, _)] = outcome.errors
    assert summary == "Timed out waiting for the Liqo runtime in namespace liqo to become ready"
    assert "Deployment liqo/liqo-auth: 0/1 available (no pods yet)" in detail
    assert "has no CA bundle yet" in detail
    assert outcome.state is not None, "what was created is recorded (tainted) so destroy can remove it"
    assert (
        outcome.state["cluster_id"]
        == (await api.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace="liqo"))["data"][
            c.IDENTITY_CLUSTER_ID
        ]
    )


async def kubelet_cannot_pull(api: Client, namespace: str, image: str) -> None:
    """What a node shows once the auth service's pod is on it and its image cannot be pulled."""
    while True:
        try:
            await api.get(NAMESPACES, namespace)
            break
        except NotFoundError:
            await asyncio.sleep(0.05)
    with contextlib.suppress(AlreadyExistsError):  # the ServiceAccount controller's, which does not run here
        await api.create(SERVICEACCOUNTS, {"metadata": {"name": "default"}}, namespace=namespace)
    pod = {
        "metadata": {"name": "liqo-auth-5f7d", "labels": {c.LABEL_NAME: "liqo-auth"}},
        "spec": {"nodeName": "rome-worker", "containers": [{"name": "auth", "image": image}]},
    }
    created = await api.create(PODS, pod, namespace=namespace)
    message = f'failed to pull and unpack image "{image}": not found'
    created["status"] = {
        "phase": "Pending",
        "containerStatuses": [
            {
                "name": "auth",
                "image": image,
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": "ErrImagePull", "message": message}},
            }
        ],
    }
    await api.update_status(PODS, created, namespace=namespace)


async def test_a_create_whose_image_cannot_be_pulled_fails_at_once_on_image(
    provider: Provider, api: Client
) -> None:
    image = "registry.example.com/liqo/runtime:0.1.0"
    element, planned, cfg = await asyncio.to_thread(
        plan_create,
        provider,
        pod_cidr=POD_CIDR,
        image=image,
        timeouts={"create": "30s", "update": None, "delete": None},
    )
    node = asyncio.create_task(kubelet_cannot_pull(api, "liqo", image))

    outcome = await asyncio.to_thread(harness.create, element, planned, cfg)
    await node

    [(summary, detail, path)] = outcome.errors
    assert (summary, path) == ("Cannot pull the Liqo runtime image", ["image"])
    assert detail.startswith(
        f"pod liqo/liqo-auth-5f7d (container auth, node rome-worker) on {provider.kube.label} "
        f'cannot pull image "{image}": ErrImagePull: failed to pull and unpack image "{image}": not found.'
    )
    assert outcome.state is not None, "what was applied is recorded (tainted) so destroy can remove it"


async def test_a_stop_during_create_returns_the_state_at_once(provider: Provider) -> None:
    element, planned, cfg = await asyncio.to_thread(plan_create, provider, pod_cidr=POD_CIDR)
    stop = threading.Event()
    stop.set()

    outcome = await asyncio.to_thread(harness.create, element, planned, cfg, stop=stop)

    [(summary, detail, _)] = outcome.errors
    assert summary.startswith("Interrupted while waiting for the Liqo runtime")
    assert "recorded in the state" in detail
    assert outcome.state is not None


async def test_read_reports_drift_and_missing_objects(provider: Provider, api: Client) -> None:
    element, state = await create_installed(provider, api)
    assert state["reflection"] == DEFAULT_REFLECTION
    await api.delete(DEPLOYMENTS, "liqo-auth", namespace="liqo")
    await api.patch(
        CONFIGMAPS,
        c.CLUSTER_IDENTITY_CONFIGMAP,
        {"data": {c.IDENTITY_SHARING_PERCENTAGE: "40"}},
        namespace="liqo",
    )
    manager = await api.get(DEPLOYMENTS, "liqo-controller-manager", namespace="liqo")
    container = manager["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [
        *container["args"],
        "--event-reflection-workers=0",
        "--secret-reflection-type=AllowList",
        "--labels-not-reflected=team",
    ]
    await api.replace(DEPLOYMENTS, manager, namespace="liqo")

    outcome = await asyncio.to_thread(harness.read, element, state)

    assert outcome.errors == []
    assert outcome.state is not None
    assert outcome.state["missing_objects"] == ["Deployment liqo/liqo-auth"]
    assert outcome.state["sharing_percentage"] == 40
    assert outcome.state["reflection"] == {
        **DEFAULT_REFLECTION,
        "event_workers": 0,
        "secret_type": "AllowList",
        "labels_not_reflected": ["team"],
    }
    planned = await asyncio.to_thread(harness.plan, element, config(pod_cidr=POD_CIDR), prior=outcome.state)
    assert planned.state is not None
    assert (planned.state["sharing_percentage"], planned.state["missing_objects"]) == (90, [])
    assert planned.state["reflection"] == DEFAULT_REFLECTION


async def test_an_update_recreates_what_is_missing_and_keeps_the_webhook_patch(
    provider: Provider, api: Client
) -> None:
    element, state = await create_installed(provider, api)
    await api.delete(DEPLOYMENTS, "liqo-auth", namespace="liqo")
    drifted = (await asyncio.to_thread(harness.read, element, state)).state
    assert drifted is not None
    cfg = config(pod_cidr=POD_CIDR, sharing_percentage=70)
    planned = (await asyncio.to_thread(harness.plan, element, cfg, prior=drifted)).state
    assert planned is not None

    async with installed_runtime(api, "liqo"):
        outcome = await asyncio.to_thread(harness.update, element, drifted, planned, cfg)

    assert outcome.errors == []
    assert outcome.state is not None
    await api.get(DEPLOYMENTS, "liqo-auth", namespace="liqo")
    identity = await api.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace="liqo")
    assert identity["data"][c.IDENTITY_SHARING_PERCENTAGE] == "70"
    assert identity["data"][c.IDENTITY_AUTH_URL] == AUTH_URL, "what the auth service wrote stays"
    webhook = await api.get(VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK)
    assert {hook["clientConfig"].get("caBundle") for hook in webhook["webhooks"]} == {CA_BUNDLE}
    reread = (await asyncio.to_thread(harness.read, element, outcome.state)).state
    assert reread == outcome.state, "a plan right after the update is empty"


async def test_read_reports_the_auth_service_type_and_an_update_puts_it_back_in_place(
    provider: Provider, api: Client
) -> None:
    element, state = await create_installed(provider, api)
    assert state["auth_service_type"] == "NodePort"
    assert (await api.get(SERVICES, c.AUTH_SERVICE, namespace="liqo"))["spec"]["type"] == "NodePort"
    https = {"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"}
    await api.patch(
        SERVICES, c.AUTH_SERVICE, {"spec": {"type": "ClusterIP", "ports": [https]}}, namespace="liqo"
    )
    drifted = (await asyncio.to_thread(harness.read, element, state)).state
    assert drifted is not None and drifted["auth_service_type"] == "ClusterIP"
    cfg = config(pod_cidr=POD_CIDR, auth_service_type="LoadBalancer")
    planned = await asyncio.to_thread(harness.plan, element, cfg, prior=drifted)
    assert planned.state is not None and planned.replace == []

    async with installed_runtime(api, "liqo"):
        outcome = await asyncio.to_thread(harness.update, element, drifted, planned.state, cfg)

    assert outcome.errors == []
    assert outcome.state is not None and outcome.state["auth_service_type"] == "LoadBalancer"
    service = await api.get(SERVICES, c.AUTH_SERVICE, namespace="liqo")
    assert service["spec"]["type"] == "LoadBalancer"
    assert service["spec"]["ports"][0]["nodePort"]


async def test_an_apply_waits_until_the_published_url_follows_the_service(
    provider: Provider, api: Client
) -> None:
    await api.create(NODES, {"metadata": {"name": "rome-w1"}})
    await api.patch_status(
        NODES,
        "rome-w1",
        {
            "status": {
                "addresses": [{"type": "InternalIP", "address": "172.18.0.9"}],
                "conditions": [{"type": "Ready", "status": "True", "reason": "Test"}],
            }
        },
    )
    element, planned, cfg = await asyncio.to_thread(
        plan_create, provider, pod_cidr=POD_CIDR, timeouts={"create": "8s", "update": None, "delete": None}
    )

    async with installed_runtime(api, "liqo"):  # it publishes AUTH_URL, not the node's address
        outcome = await asyncio.to_thread(harness.create, element, planned, cfg)

    [(summary, detail, _)] = outcome.errors
    assert summary == "Timed out waiting for the Liqo runtime in namespace liqo to become ready"
    node_port = (await api.get(SERVICES, c.AUTH_SERVICE, namespace="liqo"))["spec"]["ports"][0]["nodePort"]
    assert f"the auth service publishes {AUTH_URL}, not yet https://172.18.0.9:{node_port}" in detail


async def test_read_of_an_installation_whose_identity_is_gone_removes_it(
    provider: Provider, api: Client
) -> None:
    element, state = await create_installed(provider, api)
    await api.delete(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace="liqo")

    outcome = await asyncio.to_thread(harness.read, element, state)

    assert (outcome.state, outcome.errors) == (None, [])


async def test_import_by_namespace_reads_the_whole_installation(provider: Provider, api: Client) -> None:
    element, state = await create_installed(provider, api)

    imported = await asyncio.to_thread(harness.import_, element, "liqo")

    assert imported.errors == []
    assert imported.state is not None
    assert imported.state == {**state, "cluster_labels": None, "timeouts": None}
    replanned = await asyncio.to_thread(
        harness.plan, element, config(pod_cidr=POD_CIDR), prior=imported.state
    )
    assert replanned.state == imported.state, "a plan right after the import is empty"


def test_import_of_a_namespace_without_liqo_is_an_error(provider: Provider) -> None:
    outcome = harness.import_(resource(provider), "nothing-here")

    [(summary, detail, _)] = outcome.errors
    assert summary == "Cannot import liqo_install"
    assert "There is no Liqo installation in namespace nothing-here" in detail


async def add_peering(api: Client, name: str = "milan") -> None:
    """A ForeignCluster, as a peering would have; no webhook server runs here, so its configuration goes."""
    with contextlib.suppress(NotFoundError):
        await api.delete(VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK)
    body = {
        "metadata": {"name": name, "finalizers": [c.FINALIZER_FOREIGNCLUSTER]},
        "spec": {"clusterID": str(uuid.uuid4())},
    }
    await api.create(FOREIGNCLUSTERS, body)


async def test_destroy_is_refused_while_peerings_exist(provider: Provider, api: Client) -> None:
    element, state = await create_installed(provider, api)
    await add_peering(api)
    await api.create(NAMESPACES, {"metadata": {"name": "apps"}})
    await api.create(
        NAMESPACEOFFLOADINGS, {"metadata": {"name": "offloading", "namespace": "apps"}}, namespace="apps"
    )

    planned = await asyncio.to_thread(harness.plan_destroy, element, state)
    deleted = await asyncio.to_thread(harness.delete, element, state)

    assert planned.errors == [], "the same destroy may remove the liqo_peer first: checked when it runs"
    [(summary, detail, path)] = deleted.errors
    assert (summary, path) == ("Liqo is still in use", ["force"])
    assert "ForeignCluster milan" in detail
    assert "NamespaceOffloading apps/offloading" in detail
    await api.get(DEPLOYMENTS, "liqo-auth", namespace="liqo")


async def test_a_forced_destroy_removes_the_peerings_first(provider: Provider, api: Client) -> None:
    element, state = await create_installed(provider, api)
    await add_peering(api)
    state = {**state, "force": True, "timeouts": {"create": None, "update": None, "delete": "2s"}}

    outcome = await asyncio.to_thread(harness.delete, element, state)

    assert outcome.errors == []
    [(summary, detail)] = outcome.warnings
    assert summary == "Peering removed by force"
    assert "ForeignCluster milan did not finish its clean-up in time" in detail
    with pytest.raises(NotFoundError):
        await api.get(FOREIGNCLUSTERS, "milan")


async def test_destroy_keeps_the_identity_so_a_reinstall_keeps_the_cluster_id(
    provider: Provider, api: Client
) -> None:
    element, state = await create_installed(provider, api)

    outcome = await asyncio.to_thread(harness.delete, element, state)

    assert outcome.errors == []
    for name in ("liqo-auth", "liqo-webhook", "liqo-controller-manager"):
        with pytest.raises(NotFoundError):
            await api.get(DEPLOYMENTS, name, namespace="liqo")
    with pytest.raises(NotFoundError):
        await api.get(VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK)
    await api.get(CRDS, FOREIGNCLUSTERS.plural + "." + FOREIGNCLUSTERS.group)
    assert (await asyncio.to_thread(harness.read, element, state)).state is not None, "the identity is left"
    _, again = await create_installed(provider, api)
    assert again["cluster_id"] == state["cluster_id"]


async def add_serving_key(api: Client, namespace: str = "liqo") -> dict[str, Any]:
    """The auth service's serving key, as the controller manager creates it once the runtime runs."""
    secret = serving_key_secret(namespace=namespace, key=generate_key())
    return await api.create(
        SECRETS, secret, namespace=namespace, field_manager=c.FIELD_MANAGER_CONTROLLER_MANAGER
    )


async def test_destroy_keeps_the_serving_key_so_consumers_still_trust_a_reinstall(
    provider: Provider, api: Client
) -> None:
    element, state = await create_installed(provider, api)
    pinned = (await add_serving_key(api))["data"]

    outcome = await asyncio.to_thread(harness.delete, element, state)

    assert outcome.errors == []
    kept = await api.get(SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace="liqo")
    assert kept["data"] == pinned, "consumers pinned this key: a new one makes them refuse the provider"
    await create_installed(provider, api)
    again = await api.get(SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace="liqo")
    assert again["data"] == pinned


async def test_a_purge_removes_the_namespace_crds_identity_and_serving_key(
    provider: Provider, api: Client, emulator: Path
) -> None:
    element, state = await create_installed(provider, api)
    # an object of a runtime kind whose finalizer nobody will remove once the runtime is gone
    await api.create(NAMESPACES, {"metadata": {"name": "liqo-tenant-rome"}})
    tenant = {
        "metadata": {"name": "rome", "finalizers": [c.FINALIZER_TENANT]},
        "spec": {"clusterID": str(uuid.uuid4())},
    }
    await api.create(TENANTS, tenant, namespace="liqo-tenant-rome")
    await add_serving_key(api)
    state = {**state, "purge": True, "timeouts": {"create": None, "update": None, "delete": "20s"}}

    async with running(emulator, namespace_controller.setup):
        outcome = await asyncio.to_thread(harness.delete, element, state)

    assert outcome.errors == []
    for get in (
        api.get(NAMESPACES, "liqo"),
        api.get(CRDS, TENANTS.plural + "." + TENANTS.group),
        api.get(TENANTS, "rome", namespace="liqo-tenant-rome"),
        api.get(SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace="liqo"),
    ):
        with pytest.raises(NotFoundError):
            await get
    assert (await asyncio.to_thread(harness.read, element, state)).state is None


def test_a_destroy_that_cannot_reach_the_cluster_fails_and_keeps_it(gone: Provider) -> None:
    outcome = harness.delete(resource(gone), applied_state())

    [(summary, detail, path)] = outcome.errors
    assert (summary, path) == (
        "Cannot uninstall the Liqo runtime from namespace liqo: the cluster cannot be reached",
        ["force"],
    )
    assert detail.startswith(
        f"The cluster of context 'gone' ({gone.kube.host}) cannot be reached: the connection was refused (nothing "
        "listens there). Check that it is running and that its address (host and port) is right. Nothing was "
        "deleted, so the resource stays in the state: run the destroy again once the cluster answers.\n\n"
        "If this cluster is gone for good, set `force = true`"
    )
    assert outcome.warnings == []


def test_a_forced_destroy_on_a_cluster_that_is_gone_drops_it_with_a_warning(gone: Provider) -> None:
    outcome = harness.delete(resource(gone), {**applied_state(), "force": True})

    assert outcome.errors == []
    [(summary, detail)] = outcome.warnings
    assert summary == "Cluster unreachable: installation dropped from the state"
    assert detail == (
        f"The cluster of context 'gone' ({gone.kube.host}) cannot be reached: the connection was refused (nothing "
        "listens there). Check that it is running and that its address (host and port) is right. So the Liqo "
        "runtime in namespace liqo was not deleted; it is removed from the state, as `force` is set. If the "
        "cluster comes back, uninstall it there by hand or import it again."
    )


def test_setting_force_alone_updates_without_reaching_the_cluster(gone: Provider) -> None:
    state = applied_state()

    outcome = harness.update(resource(gone), state, {**state, "force": True}, config(force=True))

    assert outcome.errors == []
    assert outcome.state == {**state, "force": True}


def test_a_refresh_of_a_cluster_that_is_gone_says_how_to_destroy_or_forget_it(gone: Provider) -> None:
    outcome = harness.read(resource(gone), applied_state())

    [(summary, detail, _)] = outcome.errors
    assert summary == "Failed to read the Liqo installation in namespace liqo"
    assert detail == (
        f"The cluster of context 'gone' ({gone.kube.host}) cannot be reached: the connection was refused (nothing "
        "listens there). Check that it is running and that its address (host and port) is right.\n\n"
        "If this cluster is gone for good, set `force = true` on its liqo resources and record it without "
        "reading the cluster (`terraform apply -refresh=false`), then `terraform destroy -refresh=false`: a "
        "forced delete drops a resource whose cluster cannot be reached from the state, and what it made stays "
        "there. Or forget the resource with `terraform state rm <address>` (its address is named above)."
    )
