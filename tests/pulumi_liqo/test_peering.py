"""`Generate` and `Peer` under the mock runtime: one program peering two clusters, the token secret from end
to end, arguments refused at construction, customTimeouts as the operations' bounds."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from pulumi.runtime.sync_await import _sync_await

import pulumi_liqo
from pulumi_liqo._args import ArgumentError

from .mocks import DYNAMIC_OUTPUTS, RecordingMonitor

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\n"
TOKEN = "pulumi-python:dynamic/liqo:Token"
PEERING = "pulumi-python:dynamic/liqo:Peering"
CLUSTER_ID = DYNAMIC_OUTPUTS[TOKEN]["cluster_id"]


def generate() -> pulumi_liqo.Generate:
    return pulumi_liqo.Generate("rome-token", {"kubeconfig": KUBECONFIG, "expires_in": "24h"})


def peer(
    provider: pulumi_liqo.Generate, opts: pulumi.ResourceOptions | None = None, **extra: Any
) -> pulumi_liqo.Peer:
    args: dict[str, Any] = {
        "kubeconfig": KUBECONFIG,
        "cluster_id": provider.cluster_id,
        "cluster_name": provider.cluster_name,
        "cluster_authurl": provider.auth_ep,
        "cluster_token": provider.local_token,
        "cpu": "2",
        "node_labels": {"zone": "rome"},
        **extra,
    }
    return pulumi_liqo.Peer("milan-rome", args, opts)  # type: ignore[arg-type]


@pulumi.runtime.test
def test_a_peer_takes_the_generated_identity_and_token(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    token = generate()
    peering = peer(token)

    def check(_: Any) -> None:
        (component,) = monitor.by_type(pulumi_liqo.peer.TYPE)
        dynamic = monitor.one(PEERING)
        assert dynamic.parent == component.urn
        assert dynamic.name == "milan-rome-peering"
        assert {key: dynamic.inputs[key] for key in ("cluster_id", "cluster_name", "cluster_authurl")} == {
            "cluster_id": CLUSTER_ID,
            "cluster_name": "rome",
            "cluster_authurl": DYNAMIC_OUTPUTS[TOKEN]["auth_ep"],
        }
        assert dynamic.inputs["cluster_token"] == DYNAMIC_OUTPUTS[TOKEN]["local_token"]
        assert dynamic.inputs["cpu"] == "2"
        assert dynamic.inputs["node_labels"] == {"zone": "rome"}
        # the peer waits for the token it uses
        assert monitor.one(TOKEN).urn in dynamic.dependencies
        (generator,) = monitor.by_type(pulumi_liqo.generate.TYPE)
        assert monitor.one(TOKEN).parent == generator.urn
        assert monitor.one(TOKEN).inputs["expires_in"] == "24h"

    return peering.virtual_node.apply(check)


@pulumi.runtime.test
def test_tokens_and_kubeconfigs_stay_secret(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    token = generate()
    peering = peer(token)
    assert _sync_await(token.local_token.is_secret())
    assert not _sync_await(token.cluster_id.is_secret())

    def check(_: Any) -> None:
        assert "local_token" in monitor.one(TOKEN).additional_secret_outputs
        assert {"kubeconfig"} <= monitor.one(TOKEN).secret_inputs
        assert {"kubeconfig", "cluster_token"} <= monitor.one(PEERING).secret_inputs
        assert {"kubeconfig", "cluster_token"} <= set(monitor.one(PEERING).additional_secret_outputs)

    return peering.virtual_node.apply(check)


@pulumi.runtime.test
def test_custom_timeouts_bound_the_peering(monitor: RecordingMonitor) -> pulumi.Output[Any]:
    peering = peer(
        generate(), opts=pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(delete="90s"))
    )

    def check(_: Any) -> None:
        assert monitor.one(PEERING).inputs["timeouts"] == {"create": 300.0, "update": 300.0, "delete": 90.0}

    return peering.virtual_node.apply(check)


@pytest.mark.parametrize(
    ("argument", "value", "fragment"),
    [
        ("cluster_id", "rome", "cluster IDs are UUIDs"),
        ("cluster_name", "Rome", "is not a valid cluster name"),
        ("cluster_authurl", "http://10.0.0.1:30443", "the scheme must be https"),
        ("cluster_token", "secret", "is not a peering token"),
        ("memory", "lots", "is not a valid amount of memory"),
        ("extended_resources", {"cpu": "1"}, "has its own argument"),
        ("node_labels", {"bad key": "x"}, "is not a valid label key"),
        ("namespace", "Liqo", "is not a valid namespace name"),
        ("pod_security", "privileged", "privileged is never offered to a consumer"),
    ],
    ids=["cluster-id", "name", "url", "token", "memory", "extended", "labels", "namespace", "pod-security"],
)
def test_bad_peer_input_fails_at_construction(
    monitor: RecordingMonitor, argument: str, value: Any, fragment: str
) -> None:
    args: dict[str, Any] = {
        "kubeconfig": KUBECONFIG,
        "cluster_id": CLUSTER_ID,
        "cluster_name": "rome",
        "cluster_authurl": "https://10.0.0.1:30443",
        "cluster_token": "ab" * 32,
        argument: value,
    }
    with pytest.raises(ArgumentError, match=f"Peer: invalid argument {argument}: .*{fragment}"):
        pulumi_liqo.Peer("milan-rome", args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argument", "value", "fragment"),
    [("expires_in", "a day", "is not a duration"), ("namespace", "liqo_", "is not a valid namespace name")],
    ids=["expires-in", "namespace"],
)
def test_bad_generate_input_fails_at_construction(
    monitor: RecordingMonitor, argument: str, value: Any, fragment: str
) -> None:
    with pytest.raises(ArgumentError, match=f"Generate: invalid argument {argument}: .*{fragment}"):
        pulumi_liqo.Generate("rome-token", {"kubeconfig": KUBECONFIG, argument: value})  # type: ignore[misc]


def test_a_bad_custom_timeout_is_named(monitor: RecordingMonitor) -> None:
    with pytest.raises(ArgumentError, match=r"invalid argument customTimeouts\.create"):
        pulumi_liqo.Generate(
            "rome-token",
            {"kubeconfig": KUBECONFIG},
            pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="soon")),
        )
