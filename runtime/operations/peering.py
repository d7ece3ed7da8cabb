"""A peering seen from the consumer: writing the ForeignCluster and its token Secret (built by
`runtime.forge.peering`), reading them back, the bounded wait for a Ready virtual node, and unpeering with the
bounded wait and the forced path.

`Peering` summarises the status the controller writes (`Ready` with the reason of the
first step not done, per-module conditions, one-word phases); `wait_established` polls it
until the virtual node is Ready with the capacity asked for (and the network fabric's tunnel is
up, when the peering has the fabric), ending early when the
controller reports a failure a wait cannot fix (a refused token, a wrong cluster id,
denied resources). `unpeer` deletes the ForeignCluster and waits for the controller's
clean-up; past its bound it removes the finalizer, so a destroy never hangs, and a
cluster that cannot be reached counts as gone. The runtime does the peering; these
functions write the desired objects and wait. Outcomes are values and typed errors that
each front end words.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS
from runtime.api.kinds import NODES, SECRETS
from runtime.api.objects import JSON, nested
from runtime.core import APIConnectionError, Client, NotFoundError
from runtime.forge import conditions, podsecurity
from runtime.forge import credential as contract
from runtime.forge.peering import token_of, token_secret_name
from runtime.forge.podsecurity import Level
from runtime.forge.virtualnode import node_name_for

from .contract import Change, Contract, Input, Refusal
from .identity import NotInstalledError, cluster_identity
from .observed import ObservedObject
from .unreachable import unreachable
from .waits import (
    NEVER,
    POLL_INTERVAL,
    POLL_MAX_INTERVAL,
    Blocking,
    Seen,
    Stop,
    WaitTimeoutError,
    wait_until,
)

logger = logging.getLogger(__name__)


#: reasons of the Ready condition a wait cannot fix: the spec, the token or the provider's answer must change
DEFINITIVE: Final = frozenset(
    {
        c.REASON_INVALID_SPEC,
        c.REASON_AUTHENTICATION_FAILED,
        c.REASON_CLUSTER_ID_MISMATCH,
        c.REASON_RESOURCES_DENIED,
        c.REASON_AUTH_SERVICE_KEY_CHANGED,
        contract.KEY_CHANGE_REFUSED,
    }
)
#: how long a definitive failure must persist before a wait gives up (the controller may still be retrying a
#: refusal that came from its provider's caches lagging behind a token just issued)
FAIL_AFTER: Final = 15.0
#: how long a forced unpeer waits for the ForeignCluster to go once its finalizer is removed
ORPHAN_SECONDS: Final = 15.0
#: the front ends' argument for each standard resource a peering asks for (the ForeignCluster's `spec.resources`)
RESOURCE_ARGUMENTS: Final = {
    "cpu": "cpu",
    "memory": "memory",
    "pods": "pods",
    "ephemeral_storage": "ephemeral-storage",
}


# reading a peering


@dataclass(frozen=True)
class Condition:
    module: str
    type: str
    status: str
    reason: str
    message: str
    observed_generation: int | None = None

    def __str__(self) -> str:
        where = f"{self.module}/" if self.module else ""
        return f"{where}{self.type}={self.status} ({self.reason}): {self.message}"

    @property
    def ok(self) -> bool:
        """True for a Kubernetes condition (the top-level Ready); Established or Ready, as liqoctl counts a
        module's condition healthy, for one in Liqo's words."""
        return self.status == "True" or self.status in c.LIQO_HEALTHY_STATUSES


@dataclass(frozen=True)
class Peering(ObservedObject):
    """A ForeignCluster as the controller reports it."""

    obj: JSON
    conditions: list[Condition] = field(default_factory=list)

    @classmethod
    def of(cls, obj: JSON) -> Peering:
        status = obj.get("status") or {}
        found = [_condition("", entry) for entry in status.get("conditions") or []]
        for module, state in (status.get("modules") or {}).items():
            found += [_condition(module, entry) for entry in (state or {}).get("conditions") or []]
        return cls(obj, found)

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def generation(self) -> int:
        return int(nested(self.obj, "metadata", "generation") or 0)

    @property
    def terminating(self) -> bool:
        return bool(nested(self.obj, "metadata", "deletionTimestamp"))

    @property
    def virtual_node(self) -> str:
        nodes = self.status.get("virtualNodes") or []
        return str(nodes[0]) if nodes else node_name_for(str(self.spec.get("clusterName") or self.name))

    def condition(self, type: str, module: str = "") -> Condition | None:
        return next(
            (found for found in self.conditions if found.type == type and found.module == module), None
        )

    @property
    def ready(self) -> Condition | None:
        return self.condition(c.CONDITION_READY)

    @property
    def current(self) -> bool:
        """Whether the status speaks of the spec as it is now (the controller saw this generation)."""
        observed = self.status.get("observedGeneration")
        ready = self.ready
        if observed is None and ready is not None:
            observed = ready.observed_generation
        return observed is not None and int(observed) >= self.generation

    def problems(self) -> list[str]:
        """The conditions that are not True (Established, Ready), worded for a diagnostic (the top-level Ready only when it says more)."""
        modules = {(found.reason, found.message) for found in self.conditions if found.module}
        return [
            str(found)
            for found in self.conditions
            if not found.ok and (found.module or (found.reason, found.message) not in modules)
        ]

    def summary(self) -> str:
        status = self.status
        phases = ", ".join(
            f"{key} {status.get(key) or 'None'}"
            for key in ("authentication", "outgoingPeering", "networking")
        )
        problems = self.problems()
        return phases + (": " + "; ".join(problems) if problems else "")


def _condition(module: str, entry: Mapping[str, Any]) -> Condition:
    generation = entry.get("observedGeneration")
    return Condition(
        module=module,
        type=str(entry.get("type") or ""),
        status=str(entry.get("status") or "Unknown"),
        reason=str(entry.get("reason") or ""),
        message=str(entry.get("message") or ""),
        observed_generation=int(generation) if generation is not None else None,
    )


async def get(client: Client, name: str) -> Peering | None:
    try:
        return Peering.of(await client.get(FOREIGNCLUSTERS, name))
    except NotFoundError:
        return None


async def find(client: Client, *, cluster_name: str | None, cluster_id: str | None) -> Peering | None:
    """The ForeignCluster of a provider, by name or by cluster id (None: there is none)."""
    if cluster_name:
        peering = await get(client, cluster_name)
        if peering is None or (cluster_id and peering.spec.get("clusterID") != cluster_id):
            return None
        return peering
    listed = await client.list(FOREIGNCLUSTERS)
    return next(
        (Peering.of(obj) for obj in listed.items if nested(obj, "spec", "clusterID") == cluster_id),
        None,
    )


async def token(client: Client, name: str, *, namespace: str) -> str:
    """The token the Secret of the peering `name` holds ("" when there is none)."""
    try:
        return token_of(await client.get(SECRETS, token_secret_name(name), namespace=namespace))
    except NotFoundError:
        return ""


async def observe(client: Client, name: str, *, namespace: str) -> tuple[Peering, str] | None:
    """The peering `name` and its token, as they are now; None when it is gone or being deleted."""
    peering = await get(client, name)
    if peering is None or peering.terminating:
        return None
    return peering, await token(client, name, namespace=namespace)


def requested(arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ForeignCluster's `spec.resources` for a front end's arguments: the standard amounts
    (`RESOURCE_ARGUMENTS`) and `extended_resources`."""
    wanted = {
        resource: str(arguments[argument])
        for argument, resource in RESOURCE_ARGUMENTS.items()
        if arguments.get(argument) is not None
    }
    wanted.update({str(k): str(v) for k, v in (arguments.get("extended_resources") or {}).items()})
    return wanted


def same_amount(known: Any, live: str | None) -> str | None:
    """The live amount, written as the caller has it when both are the same quantity (`1` and `1000m`)."""
    from runtime.api.quantity import parse_quantity

    if live is None or not isinstance(known, str):
        return live
    try:
        return known if parse_quantity(known).value == parse_quantity(live).value else live
    except ValueError:
        return live


# creating


class SelfPeeringError(Exception):
    """The cluster id to peer with is this cluster's own."""

    def __init__(self, cluster_id: str) -> None:
        super().__init__(f"cluster {cluster_id} cannot peer with itself")
        self.cluster_id = cluster_id


class PeeringExistsError(Exception):
    """A ForeignCluster of that name exists already (and is not being deleted)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"ForeignCluster {name} exists already")
        self.name = name


#: `liqo_peer` and `Peer`: the provider's identity and the runtime's namespace replace the peering; the
#: token, the resources asked for, the node's labels and the networking and pod security change in place
CONTRACT: Final = Contract(
    "peer",
    (
        Input("cluster_id", Change.REPLACE, required=True),
        Input("cluster_name", Change.REPLACE, required=True),
        Input("cluster_authurl", Change.REPLACE, required=True),
        Input("cluster_token", Change.UPDATE, required=True),
        *(Input(argument, Change.UPDATE) for argument in RESOURCE_ARGUMENTS),
        Input("extended_resources", Change.UPDATE),
        Input("node_labels", Change.UPDATE),
        Input("networking_disabled", Change.UPDATE, default=False),
        Input("pod_security", Change.UPDATE, default=podsecurity.DEFAULT_LEVEL),
        Input("auth_key_fingerprint", Change.UPDATE),
        Input("namespace", Change.REPLACE, default=c.DEFAULT_NAMESPACE),
        Input("force", Change.UPDATE, default=False),
    ),
    timeouts={"create": 300.0, "update": 300.0, "delete": 180.0},
    refusals=(
        Refusal(
            NotInstalledError,
            "Liqo runtime not installed",
            "The Liqo runtime is not installed in the cluster at {host} (namespace {namespace}): {create} {install} "
            "on this (consumer) cluster first, and make {this} depend on it.",
        ),
        Refusal(
            SelfPeeringError,
            "A cluster cannot peer with itself",
            "cluster_id is the ID of the cluster at {host} itself: take cluster_id, cluster_name, cluster_authurl "
            "and cluster_token from {generate} on the provider cluster.",
            field="cluster_id",
        ),
        Refusal(
            PeeringExistsError,
            "Peering already exists",
            "The cluster at {host} already has a ForeignCluster {name}. {adopt}",
            field="cluster_name",
            id="{name}",
            by_hand="kubectl delete foreignclusters {name}",
        ),
    ),
)


async def check_new(
    client: Client, name: str, *, cluster_id: str, namespace: str, seconds: float, stop: Stop = NEVER
) -> None:
    """Whether a peering `name` with `cluster_id` can be created; waits out a ForeignCluster of that name being
    deleted (up to `seconds`).

    Raises NotInstalledError (no runtime in `namespace`), SelfPeeringError or PeeringExistsError.
    """
    local = await cluster_identity(client, namespace=namespace)
    if local is None:
        raise NotInstalledError(namespace)
    if local.cluster_id == cluster_id:
        raise SelfPeeringError(cluster_id)
    existing = await get(client, name)
    if existing is not None and existing.terminating:
        await wait_gone(client, name, seconds=seconds, stop=stop)
    elif existing is not None:
        raise PeeringExistsError(name)


# waiting


class PeeringFailedError(Exception):
    """The controller reports a failure that waiting will not fix."""

    def __init__(self, peering: Peering) -> None:
        super().__init__(peering.summary())
        self.peering = peering


@dataclass(frozen=True)
class Established:
    peering: Peering
    #: the provider granted less than asked (its condition message), "" when it granted all
    resized: str = ""


async def wait_established(
    client: Client,
    name: str,
    *,
    requested: Mapping[str, str],
    seconds: float,
    stop: Stop = NEVER,
    fail_after: float | None = None,
) -> Established:
    """Until the peering's virtual node is Ready and advertises what was asked for (or what the provider granted),
    and, when the peering has the network fabric (its controller reports the module enabled), until the tunnel
    is up, as `liqoctl peer` waits for it.

    Raises PeeringFailedError once a definitive failure has persisted for `fail_after` seconds (`FAIL_AFTER`).
    """
    patience = FAIL_AFTER if fail_after is None else fail_after
    from runtime.api.quantity import parse_quantity

    loop = asyncio.get_running_loop()
    failing_since: float | None = None

    subject = f"ForeignCluster {name}"

    async def check() -> tuple[Established | None, Seen]:
        nonlocal failing_since
        peering = await get(client, name)
        if peering is None:
            return None, Blocking(subject, "NotFound", "it does not exist")
        ready = peering.ready
        if not peering.current or ready is None:
            return None, Blocking(
                subject,
                "NotObserved",
                "the runtime has not reported on it yet (is liqo-controller-manager running on this cluster?)",
            )
        if ready.status != "True":
            if ready.reason in DEFINITIVE:
                failing_since = failing_since if failing_since is not None else loop.time()
                if loop.time() - failing_since >= patience:
                    raise PeeringFailedError(peering)
            else:
                failing_since = None
            return None, Blocking(subject, ready.reason, ready.message)
        failing_since = None
        node = await _node(client, peering.virtual_node)
        if node is None or not conditions.is_true(nested(node, "status", "conditions"), "Ready"):
            return None, Blocking(
                f"node {peering.virtual_node}",
                "NotReady" if node is not None else "NotFound",
                f"ForeignCluster {name} is established; its virtual node is not Ready yet",
            )
        granted = peering.condition(c.CONDITION_RESOURCES_GRANTED, "offloading")
        if granted is not None and granted.reason == c.REASON_RESOURCES_RESIZED:
            return Established(peering, resized=granted.message), "resized"
        capacity = nested(node, "status", "capacity") or {}
        differ = [
            f"{key} {capacity.get(key, 'none')} (asked {amount})"
            for key, amount in requested.items()
            if key not in capacity or parse_quantity(capacity[key]).value != parse_quantity(amount).value
        ]
        if differ:
            return None, Blocking(
                f"node {peering.virtual_node}", "CapacityDiffers", f"it advertises {', '.join(differ)}"
            )
        networking = nested(peering.status, "modules", "networking") or {}
        if networking.get("enabled") and peering.status.get("networking") != "Established":
            tunnel = peering.condition(c.CONDITION_NETWORK_CONNECTED, "networking")
            return None, Blocking(
                f"ForeignCluster {name}",
                tunnel.reason if tunnel is not None and tunnel.reason else "NetworkingNotEstablished",
                f"node {peering.virtual_node} is Ready; the network fabric with {name} is not up yet"
                + (f" ({tunnel.message})" if tunnel is not None and tunnel.message else "")
                + ": networking_disabled peers without it",
            )
        return Established(peering), "established"

    return await wait_until(
        check,
        what=f"the peering with {name} (a Ready virtual node)",
        seconds=seconds,
        stop=stop,
        interval=POLL_INTERVAL,
        max_interval=POLL_MAX_INTERVAL,
    )


async def _node(client: Client, name: str) -> JSON | None:
    try:
        return await client.get(NODES, name)
    except NotFoundError:
        return None


async def wait_gone(client: Client, name: str, *, seconds: float, stop: Stop = NEVER) -> None:
    """Until the ForeignCluster `name` is gone (the controller's unpeer is done)."""

    async def check() -> tuple[bool | None, Seen]:
        peering = await get(client, name)
        if peering is None:
            return True, "gone"
        ready = peering.ready
        return None, Blocking(
            f"ForeignCluster {name}",
            f"outgoingPeering {peering.status.get('outgoingPeering') or 'None'}",
            ready.message if ready is not None and ready.status != "True" else "",
        )

    await wait_until(
        check,
        what=f"ForeignCluster {name} to be deleted",
        seconds=seconds,
        stop=stop,
        interval=POLL_INTERVAL,
        max_interval=POLL_MAX_INTERVAL,
    )


async def apply_peering(
    client: Client,
    name: str,
    *,
    token: str,
    cluster_id: str,
    auth_url: str,
    namespace: str,
    resources: Mapping[str, str],
    node_labels: Mapping[str, str],
    field_manager: str,
    networking: bool = True,
    pod_security: Level = podsecurity.DEFAULT_LEVEL,
    auth_key_fingerprint: str = "",
) -> None:
    """Server-side apply what a peering is made of, as `field_manager`: the token Secret, then the
    ForeignCluster `name` (`auth_key_fingerprint`: the auth service key it trusts, "" the first contact's)."""
    from runtime.forge.peering import foreign_cluster, token_secret

    secret = token_secret(name, token, namespace=namespace)
    await client.apply(SECRETS, secret, namespace=namespace, field_manager=field_manager, force=True)
    body = foreign_cluster(
        name,
        cluster_id=cluster_id,
        auth_url=auth_url,
        namespace=namespace,
        resources=dict(resources),
        node_labels=dict(node_labels),
        networking=networking,
        pod_security=pod_security,
        auth_key_fingerprint=auth_key_fingerprint,
    )
    await client.apply(FOREIGNCLUSTERS, body, field_manager=field_manager, force=True)


async def orphan(client: Client, name: str, *, field_manager: str) -> None:
    """Let the ForeignCluster go without its controller's clean-up (its finalizer is removed)."""
    with contextlib.suppress(NotFoundError):
        await client.patch(
            FOREIGNCLUSTERS,
            name,
            {"metadata": {"finalizers": None}},
            field_manager=field_manager,
        )


# unpeering


@dataclass(frozen=True)
class Unpeered:
    """How an unpeer ended: cleanly (both empty), forced, or with the cluster unreachable."""

    #: the wait ran out (what was last seen) and the finalizer was removed: objects may be left behind
    orphaned: str = ""
    #: the cluster could not be reached (why, in words) and `force` let the peering go: nothing was deleted
    unreachable: str = ""


async def unpeer(
    client: Client,
    name: str,
    *,
    namespace: str,
    seconds: float,
    field_manager: str,
    force: bool,
    stop: Stop = NEVER,
) -> Unpeered:
    """Delete the peering `name` and its token Secret, bounded by `seconds` (plus `ORPHAN_SECONDS` when forced).

    The controller unpeers (and gives up on an unreachable provider after its own bound);
    past `seconds` the ForeignCluster's finalizer is removed. A consumer cluster that cannot
    be reached is `unreachable.UnreachableError`, unless `force` lets the peering go without
    deleting it.
    """
    from runtime.forge.peering import token_secret_name

    orphaned = ""
    try:
        try:
            await client.delete(FOREIGNCLUSTERS, name)
            await wait_gone(client, name, seconds=seconds, stop=stop)
        except NotFoundError:
            pass
        except WaitTimeoutError as exc:
            orphaned = exc.last
            await orphan(client, name, field_manager=field_manager)
            await wait_gone(client, name, seconds=ORPHAN_SECONDS, stop=stop)
        with contextlib.suppress(NotFoundError):
            await client.delete(SECRETS, token_secret_name(name), namespace=namespace)
    except APIConnectionError as exc:
        return Unpeered(orphaned=orphaned, unreachable=unreachable(exc, force=force))
    return Unpeered(orphaned=orphaned)
