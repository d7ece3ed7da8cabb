"""What the generic store needs to know about one kind: its `ResourceType` and `Strategy`.

The store (`registry.py`) does everything every kind shares: resourceVersion, uid,
generation, finalizers, deletion, watch fan-out. A `Strategy` adds only what is special
about a kind, the way kube-apiserver's `rest.RESTCreateStrategy` and friends do:
defaults, validation, what a status update may touch, graceful deletion and the field
labels that field selectors can use.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import Cause

Obj = dict[str, Any]

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


class Strategy:
    """Per-kind behaviour; the defaults fit a plain object with optional spec/status."""

    #: metadata.generation is set to 1 on create and bumped when anything but metadata/status changes.
    has_generation: bool = False
    #: PUT on a missing object creates it (Leases, Endpoints, Events, RBAC objects).
    allow_create_on_update: bool = False
    #: a completed DELETE answers with the object instead of a Status.
    return_deleted_object: bool = False
    #: how metadata.name is validated: "subdomain" (RFC 1123), "label" (RFC 1123 label) or "path"
    name_rule: str = "subdomain"

    def default(self, obj: Obj) -> None:
        """Fill defaulted fields in place; runs on every write, like decoding does."""

    def prepare_for_create(self, obj: Obj, *, status_subresource: bool) -> None:
        """A created object starts with an empty status (built-in status structs serialize as {})."""
        if status_subresource:
            obj["status"] = {}

    def prepare_for_update(self, new: Obj, old: Obj, *, status_subresource: bool) -> None:
        """The main resource ignores status when the kind has a status subresource."""
        if status_subresource:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """`/status` changes only status: everything else comes from the stored object."""
        status = new.get("status")
        new.clear()
        new.update(copy.deepcopy(old))
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = status

    def validate(self, obj: Obj) -> list[Cause]:
        return []

    def validate_update(self, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(new)

    def field_labels(self, obj: Obj) -> dict[str, str]:
        """Fields a field selector may name, beyond metadata.name and metadata.namespace."""
        return {}

    def graceful_delete_seconds(self, obj: Obj, requested: int | None) -> int | None:
        """Grace period to wait before the object goes (None or 0: delete at once)."""
        return None

    def spec_of(self, obj: Obj) -> Obj:
        """The part whose change bumps generation: all but metadata and status."""
        return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


DEFAULT_STRATEGY = Strategy()

Converter = Callable[[Obj], Obj]


@dataclass(frozen=True)
class PrinterColumn:
    """A CRD additionalPrinterColumn (or a built-in column described the same way)."""

    name: str
    type: str
    json_path: str
    description: str = ""
    format: str = ""
    priority: int = 0


@dataclass(frozen=True)
class ScaleSubresource:
    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str = ""


@dataclass(frozen=True, eq=False)
class ResourceType:
    """One served resource: a (group, version, plural) the API exposes.

    Several served versions (or, for Events, two groups) may share one stored
    collection: `storage` names it, `to_storage`/`from_storage` convert.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    strategy: Strategy = DEFAULT_STRATEGY
    storage: str = ""
    storage_version: bool = True
    #: for custom resources: the CRD's name, its openAPIV3Schema and printer columns
    crd: str = ""
    schema: Obj | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    scale: ScaleSubresource | None = None
    to_storage: Converter | None = field(default=None, repr=False)
    from_storage: Converter | None = field(default=None, repr=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def storage_key(self) -> str:
        return self.storage or (f"{self.plural}.{self.group}" if self.group else self.plural)

    @property
    def group_resource(self) -> str:
        """`pods`, `deployments.apps`: how errors and RBAC messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def has_subresource(self, name: str) -> bool:
        return name in self.subresources
