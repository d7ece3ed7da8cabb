"""The sync-to-async bridge both front ends call the operations through: one loop, one client, bounded calls."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.core import ClusterConfig
from runtime.operations.bridge import BoundExceededError, Bridge


@pytest.fixture
def bridge() -> Iterator[Bridge]:
    # no request is sent in these tests: the address only has to be well formed
    made = Bridge(
        ClusterConfig(server="https://127.0.0.1:9", insecure_skip_tls_verify=True), thread_name="test-bridge"
    )
    yield made
    made.close()


def test_calls_from_several_threads_share_one_loop_and_one_client(bridge: Bridge) -> None:
    async def where(client: Any) -> tuple[str, Any]:
        return threading.current_thread().name, client

    answers: list[tuple[str, Any]] = []
    callers = [
        threading.Thread(target=lambda: answers.append(bridge.run(where, seconds=30))) for _ in range(4)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()

    assert {name for name, _ in answers} == {"test-bridge"}
    assert len({id(client) for _, client in answers}) == 1


def test_a_call_past_its_bound_is_cancelled_and_says_so(bridge: Bridge) -> None:
    async def forever(client: Any) -> None:
        await asyncio.Event().wait()

    with pytest.raises(BoundExceededError, match=r"did not finish within 0\.3s") as raised:
        bridge.run(forever, seconds=0.3)
    assert isinstance(raised.value, TimeoutError)


def test_a_timeout_of_the_operation_itself_is_not_the_bound(bridge: Bridge) -> None:
    async def own_timeout(client: Any) -> None:
        raise TimeoutError("the auth service did not answer")

    with pytest.raises(TimeoutError, match="the auth service did not answer") as raised:
        bridge.run(own_timeout, seconds=30)
    assert not isinstance(raised.value, BoundExceededError)


def test_close_stops_the_loop_thread_and_a_later_call_starts_another() -> None:
    made = Bridge(
        ClusterConfig(server="https://127.0.0.1:9", insecure_skip_tls_verify=True),
        thread_name="test-bridge-2",
    )

    async def noop(client: Any) -> None:
        return None

    made.run(noop, seconds=30)
    made.close()
    assert "test-bridge-2" not in {thread.name for thread in threading.enumerate()}
    made.run(noop, seconds=30)
    made.close()
    assert "test-bridge-2" not in {thread.name for thread in threading.enumerate()}
