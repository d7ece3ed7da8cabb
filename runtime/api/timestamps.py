"""RFC 3339 timestamps, the form every time in the Kubernetes API and in the auth service's contract takes.

`rfc3339` writes UTC with a `Z` (seconds, or microseconds for signed request
timestamps); `parse_rfc3339` reads any offset and refuses a date without a time zone,
so a controller comparing a status time with `now` never compares naive and aware
datetimes.
"""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(moment: datetime, *, precise: bool = False) -> str:
    """`2024-05-01T10:00:00Z` (UTC); `precise` keeps microseconds (signed request timestamps)."""
    return (
        moment.astimezone(UTC)
        .isoformat(timespec="microseconds" if precise else "seconds")
        .replace("+00:00", "Z")
    )


def parse_rfc3339(text: str) -> datetime:
    """A timezone-aware datetime; ValueError when `text` is not an RFC 3339 date-time with an offset."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None or "T" not in text.upper():
        raise ValueError(f"{text!r} is not an RFC 3339 date-time with a time zone")
    return moment
