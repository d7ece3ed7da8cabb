"""Planning as the plugin framework does it, as pure functions of decoded values.

Terraform proposes a new state (config merged with the prior state's computed values);
the provider answers with the planned state and the paths that force a replacement:

- on create, a computed attribute the config leaves null becomes its default, else
  unknown ("known after apply");
- on update, if anything changed, such attributes become unknown too, unless they
  keep their prior value (`use_state_for_unknown`: ids, names, generated secrets);
- write-only attributes are always null in plans and states (Terraform rejects anything else);
- `requires_replace` attributes force a replacement when their value changes (or is
  not known yet), nested fields included, with the path of the field.

Nested attributes are planned field by field; a resource's own `plan` hook runs after.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tf.schema import Attribute as TfAttribute
from tf.types import Unknown
from tf.utils import AttributePath, Diagnostics

from .schema import Object

State = dict[str, Any]


def is_known(value: Any) -> bool:
    """Whether `value` holds no unknown anywhere inside."""
    if value is Unknown:
        return False
    if isinstance(value, Mapping):
        return all(is_known(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(is_known(v) for v in value)
    return True


def unknown_paths(value: Any, path: tuple[str, ...] = ()) -> list[str]:
    """Dotted paths of the unknown values inside `value` (for messages)."""
    if value is Unknown:
        return [".".join(path)]
    if isinstance(value, Mapping):
        return [p for key, item in value.items() for p in unknown_paths(item, (*path, str(key)))]
    return []


def planned_state(
    attributes: Sequence[TfAttribute], *, prior: State | None, proposed: State, config: State
) -> State:
    """The planned new state for a create (`prior` None) or an update."""
    changed = prior is not None and not _equal(attributes, prior, proposed)
    return _plan_object(attributes, prior=prior, proposed=proposed, config=config, changed=changed)


def _plan_object(
    attributes: Sequence[TfAttribute],
    *,
    prior: Mapping[str, Any] | None,
    proposed: Mapping[str, Any],
    config: Mapping[str, Any] | None,
    changed: bool,
) -> State:
    planned = dict(proposed)
    for attribute in attributes:
        name = attribute.name
        value = proposed.get(name)
        configured = (config or {}).get(name)
        if getattr(attribute, "write_only", False):
            planned[name] = None
        elif attribute.computed and configured is None:
            if prior is None:
                planned[name] = attribute.default
            elif changed and not getattr(attribute, "use_state_for_unknown", False):
                planned[name] = Unknown
        elif isinstance(attribute.type, Object) and isinstance(value, Mapping):
            prior_value = (prior or {}).get(name)
            planned[name] = _plan_object(
                attribute.type.attributes,
                prior=prior_value if isinstance(prior_value, Mapping) else None,
                proposed=value,
                config=configured if isinstance(configured, Mapping) else None,
                changed=changed,
            )
    return planned


def replace_paths(attributes: Sequence[TfAttribute], *, prior: State, planned: State) -> list[AttributePath]:
    """The paths whose change forces a replacement (`requires_replace`), nested fields included."""
    paths: list[AttributePath] = []
    for attribute in attributes:
        old, new = prior.get(attribute.name), planned.get(attribute.name)
        if attribute.requires_replace and (new is Unknown or not _same(attribute, old, new)):
            paths.append([attribute.name])
        elif isinstance(attribute.type, Object) and isinstance(old, Mapping) and isinstance(new, Mapping):
            nested = replace_paths(attribute.type.attributes, prior=dict(old), planned=dict(new))
            paths.extend([[attribute.name, *path] for path in nested])
    return paths


def changed_fields(attributes: Sequence[TfAttribute], *, prior: State | None, planned: State) -> set[str]:
    """Top-level attributes whose planned value differs from the prior state."""
    return {
        a.name
        for a in attributes
        if not getattr(a, "write_only", False)
        and not _same(a, (prior or {}).get(a.name), planned.get(a.name))
    }


def final_state(
    attributes: Sequence[TfAttribute], state: State | None, diagnostics: Diagnostics, *, type_name: str
) -> State | None:
    """The state a resource returns from apply, made valid: write-only fields null, nothing unknown.

    An unknown left behind is a provider bug; it becomes null with an error naming the
    attribute instead of Terraform's generic "invalid result object".
    """
    if state is None:
        return None
    final = dict(state)
    for attribute in attributes:
        name = attribute.name
        if getattr(attribute, "write_only", False):
            final[name] = None
        elif not is_known(final.get(name)):
            paths = ", ".join(unknown_paths(final.get(name), (name,)))
            diagnostics.add_error(
                f"{type_name}: the provider left {paths} unknown after apply",
                "This is a bug in the liqo provider; please report it with the Terraform log (TF_LOG=debug).",
                path=[name],
            )
            final[name] = None
    return final


def _equal(attributes: Sequence[TfAttribute], a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal in every attribute that is stored (write-only values are not: they never make a change)."""
    return all(
        _same(attribute, a.get(attribute.name), b.get(attribute.name))
        for attribute in attributes
        if not getattr(attribute, "write_only", False)
    )


def _same(attribute: TfAttribute, a: Any, b: Any) -> bool:
    if a is None or b is None or a is Unknown or b is Unknown:
        return a is b
    return bool(attribute.type.semantically_equal(a, b))
