"""Status conditions as the runtime writes them (`metav1.Condition`): one entry per type, whose
`lastTransitionTime` moves only when its status does, as apimachinery's `meta.SetStatusCondition`.

Controllers build the conditions they want with `condition()`, then `merged()` carries the
transition times over from what the object shows, and `differs()` tells whether a write is due
at all (so an unchanged reconcile writes nothing and triggers no watch event).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from runtime.api.objects import JSON

_COMPARED = ("status", "reason", "message", "observedGeneration")


def now() -> str:
    """The current time as the API writes it (RFC 3339, seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(
    type: str, status: bool | str, *, reason: str, message: str, observed_generation: int | None = None
) -> JSON:
    """A condition without its transition time (`merged()` sets it); `status` True or False, or a word of
    the kind's own (Liqo's ForeignCluster modules say Established, Ready...)."""
    built: JSON = {
        "type": type,
        "status": status if isinstance(status, str) else "True" if status else "False",
        "reason": reason,
        "message": message,
    }
    if observed_generation is not None:
        built["observedGeneration"] = observed_generation
    return built


def find(conditions: Iterable[JSON] | None, type: str) -> JSON | None:
    return next((entry for entry in conditions or () if entry.get("type") == type), None)


def is_true(conditions: Iterable[JSON] | None, type: str) -> bool:
    found = find(conditions, type)
    return found is not None and found.get("status") == "True"


def merged(current: Iterable[JSON] | None, desired: Sequence[JSON], *, at: str) -> list[JSON]:
    """`desired`, each with the transition time of the current condition of its type when the status is the same."""
    result = []
    for wanted in desired:
        previous = find(current, wanted["type"])
        same = previous is not None and previous.get("status") == wanted["status"]
        stamp = previous.get("lastTransitionTime") if same and previous is not None else None
        result.append({**wanted, "lastTransitionTime": stamp or at})
    return result


def differs(current: Iterable[JSON] | None, desired: Sequence[JSON]) -> bool:
    """Whether any desired condition is missing from `current` or says something else."""
    for wanted in desired:
        previous = find(current, wanted["type"])
        if previous is None or any(previous.get(key) != wanted.get(key) for key in _COMPARED):
            return True
    return False
