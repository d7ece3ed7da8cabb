"""The dynamic resource of `Peer`: an out-of-band peering on the consumer, up to a Ready virtual node
(`runtime.operations.peering`).

Create refuses a cluster without the runtime, a peering with itself and a name already
peered, writes the token Secret and the ForeignCluster, and waits, bounded, for the
virtual node (a failure the wait cannot fix ends it early, with the ForeignCluster's
conditions in the error). A create that fails unpeers what it wrote before it reports
why: Pulumi keeps no state for a failed create, so a ForeignCluster left behind would
make the next `pulumi up` refuse the name as peered already. The provider's id, name and auth URL replace the peering; the
resources, node labels and token change in place. Read returns the live spec, token and
status, so a refresh shows drift made by hand and the next `pulumi up` puts it back.
Delete unpeers, bounded, with the forced path; a cluster that cannot be reached fails it
(the Peer stays), unless `force` lets it go.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import pulumi
import pulumi.dynamic

from runtime.api import constants as c
from runtime.core import APIError
from runtime.forge import podsecurity
from runtime.forge.peering import split_resources, trusted_key_of
from runtime.operations import peering
from runtime.operations.peering import RESOURCE_ARGUMENTS
from runtime.operations.unreachable import UnreachableError
from runtime.operations.waits import StopRequested, WaitTimeoutError

from .. import _cluster
from .base import (
    LiqoError,
    SpecProvider,
    api_error,
    connection,
    interrupted,
    kept_unreachable,
    unreachable_on_delete,
)

logger = logging.getLogger(__name__)

SECRETS: Final = ("cluster_token",)


class PeeringProvider(SpecProvider):
    contract = peering.CONTRACT
    this = "the Peer"

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        name = str(props["cluster_name"])
        namespace = str(props["namespace"])
        bound = self.bound(props, "create")
        try:
            _cluster.run(
                props,
                lambda client: peering.check_new(
                    client, name, cluster_id=str(props["cluster_id"]), namespace=namespace, seconds=bound / 2
                ),
                seconds=bound,
            )
        except self.contract.refused as exc:
            raise self.refused(exc, props, name=name, namespace=namespace) from None
        except APIError as exc:
            raise api_error(exc, what=f"prepare the peering with {name}", props=props) from None
        bound = self.bound(props, "delete")
        return self._created_or_rolled_back(
            name,
            props,
            lambda client: peering.unpeer(
                client,
                name,
                namespace=namespace,
                seconds=bound,
                field_manager=c.FIELD_MANAGER_PULUMI,
                force=True,  # nothing is in the stack yet: an unreachable cluster is said, not kept
            ),
            seconds=bound + peering.ORPHAN_SECONDS + 10,
            what=f"The ForeignCluster {name}",
            by_hand=f"delete it (kubectl delete foreignclusters {name})",
        )

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        namespace = str(props.get("namespace") or c.DEFAULT_NAMESPACE)
        try:
            found = _cluster.run(
                props,
                lambda client: peering.observe(client, id_, namespace=namespace),
                seconds=self.contract.read_seconds,
            )
        except APIError as exc:
            raise api_error(exc, what=f"read the peering with {id_}", props=props) from None
        if found is None:
            logger.info("Peer %s: the ForeignCluster is gone", id_)
            return pulumi.dynamic.ReadResult("", {})
        live, secret_token = found
        spec = live.spec
        standard, extended = split_resources(spec.get("resources") or {})
        observed = {
            **props,
            "cluster_id": str(spec.get("clusterID") or ""),
            "cluster_name": str(spec.get("clusterName") or live.name),
            "cluster_authurl": str(spec.get("authURL") or ""),
            # the Secret holds the token stripped: the given value may carry a newline
            "cluster_token": props.get("cluster_token")
            if str(props.get("cluster_token") or "").strip() == secret_token
            else secret_token,
            **{
                arg: peering.same_amount(props.get(arg), standard.get(resource))
                for arg, resource in RESOURCE_ARGUMENTS.items()
            },
            "extended_resources": {
                key: peering.same_amount((props.get("extended_resources") or {}).get(key), value)
                for key, value in extended.items()
            },
            "node_labels": dict(spec.get("nodeLabels") or {}),
            "networking_disabled": spec.get("networkingEnabled", True) is False,
            "pod_security": str(spec.get("podSecurity") or podsecurity.DEFAULT_LEVEL),
            # a key trusted by hand (kubectl annotate) on a peering given none is not drift
            "auth_key_fingerprint": trusted_key_of(live.obj)
            if props.get("auth_key_fingerprint")
            else props.get("auth_key_fingerprint"),
            **_status(live),
        }
        return pulumi.dynamic.ReadResult(id_, observed)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        namespace = str(props.get("namespace") or c.DEFAULT_NAMESPACE)
        bound = self.bound(props, "delete")
        try:
            outcome = _cluster.run(
                props,
                lambda client: peering.unpeer(
                    client,
                    id_,
                    namespace=namespace,
                    seconds=bound,
                    field_manager=c.FIELD_MANAGER_PULUMI,
                    force=props.get("force") is True,
                ),
                seconds=bound + peering.ORPHAN_SECONDS + 10,
            )
        except UnreachableError as exc:
            raise kept_unreachable(f"Peer {id_}", exc) from None
        except APIError as exc:
            raise api_error(exc, what=f"delete the peering with {id_}", props=props) from None
        if outcome.orphaned:
            logger.warning(
                "Peer %s: the runtime did not finish unpeering within %gs (last seen: %s), so the ForeignCluster's "
                "finalizer was removed; objects of the peering may be left on either cluster.",
                id_,
                bound,
                outcome.orphaned,
            )
        if outcome.unreachable:
            logger.warning(
                "%s",
                unreachable_on_delete(
                    f"Peer {id_}",
                    outcome.unreachable,
                    kept=f"the ForeignCluster {id_}",
                    comes_back="delete the ForeignCluster there",
                ),
            )

    def _write(self, props: dict[str, Any], operation: str) -> dict[str, Any]:
        name = str(props["cluster_name"])
        namespace = str(props["namespace"])
        bound = self.bound(props, operation)
        wanted = peering.requested(props)

        async def write_and_wait(client: Any) -> peering.Established:
            await peering.apply_peering(
                client,
                name,
                token=str(props["cluster_token"]).strip(),
                cluster_id=str(props["cluster_id"]),
                auth_url=str(props["cluster_authurl"]),
                namespace=namespace,
                resources=wanted,
                node_labels=dict(props.get("node_labels") or {}),
                field_manager=c.FIELD_MANAGER_PULUMI,
                networking=not props.get("networking_disabled"),
                pod_security=podsecurity.level(props.get("pod_security")),
                auth_key_fingerprint=str(props.get("auth_key_fingerprint") or ""),
            )
            return await peering.wait_established(client, name, requested=wanted, seconds=bound)

        try:
            established = _cluster.run(props, write_and_wait, seconds=bound + 10)
        except peering.PeeringFailedError as exc:
            raise LiqoError(
                f"Peering with {name} failed: the runtime reports a failure that waiting will not fix: "
                + "; ".join(exc.peering.problems())
                + ". Fix the cause (a refused token needs a new Generate; a wrong cluster_id or auth URL needs "
                "the provider's values) and run `pulumi up` again."
            ) from None
        except (WaitTimeoutError, StopRequested) as exc:
            raise interrupted(exc, what=f"the {operation} of the peering with {name}") from None
        except APIError as exc:
            raise api_error(exc, what=f"write the ForeignCluster {name}", props=props) from None
        if established.resized:
            logger.warning("Peer %s: the provider granted less than asked: %s", name, established.resized)
        return {
            **connection(props),
            **self.inputs(props),
            **_status(established.peering),
        }


def _status(live: peering.Peering) -> dict[str, str]:
    status = live.status
    return {
        "virtual_node": live.virtual_node,
        "authentication_status": str(status.get("authentication") or "None"),
        "offloading_status": str(status.get("outgoingPeering") or "None"),
        "networking_status": str(status.get("networking") or "None"),
        "remote_version": str(status.get("remoteVersion") or ""),
    }


class Peering(pulumi.dynamic.Resource, module="liqo", name="Peering"):
    """A peering with a provider cluster, on the consumer (see `PeeringProvider`)."""

    virtual_node: pulumi.Output[str]
    authentication_status: pulumi.Output[str]
    offloading_status: pulumi.Output[str]
    networking_status: pulumi.Output[str]
    remote_version: pulumi.Output[str]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        outputs = dict.fromkeys(
            (
                "virtual_node",
                "authentication_status",
                "offloading_status",
                "networking_status",
                "remote_version",
            )
        )
        super().__init__(
            PeeringProvider(),
            name,
            {**outputs, **props},
            pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig", *SECRETS])
            ),
        )
