"""How the dynamic providers reach a cluster: a `runtime.core.Client` made from the kubeconfig each resource
carries as a secret input, for the span of one operation.

A dynamic provider runs in its own process (`pulumi.dynamic`) and gets only the
resource's properties, so the kubeconfig travels with them, as a secret end to end. The
provider's methods are synchronous and called on gRPC worker threads: each operation
gets its own event loop (`asyncio.run`), bounded by the resource's timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import yaml

from runtime.core import Client, ClusterConfig
from runtime.core.kubeconfig import load_kubeconfig_dict

T = TypeVar("T")

#: the bound of one HTTP request (an operation's timeout bounds the whole operation)
REQUEST_TIMEOUT = 30.0


def cluster_config(kubeconfig: str, *, context: str | None = None) -> ClusterConfig:
    """The cluster a kubeconfig (its content, YAML or JSON) and an optional context name point at."""
    parsed = yaml.safe_load(kubeconfig) if kubeconfig.strip() else None
    if not isinstance(parsed, Mapping):
        raise ValueError("kubeconfig: the value is not a kubeconfig (a YAML or JSON object)")
    return load_kubeconfig_dict(parsed, context=context or None)


def run(props: Mapping[str, Any], operation: Callable[[Client], Awaitable[T]], *, seconds: float) -> T:
    """`operation(client)` against the cluster of a resource's `kubeconfig`/`context` properties, within
    `seconds` (TimeoutError past them)."""
    config = cluster_config(str(props.get("kubeconfig") or ""), context=props.get("context"))

    async def main() -> T:
        client = await Client.from_config(config, request_timeout=REQUEST_TIMEOUT)
        try:
            async with asyncio.timeout(seconds):
                return await operation(client)
        finally:
            await client.close()

    return asyncio.run(main())


def host(props: Mapping[str, Any]) -> str:
    """The API server a resource's properties point at, for messages ("" when they point nowhere)."""
    try:
        return cluster_config(str(props.get("kubeconfig") or ""), context=props.get("context")).server
    except ValueError:
        return ""
