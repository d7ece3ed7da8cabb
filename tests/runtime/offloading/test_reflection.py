"""Resource reflection on emulated clusters: ConfigMaps, Secrets, Services, EndpointSlices, Ingresses out, Events back.

rome (consumer) peers with naples (provider) and offloads `work` (twin `work-rome`). The
harness runs no node agents: the tests write what kubelets would (pod status), and the
playground's EndpointSlice controller runs in both clusters as kube-controller-manager's
would. Everything else is the runtime: the virtual kubelet's reflectors, the provider's
ShadowEndpointSlice controller, the VirtualNode controller's RoleBindings.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from runtime.api import constants as c
from runtime.api.crds import CONFIGURATIONS, NAMESPACEOFFLOADINGS, SHADOWENDPOINTSLICES, TENANTS
from runtime.api.kinds import (
    CONFIGMAPS,
    ENDPOINTSLICES,
    EVENTS,
    INGRESSES,
    PODS,
    ROLEBINDINGS,
    SECRETS,
    SERVICES,
)
from runtime.api.objects import JSON
from runtime.core import Client
from runtime.forge.configmaps import remote_configmap_name
from runtime.forge.ipam import translate
from runtime.forge.reflection import ReflectionOptions
from tests.runtime.peering.harness import CONTROLLER_OPTIONS, Cluster, Clusters

from .support import get
from .test_pods import TWIN, local_status, pod, running, setup

VK = "liqo-tenant-naples/liqo-vk-naples"


async def gone(client: Client, resource: Any, name: str, namespace: str) -> bool:
    return await get(client, resource, name, namespace=namespace) is None


async def events_of(cluster: Cluster, namespace: str, name: str) -> list[JSON]:
    listed = (await cluster.admin.list(EVENTS, namespace=namespace)).items
    return [e for e in listed if e["involvedObject"].get("name") == name]


async def has_event(cluster: Cluster, namespace: str, name: str, reason: str) -> JSON | None:
    return next((e for e in await events_of(cluster, namespace, name) if e["reason"] == reason), None)


def data(**values: str) -> dict[str, str]:
    return {key: base64.b64encode(value.encode()).decode() for key, value in values.items()}


async def scrape(clusters: Clusters) -> str:
    port = clusters.virtual_kubelet_health_ports[VK]
    async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/metrics") as answer:
        return await answer.text()


def sample(scraped: str, prefix: str) -> float | None:
    """The value of the one sample line starting with `prefix` (None: no such line)."""
    for line in scraped.splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    return None


@pytest.mark.slow
async def test_configmaps_and_secrets_follow_the_local_object(clusters: Clusters) -> None:
    rome, naples = await setup(clusters)
    await rome.admin.create(
        CONFIGMAPS, {"metadata": {"name": "settings"}, "data": {"mode": "fast"}}, namespace="work"
    )
    await rome.admin.create(
        SECRETS,
        {"metadata": {"name": "creds"}, "type": "Opaque", "data": data(password="s3cret")},
        namespace="work",
    )

    async def copy(resource: Any, name: str, key: str = "", value: Any = None) -> JSON | None:
        found = await get(naples.admin, resource, name, namespace=TWIN)
        if found is None or (key and (found.get("data") or {}).get(key) != value):
            return None
        return found

    settings = await clusters.eventually(lambda: copy(CONFIGMAPS, "settings", "mode", "fast"))
    assert settings["metadata"]["labels"] == {
        c.LABEL_REFLECTION_MANAGED_BY: c.MANAGED_BY_REFLECTION,
        c.LABEL_ORIGIN_CLUSTER_ID: rome.cluster_id,
    }
    creds = await clusters.eventually(lambda: copy(SECRETS, "creds"))
    assert base64.b64decode(creds["data"]["password"]) == b"s3cret"
    # the virtual kubelet reads them through a RoleBinding in the offloaded namespace only
    binding = await rome.admin.get(ROLEBINDINGS, "liqo-vk-naples", namespace="work")
    assert binding["roleRef"]["name"] == "liqo-virtual-kubelet-reflection"
    assert await clusters.eventually(
        lambda: has_event(rome, "work", "settings", c.REASON_SUCCESSFUL_REFLECTION)
    )

    # the root CA goes under its own name; naples' own is left alone
    root_ca = remote_configmap_name("kube-root-ca.crt", origin_cluster_id=rome.cluster_id)
    local_ca = await rome.admin.get(CONFIGMAPS, "kube-root-ca.crt", namespace="work")
    copied_ca = await clusters.eventually(lambda: copy(CONFIGMAPS, root_ca))
    assert copied_ca["data"] == local_ca["data"]
    naples_ca = await naples.admin.get(CONFIGMAPS, "kube-root-ca.crt", namespace=TWIN)
    assert c.LABEL_ORIGIN_CLUSTER_ID not in (naples_ca["metadata"].get("labels") or {})

    # a local edit reaches the copy; edits of the copy are reverted; a deleted copy comes back
    await rome.admin.patch(CONFIGMAPS, "settings", {"data": {"mode": "slow"}}, namespace="work")
    await clusters.eventually(lambda: copy(CONFIGMAPS, "settings", "mode", "slow"))
    await naples.admin.patch(
        CONFIGMAPS,
        "settings",
        {"data": {"mode": "hacked"}, "metadata": {"labels": {"x": "y"}}},
        namespace=TWIN,
    )

    async def reverted() -> JSON | None:
        found = await copy(CONFIGMAPS, "settings", "mode", "slow")
        return found if found is not None and "x" not in found["metadata"]["labels"] else None

    await clusters.eventually(reverted)
    uid = (await naples.admin.get(SECRETS, "creds", namespace=TWIN))["metadata"]["uid"]
    await naples.admin.delete(SECRETS, "creds", namespace=TWIN)

    async def recreated() -> JSON | None:
        found = await copy(SECRETS, "creds")
        return found if found is not None and found["metadata"]["uid"] != uid else None

    await clusters.eventually(recreated)

    # skip-reflection removes the copy (and says so); without it the copy comes back
    await rome.admin.patch(
        CONFIGMAPS,
        "settings",
        {"metadata": {"annotations": {c.ANNOTATION_SKIP_REFLECTION: "true"}}},
        namespace="work",
    )
    await clusters.eventually(lambda: gone(naples.admin, CONFIGMAPS, "settings", TWIN))
    assert await clusters.eventually(
        lambda: has_event(rome, "work", "settings", c.REASON_REFLECTION_DISABLED)
    )
    await rome.admin.patch(
        CONFIGMAPS,
        "settings",
        {"metadata": {"annotations": {c.ANNOTATION_SKIP_REFLECTION: None}}},
        namespace="work",
    )
    await clusters.eventually(lambda: copy(CONFIGMAPS, "settings", "mode", "slow"))

    # an immutable ConfigMap made again with other data: its copy is made again too
    await rome.admin.create(
        CONFIGMAPS, {"metadata": {"name": "frozen"}, "data": {"v": "1"}, "immutable": True}, namespace="work"
    )
    await clusters.eventually(lambda: copy(CONFIGMAPS, "frozen", "v", "1"))
    await rome.admin.delete(CONFIGMAPS, "frozen", namespace="work")
    await rome.admin.create(
        CONFIGMAPS, {"metadata": {"name": "frozen"}, "data": {"v": "2"}, "immutable": True}, namespace="work"
    )
    await clusters.eventually(lambda: copy(CONFIGMAPS, "frozen", "v", "2"))

    # a provider object of the same name is not ours: left alone, and the local object says why
    await naples.admin.create(
        CONFIGMAPS, {"metadata": {"name": "theirs"}, "data": {"owner": "naples"}}, namespace=TWIN
    )
    await rome.admin.create(
        CONFIGMAPS, {"metadata": {"name": "theirs"}, "data": {"owner": "rome"}}, namespace="work"
    )
    refused = await clusters.eventually(lambda: has_event(rome, "work", "theirs", c.REASON_FAILED_REFLECTION))
    assert refused["type"] == "Warning" and "was not reflected from here" in refused["message"]
    assert (await naples.admin.get(CONFIGMAPS, "theirs", namespace=TWIN))["data"] == {"owner": "naples"}

    # deleting the local objects removes their copies
    await rome.admin.delete(CONFIGMAPS, "settings", namespace="work")
    await rome.admin.delete(SECRETS, "creds", namespace="work")
    await clusters.eventually(lambda: gone(naples.admin, CONFIGMAPS, "settings", TWIN))
    await clusters.eventually(lambda: gone(naples.admin, SECRETS, "creds", TWIN))

    # unoffloading: the RoleBinding goes with the reflection
    await rome.admin.delete(NAMESPACEOFFLOADINGS, "offloading", namespace="work")
    await clusters.eventually(lambda: gone(rome.admin, ROLEBINDINGS, "liqo-vk-naples", "work"), within=60)


def service(**annotations: str) -> JSON:
    return {
        "metadata": {"name": "web", "annotations": annotations},
        "spec": {
            "type": "NodePort",
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
        },
    }


async def addresses(client: Client, namespace: str, service_name: str) -> list[str]:
    """Every ready address the EndpointSlices of a Service list, sorted."""
    slices = await client.list(
        ENDPOINTSLICES, namespace=namespace, label_selector=f"{c.LABEL_SERVICE_NAME}={service_name}"
    )
    return sorted(
        address
        for s in slices.items
        for endpoint in s.get("endpoints") or []
        if (endpoint.get("conditions") or {}).get("ready") is not False
        for address in endpoint.get("addresses") or []
    )


async def local_pod_running(rome: Cluster, name: str, ip: str) -> None:
    """What rome's kubelet would report about a pod on its own worker."""
    await rome.admin.patch_status(
        PODS,
        name,
        {
            "status": {
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "conditions": [{"type": "Ready", "status": "True"}],
            }
        },
        namespace="work",
    )


@pytest.mark.slow
async def test_a_provider_keeps_a_consumers_node_ports_off_its_nodes_by_default(clusters: Clusters) -> None:
    """naples installed with the default max_consumer_service_type (ClusterIP): the copy of a NodePort
    Service is a ClusterIP Service (offloaded pods find it by name), and the reflector takes it as in sync."""
    rome, naples = await setup(clusters)
    await rome.admin.create(
        SERVICES, service(**{c.ANNOTATION_FORCE_REMOTE_NODE_PORT: "true"}), namespace="work"
    )
    remote = await clusters.eventually(lambda: get(naples.admin, SERVICES, "web", namespace=TWIN))
    assert remote["spec"]["type"] == "ClusterIP" and remote["spec"]["clusterIP"]
    assert all("nodePort" not in port for port in remote["spec"]["ports"])
    assert "externalTrafficPolicy" not in remote["spec"]
    await rome.admin.patch(SERVICES, "web", {"metadata": {"labels": {"tier": "front"}}}, namespace="work")
    relabelled = await clusters.eventually(
        lambda: _labelled(naples.admin, "web", TWIN, "tier", "front"), within=20
    )
    await asyncio.sleep(2)
    settled = await naples.admin.get(SERVICES, "web", namespace=TWIN)
    assert settled["metadata"]["resourceVersion"] == relabelled["metadata"]["resourceVersion"]
    assert settled["spec"]["type"] == "ClusterIP"


async def _labelled(client: Client, name: str, namespace: str, key: str, value: str) -> JSON | None:
    found = await get(client, SERVICES, name, namespace=namespace)
    return found if ((found or {}).get("metadata") or {}).get("labels", {}).get(key) == value else None


@pytest.mark.slow
async def test_services_and_their_endpoints_on_both_sides(tmp_path: Path) -> None:
    """naples lets consumers keep NodePort Services (max_consumer_service_type NodePort), as Liqo does."""
    async with Clusters(tmp_path, webhook=True, max_consumer_service_type="NodePort") as clusters:
        await _services_and_their_endpoints_on_both_sides(clusters)


async def _services_and_their_endpoints_on_both_sides(clusters: Clusters) -> None:
    rome, naples = await setup(clusters)
    await rome.admin.create(
        SERVICES, service(**{c.ANNOTATION_FORCE_REMOTE_NODE_PORT: "true"}), namespace="work"
    )
    local_service = await rome.admin.get(SERVICES, "web", namespace="work")
    remote_service = await clusters.eventually(lambda: get(naples.admin, SERVICES, "web", namespace=TWIN))
    assert remote_service["spec"]["clusterIP"]  # naples' own
    assert remote_service["spec"]["ports"][0]["nodePort"] == local_service["spec"]["ports"][0]["nodePort"]
    assert remote_service["spec"]["selector"] == {"app": "web"}

    # one replica at home, one offloaded: both lists name both
    await rome.admin.create(PODS, pod("web-home", nodeName=f"{rome.name}-worker"), namespace="work")
    await local_pod_running(rome, "web-home", "10.244.1.5")
    await rome.admin.create(PODS, pod("web-away"), namespace="work")
    await clusters.eventually(lambda: get(naples.admin, PODS, "web-away", namespace=TWIN))
    # naples' scheduler and kubelet: bound to its worker, running
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web-away"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": f"{naples.name}-worker"},
    }
    await naples.admin.create(PODS, binding, namespace=TWIN, subresource="binding")
    await running(naples, "web-away", ip="10.244.0.7")

    # rome sees the offloaded replica at the address its IPAM maps naples' pod CIDR to (the two overlap);
    # naples sees its own at its own address and rome's replica where naples' IPAM maps rome's pod CIDR
    async def mapped_both_ways() -> JSON | None:
        found = await get(rome.admin, CONFIGURATIONS, "naples", namespace="liqo-tenant-naples")
        status = (found or {}).get("status") or {}
        return found if "remote" in status and "local" in status else None

    configuration = await clusters.eventually(mapped_both_ways)
    away = translate(
        "10.244.0.7", source="10.244.0.0/16", target=configuration["status"]["remote"]["cidr"]["pod"][0]
    )
    home = translate(
        "10.244.1.5", source="10.244.0.0/16", target=configuration["status"]["local"]["cidr"]["pod"][0]
    )
    assert away != "10.244.0.7" and home != "10.244.1.5"

    async def listed(client: Client, namespace: str, wanted: list[str]) -> bool:
        return await addresses(client, namespace, "web") == sorted(wanted)

    async def both(client: Client, namespace: str) -> bool:
        return await listed(client, namespace, ["10.244.0.7", home])

    await clusters.eventually(lambda: listed(rome.admin, "work", [away, "10.244.1.5"]), within=30)
    await clusters.eventually(lambda: both(naples.admin, TWIN), within=30)
    shadows = (await naples.admin.list(SHADOWENDPOINTSLICES, namespace=TWIN)).items
    assert len(shadows) == 1
    assert [e["addresses"] for e in shadows[0]["spec"]["template"]["endpoints"]] == [[home]]
    reflected = (
        await naples.admin.list(
            ENDPOINTSLICES,
            namespace=TWIN,
            label_selector=f"{c.LABEL_REFLECTION_MANAGED_BY}=shadowendpointslice",
        )
    ).items
    assert [s["metadata"]["labels"][c.LABEL_ENDPOINTSLICE_MANAGED_BY] for s in reflected] == [
        c.ENDPOINTSLICE_MANAGED_BY_REFLECTION
    ]
    # an edit of the provider's EndpointSlice is reverted
    await naples.admin.patch(
        ENDPOINTSLICES, reflected[0]["metadata"]["name"], {"endpoints": []}, namespace=TWIN
    )
    await clusters.eventually(lambda: both(naples.admin, TWIN), within=30)

    # an Ingress goes without the consumer's class
    await rome.admin.create(
        INGRESSES,
        {
            "metadata": {"name": "web"},
            "spec": {
                "ingressClassName": "rome-nginx",
                "rules": [
                    {
                        "host": "web.example",
                        "http": {
                            "paths": [
                                {
                                    "path": "/",
                                    "pathType": "Prefix",
                                    "backend": {"service": {"name": "web", "port": {"number": 80}}},
                                }
                            ]
                        },
                    }
                ],
            },
        },
        namespace="work",
    )
    ingress = await clusters.eventually(lambda: get(naples.admin, INGRESSES, "web", namespace=TWIN))
    assert "ingressClassName" not in ingress["spec"] and ingress["spec"]["rules"][0]["host"] == "web.example"

    # deleting the Service removes every copy: the Service, the ShadowEndpointSlice, the provider's slice
    await rome.admin.delete(SERVICES, "web", namespace="work")

    async def all_gone() -> bool:
        return (
            await gone(naples.admin, SERVICES, "web", TWIN)
            and not (await naples.admin.list(SHADOWENDPOINTSLICES, namespace=TWIN)).items
            and not (
                await naples.admin.list(
                    ENDPOINTSLICES,
                    namespace=TWIN,
                    label_selector=f"{c.LABEL_REFLECTION_MANAGED_BY}=shadowendpointslice",
                )
            ).items
        )

    await clusters.eventually(all_gone, within=30)


@pytest.mark.slow
async def test_provider_events_appear_on_the_local_pod(clusters: Clusters) -> None:
    rome, naples = await setup(clusters)
    await rome.admin.create(PODS, pod("web-1"), namespace="work")
    remote = await clusters.eventually(lambda: get(naples.admin, PODS, "web-1", namespace=TWIN))
    event = {
        "metadata": {"name": "web-1.17a0", "namespace": TWIN},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "web-1",
            "namespace": TWIN,
            "uid": remote["metadata"]["uid"],
        },
        "reason": "BackOff",
        "message": "Back-off pulling image nginx",
        "type": "Warning",
        "count": 1,
        "firstTimestamp": "2024-05-01T10:00:00Z",
        "lastTimestamp": "2024-05-01T10:00:00Z",
        "source": {"component": "kubelet", "host": "naples-worker"},
    }
    # an Event of the provider about something never reflected from here stays there
    stranger = {"kind": "Pod", "apiVersion": "v1", "name": "stranger", "namespace": TWIN}
    await naples.admin.create(
        EVENTS,
        {**event, "metadata": {"name": "other.1", "namespace": TWIN}, "involvedObject": stranger},
        namespace=TWIN,
    )
    await naples.admin.create(EVENTS, event, namespace=TWIN)
    local_pod = await rome.admin.get(PODS, "web-1", namespace="work")
    copy = await clusters.eventually(lambda: get(rome.admin, EVENTS, "web-1.17a0", namespace="work"))
    assert copy["involvedObject"]["uid"] == local_pod["metadata"]["uid"]
    assert (copy["reason"], copy["type"], copy["source"]["component"]) == (
        "BackOff",
        "Warning",
        "kubelet (naples)",
    )

    await naples.admin.patch(
        EVENTS, "web-1.17a0", {"count": 5, "lastTimestamp": "2024-05-01T10:05:00Z"}, namespace=TWIN
    )

    async def counted() -> bool:
        found = await get(rome.admin, EVENTS, "web-1.17a0", namespace="work")
        return found is not None and found["count"] == 5

    await clusters.eventually(counted)
    await naples.admin.delete(EVENTS, "web-1.17a0", namespace=TWIN)
    await clusters.eventually(lambda: gone(rome.admin, EVENTS, "web-1.17a0", "work"))
    assert await gone(rome.admin, EVENTS, "other.1", "work")


@pytest.mark.slow
async def test_a_refused_reflection_is_an_event_with_the_providers_reason(clusters: Clusters) -> None:
    rome, naples = await setup(clusters)
    # a Drained tenant loses its rights in its twin namespaces: every write of its reflection is Forbidden
    (tenant,) = (await naples.admin.list(TENANTS)).items
    await naples.admin.patch(
        TENANTS,
        tenant["metadata"]["name"],
        {"spec": {"tenantCondition": "Drained"}},
        namespace=tenant["metadata"]["namespace"],
    )
    await clusters.eventually(lambda: gone(naples.admin, ROLEBINDINGS, tenant["metadata"]["namespace"], TWIN))
    await rome.admin.create(CONFIGMAPS, {"metadata": {"name": "late"}, "data": {"a": "b"}}, namespace="work")
    refused = await clusters.eventually(
        lambda: has_event(rome, "work", "late", c.REASON_FAILED_REFLECTION), within=30
    )
    assert refused["type"] == "Warning"
    assert "naples" in refused["message"] and "Forbidden" in refused["message"]
    scraped = await scrape(clusters)
    errors = sample(scraped, 'liqo_virtual_kubelet_reflection_error_counter_total{cluster_id="')
    assert errors is not None and errors >= 1
    assert await has_event(rome, "work", "late", c.REASON_SUCCESSFUL_REFLECTION) is None

    # the tenant back: the retried write succeeds, and the recovery is an Event of its own
    await naples.admin.patch(
        TENANTS,
        tenant["metadata"]["name"],
        {"spec": {"tenantCondition": "Active"}},
        namespace=tenant["metadata"]["namespace"],
    )
    await clusters.eventually(lambda: get(naples.admin, CONFIGMAPS, "late", namespace=TWIN), within=60)
    recovered = await clusters.eventually(
        lambda: has_event(rome, "work", "late", c.REASON_SUCCESSFUL_REFLECTION), within=30
    )
    assert recovered["type"] == "Normal" and "naples" in recovered["message"]


@pytest.mark.slow
async def test_the_virtual_kubelet_serves_its_reflection_metrics(clusters: Clusters) -> None:
    rome, naples = await setup(clusters)
    for i in range(3):
        await rome.admin.create(
            CONFIGMAPS, {"metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}}, namespace="work"
        )
    await rome.admin.create(PODS, pod("web-1"), namespace="work")
    await clusters.eventually(lambda: get(naples.admin, PODS, "web-1", namespace=TWIN))
    await running(naples, "web-1")

    async def reported() -> bool:
        return (await local_status(rome, "web-1")).get("phase") == "Running"

    await clusters.eventually(reported)
    labels = 'namespace="work",node_name="liqo-naples",reflector_resource="configmap"'

    async def metrics() -> str | None:
        scraped = await scrape(clusters)
        # three ConfigMaps and kube-root-ca.crt
        line = f'liqo_virtual_kubelet_reflection_item_counter{{cluster_id="{naples.cluster_id}",{labels}}}'
        return scraped if sample(scraped, line) == 4 else None

    scraped = await clusters.eventually(metrics)
    assert sample(
        scraped, 'liqo_virtual_kubelet_reflection_latency_seconds_count{reflector_resource="configmap"}'
    )
    assert (
        sample(scraped, 'liqo_virtual_kubelet_offloaded_pods{node_name="liqo-naples",phase="Running"}') == 1
    )
    assert sample(scraped, 'workqueue_depth{name="configmap-reflection"}') is not None
    assert sample(scraped, 'workqueue_depth{name="pod-reflection"}') is not None
    # what it asked of each cluster: creates on the provider, no list beyond the informers' first ones
    assert sample(scraped, 'rest_client_requests_total{client="provider",code="201",verb="create"}')
    assert sample(scraped, 'rest_client_requests_total{client="local",code="200",verb="list"}')
    # the webhook's metrics, for the record: its informers
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{rome.webhook_health_port}/metrics") as answer,
    ):
        assert (
            'informer_lists_total{resource="namespaceoffloadings.offloading.liqo.io"}' in await answer.text()
        )


@pytest.fixture
async def no_secrets(clusters: Clusters) -> Clusters:
    clusters.options = dataclasses.replace(CONTROLLER_OPTIONS, reflection=ReflectionOptions(secret_workers=0))
    return clusters


@pytest.mark.slow
async def test_a_kind_with_no_workers_is_not_reflected(no_secrets: Clusters) -> None:
    rome, naples = await setup(no_secrets)
    await rome.admin.create(SECRETS, {"metadata": {"name": "creds"}, "data": data(a="b")}, namespace="work")
    await rome.admin.create(
        CONFIGMAPS, {"metadata": {"name": "settings"}, "data": {"a": "b"}}, namespace="work"
    )
    await no_secrets.eventually(lambda: get(naples.admin, CONFIGMAPS, "settings", namespace=TWIN))
    assert await gone(naples.admin, SECRETS, "creds", TWIN)
    scraped = await scrape(no_secrets)
    assert 'workqueue_depth{name="secret-reflection"}' not in scraped
    # pods still get their token Secrets: those go with the pods
    await rome.admin.create(PODS, pod("web-1"), namespace="work")
    await no_secrets.eventually(lambda: get(naples.admin, PODS, "web-1", namespace=TWIN))


@pytest.fixture
async def allow_listed(clusters: Clusters) -> Clusters:
    clusters.options = dataclasses.replace(
        CONTROLLER_OPTIONS,
        reflection=ReflectionOptions(
            secret_type="AllowList",
            service_type="AllowList",
            labels_not_reflected=("team",),
            annotations_not_reflected=("example.com/private",),
        ),
    )
    return clusters


@pytest.mark.slow
async def test_the_reflection_policy_decides_per_kind_and_per_object(allow_listed: Clusters) -> None:
    rome, naples = await setup(allow_listed)
    allow = {c.ANNOTATION_ALLOW_REFLECTION: "true"}
    await rome.admin.create(SECRETS, {"metadata": {"name": "plain"}, "data": data(a="b")}, namespace="work")
    await rome.admin.create(
        SECRETS, {"metadata": {"name": "shared", "annotations": allow}, "data": data(a="b")}, namespace="work"
    )
    await rome.admin.create(
        CONFIGMAPS,
        {
            "metadata": {
                "name": "settings",
                "labels": {"team": "a", "app": "web"},
                "annotations": {"example.com/private": "x", "note": "kept"},
            },
            "data": {"a": "b"},
        },
        namespace="work",
    )
    await rome.admin.create(
        CONFIGMAPS,
        {"metadata": {"name": "skipped", "annotations": {c.ANNOTATION_SKIP_REFLECTION: "true"}}},
        namespace="work",
    )
    ports = [{"port": 80, "targetPort": 8080}]
    await rome.admin.create(
        SERVICES,
        {"metadata": {"name": "hidden"}, "spec": {"selector": {"app": "x"}, "ports": ports}},
        namespace="work",
    )
    await rome.admin.create(
        SERVICES,
        {
            "metadata": {"name": "shown", "annotations": allow},
            "spec": {"selector": {"app": "x"}, "ports": ports},
        },
        namespace="work",
    )
    await rome.admin.create(
        PODS,
        {**pod("web-1"), "metadata": {"name": "web-1", "labels": {"team": "a", "app": "web"}}},
        namespace="work",
    )

    # DenyList (ConfigMaps): every one but the skipped; the keys never reflected stay home
    settings = await allow_listed.eventually(
        lambda: get(naples.admin, CONFIGMAPS, "settings", namespace=TWIN)
    )
    assert "team" not in settings["metadata"]["labels"] and settings["metadata"]["labels"]["app"] == "web"
    assert settings["metadata"]["annotations"] == {"note": "kept"}
    # AllowList (Secrets, Services): only the annotated; EndpointSlices follow their Service
    await allow_listed.eventually(lambda: get(naples.admin, SECRETS, "shared", namespace=TWIN))
    await allow_listed.eventually(lambda: get(naples.admin, SERVICES, "shown", namespace=TWIN))
    shadow_pod = await allow_listed.eventually(lambda: get(naples.admin, PODS, "web-1", namespace=TWIN))
    assert "team" not in shadow_pod["metadata"]["labels"]
    assert await gone(naples.admin, SECRETS, "plain", TWIN)
    assert await gone(naples.admin, CONFIGMAPS, "skipped", TWIN)
    assert await gone(naples.admin, SERVICES, "hidden", TWIN)

    async def shadow_slices_of() -> set[str]:
        slices = (await naples.admin.list(SHADOWENDPOINTSLICES, namespace=TWIN)).items
        return {(s["metadata"].get("labels") or {}).get(c.LABEL_SERVICE_NAME, "") for s in slices}

    assert await allow_listed.eventually(lambda: shadow_slices_of()) == {"shown"}

    # taking the annotation away removes the copy; adding it to another reflects that one
    await rome.admin.patch(
        SECRETS,
        "shared",
        {"metadata": {"annotations": {c.ANNOTATION_ALLOW_REFLECTION: None}}},
        namespace="work",
    )
    await rome.admin.patch(SECRETS, "plain", {"metadata": {"annotations": allow}}, namespace="work")
    await allow_listed.eventually(lambda: get(naples.admin, SECRETS, "plain", namespace=TWIN))
    await allow_listed.eventually(lambda: gone(naples.admin, SECRETS, "shared", TWIN))


@pytest.mark.slow
async def test_a_virtual_kubelet_killed_during_a_burst_converges_and_leaves_no_orphan(
    clusters: Clusters,
) -> None:
    rome, naples = await setup(clusters)
    names = [f"cm-{i}" for i in range(30)]
    for name in names:
        await rome.admin.create(
            CONFIGMAPS, {"metadata": {"name": name}, "data": {"v": "0"}}, namespace="work"
        )

    async def copies(version: str, expected: list[str]) -> bool:
        listed = (
            await naples.admin.list(
                CONFIGMAPS, namespace=TWIN, label_selector=f"{c.LABEL_ORIGIN_CLUSTER_ID}={rome.cluster_id}"
            )
        ).items
        found = {
            cm["metadata"]["name"]: cm["data"].get("v") for cm in listed if cm["metadata"]["name"] in names
        }
        extra = (
            {cm["metadata"]["name"] for cm in listed}
            - set(expected)
            - {remote_configmap_name("kube-root-ca.crt", origin_cluster_id=rome.cluster_id)}
        )
        return found == dict.fromkeys(expected, version) and not extra

    await clusters.eventually(lambda: copies("0", names), within=60)

    async def burst(version: str, edits: list[str]) -> None:
        await asyncio.gather(
            *(
                rome.admin.patch(CONFIGMAPS, name, {"data": {"v": version}}, namespace="work")
                for name in edits
            )
        )

    edit = asyncio.create_task(burst("1", names))
    await clusters.kill_virtual_kubelets(rome)
    await edit
    # right after the kill (the harness starts it again meanwhile): more edits, and deletions whose copies must go
    kept, deleted = names[:20], names[20:]
    await burst("2", kept)
    for name in deleted:
        await rome.admin.delete(CONFIGMAPS, name, namespace="work")
    await clusters.eventually(lambda: copies("2", kept), within=60)
