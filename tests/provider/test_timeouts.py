"""The `timeouts` block: Go durations, plan-time errors on the attribute, per-operation bounds."""

from __future__ import annotations

import pytest
from tf.types import Unknown
from tf.utils import Diagnostics

from provider.framework import timeouts


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("10m", 600), ("1h30m", 5400), ("1.5h", 5400), ("250ms", 0.25), (" 2m ", 120)],
)
def test_go_durations_parse_to_seconds(text: str, seconds: float) -> None:
    assert timeouts.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "ten minutes", "5d", "0s", "-1m"])
def test_what_is_not_a_positive_duration_is_refused(text: str) -> None:
    with pytest.raises(timeouts.DurationError):
        timeouts.parse_duration(text)


def test_validate_reports_each_bad_value_on_its_attribute() -> None:
    diagnostics = Diagnostics()

    timeouts.validate(diagnostics, {"timeouts": {"create": "10", "update": Unknown, "delete": "5m"}})

    assert [(d.summary, d.path) for d in diagnostics.diagnostics] == [
        ("Invalid create timeout", ["timeouts", "create"])
    ]


def test_seconds_uses_the_block_else_the_default() -> None:
    assert timeouts.seconds({"timeouts": {"create": "2m"}}, "create", default=10) == 120
    assert timeouts.seconds({"timeouts": {"create": None}}, "create", default=10) == 10
    assert timeouts.seconds({"timeouts": None}, "delete", default=10) == 10


def test_the_block_documents_each_operation_and_its_default() -> None:
    block = timeouts.block({"create": 600, "delete": 90})
    descriptions = {a.name: a.description for a in block.block.attributes}
    assert set(descriptions) == {"create", "delete"}
    assert "(default 10m)" in str(descriptions["create"])
    assert "(default 90s)" in str(descriptions["delete"])
