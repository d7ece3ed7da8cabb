"""What a person running `pulumi up` reads when a component's cluster fails: the dynamic providers' errors and
warnings, against a port nothing listens on and a server that never answers, and a wait that runs out.

The providers are called as Pulumi's dynamic provider server calls them (synchronously); the
sentences are `runtime.core.failures.explain`'s, as in the Terraform provider's diagnostics.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import yaml

from pulumi_liqo._cluster import OperationTimeoutError
from pulumi_liqo.providers.base import LiqoError, interrupted
from pulumi_liqo.providers.install import RuntimeProvider
from pulumi_liqo.providers.offload import OffloadingProvider
from pulumi_liqo.providers.peering import PeeringProvider
from pulumi_liqo.providers.token import TokenProvider
from runtime.operations.waits import Blocking, WaitTimeoutError
from tests import broken_servers

REFUSED = (
    "cannot be reached: the connection was refused (nothing listens there). Check that it is running and that "
    "its address (host and port) is right."
)


def _connection(server: str, **timeouts: float) -> dict[str, Any]:
    """A component's connection properties for the cluster at `server` (context `gone`)."""
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "gone", "cluster": {"server": server}}],
        "users": [{"name": "gone", "user": {"token": "t"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "gone"}}],
        "current-context": "gone",
    }
    return {"kubeconfig": yaml.safe_dump(kubeconfig), "context": None, "timeouts": timeouts}


@pytest.fixture
def gone() -> dict[str, Any]:
    """A component's connection properties for a cluster nothing listens for."""
    return _connection(broken_servers.refused_url(), delete=5.0)


def _server(props: dict[str, Any]) -> str:
    return str(yaml.safe_load(props["kubeconfig"])["clusters"][0]["cluster"]["server"])


def test_a_read_of_a_cluster_that_cannot_be_reached_names_it_says_why_and_what_to_do(
    gone: dict[str, Any],
) -> None:
    with pytest.raises(LiqoError) as raised:
        PeeringProvider().read("milan", {**gone, "namespace": "liqo"})
    assert str(raised.value) == (
        f"Failed to read the peering with milan. The cluster of context 'gone' ({_server(gone)}) {REFUSED}"
    )


@pytest.mark.parametrize(
    ("provider", "id_", "props", "component"),
    [
        (TokenProvider(), "liqo-token-abc", {"namespace": "liqo"}, "Generate liqo/liqo-token-abc"),
        (RuntimeProvider(), "liqo", {"options": {"namespace": "liqo"}}, "Install liqo"),
        (PeeringProvider(), "milan", {"namespace": "liqo"}, "Peer milan"),
        (OffloadingProvider(), "liqo-demo", {}, "Offload liqo-demo"),
    ],
    ids=["token", "runtime", "peering", "offloading"],
)
def test_a_delete_that_cannot_reach_its_cluster_fails_and_keeps_the_component(
    gone: dict[str, Any], provider: Any, id_: str, props: dict[str, Any], component: str
) -> None:
    with pytest.raises(LiqoError) as raised:
        provider.delete(id_, {**gone, **props, "force": False})
    assert str(raised.value).startswith(
        f"{component}: cannot delete it, the cluster cannot be reached: The cluster of context 'gone' "
        f"({_server(gone)}) {REFUSED} Nothing was deleted, so it stays in the stack"
    )
    assert "set force=True on the component" in str(raised.value)


def test_forced_deletes_on_a_cluster_that_is_gone_warn_what_is_left_there(
    gone: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        TokenProvider().delete("liqo-token-abc", {**gone, "namespace": "liqo", "force": True})
        RuntimeProvider().delete("liqo", {**gone, "options": {"namespace": "liqo"}, "force": True})
    cluster = f"The cluster of context 'gone' ({_server(gone)})"
    assert [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING] == [
        f"Generate liqo/liqo-token-abc: {cluster} {REFUSED} So the token Secret liqo/liqo-token-abc was not "
        "deleted; it is removed from the state, as force is set. If the cluster comes back, delete that "
        "Secret to revoke the token.",
        f"Install liqo: {cluster} {REFUSED} So the Liqo runtime in namespace liqo was not deleted; it is removed "
        "from the state, as force is set. If the cluster comes back, uninstall it there by hand.",
    ]


def test_a_wait_that_runs_out_quotes_what_holds_it_up_and_for_how_long() -> None:
    last = Blocking(
        "ForeignCluster milan",
        "ProviderUnreachable",
        "the authentication service at https://10.0.0.1:443 cannot be reached",
    ).describe(298)
    exc = WaitTimeoutError("the peering with milan", seconds=300, last=last)
    assert str(interrupted(exc, what="the create of the peering with milan")) == (
        "Timed out waiting for the peering with milan: still not done after 5m0s (the create of the peering with "
        "milan): ForeignCluster milan: ProviderUnreachable for 4m58s: the authentication service at "
        "https://10.0.0.1:443 cannot be reached. Fix what holds it up and run `pulumi up` again, or raise the "
        "component's customTimeouts if the cluster is only slow."
    )


async def test_an_operation_past_its_bound_names_the_cluster_and_says_what_to_do() -> None:
    """A cluster that accepts connections and never answers: the operation's bound ends it, in words."""
    async with broken_servers.silent_server() as url:
        props = _connection(url, delete=1.0)
        with pytest.raises(OperationTimeoutError) as raised:
            await asyncio.to_thread(TokenProvider().delete, "liqo-token-abc", {**props, "namespace": "liqo"})
    assert str(raised.value) == (
        f"This did not finish within 1s against the cluster of context 'gone' ({url}). Check that the cluster is "
        "reachable and healthy, or raise the component's customTimeouts if it is only slow."
    )
