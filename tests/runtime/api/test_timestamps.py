"""RFC 3339 timestamps print in UTC with a `Z` and parse back only with a time zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from runtime.api.timestamps import parse_rfc3339, rfc3339

MOMENT = datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("moment", "precise", "text"),
    [
        (MOMENT, False, "2024-05-01T10:00:00Z"),
        (MOMENT, True, "2024-05-01T10:00:00.123456Z"),
        (MOMENT.astimezone(timezone(timedelta(hours=2))), False, "2024-05-01T10:00:00Z"),
    ],
    ids=["seconds", "precise", "converted-to-utc"],
)
def test_rfc3339_writes_utc_with_z(moment: datetime, precise: bool, text: str) -> None:
    assert rfc3339(moment, precise=precise) == text


@pytest.mark.parametrize(
    "text",
    ["2024-05-01T10:00:00Z", "2024-05-01T12:00:00+02:00"],
    ids=["z", "offset"],
)
def test_parse_rfc3339_reads_any_offset(text: str) -> None:
    assert parse_rfc3339(text).astimezone(UTC).replace(microsecond=0) == MOMENT.replace(microsecond=0)


@pytest.mark.parametrize(
    "text", ["2024-05-01T10:00:00", "2024-05-01", "yesterday"], ids=["naive", "date", "words"]
)
def test_parse_rfc3339_refuses_a_time_without_zone(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rfc3339(text)


def test_a_written_timestamp_parses_back() -> None:
    assert parse_rfc3339(rfc3339(MOMENT, precise=True)) == MOMENT
