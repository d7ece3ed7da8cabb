"""Printers for cluster-wide policy and bookkeeping kinds.

PriorityClasses, PodDisruptionBudgets, RuntimeClasses, CertificateSigningRequests,
Leases and admission webhook configurations.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from .columns import AGE, NAME, Cell, Column, Obj, Printer
from .fields import get_bool, get_int, get_list, get_map, get_str, name_of
from .format import created, human_duration


def _priority_class_cells(pc: Obj, now: datetime) -> list[Cell]:
    return [
        name_of(pc),
        get_int(pc, "value"),
        get_bool(pc, "globalDefault"),
        created(pc, now),
        get_str(pc, "preemptionPolicy"),
    ]


def _int_or_string(value: Any) -> str:
    """`intstr.IntOrString.String()`, `N/A` when the field is unset."""
    if value is None:
        return "N/A"
    return str(value)


def _pod_disruption_budget_cells(pdb: Obj, now: datetime) -> list[Cell]:
    spec = get_map(pdb, "spec")
    return [
        name_of(pdb),
        _int_or_string(spec.get("minAvailable")),
        _int_or_string(spec.get("maxUnavailable")),
        get_int(pdb, "status", "disruptionsAllowed"),
        created(pdb, now),
    ]


def _runtime_class_cells(rc: Obj, now: datetime) -> list[Cell]:
    return [name_of(rc), get_str(rc, "handler"), created(rc, now)]


def _csr_condition(csr: Obj) -> str:
    kinds = {get_str(c, "type") for c in get_list(csr, "status", "conditions")}
    status = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        status += ",Failed"
    if get_str(csr, "status", "certificate"):
        status += ",Issued"
    return status


def _csr_cells(csr: Obj, now: datetime) -> list[Cell]:
    spec = get_map(csr, "spec")
    seconds = spec.get("expirationSeconds")
    duration = human_duration(timedelta(seconds=seconds)) if isinstance(seconds, int) else "<none>"
    return [
        name_of(csr),
        created(csr, now),
        get_str(spec, "signerName") or "<none>",
        get_str(spec, "username"),
        duration,
        _csr_condition(csr),
    ]


def _lease_cells(lease: Obj, now: datetime) -> list[Cell]:
    return [name_of(lease), get_str(lease, "spec", "holderIdentity"), created(lease, now)]


def _webhook_cells(config: Obj, now: datetime) -> list[Cell]:
    return [name_of(config), len(get_list(config, "webhooks")), created(config, now)]


PRIORITY_CLASS = Printer(
    columns=(
        NAME,
        Column("Value", "The integer value of this priority class.", type="integer"),
        Column("Global-Default", "Whether this is the default priority of pods without one.", type="boolean"),
        AGE,
        Column("PreemptionPolicy", "The policy for preempting pods with lower priority."),
    ),
    cells=_priority_class_cells,
)
POD_DISRUPTION_BUDGET = Printer(
    columns=(
        NAME,
        Column("Min Available", "The minimum number of pods that must be available."),
        Column("Max Unavailable", "The maximum number of pods that may be unavailable."),
        Column(
            "Allowed Disruptions",
            "Calculated number of pods that may be disrupted at this time.",
            type="integer",
        ),
        AGE,
    ),
    cells=_pod_disruption_budget_cells,
)
RUNTIME_CLASS = Printer(
    columns=(
        NAME,
        Column("Handler", "The underlying runtime and configuration the CRI uses for this class."),
        AGE,
    ),
    cells=_runtime_class_cells,
)
CSR = Printer(
    columns=(
        NAME,
        AGE,
        Column("SignerName", "The requested signer, a qualified name."),
        Column("Requestor", "The name of the user that created the CertificateSigningRequest."),
        Column("RequestedDuration", "The requested duration of validity of the issued certificate."),
        Column("Condition", "Conditions applied to the request."),
    ),
    cells=_csr_cells,
)
LEASE = Printer(
    columns=(NAME, Column("Holder", "The identity of the holder of a current lease."), AGE),
    cells=_lease_cells,
)
WEBHOOK = Printer(
    columns=(
        NAME,
        Column("Webhooks", "The number of webhooks registered in this configuration", type="integer"),
        AGE,
    ),
    cells=_webhook_cells,
)

PRINTERS: dict[tuple[str, str], Printer] = {
    ("scheduling.k8s.io", "priorityclasses"): PRIORITY_CLASS,
    ("policy", "poddisruptionbudgets"): POD_DISRUPTION_BUDGET,
    ("node.k8s.io", "runtimeclasses"): RUNTIME_CLASS,
    ("certificates.k8s.io", "certificatesigningrequests"): CSR,
    ("coordination.k8s.io", "leases"): LEASE,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): WEBHOOK,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): WEBHOOK,
}
