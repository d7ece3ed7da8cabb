"""Checking a component's arguments where it is constructed, with a message that names the argument, and
the operations' bounds from its customTimeouts.

A plain value is checked at once (the constructor raises `ArgumentError`); an Output is
checked when its value is known, failing the deployment with the same message. The rules
and their wording are the Terraform provider's (`runtime.api.validation`,
`runtime.forge.install.option_problem`).
"""

from collections.abc import Callable, Mapping
from typing import Any

import pulumi

from runtime.api.validation import DurationError, parse_duration
from runtime.operations.contract import Contract


class ArgumentError(ValueError):
    """An argument of a component is invalid; the message names the component and the argument."""

    def __init__(self, component: str, argument: str, problem: str) -> None:
        super().__init__(f"{component}: invalid argument {argument}: {problem}")
        self.argument = argument


def check(component: str, argument: str, value: Any, problem: Callable[[Any], str]) -> Any:
    """`value`, checked: raises now, or once the Outputs it holds are known (the Output returned is the checked
    value, so whatever uses it fails with this message), when `problem(value)` says what is wrong. None is not
    checked."""

    def verify(known: Any) -> Any:
        if known is not None:
            found = problem(known)
            if found:
                raise ArgumentError(component, argument, found)
        return known

    if holds_output(value):
        return pulumi.Output.from_input(value).apply(verify)
    return verify(value)


def holds_output(value: Any) -> bool:
    """Whether a value is an Output or holds one (in a list or a dict, at any depth)."""
    if isinstance(value, pulumi.Output):
        return True
    if isinstance(value, Mapping):
        return any(holds_output(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(holds_output(item) for item in value)
    return False


def checked(
    component: str,
    args: Mapping[str, Any],
    *,
    required: tuple[str, ...],
    rules: Mapping[str, Callable[[Any], str]],
) -> dict[str, Any]:
    """The arguments with every rule applied (`check`); raises for a required one that is missing."""
    for name in required:
        if args.get(name) is None:
            raise ArgumentError(component, name, "it is required")
    values = dict(args)
    for name, problem in rules.items():
        values[name] = check(component, name, values.get(name), problem)
    return values


def defaulted(contract: Contract, values: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments with each omitted one that has a default in the resource's contract set to it."""
    return {
        **values,
        **{name: default for name, default in contract.defaults.items() if values.get(name) is None},
    }


def timeouts(
    component: str, opts: pulumi.ResourceOptions | None, defaults: Mapping[str, float]
) -> dict[str, float]:
    """Seconds per operation: the component's customTimeouts where set, else `defaults`."""
    custom = opts.custom_timeouts if opts is not None else None
    bounds = dict(defaults)
    for operation in defaults:
        value = getattr(custom, operation, None) if custom is not None else None
        if value:
            try:
                bounds[operation] = parse_duration(str(value))
            except DurationError as exc:
                raise ArgumentError(component, f"customTimeouts.{operation}", f"{exc}.") from None
    return bounds


def child_options(
    parent: pulumi.Resource, opts: pulumi.ResourceOptions | None, **extra: Any
) -> pulumi.ResourceOptions:
    """Options of a child: parented to the component, with its customTimeouts."""
    return pulumi.ResourceOptions(
        parent=parent, custom_timeouts=opts.custom_timeouts if opts is not None else None, **extra
    )
