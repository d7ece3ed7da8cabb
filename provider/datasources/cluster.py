"""`data "liqo_cluster"`: the Liqo identity of the cluster the provider points at.

The runtime keeps the identity (id, name, labels, version, pod and service CIDRs) in
the ConfigMap `liqo-cluster-identity` of its namespace (keys in
`runtime.api.constants`); `cluster_identity` is the one lookup, shared with the
resources that need the identity. A cluster without the runtime is an error that says
to apply `liqo_install` first: a data source never invents values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from tf.iface import ReadDataContext
from tf.schema import Schema
from tf.types import Map, String
from tf.utils import Diagnostics

from runtime.api import constants

from ..framework.resource import DataSource, State, call
from ..framework.schema import Attribute

if TYPE_CHECKING:
    from runtime.core import Client

#: the bound of one read of the data source
READ_SECONDS = 60.0


class IdentityError(ValueError):
    """The identity ConfigMap exists but a value in it is malformed."""


@dataclass(frozen=True)
class ClusterIdentity:
    cluster_id: str
    name: str
    labels: dict[str, str]
    version: str
    pod_cidr: str
    service_cidr: str


async def cluster_identity(
    client: Client, *, namespace: str = constants.DEFAULT_NAMESPACE
) -> ClusterIdentity | None:
    """The identity the runtime published in `namespace`, or None when the runtime is not installed there."""
    from runtime.api.kinds import CONFIGMAPS
    from runtime.core import NotFoundError

    try:
        configmap = await client.get(CONFIGMAPS, constants.CLUSTER_IDENTITY_CONFIGMAP, namespace=namespace)
    except NotFoundError:
        return None
    data = configmap.get("data") or {}
    where = f"{namespace}/{constants.CLUSTER_IDENTITY_CONFIGMAP}"
    cluster_id = data.get(constants.IDENTITY_CLUSTER_ID) or ""
    if not cluster_id:
        raise IdentityError(f"ConfigMap {where} has no {constants.IDENTITY_CLUSTER_ID}")
    try:
        labels = json.loads(data.get(constants.IDENTITY_CLUSTER_LABELS) or "{}")
    except ValueError as exc:
        raise IdentityError(
            f"ConfigMap {where}: {constants.IDENTITY_CLUSTER_LABELS} is not JSON ({exc})"
        ) from None
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise IdentityError(
            f"ConfigMap {where}: {constants.IDENTITY_CLUSTER_LABELS} is not a JSON object of strings"
        )
    return ClusterIdentity(
        cluster_id=cluster_id,
        name=data.get(constants.IDENTITY_CLUSTER_NAME) or "",
        labels=labels,
        version=data.get(constants.IDENTITY_VERSION) or "",
        pod_cidr=data.get(constants.IDENTITY_POD_CIDR) or "",
        service_cidr=data.get(constants.IDENTITY_SERVICE_CIDR) or "",
    )


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

    def read(self, ctx: ReadDataContext, config: State) -> State | None:
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
