"""`IntOrString` fields (`maxSurge: 25%`, `maxUnavailable: 1`) scaled against a replica count."""

from __future__ import annotations

import math


def scaled_value(value: int | str | None, total: int, *, round_up: bool, default: int = 0) -> int:
    """`intstr.GetScaledValueFromIntOrPercent`: an int as is; "N%" of `total`, rounded up or down.

    A string that is not a percentage raises ValueError, as in kube (validation rejects it first).
    """
    if value is None:
        return default
    if isinstance(value, bool):
        raise ValueError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError(
            f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}"
        )
    percent = int(value[:-1])
    exact = percent * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)
