"""How the dynamic providers reach a cluster: a `runtime.core.Client` made from the kubeconfig each resource
carries as a secret input, for the span of one operation.

A dynamic provider runs in its own process (`pulumi.dynamic`) and gets only the
resource's properties, so the kubeconfig travels with them, as a secret end to end. The
provider's methods are synchronous and called on gRPC worker threads: each operation
gets its own bridge (`runtime.operations.bridge`, the Terraform provider's too): an event
loop and a client for its span, bounded by the resource's timeout.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import yaml

from runtime.core import Client, ClusterConfig, KubeconfigError, KubeconfigField
from runtime.core.kubeconfig import load_kubeconfig_dict
from runtime.operations.bridge import BoundExceededError, Bridge

T = TypeVar("T")

#: the name of the thread that runs an operation's event loop
THREAD_NAME = "liqo-pulumi-operation"


class ClusterArgumentError(ValueError):
    """The `kubeconfig` or `context` argument of a component cannot be used; `argument` names which."""

    def __init__(self, message: str, *, argument: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument


def cluster_config(kubeconfig: str, *, context: str | None = None) -> ClusterConfig:
    """The cluster a kubeconfig (its content, YAML or JSON) and an optional context name point at
    (ClusterArgumentError naming the argument at fault)."""
    parsed = yaml.safe_load(kubeconfig) if kubeconfig.strip() else None
    if not isinstance(parsed, Mapping):
        raise ClusterArgumentError(
            "the value is not a kubeconfig (a YAML or JSON object)", argument="kubeconfig"
        )
    try:
        return load_kubeconfig_dict(parsed, context=context or None)
    except KubeconfigError as exc:
        argument = "context" if exc.field == KubeconfigField.CONTEXT else "kubeconfig"
        raise ClusterArgumentError(str(exc), argument=argument) from None


class OperationTimeoutError(TimeoutError):
    """An operation did not finish within its bound; the message names the cluster and what to do."""


def run(props: Mapping[str, Any], operation: Callable[[Client], Awaitable[T]], *, seconds: float) -> T:
    """`operation(client)` against the cluster of a resource's `kubeconfig`/`context` properties, within
    `seconds` (OperationTimeoutError past them), on a bridge of its own for the span of the operation."""
    config = cluster_config(str(props.get("kubeconfig") or ""), context=props.get("context"))
    bridge = Bridge(config, thread_name=THREAD_NAME)
    try:
        return bridge.run(operation, seconds=seconds)
    except BoundExceededError:
        raise OperationTimeoutError(
            f"This did not finish within {seconds:g}s against {config.cluster_label}. Check that the cluster "
            "is reachable and healthy, or raise the component's customTimeouts if it is only slow."
        ) from None
    finally:
        bridge.close()


def host(props: Mapping[str, Any]) -> str:
    """The API server a resource's properties point at, for messages ("" when they point nowhere)."""
    try:
        return cluster_config(str(props.get("kubeconfig") or ""), context=props.get("context")).server
    except ValueError:
        return ""
