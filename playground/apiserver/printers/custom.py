"""Custom resources: NAME plus the CRD's additionalPrinterColumns, evaluated with JSONPath.

Like the apiextensions table convertor: a string column shows the first JSONPath result
as client-go's JSONPath prints it, typed columns keep only values of their type, `date`
columns become ages, and a CRD without columns gets an `Age` column.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from decimal import Decimal
from typing import Any

from ..jsonpath import evaluate
from ..resources.base import PrinterColumn
from .columns import CREATED_DOC, NAME, Cell, Column, Obj, Printer
from .fields import name_of
from .format import aware, human_duration, parse_timestamp

DEFAULT_CRD_COLUMNS = (
    PrinterColumn(name="Age", type="date", json_path=".metadata.creationTimestamp", description=CREATED_DOC),
)


def _go_float(value: float) -> str:
    """A float as Go's `fmt.Print` writes it (`%v`: shortest digits, exponent form below 1e-4 or from 1e6)."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)
    prefix = "-" if sign else ""
    if text == "0":
        return "0"
    if point - 1 < -4 or point - 1 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{point - 1:+03d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{prefix}{text}{'0' * (point - len(text))}"
    return f"{prefix}{text[:point]}.{text[point:]}"


def _go_json(value: Any) -> str:
    """`json.Marshal` output: compact, sorted keys, HTML characters escaped."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def jsonpath_text(value: Any) -> str:
    """How client-go's JSONPath prints one result: JSON for maps and lists, Go formatting for scalars."""
    if value is None:
        return "<no value>"
    if isinstance(value, dict | list):
        return _go_json(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _typed_cell(kind: str, value: Any, now: datetime) -> Cell:
    """The apiextensions convertor's `cellForJSONValue` for non-string columns."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "integer" and number:
        return int(value)
    if kind == "number" and number:
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        return _date_cell(value, now)
    return None


def _date_cell(value: str, now: datetime) -> str:
    if value in ("", "null"):
        return "<unknown>"
    when = parse_timestamp(value)
    return "<invalid>" if when is None else human_duration(aware(now) - when)


def _custom_cell(column: PrinterColumn, obj: Obj, now: datetime) -> Cell:
    try:
        results = evaluate(obj, column.json_path)
    except ValueError:
        return None
    if not results:
        return None
    if column.type == "string":
        return jsonpath_text(results[0])
    return _typed_cell(column.type, results[0], now)


def custom_printer(columns: tuple[PrinterColumn, ...]) -> Printer:
    """NAME plus the CRD's printer columns (or `Age` when it declares none), like the CRD convertor."""
    declared = columns or DEFAULT_CRD_COLUMNS
    definitions = tuple(
        Column(
            c.name,
            type=c.type,
            format=c.format,
            priority=c.priority,
            description=c.description
            or f"Custom resource definition column (in JSONPath format): {c.json_path}",
        )
        for c in declared
    )

    def cells(obj: Obj, now: datetime) -> list[Cell]:
        return [name_of(obj), *(_custom_cell(column, obj, now) for column in declared)]

    return Printer(columns=(NAME, *definitions), cells=cells)
