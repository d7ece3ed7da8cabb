"""`force`, the attribute that lets a destroy drop a resource whose cluster cannot be reached.

A delete that cannot reach its cluster is an error and the resource stays in the state
(`runtime.operations.unreachable`); `force = true`, applied before the destroy, is the
explicit choice to let it go without deleting what it made there. Changing it changes
nothing in the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tf.types import Bool

from runtime.operations.contract import Contract

from ..framework.contract import flags
from ..framework.schema import Attribute


def attribute(contract: Contract, made: str, *, also: str = "") -> Attribute:
    """The `force` attribute of a resource that made `made` on its cluster (`also`: what else it forces)."""
    return Attribute(
        "force",
        Bool(),
        **flags(contract, "force"),
        description=(
            f"{also}Let destroy drop this resource from the state when its cluster cannot be reached, leaving "
            f"{made} there; without it, such a destroy fails and the resource stays. Apply it before the destroy "
            "(destroy uses the stored value; `terraform apply -refresh=false` records it without reaching the "
            "cluster). Changing it changes nothing in the cluster."
        ),
    )


def planned(config: Mapping[str, Any], current: Mapping[str, Any] | None) -> Any:
    """`force` as planned: the configured value, else false; a state written before the attribute existed
    keeps its null (which a delete reads as false), so an upgrade of the provider plans no change."""
    if config.get("force") is not None:
        return config["force"]
    return None if current is not None and current.get("force") is None else False
