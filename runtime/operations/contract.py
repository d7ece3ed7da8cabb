"""What a resource is, once for both front ends: its inputs, which replace it and which change in place,
their defaults, the bounds of its operations, and what a create refuses, in words.

Each operations module declares its resource's `Contract` (`offload.CONTRACT`,
`peering.CONTRACT`, `token.CONTRACT` for `liqo_generate`, `install.CONTRACT`); the Terraform resource
derives its schema's flags (required, optional with a default, requires_replace) and
its `timeouts` block from it, the
Pulumi component its required arguments and defaults, and its dynamic provider its
diff (what replaces, what is written in place) and bounds. The front ends keep what is
theirs: types, descriptions, and how they say an error (a diagnostic on an attribute,
an exception). So adding an input touches the contract, the forge or controller that
uses it, and docs and tests; `tests/test_contracts.py` fails when a front end's schema
and the contract disagree.

A `Refusal` is a precondition a create checks (the operation raises its error) and
the sentence both front ends show, with the few words that differ between them
(`Words`: how a person names this resource, the install, the token, a namespace, and how
to take over an object that exists already) filled in by each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any


class Change(StrEnum):
    """What a new value of an input does to the object."""

    #: a new object (the old one deleted): the API or the runtime cannot change it in place
    REPLACE = "replace"
    #: written in place
    UPDATE = "update"


@dataclass(frozen=True)
class Input:
    """One argument of a resource, by its name in both front ends."""

    name: str
    change: Change
    required: bool = False
    #: the value an omitted input takes (None: it has none; the runtime's choice is read back)
    default: str | int | bool | None = None


@dataclass(frozen=True)
class Words:
    """How a front end names things in a sentence; `this` is the resource the sentence is about."""

    #: the resource itself: "liqo_offload", "the Offload"
    this: str
    #: what installs the runtime: "a liqo_install resource", "an Install"
    install: str
    #: the verb for creating one: "apply", "create"
    create: str
    #: what issues a peering token: "liqo_generate", "a Generate"
    generate: str
    #: what makes a namespace: "a kubernetes_namespace resource"
    namespace: str
    #: how to take over an object that exists already, a template with {id} (the import ID) and {by_hand}
    #: (the command that deletes it)
    adopt: str


@dataclass(frozen=True)
class Refusal:
    """A precondition of a create: `error` is what the operation raises, `sentence` what a person reads.

    `sentence` is a template: {host} and the values the front end passes (`namespace`,
    `name`, ...), and the front end's `Words` ({this}, {install}, {generate}, {namespace},
    {adopt}, {create}). `field` is the input at fault (None: the cluster as a whole).
    """

    error: type[Exception]
    summary: str
    sentence: str
    field: str | None = None
    #: the import ID of the object that exists, and the command that deletes it, as templates
    id: str = ""
    by_hand: str = ""

    def render(self, words: Words, **values: str) -> str:
        """The sentence in `words`, with `values` (host, namespace, name, ...) filled in."""
        adopt = words.adopt.format(id=self.id.format(**values), by_hand=self.by_hand.format(**values))
        named = {
            "this": words.this,
            "install": words.install,
            "generate": words.generate,
            "namespace_resource": words.namespace,
            "adopt": adopt,
            "create": words.create,
            "Create": words.create.capitalize(),
        }
        return self.sentence.format(**named, **values)


@dataclass(frozen=True)
class Contract:
    """A resource's inputs, with their change and default, the bounds of its operations, and its refusals."""

    name: str
    inputs: tuple[Input, ...]
    #: default bounds of create, update and delete, in seconds (each front end lets a user raise them)
    timeouts: Mapping[str, float]
    #: the bound of a read (refresh, import)
    read_seconds: float = 60.0
    refusals: tuple[Refusal, ...] = ()
    _by_name: Mapping[str, Input] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "timeouts", MappingProxyType(dict(self.timeouts)))
        object.__setattr__(self, "_by_name", MappingProxyType({i.name: i for i in self.inputs}))

    def input(self, name: str) -> Input:
        return self._by_name[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs)

    @property
    def replacing(self) -> tuple[str, ...]:
        """The inputs whose change replaces the object."""
        return tuple(i.name for i in self.inputs if i.change is Change.REPLACE)

    @property
    def in_place(self) -> tuple[str, ...]:
        """The inputs whose change is written in place."""
        return tuple(i.name for i in self.inputs if i.change is Change.UPDATE)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs if i.required)

    @property
    def defaults(self) -> Mapping[str, Any]:
        """The inputs that have a default, and it."""
        return {i.name: i.default for i in self.inputs if i.default is not None}

    def refusal(self, error: Exception) -> Refusal:
        """The refusal whose error `error` is (KeyError when the contract names none)."""
        for refusal in self.refusals:
            if isinstance(error, refusal.error):
                return refusal
        raise KeyError(f"{self.name}: no refusal for {type(error).__name__}")

    @property
    def refused(self) -> tuple[type[Exception], ...]:
        """The errors of the refusals, for an `except` clause."""
        return tuple(refusal.error for refusal in self.refusals)
