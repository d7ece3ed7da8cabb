"""Printers for the core kinds that describe the cluster and its configuration.

Nodes, namespaces, ConfigMaps, Secrets, ServiceAccounts and ResourceQuotas (pods,
events, services and workload kinds have modules of their own).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .columns import AGE, NAME, Cell, Column, Obj, Printer
from .fields import get_list, get_map, get_str, name_of
from .format import created

_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL = "kubernetes.io/role"


def _node_status(node: Obj) -> str:
    ready = next((c for c in get_list(node, "status", "conditions") if get_str(c, "type") == "Ready"), None)
    status = ["Unknown" if ready is None else "Ready" if get_str(ready, "status") == "True" else "NotReady"]
    if get_map(node, "spec").get("unschedulable") is True:
        status.append("SchedulingDisabled")
    return ",".join(status)


def node_roles(labels: Mapping[str, Any]) -> list[str]:
    """Roles from `node-role.kubernetes.io/<role>` keys and the `kubernetes.io/role` value, sorted."""
    roles = {key.removeprefix(_NODE_ROLE_PREFIX) for key in labels if key.startswith(_NODE_ROLE_PREFIX)}
    if isinstance(role := labels.get(_NODE_ROLE_LABEL), str):
        roles.add(role)
    return sorted(role for role in roles if role)


def _node_address(node: Obj, kind: str) -> str:
    addresses = (
        get_str(a, "address") for a in get_list(node, "status", "addresses") if get_str(a, "type") == kind
    )
    return next(addresses, "<none>")


def _node_cells(node: Obj, now: datetime) -> list[Cell]:
    info = get_map(node, "status", "nodeInfo")
    return [
        name_of(node),
        _node_status(node),
        ",".join(node_roles(get_map(node, "metadata", "labels"))) or "<none>",
        created(node, now),
        get_str(info, "kubeletVersion"),
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        get_str(info, "osImage") or "<unknown>",
        get_str(info, "kernelVersion") or "<unknown>",
        get_str(info, "containerRuntimeVersion") or "<unknown>",
    ]


def _namespace_cells(ns: Obj, now: datetime) -> list[Cell]:
    return [name_of(ns), get_str(ns, "status", "phase"), created(ns, now)]


def _configmap_cells(cm: Obj, now: datetime) -> list[Cell]:
    return [name_of(cm), len(get_map(cm, "data")) + len(get_map(cm, "binaryData")), created(cm, now)]


def _secret_cells(secret: Obj, now: datetime) -> list[Cell]:
    return [
        name_of(secret),
        get_str(secret, "type") or "Opaque",
        len(get_map(secret, "data")),
        created(secret, now),
    ]


def _service_account_cells(sa: Obj, now: datetime) -> list[Cell]:
    return [name_of(sa), len(get_list(sa, "secrets")), created(sa, now)]


def _quantity(value: Any) -> str:
    """A stored quantity as text; an unset one is Go's zero Quantity, `0`."""
    return "0" if value is None else str(value)


def _quota_usage(quota: Obj) -> tuple[str, str]:
    """`used/hard` per resource in status.hard, sorted; `limits.*` go to the LIMIT column."""
    hard, used = get_map(quota, "status", "hard"), get_map(quota, "status", "used")
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        column = limits if resource.split(".")[0] == "limits" and "." in resource else requests
        column.append(f"{resource}: {_quantity(used.get(resource))}/{_quantity(hard[resource])}")
    return ", ".join(requests), ", ".join(limits)


def _resource_quota_cells(quota: Obj, now: datetime) -> list[Cell]:
    return [name_of(quota), *_quota_usage(quota), created(quota, now)]


NODE = Printer(
    columns=(
        NAME,
        Column("Status", "The status of the node"),
        Column("Roles", "The roles of the node"),
        AGE,
        Column("Version", "Kubelet Version reported by the node."),
        Column("Internal-IP", "List of addresses reachable to the node.", priority=1),
        Column("External-IP", "List of addresses reachable to the node.", priority=1),
        Column("OS-Image", "OS Image reported by the node from /etc/os-release.", priority=1),
        Column("Kernel-Version", "Kernel Version reported by the node.", priority=1),
        Column("Container-Runtime", "ContainerRuntime Version reported by the node.", priority=1),
    ),
    cells=_node_cells,
)
NAMESPACE = Printer(
    columns=(NAME, Column("Status", "The status of the namespace"), AGE), cells=_namespace_cells
)
CONFIGMAP = Printer(
    columns=(NAME, Column("Data", "Data contains the configuration data."), AGE), cells=_configmap_cells
)
SECRET = Printer(
    columns=(
        NAME,
        Column("Type", "Used to facilitate programmatic handling of secret data."),
        Column("Data", "Data contains the secret data."),
        AGE,
    ),
    cells=_secret_cells,
)
SERVICE_ACCOUNT = Printer(
    columns=(NAME, Column("Secrets", "Secrets is a list of the secrets in the same namespace."), AGE),
    cells=_service_account_cells,
)
RESOURCE_QUOTA = Printer(
    columns=(
        NAME,
        Column("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
        Column(
            "Limit",
            "Limits control the maximum amount of cpu/memory that a container may use independent of "
            "contention on the node.",
        ),
        AGE,
    ),
    cells=_resource_quota_cells,
)

PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "nodes"): NODE,
    ("", "namespaces"): NAMESPACE,
    ("", "configmaps"): CONFIGMAP,
    ("", "secrets"): SECRET,
    ("", "serviceaccounts"): SERVICE_ACCOUNT,
    ("", "resourcequotas"): RESOURCE_QUOTA,
}
