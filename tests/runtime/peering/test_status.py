"""The ForeignCluster's status as a pure function of the peering's steps, and the spec's validation."""

from __future__ import annotations

import pytest

from runtime.api import constants as c
from runtime.controllers.core.foreigncluster import virtual_node_step
from runtime.controllers.core.peering import PeeringSpec, SpecError
from runtime.controllers.core.status import Observed, Step, done, failed, foreign_cluster_status, waiting

AUTH_OK = done(c.REASON_CREDENTIAL_ISSUED, "issued")
GRANTED = done(c.REASON_RESOURCES_ACCEPTED, "granted")
NODE_READY = done(c.REASON_VIRTUAL_NODE_READY, "ready")
PENDING_RESOURCES = waiting(c.REASON_RESOURCES_PENDING, "waiting")
PENDING_NODE = waiting(c.REASON_VIRTUAL_NODE_NOT_READY, "waiting")


def observed(
    auth: Step, resources: Step, node: Step, *, incoming: bool = False, outgoing: bool = True
) -> Observed:
    return Observed(
        generation=3,
        authentication=auth,
        resources=resources,
        virtual_node=node,
        incoming=incoming,
        outgoing_enabled=outgoing,
    )


@pytest.mark.parametrize(
    ("steps", "phases", "ready_reason"),
    [
        (
            (AUTH_OK, GRANTED, NODE_READY),
            ("Established", "Established", "Provider"),
            c.REASON_PEERING_ESTABLISHED,
        ),
        (
            (failed(c.REASON_AUTHENTICATION_FAILED, "no"), PENDING_RESOURCES, PENDING_NODE),
            ("Error", "Error", "Provider"),
            c.REASON_AUTHENTICATION_FAILED,
        ),
        (
            (waiting(c.REASON_AUTHENTICATION_PENDING, "..."), PENDING_RESOURCES, PENDING_NODE),
            ("Pending", "Pending", "Provider"),
            c.REASON_AUTHENTICATION_PENDING,
        ),
        (
            (AUTH_OK, PENDING_RESOURCES, PENDING_NODE),
            ("Established", "Pending", "Provider"),
            c.REASON_RESOURCES_PENDING,
        ),
        (
            (AUTH_OK, failed(c.REASON_RESOURCES_DENIED, "no room"), PENDING_NODE),
            ("Established", "Error", "Provider"),
            c.REASON_RESOURCES_DENIED,
        ),
        (
            (AUTH_OK, GRANTED, PENDING_NODE),
            ("Established", "Pending", "Provider"),
            c.REASON_VIRTUAL_NODE_NOT_READY,
        ),
        (
            (AUTH_OK, GRANTED, failed(c.REASON_VIRTUAL_NODE_NOT_READY, "provider down")),
            ("Established", "Error", "Provider"),
            c.REASON_VIRTUAL_NODE_NOT_READY,
        ),
    ],
    ids=[
        "established",
        "auth-failed",
        "auth-pending",
        "resources-pending",
        "denied",
        "node-pending",
        "node-not-ready",
    ],
)
def test_phases_and_ready_follow_the_first_step_not_done(
    steps: tuple[Step, Step, Step], phases: tuple[str, str, str], ready_reason: str
) -> None:
    status = foreign_cluster_status(None, observed(*steps), at="2024-01-01T00:00:00Z")
    assert (status["authentication"], status["outgoingPeering"], status["role"]) == phases
    assert (status["incomingPeering"], status["networking"]) == ("None", "None")
    (ready,) = status["conditions"]
    assert ready["type"] == c.CONDITION_READY and ready["reason"] == ready_reason
    assert ready["status"] == ("True" if ready_reason == c.REASON_PEERING_ESTABLISHED else "False")
    assert ready["observedGeneration"] == 3
    offloading = {cond["type"]: cond["reason"] for cond in status["modules"]["offloading"]["conditions"]}
    assert offloading == {
        c.CONDITION_RESOURCES_GRANTED: steps[1].reason,
        c.CONDITION_VIRTUAL_NODE_READY: steps[2].reason,
    }
    assert status["modules"]["networking"] == {"enabled": False, "conditions": []}


@pytest.mark.parametrize(
    ("outgoing", "incoming", "role", "outgoing_phase", "incoming_phase"),
    [
        (True, True, "ConsumerAndProvider", "Established", "Established"),
        (False, True, "Consumer", "None", "Established"),
        (False, False, "Unknown", "None", "None"),
    ],
    ids=["bidirectional", "incoming-only", "neither"],
)
def test_role_names_the_remote_clusters_side_of_both_directions(
    outgoing: bool, incoming: bool, role: str, outgoing_phase: str, incoming_phase: str
) -> None:
    status = foreign_cluster_status(
        None, observed(AUTH_OK, GRANTED, NODE_READY, incoming=incoming, outgoing=outgoing), at="t0"
    )
    assert (status["role"], status["outgoingPeering"], status["incomingPeering"]) == (
        role,
        outgoing_phase,
        incoming_phase,
    )
    assert status["modules"]["offloading"]["enabled"] is outgoing


def _liqoctl_health(module: dict[str, object]) -> str:
    """liqoctl info's verdict on a ForeignCluster module (pkg/liqoctl/info/common CheckModuleStatus): Disabled,
    Healthy when every condition says Established or Ready, else Unhealthy."""
    if not module["enabled"]:
        return "Disabled"
    statuses = [cond["status"] for cond in module["conditions"]]  # type: ignore[attr-defined]
    return "Healthy" if all(status in ("Established", "Ready") for status in statuses) else "Unhealthy"


def test_an_established_peering_reads_in_liqos_words() -> None:
    status = foreign_cluster_status(
        None,
        Observed(
            generation=1,
            authentication=AUTH_OK,
            resources=GRANTED,
            virtual_node=NODE_READY,
            networking=done("TunnelConnected", "up"),
        ),
        at="t0",
    )
    modules = status["modules"]
    # Liqo v1's ForeignCluster (core.liqo.io/v1beta1): condition types, statuses, role
    assert [(cond["type"], cond["status"]) for cond in modules["authentication"]["conditions"]] == [
        ("AuthIdentityControlPlaneStatus", "Established")
    ]
    assert [(cond["type"], cond["status"]) for cond in modules["offloading"]["conditions"]] == [
        ("ResourcesGranted", "Established"),
        ("OffloadingVirtualNodeStatus", "Ready"),
    ]
    assert [(cond["type"], cond["status"]) for cond in modules["networking"]["conditions"]] == [
        ("NetworkConnectionStatus", "Established")
    ]
    assert status["role"] == "Provider", "the remote cluster provides: this one consumes from it"
    assert status["apiServerUrl"] == ""
    assert {name: _liqoctl_health(module) for name, module in modules.items()} == {
        "authentication": "Healthy",
        "offloading": "Healthy",
        "networking": "Healthy",
    }


def test_steps_not_done_read_pending_error_and_not_ready() -> None:
    status = foreign_cluster_status(
        None,
        observed(failed(c.REASON_AUTHENTICATION_FAILED, "refused"), PENDING_RESOURCES, PENDING_NODE),
        at="t0",
    )
    modules = status["modules"]
    assert [cond["status"] for cond in modules["authentication"]["conditions"]] == ["Error"]
    assert [cond["status"] for cond in modules["offloading"]["conditions"]] == ["Pending", "NotReady"]
    assert _liqoctl_health(modules["offloading"]) == "Unhealthy"
    assert _liqoctl_health(modules["networking"]) == "Disabled"


def test_transition_times_move_only_when_a_condition_flips() -> None:
    first = foreign_cluster_status(None, observed(AUTH_OK, PENDING_RESOURCES, PENDING_NODE), at="t0")
    same = foreign_cluster_status(first, observed(AUTH_OK, PENDING_RESOURCES, PENDING_NODE), at="t1")
    assert same == first
    flipped = foreign_cluster_status(first, observed(AUTH_OK, GRANTED, PENDING_NODE), at="t2")
    times = {
        cond["type"]: cond["lastTransitionTime"] for cond in flipped["modules"]["offloading"]["conditions"]
    }
    assert times == {c.CONDITION_RESOURCES_GRANTED: "t2", c.CONDITION_VIRTUAL_NODE_READY: "t0"}
    auth = flipped["modules"]["authentication"]["conditions"][0]
    assert auth["lastTransitionTime"] == "t0"


def _fc(name: str = "milan", **spec: object) -> dict[str, object]:
    base: dict[str, object] = {
        "clusterID": "0b7c3b5e-2f0a-4c1e-9a51-3c0d6f0f5a10",
        "authURL": "https://10.0.0.1:8443",
        "tokenSecretRef": {"name": "token-milan"},
    }
    return {"metadata": {"name": name}, "spec": {**base, **spec}}


def test_a_valid_spec_is_read_with_its_defaults() -> None:
    spec = PeeringSpec.parse(
        _fc(resources={"cpu": "2"}, nodeLabels={"tier": "burst"}), default_namespace="liqo"
    )
    assert (spec.name, spec.token_namespace, spec.token_name, spec.tenant_namespace) == (
        "milan",
        "liqo",
        "token-milan",
        "liqo-tenant-milan",
    )
    assert (spec.resources, spec.node_labels, spec.outgoing) == ({"cpu": "2"}, {"tier": "burst"}, True)


@pytest.mark.parametrize(
    ("fc", "words"),
    [
        (_fc(clusterID=""), "spec.clusterID is required"),
        (_fc(authURL=""), "spec.authURL is required"),
        (_fc(authURL="http://10.0.0.1:8443"), "https://"),
        (_fc(authURL="https://"), "https://"),
        (_fc(tokenSecretRef={}), "spec.tokenSecretRef is required"),
        (_fc(clusterName="naples"), "differs from the ForeignCluster's name"),
        (_fc(peeringType="InBand"), "OutOfBand"),
        (_fc(name="Milan"), "DNS label"),
    ],
    ids=["no-id", "no-url", "http-url", "no-host", "no-token", "other-name", "in-band", "bad-name"],
)
def test_an_invalid_spec_names_the_field_and_what_to_do(fc: dict[str, object], words: str) -> None:
    with pytest.raises(SpecError, match=words):
        PeeringSpec.parse(fc, default_namespace="liqo")


def _vn(*conds: tuple[str, str, str]) -> dict[str, object]:
    return {
        "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": r} for t, s, r in conds]}
    }


@pytest.mark.parametrize(
    ("virtual_node", "done_", "failed_"),
    [
        (_vn(), False, False),
        (
            _vn(
                (c.CONDITION_VIRTUAL_KUBELET, "False", "Unavailable"),
                (c.CONDITION_READY, "False", "NotReady"),
            ),
            False,
            False,
        ),
        (
            _vn((c.CONDITION_NODE, "False", "NotRegistered"), (c.CONDITION_READY, "False", "NotReady")),
            False,
            False,
        ),
        (_vn((c.CONDITION_NODE, "False", "NotReady"), (c.CONDITION_READY, "False", "NotReady")), False, True),
        (_vn((c.CONDITION_NODE, "True", "Ready"), (c.CONDITION_READY, "True", "Ready")), True, False),
    ],
    ids=["no-status", "kubelet-starting", "node-not-registered", "node-not-ready", "ready"],
)
def test_a_virtual_node_is_an_error_only_once_its_node_is_not_ready(
    virtual_node: dict[str, object], done_: bool, failed_: bool
) -> None:
    step = virtual_node_step(virtual_node, node="liqo-milan")
    assert (step.done, step.failed) == (done_, failed_)
    assert "liqo-milan" in step.message


@pytest.mark.parametrize(
    ("networking", "phase", "enabled"),
    [
        (None, "None", False),
        (waiting("NetworkPending", "tunnel: Connecting"), "Pending", True),
        (failed("NetworkError", "no route"), "Error", True),
        (done("TunnelConnected", "up"), "Established", True),
    ],
    ids=["disabled", "pending", "error", "established"],
)
def test_the_networking_phase_follows_its_step_and_never_holds_ready_back(
    networking: Step | None, phase: str, enabled: bool
) -> None:
    status = foreign_cluster_status(
        None,
        Observed(
            generation=1,
            authentication=AUTH_OK,
            resources=GRANTED,
            virtual_node=NODE_READY,
            networking=networking,
        ),
        at="2024-01-01T00:00:00Z",
    )
    assert status["networking"] == phase
    assert status["modules"]["networking"]["enabled"] is enabled
    assert [cond["type"] for cond in status["modules"]["networking"]["conditions"]] == (
        [c.CONDITION_NETWORK_CONNECTED] if enabled else []
    )
    assert status["conditions"][0]["reason"] == c.REASON_PEERING_ESTABLISHED


def test_networking_can_be_turned_off_in_the_spec() -> None:
    spec = {
        "clusterID": "2c4e0c9a-7a55-4a8c-9c0d-1c1b1d8c7b10",
        "authURL": "https://192.0.2.1:30000",
        "tokenSecretRef": {"name": "liqo-token-milan"},
    }
    parsed = PeeringSpec.parse({"metadata": {"name": "milan"}, "spec": spec}, default_namespace="liqo")
    assert parsed.networking is True
    off = PeeringSpec.parse(
        {"metadata": {"name": "milan"}, "spec": {**spec, "networkingEnabled": False}},
        default_namespace="liqo",
    )
    assert off.networking is False
