"""The dynamic providers' diffs as the engine calls them: the state it hands back (the last outputs, through
the wire) against the program's inputs. Right after a create nothing changes (`pulumi preview
--expect-no-changes`); an argument changed updates or replaces as documented; a value a preview does not
know yet counts as a change without inventing a replacement."""

from __future__ import annotations

from typing import Any

from pulumi.output import Unknown

from pulumi_liqo.providers.base import connection
from pulumi_liqo.providers.install import DiscoveryProvider, RuntimeProvider, _discovered, runtime_state
from pulumi_liqo.providers.offload import OffloadingProvider, _status
from runtime.api import constants as c
from runtime.operations.install import Cidrs
from runtime.operations.offload import Offloading

from .mocks import engine_state

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: rome, cluster: {server: "https://10.0.0.1:6443"}}]
users: [{name: admin, user: {token: abc}}]
contexts: [{name: rome, context: {cluster: rome, user: admin}}]
current-context: rome
"""
CONNECTION = {"kubeconfig": KUBECONFIG, "context": None, "timeouts": {"create": 600.0, "delete": 300.0}}
CLUSTER_ID = "6f0b5e52-1a4d-4a3c-9d2e-0c6a9c1f1e01"


def discovery_inputs(**given: Any) -> dict[str, Any]:
    return {
        **CONNECTION,
        "namespace": c.DEFAULT_NAMESPACE,
        "pod_cidr": None,
        "service_cidr": None,
        "api_server_url": None,
        **given,
    }


def discovered(inputs: dict[str, Any]) -> dict[str, Any]:
    found = Cidrs(pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/12")
    return engine_state(
        _discovered(inputs, cluster_id=CLUSTER_ID, cidrs=found, api_server_url="https://172.30.0.2:6443")
    )


def test_discovery_right_after_create_has_no_changes() -> None:
    for given in ({}, {"pod_cidr": "10.8.0.0/16", "api_server_url": "https://rome.example:6443"}):
        inputs = discovery_inputs(**given)
        result = DiscoveryProvider().diff(CLUSTER_ID, discovered(inputs), engine_state(inputs))
        assert not result.changes, given


def test_discovery_outputs_what_it_found_beside_what_it_was_given() -> None:
    state = discovered(discovery_inputs())
    assert "pod_cidr" not in state and "api_server_url" not in state
    assert state["discovered_pod_cidr"] == "10.244.0.0/16"
    assert state["discovered_api_server_url"] == "https://172.30.0.2:6443"


def test_a_given_cidr_updates_the_discovery_and_a_namespace_replaces_it() -> None:
    state = discovered(discovery_inputs())
    update = DiscoveryProvider().diff(
        CLUSTER_ID, state, engine_state(discovery_inputs(pod_cidr="10.8.0.0/16"))
    )
    assert update.changes and not update.replaces
    replace = DiscoveryProvider().diff(CLUSTER_ID, state, engine_state(discovery_inputs(namespace="liqo-2")))
    assert replace.replaces == ["namespace"]


def runtime_inputs(**options: Any) -> dict[str, Any]:
    return {
        **CONNECTION,
        "namespace": c.DEFAULT_NAMESPACE,
        "options": {
            "cluster_id": CLUSTER_ID,
            "cluster_name": "rome",
            "api_server_url": "https://10.0.0.1:6443",
            "pod_cidr": "10.244.0.0/16",
            "service_cidr": "10.96.0.0/12",
            "cluster_labels": {},
            "namespace": c.DEFAULT_NAMESPACE,
            "sharing_percentage": 90,
            "image": "liqo-iac/runtime:0.1.0",
            "webhook_mode": "url",
            "auth_service_type": "NodePort",
            "auth_url": "",
            **options,
        },
        "force": False,
    }


def runtime_created(inputs: dict[str, Any]) -> dict[str, Any]:
    identity = {c.IDENTITY_CLUSTER_ID: CLUSTER_ID, c.IDENTITY_CLUSTER_NAME: "rome"}
    return engine_state(runtime_state(engine_state(inputs), identity))


def test_runtime_right_after_create_has_no_changes() -> None:
    inputs = runtime_inputs()
    assert (
        not RuntimeProvider().diff(c.DEFAULT_NAMESPACE, runtime_created(inputs), engine_state(inputs)).changes
    )


def test_runtime_options_a_preview_does_not_know_update_and_its_namespace_replaces() -> None:
    state = runtime_created(runtime_inputs())
    # the options wait for a Discovery that updates: in the preview they are unknown, the namespace is not
    unknown = {**engine_state(runtime_inputs()), "options": Unknown()}  # type: ignore[no-untyped-call]
    result = RuntimeProvider().diff(c.DEFAULT_NAMESPACE, state, unknown)
    assert result.changes and not result.replaces
    labels = RuntimeProvider().diff(
        c.DEFAULT_NAMESPACE, state, engine_state(runtime_inputs(cluster_labels={"zone": "a"}))
    )
    assert labels.changes and not labels.replaces
    moved = {**engine_state(runtime_inputs(namespace="liqo-2")), "namespace": "liqo-2"}
    assert RuntimeProvider().diff(c.DEFAULT_NAMESPACE, state, moved).replaces == ["namespace"]


def offloading_inputs(**given: Any) -> dict[str, Any]:
    return {
        **CONNECTION,
        "namespace": "liqo-demo",
        "pod_offloading_strategy": c.POD_OFFLOADING_LOCAL_AND_REMOTE,
        "namespace_mapping_strategy": c.MAPPING_DEFAULT_NAME,
        "remote_namespace_name": "",
        "cluster_selector_terms": [],
        **given,
    }


def offloaded(inputs: dict[str, Any]) -> dict[str, Any]:
    """The state a create leaves: the inputs as given and the status the runtime reported, through the wire."""
    found = Offloading.of(
        {
            "metadata": {"name": c.NAMESPACE_OFFLOADING_NAME, "namespace": inputs["namespace"]},
            "status": {
                "offloadingPhase": c.PHASE_READY,
                "remoteNamespaceName": "liqo-demo-rome",
                "remoteNamespacesConditions": {
                    "milan": [
                        {
                            "type": c.CONDITION_OFFLOADING_REQUIRED,
                            "status": "True",
                            "reason": "ClusterSelected",
                        },
                        {"type": "Ready", "status": "True", "reason": "NamespaceCreated"},
                    ]
                },
            },
        }
    )
    props = engine_state(inputs)
    return engine_state({**connection(props), **OffloadingProvider().inputs(props), **_status(found, props)})


def test_offloading_right_after_create_has_no_changes() -> None:
    terms = [
        {"matchExpressions": [{"key": "topology.liqo.io/region", "operator": "In", "values": ["north"]}]}
    ]
    for given in ({}, {"cluster_selector_terms": terms, "pod_offloading_strategy": "Remote"}):
        inputs = offloading_inputs(**given)
        assert not OffloadingProvider().diff("liqo-demo", offloaded(inputs), engine_state(inputs)).changes, (
            given
        )


def test_offloading_strategy_and_selector_update_in_place_the_rest_replaces() -> None:
    state = offloaded(offloading_inputs())
    terms = [{"matchExpressions": [{"key": "example.com/gpu", "operator": "Exists"}]}]
    for given in ({"pod_offloading_strategy": "Remote"}, {"cluster_selector_terms": terms}):
        result = OffloadingProvider().diff("liqo-demo", state, engine_state(offloading_inputs(**given)))
        assert result.changes and not result.replaces, given
    # a selector a preview does not know yet is a change, not a replacement
    unknown = {**engine_state(offloading_inputs()), "cluster_selector_terms": Unknown()}  # type: ignore[no-untyped-call]
    result = OffloadingProvider().diff("liqo-demo", state, unknown)
    assert result.changes and not result.replaces
    for given, replaced in (
        ({"namespace": "batch"}, ["namespace"]),
        ({"namespace_mapping_strategy": c.MAPPING_ENFORCE_SAME_NAME}, ["namespace_mapping_strategy"]),
        (
            {"namespace_mapping_strategy": c.MAPPING_SELECTED_NAME, "remote_namespace_name": "rome-batch"},
            ["namespace_mapping_strategy", "remote_namespace_name"],
        ),
    ):
        result = OffloadingProvider().diff("liqo-demo", state, engine_state(offloading_inputs(**given)))
        assert result.replaces == replaced and result.delete_before_replace, given


def test_an_offloading_made_before_namespace_selector_existed_is_not_replaced() -> None:
    """A state written before the selector was an input has no namespace_selector; the component's new props
    carry none for a namespace either, so an upgrade changes nothing."""
    state = offloaded(offloading_inputs())
    older = {
        key: value
        for key, value in state.items()
        if key not in ("namespace_selector", "namespaces", "conflicts")
    }
    assert not OffloadingProvider().diff("liqo-demo", older, engine_state(offloading_inputs())).changes
    result = OffloadingProvider().diff(
        "liqo-demo", older, engine_state(offloading_inputs(namespace=None, namespace_selector="team=blue"))
    )
    assert result.replaces == ["namespace", "namespace_selector"]
