"""Printers for RoleBindings and ClusterRoleBindings: the role they grant and, wide, to whom.

Roles and ClusterRoles have no printer in kube-apiserver and get the generic columns.
"""

from __future__ import annotations

from datetime import datetime

from .columns import AGE, NAME, Cell, Column, Obj, Printer
from .fields import get_list, get_str, name_of
from .format import created


def _subjects(binding: Obj) -> tuple[str, str, str]:
    """`rbac.SubjectsStrings`: users, groups and `namespace/name` service accounts, each joined."""
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in get_list(binding, "subjects"):
        kind, name = get_str(subject, "kind"), get_str(subject, "name")
        if kind == "ServiceAccount":
            accounts.append(f"{get_str(subject, 'namespace')}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return ", ".join(users), ", ".join(groups), ", ".join(accounts)


def _binding_cells(binding: Obj, now: datetime) -> list[Cell]:
    role = f"{get_str(binding, 'roleRef', 'kind')}/{get_str(binding, 'roleRef', 'name')}"
    return [name_of(binding), role, created(binding, now), *_subjects(binding)]


def _binding_printer(noun: str) -> Printer:
    return Printer(
        columns=(
            NAME,
            Column("Role", "RoleRef can reference a Role in the namespace or a ClusterRole."),
            AGE,
            Column("Users", f"Users in the {noun}", priority=1),
            Column("Groups", f"Groups in the {noun}", priority=1),
            Column("ServiceAccounts", f"ServiceAccounts in the {noun}", priority=1),
        ),
        cells=_binding_cells,
    )


PRINTERS: dict[tuple[str, str], Printer] = {
    ("rbac.authorization.k8s.io", "rolebindings"): _binding_printer("roleBinding"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _binding_printer("clusterRoleBinding"),
}
