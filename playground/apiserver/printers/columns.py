"""The shapes every printer shares: a column definition, a printer, and the common columns.

Kept apart from `table` so that the per-kind modules can build printers without importing
the module that dispatches to them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias

Obj = dict[str, Any]
Cell: TypeAlias = str | int | float | bool | None

NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources "
    "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
    "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATED_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this "
    "value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for "
    "lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)


@dataclass(frozen=True)
class Column:
    """One `TableColumnDefinition`."""

    name: str
    description: str
    type: str = "string"
    priority: int = 0
    format: str = ""

    def definition(self) -> Obj:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


def no_conditions(obj: Obj) -> list[Obj]:
    """Rows of most kinds carry no conditions."""
    return []


@dataclass(frozen=True)
class Printer:
    """The columns of a kind and how to fill a row's cells (and row conditions) from one object."""

    columns: tuple[Column, ...]
    cells: Callable[[Obj, datetime], list[Cell]]
    conditions: Callable[[Obj], list[Obj]] = no_conditions


NAME = Column("Name", NAME_DOC, format="name")
AGE = Column("Age", CREATED_DOC)
CONTAINERS = Column("Containers", "Names of each container in the template.", priority=1)
IMAGES = Column("Images", "Images referenced by each container in the template.", priority=1)
