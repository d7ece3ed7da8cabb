"""Kubernetes resource quantities (`100m`, `1.5Gi`, `2e3`): exact parsing and canonical formatting.

Requests, limits, capacity and allocatable are quantities; the scheduler sums and compares
them, the node agent and the runtime's ResourceSlices compute shares of them and write them
back. Floats would round (0.1 + 0.2 cpu), so values are exact `Fraction`s, and formatting
follows apimachinery's `resource.Quantity` so that what we write reads as the API server
would print it:

- the suffix family of the parsed string is kept: decimal SI (`m`, `k`, `M`, ...), binary SI
  (`Ki`, `Mi`, ...) or a decimal exponent (`e3`);
- the canonical form has no fractional digits, the largest suffix that loses nothing, and a
  decimal exponent that is a multiple of 3 (`1.5` is `1500m`, `1.5Gi` is `1536Mi`, `1000` is
  `1k`, `2e4` is `20e3`);
- binary SI values below 1024 in magnitude, or not whole, are written in decimal SI (`0.5Ki` is
  `512`);
- values are rounded away from zero to a multiple of 10^-9 (`1n`), and binary SI values are
  capped at 2^63-1, as `ParseQuantity` does.

Differences from apimachinery, on inputs nobody writes on purpose: a bare sign (`-`, `+`) is an
error here (Go reads it as 0); `String()` in Go returns an already canonical-looking input
verbatim (so `+1k` or `1E3` survive there) while we always write the canonical form; decimal
values of 10^21 and more are written with the `E` suffix (Go drops the suffix there, a bug).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction


class Format(StrEnum):
    """The suffix family a quantity is written in (apimachinery's `resource.Format`)."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {power // 10: suffix for suffix, power in _BINARY_SUFFIXES.items()}
#: the largest binary SI quantity (apimachinery's `maxAllowed`)
_MAX_BINARY = 2**63 - 1
#: exponents beyond this are refused rather than expanded into enormous integers
_MAX_EXPONENT = 1000
_NANO = 10**9


@dataclass(frozen=True)
class Quantity:
    """An exact amount and the suffix family it is written in; `str()` gives the canonical form."""

    value: Fraction
    format: Format = Format.DECIMAL_SI

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        return parse_quantity(text)

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)

    def milli_value(self) -> int:
        """The value in thousandths, rounded up (cpu in millicores); apimachinery's `MilliValue`."""
        return math.ceil(self.value * 1000)

    def int_value(self) -> int:
        """The value rounded up to a whole number (bytes, pods, devices); apimachinery's `Value`."""
        return math.ceil(self.value)


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse a quantity as the API server does; ValueError naming the input if it is not one.

    JSON numbers (`cpu: 2` in a manifest) are accepted as the API server accepts them.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError(f"quantity {text!r}: must be a string or a number")
    string = text if isinstance(text, str) else repr(text)
    match = _NUMBER.fullmatch(string)
    if match is None or not (match[2] or match[3]):
        raise ValueError(
            f"quantity {string!r}: must be a number with an optional suffix, like 100m, 1.5Gi, 2e3 or 128974848"
        )
    sign, whole, fraction, suffix = match[1], match[2], match[3] or "", match[4]
    base, exponent, form = _suffix(suffix, string)
    digits = Fraction(int(whole or "0") * 10 ** len(fraction) + int(fraction or "0"), 10 ** len(fraction))
    value = digits * (Fraction(10) ** exponent if base == 10 else 2**exponent)
    value = _round_to_nano(-value if sign == "-" else value)
    if form is Format.BINARY_SI:
        value = min(value, Fraction(_MAX_BINARY))
        if 0 < value < 1:
            form = Format.DECIMAL_SI
    return Quantity(value, form)


def _suffix(suffix: str, string: str) -> tuple[int, int, Format]:
    """(base, exponent, format) of a suffix, as apimachinery's suffixer interprets it."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError(f"quantity {string!r}: exponent {exponent} is out of range")
        return 10, exponent, Format.DECIMAL_EXPONENT
    raise ValueError(
        f"quantity {string!r}: unknown suffix {suffix!r} (use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei "
        "or an exponent like e3)"
    )


def _round_to_nano(value: Fraction) -> Fraction:
    """Round away from zero to a multiple of 10^-9 (`inf.RoundUp` at nano scale)."""
    scaled = value * _NANO
    if scaled.denominator == 1:
        return value
    magnitude = math.ceil(abs(scaled))
    return Fraction(magnitude if scaled > 0 else -magnitude, _NANO)


def format_quantity(value: Fraction | int, format: Format = Format.DECIMAL_SI) -> str:
    """The canonical string of `value` in `format` (rounded away from zero to 1n first)."""
    value = _round_to_nano(Fraction(value))
    if value == 0:
        return "0"
    if format is Format.BINARY_SI and (abs(value) < 1024 or value.denominator != 1):
        format = Format.DECIMAL_SI
    if format is Format.BINARY_SI:
        return _binary(int(value))
    mantissa, exponent = _decimal(value)
    if format is Format.DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    if exponent > 18:
        mantissa, exponent = mantissa * 10 ** (exponent - 18), 18
    return f"{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"


def _binary(value: int) -> str:
    mantissa, power = value, 0
    while mantissa % 1024 == 0 and abs(mantissa) >= 1024 and power < max(_BINARY_BY_POWER):
        mantissa, power = mantissa // 1024, power + 1
    return f"{mantissa}{_BINARY_BY_POWER.get(power, '')}"


def _decimal(value: Fraction) -> tuple[int, int]:
    """(mantissa, exponent) with value == mantissa * 10**exponent, the exponent a multiple of 3, as large as can be."""
    mantissa, exponent = int(value * _NANO), -9
    while mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    while exponent % 3:
        mantissa, exponent = mantissa * 10, exponent - 1
    return mantissa, exponent


def cpu_millis(text: str | int | float) -> int:
    """A cpu quantity in millicores, rounded up (`100m` is 100, `1.5` is 1500)."""
    return parse_quantity(text).milli_value()


def to_int(text: str | int | float) -> int:
    """A quantity as a whole number, rounded up: bytes for memory and storage, counts for pods and devices."""
    return parse_quantity(text).int_value()
