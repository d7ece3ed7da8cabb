"""`data "liqo_peering"`: the state of a peering with a provider, as the consumer's ForeignCluster reports it.

Found by the provider's cluster name (the ForeignCluster's name) or its cluster id; a
missing peering is an error (a data source never invents values). The phases are the
one-word columns of `kubectl get foreignclusters`, and `conditions` lists every module's
conditions, so a configuration can check or output why a peering is not established.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

from tf.schema import Schema
from tf.types import List, Map, String
from tf.utils import Diagnostics

from ..framework.resource import DataSource, ReadContext, State, call
from ..framework.schema import Attribute, Object
from ..resources import checks

if TYPE_CHECKING:
    from runtime.core import Client
    from runtime.operations.peering import Peering

READ_SECONDS: Final = 60.0

CONDITION: Final = Object(
    [
        Attribute(
            "module",
            String(),
            computed=True,
            description='"authentication", "offloading", "networking" or "".',
        ),
        Attribute("type", String(), computed=True, description="The condition's type."),
        Attribute(
            "status",
            String(),
            computed=True,
            description=(
                'The top-level Ready: "True", "False" or "Unknown"; a module\'s, in Liqo\'s words: "Established",'
                ' "Pending", "Error", "Ready", "NotReady"...'
            ),
        ),
        Attribute("reason", String(), computed=True, description="Why, in one word."),
        Attribute("message", String(), computed=True, description="Why, for people."),
    ]
)


class PeeringDataSource(DataSource):
    name: ClassVar[str] = "peering"
    schema: ClassVar[Schema] = Schema(
        description=(
            "The state of this (consumer) cluster's peering with a provider: its ForeignCluster's status. "
            "Set `cluster_name` or `cluster_id`."
        ),
        attributes=[
            Attribute(
                "cluster_name",
                String(),
                optional=True,
                computed=True,
                description="The provider's cluster name (the ForeignCluster's name).",
            ),
            Attribute(
                "cluster_id", String(), optional=True, computed=True, description="The provider's cluster ID."
            ),
            Attribute("id", String(), computed=True, description="The ForeignCluster's name."),
            Attribute(
                "auth_url",
                String(),
                computed=True,
                description="URL of the provider's authentication service.",
            ),
            Attribute(
                "role",
                String(),
                computed=True,
                description=(
                    "What the remote cluster is to this one, as Liqo's ForeignCluster says: Provider (this cluster"
                    " consumes from it), Consumer, ConsumerAndProvider or Unknown."
                ),
            ),
            Attribute(
                "authentication_status",
                String(),
                computed=True,
                description="Phase of the authentication (None, Pending, Established, Error).",
            ),
            Attribute(
                "offloading_status",
                String(),
                computed=True,
                description="Phase of the outgoing peering (None, Pending, Established, Disconnecting, Error).",
            ),
            Attribute(
                "incoming_status",
                String(),
                computed=True,
                description="Phase of the incoming peering: Established when the provider also consumes from here.",
            ),
            Attribute(
                "networking_status",
                String(),
                computed=True,
                description="Phase of the network fabric (None until it exists).",
            ),
            Attribute(
                "remote_version",
                String(),
                computed=True,
                description="Version of the runtime on the provider.",
            ),
            Attribute(
                "virtual_nodes",
                List(String()),
                computed=True,
                description="The virtual nodes standing for the provider.",
            ),
            Attribute(
                "resources",
                Map(String()),
                computed=True,
                description="The resources asked for (empty: the provider's default share).",
            ),
            Attribute(
                "conditions",
                List(CONDITION),
                computed=True,
                description="Every condition of the peering and its modules.",
            ),
        ],
    )

    def check(self, diags: Diagnostics, config: State) -> None:
        if config.get("cluster_name") is None and config.get("cluster_id") is None:
            diags.add_error(
                "Missing cluster_name or cluster_id",
                "Say which peering to read: set cluster_name (the provider's cluster name) or cluster_id.",
            )
        checks.cluster_name(diags, config.get("cluster_name"), path=["cluster_name"])

    def read(self, ctx: ReadContext, config: State) -> State | None:
        from runtime.operations.peering import find

        name, cluster_id = config.get("cluster_name"), config.get("cluster_id")
        kube = self.provider.kube
        wanted = " and ".join(
            part
            for part in (f"name {name}" if name else "", f"cluster ID {cluster_id}" if cluster_id else "")
            if part
        )

        async def look(client: Client) -> Peering | None:
            return await find(client, cluster_name=name, cluster_id=cluster_id)

        peering = call(
            ctx.diagnostics, kube, look, what=f"read the peering with {wanted}", seconds=READ_SECONDS
        )
        if ctx.diagnostics.has_errors():
            return None
        if peering is None:
            ctx.diagnostics.add_error(
                "Peering not found",
                f"The cluster at {kube.host} has no ForeignCluster with {wanted}: create it with liqo_peer "
                "(`kubectl get foreignclusters` lists the peerings).",
            )
            return None
        return _state(peering)


def _state(peering: Peering) -> State:
    spec, status = peering.spec, peering.status
    conditions: list[dict[str, Any]] = [
        {
            "module": found.module,
            "type": found.type,
            "status": found.status,
            "reason": found.reason,
            "message": found.message,
        }
        for found in peering.conditions
    ]
    return {
        "cluster_name": str(spec.get("clusterName") or peering.name),
        "cluster_id": str(spec.get("clusterID") or ""),
        "id": peering.name,
        "auth_url": str(spec.get("authURL") or ""),
        "role": str(status.get("role") or "Unknown"),
        "authentication_status": str(status.get("authentication") or "None"),
        "offloading_status": str(status.get("outgoingPeering") or "None"),
        "incoming_status": str(status.get("incomingPeering") or "None"),
        "networking_status": str(status.get("networking") or "None"),
        "remote_version": str(status.get("remoteVersion") or ""),
        "virtual_nodes": [str(node) for node in status.get("virtualNodes") or []],
        "resources": {str(k): str(v) for k, v in (spec.get("resources") or {}).items()},
        "conditions": conditions,
    }
