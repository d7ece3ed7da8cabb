"""A resource's contract (`runtime.operations.contract`) in Terraform's terms: the schema flags of each
input, the words of its refusals, and the diagnostic they make.

`flags` is what the plugin framework writes as plan modifiers on an attribute:
required; optional and computed with its default; `requires_replace` when a change
replaces the object. A resource spreads them into its `Attribute`s, so its schema says
what the contract says, and `tests/test_contracts.py` checks that it says nothing else.
"""

from __future__ import annotations

from typing import Any

from tf.utils import Diagnostics

from runtime.operations.contract import Change, Contract, Words


def flags(contract: Contract, name: str) -> dict[str, Any]:
    """The schema flags of the contract's input `name`."""
    spec = contract.input(name)
    found: dict[str, Any] = {"requires_replace": spec.change is Change.REPLACE}
    if spec.required:
        found["required"] = True
    elif spec.default is not None:
        found.update(optional=True, computed=True, default=spec.default)
    else:
        found["optional"] = True
    return found


def words(this: str) -> Words:
    """How the provider's diagnostics name things, for the resource `this` ("liqo_offload")."""
    return Words(
        this=this,
        install="a liqo_install resource",
        create="apply",
        generate="liqo_generate",
        namespace="a kubernetes_namespace resource",
        adopt=f"Import it instead of creating it: terraform import <address of this {this}> {{id}}",
    )


def refuse(diags: Diagnostics, contract: Contract, error: Exception, this: str, **values: str) -> None:
    """The error diagnostic of a refused create, on the attribute at fault."""
    refusal = contract.refusal(error)
    diags.add_error(
        refusal.summary,
        refusal.render(words(this), **values),
        path=[refusal.field] if refusal.field else None,
    )
