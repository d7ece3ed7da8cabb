"""Cell formats: human durations and ages as apimachinery writes them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from playground.apiserver.printers.format import age, format_label_selector, go_bool, human_duration

from .support import NOW


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (timedelta(seconds=-2), "<invalid>"),
        (timedelta(seconds=-1), "0s"),
        (timedelta(0), "0s"),
        (timedelta(seconds=5), "5s"),
        (timedelta(seconds=119), "119s"),
        (timedelta(minutes=2), "2m"),
        (timedelta(minutes=3, seconds=20), "3m20s"),
        (timedelta(minutes=10), "10m"),
        (timedelta(hours=2, minutes=15), "135m"),
        (timedelta(hours=3), "3h"),
        (timedelta(hours=3, minutes=15), "3h15m"),
        (timedelta(hours=8, minutes=59), "8h"),
        (timedelta(hours=47), "47h"),
        (timedelta(days=3, hours=4), "3d4h"),
        (timedelta(days=8, hours=4), "8d"),
        (timedelta(days=729), "729d"),
        (timedelta(days=730), "2y"),
        (timedelta(days=760), "2y30d"),
        (timedelta(days=365 * 9), "9y"),
    ],
    ids=lambda value: str(value),
)
def test_human_duration_matches_apimachinery(delta: timedelta, expected: str) -> None:
    assert human_duration(delta) == expected


@pytest.mark.parametrize(
    ("timestamp", "now", "expected"),
    [
        (None, NOW, "<unknown>"),
        ("", NOW, "<unknown>"),
        ("yesterday", NOW, "<unknown>"),
        ("2024-05-01T11:59:30Z", NOW, "30s"),
        ("2024-05-01T11:55:00.123456789Z", NOW, "4m59s"),
        ("2024-05-01T13:55:00+02:00", NOW, "5m"),
        ("2024-05-01T11:00:00Z", NOW.replace(tzinfo=None), "60m"),
    ],
    ids=["missing", "empty", "garbage", "seconds", "nanoseconds", "offset", "naive-now-is-utc"],
)
def test_age_of_a_timestamp(timestamp: Any, now: datetime, expected: str) -> None:
    assert age(timestamp, now=now) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, "<none>"),
        ({}, "<none>"),
        ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
        (
            {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["b", "a"]}]},
            "env notin (a,b)",
        ),
        ({"matchExpressions": [{"key": "env", "operator": "In", "values": []}]}, "<error>"),
    ],
    ids=["absent", "empty", "labels-sorted", "expression", "in-without-values"],
)
def test_format_label_selector(selector: Any, expected: str) -> None:
    assert format_label_selector(selector) == expected


@pytest.mark.parametrize(("value", "expected"), [(True, "True"), (False, "False"), (None, "<unset>")])
def test_go_bool_prints_an_optional_bool(value: Any, expected: str) -> None:
    assert go_bool(value) == expected
