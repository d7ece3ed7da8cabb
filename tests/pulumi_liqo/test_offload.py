"""`Offload` under the mock runtime: its graph, the NamespaceOffloading's spec as the runtime's builder makes
it, the defaults of `liqo_offload`, secrets, bounds, and arguments refused where it is constructed."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

import pulumi_liqo
from pulumi_liqo._args import ArgumentError
from runtime.api import constants as c
from runtime.forge.namespaceoffloading import namespace_offloading

from .mocks import DYNAMIC_OUTPUTS, RecordingMonitor

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\n"
OFFLOADING = "pulumi-python:dynamic/liqo:Offloading"
TERMS = [
    {
        "match_expressions": [
            {"key": "topology.liqo.io/region", "operator": "In", "values": ["north", "south"]},
            {"key": "example.com/gpu", "operator": "Exists"},
        ]
    }
]


def offload(opts: pulumi.ResourceOptions | None = None, **extra: Any) -> pulumi_liqo.Offload:
    args: dict[str, Any] = {"kubeconfig": KUBECONFIG, "namespace": "liqo-demo", **extra}
    return pulumi_liqo.Offload("liqo-demo", args, opts)  # type: ignore[arg-type]


def spec(props: dict[str, Any]) -> dict[str, Any]:
    """The spec the dynamic resource's properties make (what `runtime.operations.offload` applies)."""
    built: dict[str, Any] = namespace_offloading(
        props["namespace"],
        pod_offloading_strategy=props["pod_offloading_strategy"],
        namespace_mapping_strategy=props["namespace_mapping_strategy"],
        remote_namespace_name=props["remote_namespace_name"],
        cluster_selector_terms=props["cluster_selector_terms"],
    )["spec"]
    return built


@pulumi.runtime.test
def test_the_defaults_are_liqo_offload_s(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    component = offload()

    def check(_: Any) -> None:
        (parent,) = monitor.by_type(pulumi_liqo.offload.TYPE)
        child = monitor.one(OFFLOADING)
        assert child.parent == parent.urn and child.name == "liqo-demo-offloading"
        assert spec(child.inputs) == {
            "namespaceMappingStrategy": c.MAPPING_DEFAULT_NAME,
            "podOffloadingStrategy": c.POD_OFFLOADING_LOCAL_AND_REMOTE,
            "clusterSelector": {"nodeSelectorTerms": []},
        }
        assert child.inputs["timeouts"] == {"create": 300.0, "update": 300.0, "delete": 300.0}
        # a state written before namespace_selector existed has none: a value here would replace it
        assert child.inputs.get("namespace_selector") is None

    return component.offloading_phase.apply(check)


@pulumi.runtime.test
def test_every_argument_reaches_the_namespace_offloading(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    component = offload(
        pod_offloading_strategy="Remote",
        namespace_mapping_strategy="SelectedName",
        remote_namespace_name="rome-batch",
        cluster_selector_terms=TERMS,
    )

    def check(_: Any) -> None:
        assert spec(monitor.one(OFFLOADING).inputs) == {
            "namespaceMappingStrategy": "SelectedName",
            "podOffloadingStrategy": "Remote",
            "remoteNamespaceName": "rome-batch",
            "clusterSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "topology.liqo.io/region",
                                "operator": "In",
                                "values": ["north", "south"],
                            },
                            {"key": "example.com/gpu", "operator": "Exists"},
                        ]
                    }
                ]
            },
        }

    return component.offloading_phase.apply(check)


@pulumi.runtime.test
def test_outputs_come_from_the_offloading(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    component = offload()
    outputs = DYNAMIC_OUTPUTS[OFFLOADING]

    def check(values: list[Any]) -> None:
        assert values == [
            "liqo-demo",
            outputs["twin_namespace_name"],
            outputs["offloading_phase"],
            outputs["cluster_status"],
        ]

    return pulumi.Output.all(
        component.namespace,
        component.remote_namespace_name,
        component.offloading_phase,
        component.cluster_status,
    ).apply(check)


@pulumi.runtime.test
def test_the_kubeconfig_stays_secret_and_custom_timeouts_bound_the_waits(
    monitor: RecordingMonitor,
) -> pulumi.Output[Any]:
    component = offload(opts=pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(delete="45s")))

    def check(_: Any) -> None:
        child = monitor.one(OFFLOADING)
        assert "kubeconfig" in child.secret_inputs and "kubeconfig" in child.additional_secret_outputs
        assert child.inputs["timeouts"] == {"create": 300.0, "update": 300.0, "delete": 45.0}
        assert child.custom_timeouts == {"delete": "45s"}

    return component.offloading_phase.apply(check)


@pulumi.runtime.test
def test_selector_terms_given_as_outputs_are_converted_once_known(
    monitor: RecordingMonitor,
) -> pulumi.Output[Any]:
    region = pulumi.Output.from_input("north")
    terms = [
        {"match_expressions": [{"key": "topology.liqo.io/region", "operator": "In", "values": [region]}]}
    ]
    component = offload(cluster_selector_terms=terms)

    def check(_: Any) -> None:
        assert monitor.one(OFFLOADING).inputs["cluster_selector_terms"] == [
            {"matchExpressions": [{"key": "topology.liqo.io/region", "operator": "In", "values": ["north"]}]}
        ]

    return component.offloading_phase.apply(check)


@pytest.mark.parametrize(
    ("arguments", "argument", "fragment"),
    [
        ({"namespace": "Liqo-Demo"}, "namespace", "is not a valid namespace name"),
        (
            {"pod_offloading_strategy": "Anywhere"},
            "pod_offloading_strategy",
            "is not a pod offloading strategy",
        ),
        (
            {"namespace_mapping_strategy": "Random"},
            "namespace_mapping_strategy",
            "is not a namespace mapping",
        ),
        ({"namespace_mapping_strategy": "SelectedName"}, "remote_namespace_name", "set it"),
        ({"remote_namespace_name": "rome-batch"}, "remote_namespace_name", "goes with .*SelectedName only"),
        (
            {"namespace_mapping_strategy": "SelectedName", "remote_namespace_name": "kube-system"},
            "remote_namespace_name",
            "names a cluster's own namespace",
        ),
        (
            {"cluster_selector_terms": [{"match_expressions": [{"key": "zone", "operator": "In"}]}]},
            "cluster_selector_terms",
            "needs at least one value",
        ),
        (
            {"cluster_selector_terms": [{"match_expressions": [{"key": "zone", "operator": "Near"}]}]},
            "cluster_selector_terms",
            "is not an operator",
        ),
    ],
    ids=[
        "namespace",
        "pod-strategy",
        "mapping",
        "selected-without-name",
        "name-without-selected",
        "own",
        "in",
        "op",
    ],
)
def test_bad_input_fails_at_construction_naming_the_argument(
    monitor: RecordingMonitor, arguments: dict[str, Any], argument: str, fragment: str
) -> None:
    with pytest.raises(ArgumentError, match=f"Offload: invalid argument {argument}: .*{fragment}") as raised:
        offload(**arguments)
    assert raised.value.argument == argument


def test_a_missing_namespace_is_named(monitor: RecordingMonitor) -> None:
    with pytest.raises(
        ArgumentError, match=r"invalid argument namespace: give namespace .* or namespace_selector"
    ):
        pulumi_liqo.Offload("liqo-demo", {"kubeconfig": KUBECONFIG})


@pytest.mark.parametrize(
    ("arguments", "argument", "fragment"),
    [
        ({"namespace": "a", "namespace_selector": "team=blue"}, "namespace", "exactly one of them"),
        ({"namespace_selector": "replicas>1"}, "namespace_selector", "without '>' or '<'"),
        (
            {"namespace_selector": "team=blue", "namespace_mapping_strategy": "SelectedName"},
            "namespace_mapping_strategy",
            "with namespace_selector use DefaultName or EnforceSameName",
        ),
    ],
)
def test_a_selector_offload_is_checked_at_construction(
    monitor: RecordingMonitor, arguments: dict[str, Any], argument: str, fragment: str
) -> None:
    with pytest.raises(ArgumentError, match=f"invalid argument {argument}: .*{fragment}"):
        pulumi_liqo.Offload("teams", {"kubeconfig": KUBECONFIG, **arguments})  # type: ignore[typeddict-item]


def test_a_bad_requirement_in_an_output_fails_once_known(monitor: RecordingMonitor) -> None:
    @pulumi.runtime.test
    def run() -> pulumi.Output[Any]:
        operator = pulumi.Output.from_input("Near")
        terms = [{"match_expressions": [{"key": "zone", "operator": operator, "values": ["a"]}]}]
        return offload(cluster_selector_terms=terms).offloading_phase

    with pytest.raises(
        ValueError, match="Offload: invalid argument cluster_selector_terms: 'Near' is not an operator"
    ):
        run()
