"""`liqo_cluster` on a scripted cluster: the identity, a missing runtime, a malformed identity, no cluster."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from tf.utils import Diagnostics

from provider.datasources.cluster import ClusterDataSource
from provider.framework.resource import ReadContext
from provider.kube import Kube
from runtime.api import constants
from runtime.core import NotFoundError

from .harness import Provider

HOST = "https://10.0.0.1:6443"


class FakeClient:
    """Answers GET of ConfigMaps from a dict; raises what it was told to."""

    def __init__(
        self, configmaps: dict[tuple[str, str], dict[str, Any]], error: Exception | None = None
    ) -> None:
        self.configmaps = configmaps
        self.error = error

    async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        try:
            return self.configmaps[(namespace or "", name)]
        except KeyError:
            raise NotFoundError(
                {"code": 404, "reason": "NotFound", "message": f'configmaps "{name}" not found'}
            ) from None


@dataclass
class FakeKube:
    client: FakeClient
    host: str = HOST

    def run(self, operation: Callable[[Any], Awaitable[Any]], *, seconds: float) -> Any:
        async def call() -> Any:
            return await operation(self.client)

        return asyncio.run(call())


@dataclass
class FakeProvider:
    kube: Any


def read(kube: Any, config: dict[str, Any]) -> tuple[Any, Diagnostics]:
    diagnostics = Diagnostics()
    state = ClusterDataSource(FakeProvider(kube)).read(ReadContext(diagnostics, "liqo_cluster"), config)
    return state, diagnostics


def identity_configmap(**data: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {("liqo", constants.CLUSTER_IDENTITY_CONFIGMAP): {"data": data}}


def test_the_identity_is_read_from_the_runtime_configmap() -> None:
    configmaps = identity_configmap(
        CLUSTER_ID="id-1",
        CLUSTER_NAME="rome",
        clusterLabels='{"a": "b"}',
        podCIDR="10.0.0.0/16",
        version="0.1.0",
    )

    state, diagnostics = read(FakeKube(FakeClient(configmaps)), {"namespace": None})

    assert diagnostics.diagnostics == []
    assert state == {
        "namespace": "liqo",
        "id": "id-1",
        "name": "rome",
        "labels": {"a": "b"},
        "version": "0.1.0",
        "pod_cidr": "10.0.0.0/16",
        "service_cidr": "",
    }


def test_without_the_runtime_it_says_to_install_it() -> None:
    state, diagnostics = read(FakeKube(FakeClient({})), {"namespace": "other"})

    assert state is None
    [error] = diagnostics.diagnostics
    assert error.summary == "Liqo runtime not installed"
    assert error.detail == (
        f"the Liqo runtime is not installed in the cluster at {HOST} (namespace other): "
        "apply a liqo_install resource first"
    )


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"CLUSTER_NAME": "rome"}, "has no CLUSTER_ID"),
        ({"CLUSTER_ID": "x", "clusterLabels": "{not json"}, "clusterLabels is not JSON"),
        ({"CLUSTER_ID": "x", "clusterLabels": '{"a": 1}'}, "clusterLabels is not a JSON object of strings"),
    ],
    ids=["no-id", "bad-json", "not-strings"],
)
def test_a_malformed_identity_is_an_error_that_says_what_is_wrong(data: dict[str, str], problem: str) -> None:
    state, diagnostics = read(FakeKube(FakeClient(identity_configmap(**data))), {})

    assert state is None
    [error] = diagnostics.diagnostics
    assert error.summary == f"Invalid Liqo cluster identity on {HOST}"
    assert problem in str(error.detail)


def test_an_unreachable_cluster_is_a_diagnostic_naming_the_context_and_what_failed(gone: Provider) -> None:
    state, diagnostics = read(gone.kube, {})

    assert state is None
    [error] = diagnostics.diagnostics
    assert error.summary == "Failed to read the Liqo cluster identity in namespace liqo"
    assert error.detail == (
        f"The cluster of context 'gone' ({gone.kube.host}) cannot be reached: the connection was refused (nothing "
        "listens there). Check that it is running and that its address (host and port) is right."
    )


def test_an_unconfigured_provider_is_a_diagnostic() -> None:
    state, diagnostics = read(
        Kube.unavailable("the provider's kubernetes.host will only be known after apply"), {}
    )

    assert state is None
    [error] = diagnostics.diagnostics
    assert "kubernetes.host will only be known after apply" in str(error.detail)
