"""A ForeignCluster's status, as a pure function of what the reconcile observed.

The peering is three steps, each a condition in Liqo v1's words (core.liqo.io/v1beta1, so that
`liqoctl info` and Liqo's dashboards read them) with a reason a user can act on: authentication
(`AuthIdentityControlPlaneStatus`, in `modules.authentication`: Established, Pending or Error),
the provider's answer to the ResourceSlice (`ResourcesGranted`, in `modules.offloading`, the same
words) and the virtual node (`OffloadingVirtualNodeStatus`, in `modules.offloading`: Ready or
NotReady). The one-word phases behind `kubectl get foreignclusters`' columns and the top-level
`Ready` condition (a Kubernetes one, True or False, for `kubectl wait`) are derived from them:

- `authentication`: Established once a credential is held, Error when the last attempt
  failed, Pending before;
- `outgoingPeering`: Established when every step is done, Error when one failed (a refused
  token, an unreachable provider, denied resources, a virtual node reported NotReady),
  Pending while one is in progress, None when outgoing peering is disabled;
- `incomingPeering`: Established when the remote cluster is also our consumer (a Tenant of
  its cluster id exists here), else None;
- `role`: what the remote cluster is to this one, as Liqo names it: Provider when this
  cluster consumes from it, Consumer when it consumes from this cluster, ConsumerAndProvider
  for both, Unknown for neither;
- `networking`: the network fabric's step (`network.py`, condition `NetworkConnectionStatus` in
  `modules.networking`): Established once the gateway client reports its tunnel Connected,
  None when networking is disabled. It never holds the peering's `Ready` back: offloading
  works without the fabric, as with Liqo's `--networking-disabled`.

Condition transition times move only when a condition's status does (`forge.conditions`),
so a reconcile that finds nothing new computes the very status the object already has and
writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.api import constants as c
from runtime.api.objects import JSON, nested
from runtime.forge import conditions

NONE = c.LIQO_STATUS_NONE
PENDING = c.LIQO_STATUS_PENDING
ESTABLISHED = c.LIQO_STATUS_ESTABLISHED
DISCONNECTING = "Disconnecting"
ERROR = c.LIQO_STATUS_ERROR


@dataclass(frozen=True)
class Step:
    """One step of the peering: done or not, why, and whether it failed (Error) or is in progress (Pending)."""

    done: bool
    reason: str
    message: str
    failed: bool = False

    @property
    def phase(self) -> str:
        """Liqo's word for the step: Established, Error or Pending."""
        if self.done:
            return ESTABLISHED
        return ERROR if self.failed else PENDING

    def condition(self, type: str, *, generation: int | None) -> JSON:
        """The step as a Kubernetes condition (True or False)."""
        return conditions.condition(
            type, self.done, reason=self.reason, message=self.message, observed_generation=generation
        )

    def liqo_condition(self, type: str, *, generation: int | None, readiness: bool = False) -> JSON:
        """The step as a condition of a ForeignCluster's module, in Liqo's words: its phase, or Ready and
        NotReady for a `readiness` one (a virtual node's)."""
        ready = c.LIQO_STATUS_READY if self.done else c.LIQO_STATUS_NOT_READY
        status = ready if readiness else self.phase
        return conditions.condition(
            type, status, reason=self.reason, message=self.message, observed_generation=generation
        )


def waiting(reason: str, message: str) -> Step:
    return Step(False, reason, message)


def failed(reason: str, message: str) -> Step:
    return Step(False, reason, message, failed=True)


def done(reason: str, message: str) -> Step:
    return Step(True, reason, message)


@dataclass(frozen=True)
class Observed:
    """What one reconcile found out about the peering."""

    generation: int | None
    authentication: Step
    resources: Step
    virtual_node: Step
    outgoing_enabled: bool = True
    #: the remote cluster also consumes from us (a Tenant of its cluster id exists here)
    incoming: bool = False
    local_tenant_namespace: str = ""
    remote_tenant_namespace: str = ""
    remote_version: str = ""
    api_server_url: str = ""
    #: the auth service's key fingerprint trusted on first use ("" before the first contact)
    auth_service_key_fingerprint: str = ""
    virtual_nodes: list[str] = field(default_factory=list)
    #: the network fabric's step; None: networking disabled
    networking: Step | None = None


def _phase(steps: list[Step]) -> str:
    if all(step.done for step in steps):
        return ESTABLISHED
    return ERROR if any(step.failed for step in steps) else PENDING


def remote_role(outgoing: bool, incoming: bool) -> str:
    """What the remote cluster is to this one, in Liqo's words: Provider when this cluster consumes from it
    (`outgoing`), Consumer when it consumes from this cluster (`incoming`)."""
    if outgoing and incoming:
        return c.ROLE_CONSUMER_AND_PROVIDER
    if outgoing:
        return c.ROLE_PROVIDER
    return c.ROLE_CONSUMER if incoming else c.ROLE_UNKNOWN


def foreign_cluster_status(current: JSON | None, observed: Observed, *, at: str) -> JSON:
    """The status to write, given the current one (for transition times) and what was observed."""
    current = current or {}
    gen = observed.generation
    auth = observed.authentication.liqo_condition(c.CONDITION_AUTHENTICATED, generation=gen)
    offloading_steps = [observed.resources, observed.virtual_node] if observed.outgoing_enabled else []
    offloading = (
        [
            observed.resources.liqo_condition(c.CONDITION_RESOURCES_GRANTED, generation=gen),
            observed.virtual_node.liqo_condition(
                c.CONDITION_VIRTUAL_NODE_READY, generation=gen, readiness=True
            ),
        ]
        if observed.outgoing_enabled
        else []
    )
    steps = [observed.authentication, *offloading_steps]
    blocking = next((step for step in steps if not step.done), None)
    ready = (
        done(c.REASON_PEERING_ESTABLISHED, "the virtual node stands for the remote cluster and is Ready")
        if blocking is None
        else blocking
    ).condition(c.CONDITION_READY, generation=gen)
    modules = current.get("modules") or {}
    status: JSON = {
        "role": remote_role(observed.outgoing_enabled, observed.incoming),
        "outgoingPeering": _phase(steps) if observed.outgoing_enabled else NONE,
        "incomingPeering": ESTABLISHED if observed.incoming else NONE,
        "networking": _phase([observed.networking]) if observed.networking is not None else NONE,
        "authentication": _phase([observed.authentication]),
        "modules": {
            "authentication": {
                "enabled": True,
                "conditions": conditions.merged(
                    nested(modules, "authentication", "conditions"), [auth], at=at
                ),
            },
            "offloading": {
                "enabled": observed.outgoing_enabled,
                "conditions": conditions.merged(
                    nested(modules, "offloading", "conditions"), offloading, at=at
                ),
            },
            "networking": {
                "enabled": observed.networking is not None,
                "conditions": conditions.merged(
                    nested(modules, "networking", "conditions"),
                    [observed.networking.liqo_condition(c.CONDITION_NETWORK_CONNECTED, generation=gen)]
                    if observed.networking is not None
                    else [],
                    at=at,
                ),
            },
        },
        "tenantNamespace": {
            "local": observed.local_tenant_namespace,
            "remote": observed.remote_tenant_namespace,
        },
        "remoteVersion": observed.remote_version,
        "apiServerUrl": observed.api_server_url,
        c.AUTH_KEY_FINGERPRINT_FIELD: observed.auth_service_key_fingerprint,
        "virtualNodes": list(observed.virtual_nodes),
        "conditions": conditions.merged(current.get("conditions"), [ready], at=at),
    }
    if gen is not None:
        status["observedGeneration"] = gen
    return status


def disconnecting_status(current: JSON | None) -> JSON:
    """The status while unpeering: outgoing Disconnecting, the rest as it was."""
    return {**(current or {}), "outgoingPeering": DISCONNECTING}
