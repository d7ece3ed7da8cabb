"""What both front ends refuse, and how they word it: durations, cluster names, URLs, quantities, labels."""

from __future__ import annotations

import pytest

from runtime.api import validation


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("10m", 600), ("1h30m", 5400), ("1.5h", 5400), ("250ms", 0.25), (" 2m ", 120)],
)
def test_go_durations_parse_to_seconds(text: str, seconds: float) -> None:
    assert validation.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "ten minutes", "5d", "0s", "-1m"])
def test_what_is_not_a_positive_duration_is_refused(text: str) -> None:
    with pytest.raises(validation.DurationError):
        validation.parse_duration(text)


@pytest.mark.parametrize(
    ("check", "value", "fragment"),
    [
        (validation.cluster_name, "Milan", "is not a valid cluster name"),
        (validation.cluster_name, "a" * 59, "at most 58"),
        (validation.namespace, "liqo_system", "is not a valid namespace name"),
        (lambda v: validation.https_url(v, what="auth URL"), "http://x:1", "the scheme must be https"),
        (lambda v: validation.quantity(v, what="cpu"), "-1", "it is negative"),
        (validation.label_key, "bad key", "is not a valid label key"),
        (lambda v: validation.label_value("k", v), "-x", "is not a valid label value"),
        (lambda v: validation.cluster_id(v, source="Generate.cluster_id"), "abc", "cluster IDs are UUIDs"),
    ],
    ids=[
        "uppercase-name",
        "long-name",
        "namespace",
        "http-url",
        "negative",
        "label-key",
        "label-value",
        "uuid",
    ],
)
def test_invalid_values_are_explained(check: object, value: str, fragment: str) -> None:
    assert callable(check)
    assert fragment in check(value)


@pytest.mark.parametrize(
    ("check", "value"),
    [
        (validation.cluster_name, "milan"),
        (validation.namespace, "liqo"),
        (lambda v: validation.https_url(v, what="auth URL"), "https://10.0.0.1:8443"),
        (lambda v: validation.quantity(v, what="cpu"), "500m"),
        (validation.label_key, "example.com/zone"),
        (lambda v: validation.label_value("k", v), ""),
        (lambda v: validation.cluster_id(v, source=""), "0b8e7b76-8f3c-4f63-9e0c-6c1f3a1f1a1f"),
    ],
    ids=["name", "namespace", "url", "quantity", "label-key", "empty-label-value", "uuid"],
)
def test_valid_values_pass(check: object, value: str) -> None:
    assert callable(check)
    assert check(value) == ""
