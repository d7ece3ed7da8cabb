"""The provider's cluster connection: one client on the provider's own loop, bounded calls, clear failures."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from provider.kube import Kube, KubeUnavailableError
from runtime.core import ClusterConfig


@pytest.fixture
def kube() -> Any:
    # no request is sent in these tests: the address only has to be well formed
    connection = Kube(ClusterConfig(server="https://127.0.0.1:9", insecure_skip_tls_verify=True))
    yield connection
    connection.close()


def test_operations_run_on_the_providers_loop_with_one_client(kube: Kube) -> None:
    async def where(client: Any) -> tuple[str, Any]:
        return threading.current_thread().name, client

    first_thread, first_client = kube.run(where, seconds=30)
    second_thread, second_client = kube.run(where, seconds=30)

    assert first_thread == second_thread == "liqo-provider-kube"
    assert first_client is second_client
    assert kube.host == "https://127.0.0.1:9"


def test_an_operation_past_its_bound_is_cancelled(kube: Kube) -> None:
    cancelled = threading.Event()

    async def forever(client: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def nothing(client: Any) -> None:
        return None

    kube.run(nothing, seconds=30)  # the client is made first: the bound below is the operation's alone
    with pytest.raises(TimeoutError):
        kube.run(forever, seconds=0.5)
    assert cancelled.is_set()


def test_an_unavailable_cluster_says_why() -> None:
    kube = Kube.unavailable("the provider's kubernetes.host will only be known after apply")

    with pytest.raises(KubeUnavailableError, match="known after apply"):
        kube.run(lambda client: asyncio.sleep(0), seconds=1)
    assert kube.host == "(not configured)"


def test_close_stops_the_loop_thread() -> None:
    kube = Kube(ClusterConfig(server="https://127.0.0.1:9", insecure_skip_tls_verify=True))

    async def noop(client: Any) -> None:
        return None

    kube.run(noop, seconds=30)
    kube.close()

    assert "liqo-provider-kube" not in {thread.name for thread in threading.enumerate()}
