"""Quantities parse to exact values and print back as apimachinery's `Quantity.String()` does."""

from __future__ import annotations

from fractions import Fraction

import pytest

from runtime.api.quantity import Format, Quantity, cpu_millis, format_quantity, parse_quantity, to_int

# (input, exact value, format, canonical string), canonical strings as resource.Quantity prints them
CASES = [
    ("100m", Fraction(1, 10), Format.DECIMAL_SI, "100m"),
    ("1.5Gi", Fraction(1536 * 2**20), Format.BINARY_SI, "1536Mi"),
    ("2e3", Fraction(2000), Format.DECIMAL_EXPONENT, "2e3"),
    ("1k", Fraction(1000), Format.DECIMAL_SI, "1k"),
    ("128974848", Fraction(128974848), Format.DECIMAL_SI, "128974848"),
    ("129e6", Fraction(129_000_000), Format.DECIMAL_EXPONENT, "129e6"),
    ("129M", Fraction(129_000_000), Format.DECIMAL_SI, "129M"),
    ("123Mi", Fraction(128974848), Format.BINARY_SI, "123Mi"),
    ("1000", Fraction(1000), Format.DECIMAL_SI, "1k"),
    ("1000m", Fraction(1), Format.DECIMAL_SI, "1"),
    ("0.5", Fraction(1, 2), Format.DECIMAL_SI, "500m"),
    ("1.5", Fraction(3, 2), Format.DECIMAL_SI, "1500m"),
    (".5", Fraction(1, 2), Format.DECIMAL_SI, "500m"),
    ("1.", Fraction(1), Format.DECIMAL_SI, "1"),
    ("+2", Fraction(2), Format.DECIMAL_SI, "2"),
    ("-1.5", Fraction(-3, 2), Format.DECIMAL_SI, "-1500m"),
    ("0", Fraction(0), Format.DECIMAL_SI, "0"),
    ("000", Fraction(0), Format.DECIMAL_SI, "0"),
    ("0Gi", Fraction(0), Format.BINARY_SI, "0"),
    ("1Ki", Fraction(1024), Format.BINARY_SI, "1Ki"),
    ("1024Mi", Fraction(2**30), Format.BINARY_SI, "1Gi"),
    ("0.5Ki", Fraction(512), Format.BINARY_SI, "512"),
    ("1.5Ki", Fraction(1536), Format.BINARY_SI, "1536"),
    ("1.0001Ki", Fraction(10241024, 10000), Format.BINARY_SI, "1024102400u"),
    ("2e4", Fraction(20000), Format.DECIMAL_EXPONENT, "20e3"),
    ("1.5e3", Fraction(1500), Format.DECIMAL_EXPONENT, "1500"),
    ("1E3", Fraction(1000), Format.DECIMAL_EXPONENT, "1e3"),
    ("1e-3", Fraction(1, 1000), Format.DECIMAL_EXPONENT, "1e-3"),
    ("1E", Fraction(10**18), Format.DECIMAL_SI, "1E"),
    ("1n", Fraction(1, 10**9), Format.DECIMAL_SI, "1n"),
    ("1500u", Fraction(3, 2000), Format.DECIMAL_SI, "1500u"),
    ("1.5n", Fraction(2, 10**9), Format.DECIMAL_SI, "2n"),
    ("0.1n", Fraction(1, 10**9), Format.DECIMAL_SI, "1n"),
    ("-0.1n", Fraction(-1, 10**9), Format.DECIMAL_SI, "-1n"),
    ("1e-12", Fraction(1, 10**9), Format.DECIMAL_EXPONENT, "1e-9"),
    ("16Ei", Fraction(2**63 - 1), Format.BINARY_SI, "9223372036854775807"),
    ("1000E", Fraction(10**21), Format.DECIMAL_SI, "1000E"),
]


@pytest.mark.parametrize(("text", "value", "form", "canonical"), CASES, ids=[c[0] for c in CASES])
def test_parse_and_canonical_form(text: str, value: Fraction, form: Format, canonical: str) -> None:
    quantity = parse_quantity(text)
    assert (quantity.value, quantity.format) == (value, form)
    assert str(quantity) == canonical


@pytest.mark.parametrize(("text", "canonical"), [(c[0], c[3]) for c in CASES], ids=[c[0] for c in CASES])
def test_canonical_form_is_a_fixed_point(text: str, canonical: str) -> None:
    assert str(parse_quantity(canonical)) == canonical
    assert parse_quantity(canonical).value == parse_quantity(text).value


@pytest.mark.parametrize(
    ("number", "value"),
    [(2, Fraction(2)), (0.25, Fraction(1, 4)), (1e-05, Fraction(1, 100000))],
    ids=["int", "float", "float-exponent"],
)
def test_json_numbers_are_quantities(number: float, value: Fraction) -> None:
    assert parse_quantity(number).value == value


@pytest.mark.parametrize(
    ("text", "millis", "whole"),
    [("100m", 100, 1), ("1.5", 1500, 2), ("2", 2000, 2), ("1n", 1, 1), ("1Ki", 1024000, 1024), ("0", 0, 0)],
)
def test_milli_and_whole_values_round_up(text: str, millis: int, whole: int) -> None:
    assert cpu_millis(text) == parse_quantity(text).milli_value() == millis
    assert to_int(text) == parse_quantity(text).int_value() == whole


@pytest.mark.parametrize(
    ("value", "form", "text"),
    [
        (Fraction(3, 2), Format.DECIMAL_SI, "1500m"),
        (2**30, Format.BINARY_SI, "1Gi"),
        (1536, Format.BINARY_SI, "1536"),
        (Fraction(1, 2), Format.BINARY_SI, "500m"),
        (Fraction(1, 3), Format.DECIMAL_SI, "333333334n"),
        (7 * 2**70, Format.BINARY_SI, "7168Ei"),
        (10**9, Format.DECIMAL_EXPONENT, "1e9"),
        (0, Format.BINARY_SI, "0"),
        (-(2**20), Format.BINARY_SI, "-1Mi"),
    ],
    ids=[
        "decimal",
        "binary",
        "binary-not-whole-power",
        "binary-below-one",
        "repeating",
        "beyond-Ei",
        "exp",
        "zero",
        "negative",
    ],
)
def test_format_quantity(value: Fraction | int, form: Format, text: str) -> None:
    assert format_quantity(value, form) == text


def test_quantity_object_round_trips() -> None:
    quantity = Quantity.parse("1.5Gi")
    assert quantity == Quantity(Fraction(1610612736), Format.BINARY_SI)
    assert str(Quantity(Fraction(1, 4))) == "250m"


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("", "must be a number"),
        ("-", "must be a number"),
        (".", "must be a number"),
        ("abc", "must be a number"),
        ("1x", "must be a number"),
        (" 1", "must be a number"),
        ("1.2.3", "must be a number"),
        ("1e", "unknown suffix 'e'"),
        ("1K", "unknown suffix 'K'"),
        ("1Ki3", "unknown suffix 'Ki3'"),
        ("1mi", "unknown suffix 'mi'"),
        ("1e99999", "out of range"),
    ],
)
def test_malformed_quantities_name_the_input(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint) as raised:
        parse_quantity(text)
    assert repr(text) in str(raised.value)


@pytest.mark.parametrize("value", [True, None, [1]], ids=["bool", "none", "list"])
def test_non_scalar_values_are_refused(value: object) -> None:
    with pytest.raises(ValueError, match="must be a string or a number"):
        parse_quantity(value)  # type: ignore[arg-type]
