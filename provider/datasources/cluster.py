"""`data "liqo_cluster"`: the Liqo identity of the cluster the provider points at.

The runtime keeps the identity (id, name, labels, version, pod and service CIDRs) in
the ConfigMap `liqo-clusterid-configmap` of its namespace (keys in
`runtime.api.constants`); `runtime.operations.identity.cluster_identity` is the one
lookup, shared with the resources and the Pulumi components. A cluster without the runtime is an error that says
to apply `liqo_install` first: a data source never invents values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from tf.schema import Schema
from tf.types import Map, String
from tf.utils import Diagnostics

from runtime.api import constants

from ..framework.resource import DataSource, ReadContext, State, call
from ..framework.schema import Attribute

if TYPE_CHECKING:
    from runtime.core import Client
    from runtime.operations.identity import ClusterIdentity

#: the bound of one read of the data source
READ_SECONDS = 60.0


class ClusterDataSource(DataSource):
    name: ClassVar[str] = "cluster"
    schema: ClassVar[Schema] = Schema(
        description="The Liqo identity of the cluster this provider instance manages (the runtime must be installed).",
        attributes=[
            Attribute(
                "namespace",
                String(),
                optional=True,
                computed=True,
                description=f"Namespace the Liqo runtime is installed in (default `{constants.DEFAULT_NAMESPACE}`).",
            ),
            Attribute("id", String(), computed=True, description="The cluster ID, unique and stable."),
            Attribute(
                "name", String(), computed=True, description="The cluster name peers know this cluster by."
            ),
            Attribute(
                "labels",
                Map(String()),
                computed=True,
                description="Labels the cluster suggests for the virtual nodes that stand for it in its consumers.",
            ),
            Attribute(
                "version", String(), computed=True, description="Version of the installed Liqo runtime."
            ),
            Attribute("pod_cidr", String(), computed=True, description="The cluster's pod CIDR."),
            Attribute("service_cidr", String(), computed=True, description="The cluster's service CIDR."),
        ],
    )

    def read(self, ctx: ReadContext, config: State) -> State | None:
        namespace = config.get("namespace") or constants.DEFAULT_NAMESPACE
        kube = self.provider.kube
        identity = call(
            ctx.diagnostics,
            kube,
            lambda client: _read(client, namespace),
            what=f"read the Liqo cluster identity in namespace {namespace}",
            seconds=READ_SECONDS,
        )
        if ctx.diagnostics.has_errors():
            return None
        if isinstance(identity, str):
            ctx.diagnostics.add_error(f"Invalid Liqo cluster identity on {kube.host}", identity)
            return None
        if identity is None:
            _not_installed(ctx.diagnostics, host=kube.host, namespace=namespace)
            return None
        return {
            "namespace": namespace,
            "id": identity.cluster_id,
            "name": identity.name,
            "labels": identity.labels,
            "version": identity.version,
            "pod_cidr": identity.pod_cidr,
            "service_cidr": identity.service_cidr,
        }


async def _read(client: Client, namespace: str) -> ClusterIdentity | str | None:
    """The identity, None when absent, or the message of a malformed one."""
    from runtime.operations.identity import IdentityError, cluster_identity

    try:
        return await cluster_identity(client, namespace=namespace)
    except IdentityError as exc:
        return f"{exc}. Reinstall the runtime (apply liqo_install again) to rewrite it."


def _not_installed(diagnostics: Diagnostics, *, host: str, namespace: str) -> None:
    diagnostics.add_error(
        "Liqo runtime not installed",
        f"the Liqo runtime is not installed in the cluster at {host} (namespace {namespace}): "
        "apply a liqo_install resource first",
    )
