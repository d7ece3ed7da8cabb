"""Kubernetes timestamps (RFC 3339, whole seconds, UTC) to and from `datetime`."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """`metav1.Time` as the API writes it: `2024-05-01T12:00:00Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    """A `metav1.Time` or `MicroTime` string; None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
