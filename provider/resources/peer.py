"""`resource "liqo_peer"`: on the consumer, an out-of-band peering with a provider, up to a Ready virtual node.

It writes the token Secret and the ForeignCluster and waits (`runtime.operations.peering`,
shared with the Pulumi components); the runtime's controller does the peering. The lifecycle:

- create: refuses a cluster without the runtime, a peering with itself, and a name
  already peered (import that one instead); then waits, bounded by `timeouts.create`,
  until the virtual node is Ready with the capacity asked for. A failure the wait cannot
  fix (refused token, wrong cluster id, denied resources) ends it early; either way the
  diagnostic carries the ForeignCluster's conditions, and the objects are recorded
  (tainted), so the next apply starts over cleanly;
- update: requested resources, node labels and the trusted auth service key in place (the
  controller renegotiates the ResourceSlice), the token by rewriting its Secret; the
  provider's id, name and auth URL force a new peering;
- read: the ForeignCluster gone (or being deleted) removes the peering from the state;
  spec, token and status are read back;
- delete: the ForeignCluster is deleted and waited for (the controller unpeers, and
  gives up on an unreachable provider after its own bound); past `timeouts.delete` its
  finalizer is removed, so a destroy never hangs;
- import: by the ForeignCluster's name (the provider's cluster name).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final

from tf.schema import Schema
from tf.types import Bool, Map, String
from tf.utils import Diagnostics

from runtime.api import constants as c
from runtime.api import validation
from runtime.forge.peering import split_resources
from runtime.forge.podsecurity import DEFAULT_LEVEL, LEVELS, InvalidLevelError, Level
from runtime.forge.podsecurity import level as pod_security_level
from runtime.forge.tokens import is_token
from runtime.forge.virtualnode import node_name_for
from runtime.operations.peering import CONTRACT, RESOURCE_ARGUMENTS, requested, same_amount

from ..framework.contract import flags, refuse
from ..framework.diagnostics import dropped
from ..framework.plan import is_known
from ..framework.resource import ApplyContext, ImportContext, PlanContext, ReadContext, Resource, State, call
from ..framework.schema import Attribute
from ..framework.timeouts import block as timeouts_block
from . import checks, force

if TYPE_CHECKING:
    from runtime.core import Client
    from runtime.operations.peering import Established, Peering

logger = logging.getLogger(__name__)

TYPE_NAME: Final = "liqo_peer"
_IDENTITY: Final = ("cluster_id", "cluster_name", "cluster_authurl")


def _quantity_attribute(name: str, what: str) -> Attribute:
    return Attribute(
        name,
        String(),
        **flags(CONTRACT, name),
        description=(
            f"{what} to ask the provider for, as a Kubernetes quantity. Omitted (with every other amount): the "
            "provider's default share of its free resources. Changes renegotiate in place."
        ),
    )


class PeerResource(Resource):
    name: ClassVar[str] = "peer"
    timeouts: ClassVar[Mapping[str, float]] = CONTRACT.timeouts
    read_seconds: ClassVar[float] = CONTRACT.read_seconds
    schema: ClassVar[Schema] = Schema(
        description=(
            "On the consumer cluster: an out-of-band peering with a provider cluster (its identity from "
            "`liqo_generate` there), up to a Ready virtual node standing for the provider."
        ),
        attributes=[
            Attribute(
                "id",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description="The ForeignCluster's name, that is the provider's cluster name (the import ID).",
            ),
            Attribute(
                "cluster_id",
                String(),
                **flags(CONTRACT, "cluster_id"),
                description="The provider's cluster ID (`liqo_generate.cluster_id`).",
            ),
            Attribute(
                "cluster_name",
                String(),
                **flags(CONTRACT, "cluster_name"),
                description=(
                    "The provider's cluster name (`liqo_generate.cluster_name`); the virtual node is "
                    "`liqo-<cluster_name>`."
                ),
            ),
            Attribute(
                "cluster_authurl",
                String(),
                **flags(CONTRACT, "cluster_authurl"),
                description="URL of the provider's authentication service (`liqo_generate.auth_ep`).",
            ),
            Attribute(
                "cluster_token",
                String(),
                **flags(CONTRACT, "cluster_token"),
                sensitive=True,
                description=(
                    "The peering token the provider issued (`liqo_generate.local_token`). A new token updates "
                    "its Secret in place."
                ),
            ),
            _quantity_attribute("cpu", "CPU"),
            _quantity_attribute("memory", "Memory"),
            _quantity_attribute("pods", "Number of pods"),
            _quantity_attribute("ephemeral_storage", "Ephemeral storage"),
            Attribute(
                "extended_resources",
                Map(String()),
                **flags(CONTRACT, "extended_resources"),
                description=(
                    "Other resources to ask for (such as `nvidia.com/gpu`), name to quantity. Changes "
                    "renegotiate in place."
                ),
            ),
            Attribute(
                "node_labels",
                Map(String()),
                **flags(CONTRACT, "node_labels"),
                description="Extra labels of the virtual node. Changes apply in place.",
            ),
            Attribute(
                "networking_disabled",
                Bool(),
                **flags(CONTRACT, "networking_disabled"),
                description=(
                    "Peer without the network fabric (liqoctl's `--networking-disabled`): no gateways and no "
                    "tunnel, so offloaded pods and local pods do not reach each other. Changes apply in place."
                ),
            ),
            Attribute(
                "pod_security",
                String(),
                **flags(CONTRACT, "pod_security"),
                description=(
                    "The Pod Security Standards level the provider holds this peering's offloaded pods to, in "
                    "its twin namespaces (Pod Security Admission labels) and at admission: "
                    '`"baseline"` (default: no host namespaces, host paths, privileged containers, added '
                    'capabilities and the rest of the baseline list) or `"restricted"` (also non-root, no '
                    "privilege escalation, a seccomp profile, every capability dropped). A pod that breaks it is "
                    "not offloaded and says why. There is no `privileged`: a provider never runs a consumer's "
                    "pods with its hosts' privileges. Changes apply in place."
                ),
            ),
            Attribute(
                "auth_key_fingerprint",
                String(),
                optional=True,
                description=(
                    "Fingerprint of the provider's authentication service key, `sha256:<hex>` "
                    "(`liqo_generate.auth_key_fingerprint`). When set, the consumer talks only to a service "
                    "holding that key, from the first contact on: another key at `cluster_authurl` is refused "
                    "before the token is sent (reason AuthServiceKeyChanged, naming both fingerprints). "
                    "Unset, the key met on the first contact is trusted. Changes apply in place."
                ),
            ),
            Attribute(
                "namespace",
                String(),
                **flags(CONTRACT, "namespace"),
                description=(
                    f"Namespace of the Liqo runtime on this cluster, where the token Secret is kept (default "
                    f"`{c.DEFAULT_NAMESPACE}`)."
                ),
            ),
            force.attribute(CONTRACT, "the ForeignCluster and its token Secret"),
            Attribute(
                "virtual_node",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description="Name of the virtual node standing for the provider.",
            ),
            Attribute(
                "authentication_status",
                String(),
                computed=True,
                description="Phase of the authentication with the provider (None, Pending, Established, Error).",
            ),
            Attribute(
                "offloading_status",
                String(),
                computed=True,
                description=(
                    "Phase of the outgoing peering: resources and virtual node (None, Pending, Established, "
                    "Disconnecting, Error)."
                ),
            ),
            Attribute(
                "networking_status",
                String(),
                computed=True,
                description=(
                    "Phase of the network fabric towards the provider: Established once the tunnel between the "
                    "gateways is up (None, Pending, Established, Error; None with `networking_disabled`)."
                ),
            ),
            Attribute(
                "remote_version",
                String(),
                computed=True,
                description="Version of the Liqo runtime on the provider.",
            ),
        ],
        block_types=[timeouts_block(CONTRACT.timeouts)],
    )

    # validate and plan

    def check(self, diags: Diagnostics, config: State) -> None:
        cluster_id = config.get("cluster_id")
        if checks.known(cluster_id) and (
            problem := validation.cluster_id(
                str(cluster_id), source="liqo_generate.cluster_id (or data.liqo_cluster.id) on the provider"
            )
        ):
            diags.add_error("Invalid cluster_id", problem, path=["cluster_id"])
        checks.cluster_name(diags, config.get("cluster_name"), path=["cluster_name"])
        checks.https_url(
            diags, config.get("cluster_authurl"), path=["cluster_authurl"], what="authentication URL"
        )
        token = config.get("cluster_token")
        if checks.known(token) and not is_token(str(token).strip()):
            diags.add_error(
                "Invalid cluster_token",
                "The value is not a peering token (64 hexadecimal digits): use liqo_generate.local_token of "
                "the provider.",
                path=["cluster_token"],
            )
        for attribute, resource in RESOURCE_ARGUMENTS.items():
            checks.quantity(diags, config.get(attribute), path=[attribute], what=resource)
        extended = config.get("extended_resources")
        if isinstance(extended, Mapping):
            for key, value in extended.items():
                _check_extended(diags, key, value)
        checks.labels(diags, config.get("node_labels"), path=["node_labels"])
        checks.namespace(diags, config.get("namespace"), path=["namespace"])
        fingerprint = config.get("auth_key_fingerprint")
        if checks.known(fingerprint) and fingerprint is not None:
            from runtime.forge.certificates import is_key_fingerprint

            if not is_key_fingerprint(str(fingerprint)):
                diags.add_error(
                    "Invalid auth_key_fingerprint",
                    f"{fingerprint!r} is not a key fingerprint (sha256: and 64 lowercase hexadecimal digits): "
                    "use liqo_generate.auth_key_fingerprint of the provider.",
                    path=["auth_key_fingerprint"],
                )
        level = config.get("pod_security")
        if checks.known(level) and level is not None:
            try:
                pod_security_level(level)
            except InvalidLevelError as exc:
                diags.add_error(
                    "Invalid pod_security", f"{str(exc)[:1].upper()}{str(exc)[1:]}.", path=["pod_security"]
                )

    def plan(self, ctx: PlanContext, current: State | None, planned: State) -> State:
        planned = dict(planned)
        if ctx.config.get("namespace") is None:
            planned["namespace"] = CONTRACT.defaults["namespace"]
        planned["force"] = force.planned(ctx.config, current)
        name = planned.get("cluster_name")
        if is_known(name) and name is not None:
            planned["id"] = name
            if current is None or current.get("cluster_name") != name:
                planned["virtual_node"] = node_name_for(str(name))
        return planned

    # apply

    def create(self, ctx: ApplyContext, planned: State) -> State | None:
        from runtime.operations.peering import check_new

        name = str(planned["cluster_name"])
        namespace = str(planned["namespace"])
        seconds = self.seconds(ctx.config, "create")

        async def precheck(client: Client) -> Exception | None:
            try:
                await check_new(
                    client,
                    name,
                    cluster_id=str(planned["cluster_id"]),
                    namespace=namespace,
                    seconds=seconds / 2,
                    stop=ctx.stop,
                )
            except CONTRACT.refused as exc:
                return exc
            return None

        blocked = call(
            ctx.diagnostics,
            self.provider.kube,
            precheck,
            what=f"prepare the peering with {name}",
            seconds=seconds,
        )
        if ctx.diagnostics.has_errors():
            return None
        if blocked is not None:
            refuse(
                ctx.diagnostics,
                CONTRACT,
                blocked,
                TYPE_NAME,
                name=name,
                namespace=namespace,
                host=self.provider.kube.host,
            )
            return None
        return self._write(ctx, planned, prior=None)

    def update(self, ctx: ApplyContext, current: State, planned: State) -> State | None:
        if _spec_inputs(current) == _spec_inputs(planned) and current.get("cluster_token") == planned.get(
            "cluster_token"
        ):
            return {**current, "timeouts": planned.get("timeouts"), "force": planned.get("force")}
        return self._write(ctx, planned, prior=current)

    def _write(self, ctx: ApplyContext, planned: State, *, prior: State | None) -> State | None:
        """Apply the token Secret and the ForeignCluster, then wait for the peering."""
        from runtime.operations.peering import PeeringFailedError, apply_peering, wait_established

        name = str(planned["cluster_name"])
        namespace = str(planned["namespace"])
        operation = "create" if prior is None else "update"
        seconds = self.seconds(ctx.config, operation)
        wanted = requested(planned)
        kube = self.provider.kube

        async def write(client: Client) -> None:
            await apply_peering(
                client,
                name,
                token=str(planned["cluster_token"]).strip(),
                cluster_id=str(planned["cluster_id"]),
                auth_url=str(planned["cluster_authurl"]),
                namespace=namespace,
                resources=wanted,
                node_labels=dict(planned.get("node_labels") or {}),
                field_manager=c.FIELD_MANAGER_TERRAFORM,
                networking=planned.get("networking_disabled") is not True,
                pod_security=_pod_security(planned),
                auth_key_fingerprint=str(planned.get("auth_key_fingerprint") or ""),
            )

        call(ctx.diagnostics, kube, write, what=f"write the ForeignCluster {name}", seconds=seconds)
        if ctx.diagnostics.has_errors():
            return prior

        async def wait(client: Client) -> Established | PeeringFailedError:
            try:
                return await wait_established(client, name, requested=wanted, seconds=seconds, stop=ctx.stop)
            except PeeringFailedError as exc:
                return exc

        outcome = call(
            ctx.diagnostics,
            kube,
            wait,
            what=f"the {operation} of the peering with {name}",
            seconds=seconds + 10,
        )
        if isinstance(outcome, PeeringFailedError):
            _failed(ctx.diagnostics, outcome.peering)
            return _state(planned, outcome.peering)
        if outcome is None:
            return _state(planned, _last_seen(kube, name))
        if outcome.resized:
            ctx.diagnostics.add_warning(
                f"The provider {name} granted less than asked",
                f"{outcome.resized}. The virtual node advertises what was granted; the grant grows towards the "
                "request when the provider has room.",
            )
        return _state(planned, outcome.peering)

    # read, delete, import

    def read(self, ctx: ReadContext, current: State) -> State | None:
        from runtime.operations.peering import observe

        name = str(current.get("id") or current.get("cluster_name"))
        namespace = str(current.get("namespace") or c.DEFAULT_NAMESPACE)
        return self.refreshed(
            ctx,
            current,
            lambda client: observe(client, name, namespace=namespace),
            what=f"read the peering with {name}",
            gone=f"the ForeignCluster {name} is gone",
            state=lambda found: _observed_state(current, found[0], token=found[1], namespace=namespace),
        )

    def delete(self, ctx: ApplyContext, current: State) -> None:
        from runtime.operations.peering import ORPHAN_SECONDS, unpeer

        name = str(current.get("id") or current.get("cluster_name"))
        namespace = str(current.get("namespace") or c.DEFAULT_NAMESPACE)
        seconds = self.seconds(current, "delete")

        outcome = call(
            ctx.diagnostics,
            self.provider.kube,
            lambda client: unpeer(
                client,
                name,
                namespace=namespace,
                seconds=seconds,
                field_manager=c.FIELD_MANAGER_TERRAFORM,
                force=current.get("force") is True,
                stop=ctx.stop,
            ),
            what=f"delete the peering with {name}",
            seconds=seconds + ORPHAN_SECONDS + 10,
        )
        if outcome is None:
            return
        if outcome.orphaned:
            ctx.diagnostics.add_warning(
                f"The peering with {name} was removed without its clean-up",
                f"The runtime did not finish unpeering within {seconds:g}s (last seen: {outcome.orphaned}), so "
                "the ForeignCluster's finalizer was removed. Objects of the peering may be left on either "
                "cluster (the tenant namespaces liqo-tenant-*); check that the runtime's controller manager runs.",
            )
        if outcome.unreachable:
            dropped(
                ctx.diagnostics,
                summary="Cluster unreachable: peering dropped from the state",
                error=outcome.unreachable,
                kept=f"the ForeignCluster {name}",
                comes_back="delete the ForeignCluster there",
            )

    def import_(self, ctx: ImportContext, id: str) -> State | None:
        from runtime.forge.peering import trusted_key_of
        from runtime.operations.peering import get, token

        checks.cluster_name(ctx.diagnostics, id, path=["cluster_name"])
        if ctx.diagnostics.has_errors():
            return None

        async def observe(client: Client) -> tuple[Peering, str] | None:
            peering = await get(client, id)
            if peering is None:
                return None
            return peering, await token(client, id, namespace=_token_namespace(peering))

        def state(found: tuple[Peering, str]) -> State:
            peering, secret_token = found
            # an imported peering trusts the key its ForeignCluster names, as `auth_key_fingerprint` would
            empty = {
                **self.empty_state(),
                "force": False,
                "auth_key_fingerprint": trusted_key_of(peering.obj) or None,
            }
            return _observed_state(empty, peering, token=secret_token, namespace=_token_namespace(peering))

        return self.imported(
            ctx,
            observe,
            what=f"read the peering with {id}",
            missing=(
                f"There is no ForeignCluster {id} on the cluster at {self.provider.kube.host}. The import ID is the "
                "ForeignCluster's name, the provider's cluster name (`kubectl get foreignclusters`)."
            ),
            state=state,
        )


# state


def _token_namespace(peering: Peering) -> str:
    """The namespace of the Secret that holds the peering's token."""
    return str((peering.spec.get("tokenSecretRef") or {}).get("namespace") or c.DEFAULT_NAMESPACE)


def _spec_inputs(state: State) -> tuple[Any, ...]:
    return (
        *(state.get(name) for name in _IDENTITY),
        requested(state),
        dict(state.get("node_labels") or {}),
        state.get("networking_disabled") is True,
        _pod_security(state),
        state.get("auth_key_fingerprint") or "",
    )


def _pod_security(state: State) -> Level:
    return next((level for level in LEVELS if level == state.get("pod_security")), DEFAULT_LEVEL)


def _state(planned: State, peering: Peering | None) -> State:
    """The state after a write: the planned inputs and the status as last seen."""
    status = peering.status if peering is not None else {}
    return {
        **planned,
        "id": planned["cluster_name"],
        "virtual_node": peering.virtual_node if peering is not None else planned.get("virtual_node"),
        "authentication_status": status.get("authentication") or "None",
        "offloading_status": status.get("outgoingPeering") or "None",
        "networking_status": status.get("networking") or "None",
        # unknown in an update plan that leaves it unset: unset is False
        "networking_disabled": planned.get("networking_disabled") is True,
        "pod_security": _pod_security(planned),
        "remote_version": status.get("remoteVersion") or "",
    }


def _observed_state(current: State, peering: Peering, *, token: str, namespace: str) -> State:
    from runtime.forge.peering import trusted_key_of

    spec = peering.spec
    standard, extended = split_resources(spec.get("resources") or {})
    state = {
        **current,
        "id": peering.name,
        "cluster_id": str(spec.get("clusterID") or ""),
        "cluster_name": str(spec.get("clusterName") or peering.name),
        "cluster_authurl": str(spec.get("authURL") or ""),
        # the Secret holds the token stripped: the configured value may carry a newline (`file(...)`)
        "cluster_token": current["cluster_token"]
        if _same_token(current.get("cluster_token"), token)
        else token,
        "namespace": namespace,
    }
    for attribute, resource in RESOURCE_ARGUMENTS.items():
        state[attribute] = same_amount(current.get(attribute), standard.get(resource))
    state["extended_resources"] = _map(
        current.get("extended_resources"),
        {
            key: same_amount((current.get("extended_resources") or {}).get(key), value)
            for key, value in extended.items()
        },
    )
    state["node_labels"] = _map(current.get("node_labels"), dict(spec.get("nodeLabels") or {}))
    state["networking_disabled"] = spec.get("networkingEnabled", True) is False
    state["pod_security"] = str(spec.get("podSecurity") or "baseline")
    # a key trusted by hand (kubectl annotate) on a peering configured without one is not drift
    if current.get("auth_key_fingerprint") is not None:
        state["auth_key_fingerprint"] = trusted_key_of(peering.obj) or None
    return _state(state, peering)


def _same_token(known: Any, live: str) -> bool:
    return isinstance(known, str) and known.strip() == live


def _map(known: Any, live: Mapping[str, Any]) -> dict[str, Any] | None:
    """A map read back: an empty one is no map when the state has none (they ask for the same)."""
    return dict(live) if live or known is not None else None


def _check_extended(diags: Diagnostics, key: str, value: Any) -> None:
    path: list[Any] = ["extended_resources", key]
    if key in RESOURCE_ARGUMENTS.values():
        attribute = next(a for a, r in RESOURCE_ARGUMENTS.items() if r == key)
        diags.add_error(
            "Use the dedicated attribute",
            f"{key!r} has its own attribute: set {attribute} instead of extended_resources[{key!r}].",
            path=path,
        )
        return
    problem = validation.label_key_problem(key)
    if problem:
        diags.add_error("Invalid resource name", f"{key!r} is not a resource name: {problem}.", path=path)
    checks.quantity(diags, value, path=path, what=key)


# diagnostics


def _failed(diags: Diagnostics, peering: Peering) -> None:
    diags.add_error(
        f"Peering with {peering.name} failed",
        "The runtime reports a failure that waiting will not fix:\n  "
        + "\n  ".join(peering.problems())
        + "\nFix the cause (a refused token needs a new liqo_generate token; a wrong cluster_id or auth URL needs "
        "the provider's values; a changed auth service key needs the command its message gives, once the key is "
        "confirmed to be the provider's) and apply again.",
    )


def _last_seen(kube: Any, name: str) -> Peering | None:
    """The ForeignCluster after a wait that failed (its error quotes what held it up), for the state."""
    from runtime.operations.peering import get

    return call(
        Diagnostics(),
        kube,
        lambda client: get(client, name),
        what=f"read {name}",
        seconds=CONTRACT.read_seconds,
    )
