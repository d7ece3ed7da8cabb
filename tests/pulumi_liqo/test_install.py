"""`Install` under the mock runtime: its graph, its objects (the runtime's builders' own), secrets, bounds,
and arguments refused where the component is constructed."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

import pulumi_liqo
from pulumi_liqo._args import ArgumentError
from runtime.api import constants as c
from runtime.forge.install import InstallOptions, install_manifests
from runtime.forge.reflection import ReflectionOptions

from .mocks import DYNAMIC_OUTPUTS, RecordingMonitor, Registration

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\n"
DISCOVERY = "pulumi-python:dynamic/liqo:Discovery"
RUNTIME = "pulumi-python:dynamic/liqo:Runtime"
PROVIDER = "pulumi:providers:kubernetes"


def install(opts: pulumi.ResourceOptions | None = None, **extra: Any) -> pulumi_liqo.Install:
    args: dict[str, Any] = {"kubeconfig": KUBECONFIG, "cluster_name": "rome", "webhook_mode": "url", **extra}
    return pulumi_liqo.Install("rome", args, opts)  # type: ignore[arg-type]


def objects(monitor: RecordingMonitor) -> list[Registration]:
    return [found for found in monitor.registrations if found.type.startswith("kubernetes:")]


def expected(**extra: Any) -> list[dict[str, Any]]:
    discovered = DYNAMIC_OUTPUTS[DISCOVERY]
    return install_manifests(
        InstallOptions(
            cluster_id=discovered["cluster_id"],
            cluster_name="rome",
            api_server_url=discovered["discovered_api_server_url"],
            pod_cidr=discovered["discovered_pod_cidr"],
            service_cidr=discovered["discovered_service_cidr"],
            webhook_mode="url",
            **extra,
        )
    )


def key(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


@pulumi.runtime.test
def test_its_kubernetes_resources_are_the_install_manifests(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    component = install(cluster_labels={"topology.kubernetes.io/zone": "rome-a"}, sharing_percentage=50)

    def check(_: Any) -> None:
        wanted = expected(cluster_labels={"topology.kubernetes.io/zone": "rome-a"}, sharing_percentage=50)
        got = {key(found.inputs): found.inputs for found in objects(monitor)}
        assert len(got) == len(objects(monitor)) == len(wanted)
        assert got == {key(obj): obj for obj in wanted}
        types = {found.type for found in objects(monitor)}
        assert {
            "kubernetes:core/v1:Namespace",
            "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
            "kubernetes:apps/v1:Deployment",
            "kubernetes:admissionregistration.k8s.io/v1:ValidatingWebhookConfiguration",
        } <= types

    return component.cluster_id.apply(check)


@pulumi.runtime.test
def test_reflection_options_reach_the_controller_manager_as_liqo_install_writes_them(
    monitor: RecordingMonitor,
) -> pulumi.Output[Any]:
    reflection = {
        "secret_workers": 0,
        "service_workers": 3,
        "ingress_classes": {"nginx": "public"},
        "configmap_type": "AllowList",
        "annotations_not_reflected": ["example.com/private"],
        "api_server_support": "Disabled",
    }
    component = install(reflection=reflection)

    def check(_: Any) -> None:
        wanted = expected(
            reflection=ReflectionOptions(
                secret_workers=0,
                service_workers=3,
                ingress_classes={"nginx": "public"},
                configmap_type="AllowList",
                annotations_not_reflected=("example.com/private",),
                api_server_support="Disabled",
            )
        )
        got = {key(found.inputs): found.inputs for found in objects(monitor)}
        manager = got[("Deployment", "liqo-controller-manager")]
        assert manager == {key(obj): obj for obj in wanted}[("Deployment", "liqo-controller-manager")]
        args = manager["spec"]["template"]["spec"]["containers"][0]["args"]
        assert "--secret-reflection-workers=0" in args and "--ingress-class=nginx=public" in args
        assert "--configmap-reflection-type=AllowList" in args
        assert "--annotations-not-reflected=example.com/private" in args
        (runtime,) = monitor.by_type(RUNTIME)
        assert runtime.inputs["options"]["reflection"] == reflection

    return component.cluster_id.apply(check)


@pulumi.runtime.test
def test_every_child_is_parented_and_ordered(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    component = install()

    def check(_: Any) -> None:
        (parent,) = monitor.by_type(pulumi_liqo.install.TYPE)
        assert {found.name for found in monitor.children(parent)} >= {
            "rome-kubernetes",
            "rome-discovery",
            "rome-runtime",
        }
        assert all(found.parent == parent.urn for found in monitor.registrations if found is not parent)
        provider = monitor.one(PROVIDER)
        leading = [
            found
            for found in objects(monitor)
            if found.inputs["kind"] in ("Namespace", "CustomResourceDefinition")
        ]
        assert len(leading) == 1 + len([o for o in expected() if o["kind"] == "CustomResourceDefinition"])
        # the Namespace and the CRDs come first and are known before discovery (a preview plans a CRD by its
        # group); every other object depends on them, and on discovery when it holds a discovered value
        discovery = monitor.one(DISCOVERY).urn
        for found in objects(monitor):
            assert found.provider.startswith(provider.urn + "::"), found.name
            if found in leading:
                assert found.dependencies == [], found.name
            else:
                assert set(found.dependencies) - {discovery} == {lead.urn for lead in leading}, found.name
        identity = monitor.named("rome-configmap-liqo-clusterid-configmap")
        assert discovery in identity.dependencies
        runtime = monitor.one(RUNTIME)
        assert set(runtime.dependencies) >= {found.urn for found in objects(monitor)}

    return component.cluster_id.apply(check)


@pulumi.runtime.test
def test_without_purge_the_namespace_crds_and_identity_are_kept(
    monitor: RecordingMonitor,
) -> pulumi.Output[Any]:
    component = install()

    def check(_: Any) -> None:
        kept = {key(found.inputs) for found in objects(monitor) if found.retain_on_delete}
        assert kept == {
            key(obj)
            for obj in expected()
            if obj["kind"] in ("Namespace", "CustomResourceDefinition")
            or key(obj) == ("ConfigMap", c.CLUSTER_IDENTITY_CONFIGMAP)
        }

    return component.cluster_id.apply(check)


@pulumi.runtime.test
def test_purge_keeps_nothing(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    component = install(purge=True)

    def check(_: Any) -> None:
        assert [found.name for found in objects(monitor) if found.retain_on_delete] == []

    return component.cluster_id.apply(check)


@pulumi.runtime.test
def test_the_kubeconfig_stays_secret(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    component = install()

    def check(_: Any) -> None:
        assert "kubeconfig" in monitor.one(PROVIDER).secret_inputs
        for dynamic in (DISCOVERY, RUNTIME):
            assert "kubeconfig" in monitor.one(dynamic).secret_inputs
            assert "kubeconfig" in monitor.one(dynamic).additional_secret_outputs

    return component.cluster_id.apply(check)


@pulumi.runtime.test
def test_custom_timeouts_bound_the_waits_and_the_children(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    component = install(opts=pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="20m")))

    def check(_: Any) -> None:
        runtime = monitor.one(RUNTIME)
        assert runtime.inputs["timeouts"] == {"create": 1200.0, "update": 600.0, "delete": 300.0}
        assert runtime.custom_timeouts == {"create": "20m"}
        assert all(found.custom_timeouts == {"create": "20m"} for found in objects(monitor))

    return component.cluster_id.apply(check)


@pytest.mark.parametrize(
    ("argument", "value", "fragment"),
    [
        ("cluster_name", "Rome", "must be a DNS label"),
        ("namespace", "liqo_system", "is not a valid namespace name"),
        ("pod_cidr", "10.0.0.0/33", "is not a CIDR"),
        ("sharing_percentage", 0, "is not in 1..100"),
        ("webhook_mode", "dns", "is not a webhook mode"),
        ("auth_service_type", "ExternalName", "is not one of"),
        ("api_server_url", "http://rome:6443", "must be an https:// URL"),
        ("cluster_labels", {"zone": "-a"}, "is not a valid label value"),
        ("reflection", {"secret_workers": -1}, "secret_workers: -1 is not a worker count"),
        ("reflection", {"secrets_workers": 1}, "secrets_workers: not a reflection option"),
        ("reflection", {"ingress_classes": {"nginx": "Bad_Class"}}, "is not an ingress class name"),
        ("reflection", {"pod_type": "AllowList"}, "pod_type: pods follow the reflection's own logic"),
        ("reflection", {"secret_type": "Allow"}, "secret_type: 'Allow' is not a reflection type"),
    ],
    ids=[
        "name",
        "namespace",
        "cidr",
        "sharing",
        "webhook-mode",
        "service-type",
        "api-url",
        "labels",
        "reflection-workers",
        "reflection-unknown",
        "reflection-class",
        "reflection-pod-type",
        "reflection-type",
    ],
)
def test_bad_input_fails_at_construction_naming_the_argument(
    monitor: RecordingMonitor, argument: str, value: Any, fragment: str
) -> None:
    with pytest.raises(ArgumentError, match=f"Install: invalid argument {argument}: .*{fragment}") as raised:
        install(**{argument: value})
    assert raised.value.argument == argument


def test_a_missing_kubeconfig_is_named(monitor: RecordingMonitor) -> None:
    with pytest.raises(ArgumentError, match="invalid argument kubeconfig: it is required"):
        pulumi_liqo.Install("rome", {"cluster_name": "rome"})  # type: ignore[typeddict-item]


def test_a_bad_output_fails_once_known_naming_the_argument(monitor: RecordingMonitor) -> None:
    @pulumi.runtime.test
    def run() -> pulumi.Output[Any]:
        return install(cluster_name=pulumi.Output.from_input("Rome")).cluster_id

    # the engine reports the resource that could not be registered, then this message
    with pytest.raises(
        ValueError, match="Install: invalid argument cluster_name: 'Rome' must be a DNS label"
    ):
        run()


@pulumi.runtime.test
def test_the_provider_it_makes_mutates_configmaps_and_adopts_what_a_destroy_kept(
    monitor: RecordingMonitor,
) -> pulumi.Output[Any]:
    component = install()

    def check(_: Any) -> None:
        made = monitor.one(PROVIDER)
        assert made.name == "rome-kubernetes"
        assert made.inputs["enableConfigMapMutable"] in (True, "true")
        assert made.inputs["upsertExistingObjects"] in (True, "true")

    return component.cluster_id.apply(check)


@pytest.mark.parametrize("option", ["provider", "providers"])
@pulumi.runtime.test
def test_a_kubernetes_provider_given_in_its_options_serves_its_objects(
    monitor: RecordingMonitor, option: str
) -> pulumi.Output[Any]:
    mine = k8s.Provider("mine", kubeconfig=KUBECONFIG)
    given = {"provider": mine} if option == "provider" else {"providers": [mine]}
    component = install(opts=pulumi.ResourceOptions(**given))
    assert component.kubernetes is mine

    def check(_: Any) -> None:
        (provider,) = monitor.by_type(PROVIDER)
        assert provider.name == "mine"
        assert all(found.provider.startswith(provider.urn + "::") for found in objects(monitor))
        # the dynamic resources still carry the kubeconfig: a Provider does not hand its credentials over
        assert monitor.one(RUNTIME).inputs["kubeconfig"] == KUBECONFIG

    return component.cluster_id.apply(check)
