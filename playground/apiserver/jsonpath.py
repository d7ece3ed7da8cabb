"""The subset of Kubernetes JSONPath that CRD printer columns use.

A CRD's `additionalPrinterColumns[].jsonPath` is evaluated by kube-apiserver with
client-go's `util/jsonpath`, wrapped in braces and with missing keys allowed. This module
parses and evaluates the same expressions over JSON-shaped dicts so the emulator's Table
output (and CRD validation) agree with a real cluster:

- fields `.a.b` (a backslash escapes a terminator, as in `.labels.app\\.kubernetes\\.io/name`),
  and `['key']` for keys that are awkward as fields;
- wildcards `.*` and `[*]`;
- indexes and slices `[0]`, `[-1]`, `[1:3]`;
- filters `[?(@.type=="Ready")]` with `==`, `!=`, `<`, `>`, `<=`, `>=` against a quoted string,
  a number, `true`/`false` or another `@` path, and the existence test `[?(@.name)]`;
- optional surrounding braces `{...}` and a leading `$` or `@`.

Evaluation follows client-go: a missing key yields nothing, while a type mismatch (indexing
a map, comparing a string with a number, an index out of range, a filter operand that is
absent) fails the whole expression, which `evaluate` reports as no result at all, the way
the CRD table convertor turns such failures into an empty cell. Recursive descent (`..`),
unions (`[0,1]`), slice steps and text outside braces are not part of this subset: `parse`
rejects them with a ValueError.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

_FIELD_TERMINATORS = frozenset(" \t\r\n.,[]$@{}")
_SLICE = re.compile(r"^(-?\d*)(:-?\d*)?(:-?\d*)?$")
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$")
_NUMBER = re.compile(r"^[+-]?[\d.]+$")
_OPERATORS = frozenset(("==", "!=", "<", ">", "<=", ">="))
_ORDERINGS = {"<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}


@dataclass(frozen=True)
class Field:
    """A map key; the empty name (a lone `.`) stands for the current value itself."""

    name: str


@dataclass(frozen=True)
class Wildcard:
    """Every value of a map or element of a list."""


@dataclass(frozen=True)
class Slice:
    """`[start:end]`; a single index `[i]` is the slice `[i:i+1]` with a derived end."""

    start: int | None
    end: int | None
    derived_end: bool = False


@dataclass(frozen=True)
class Literal:
    value: str | int | float | bool


@dataclass(frozen=True)
class Filter:
    """`[?(left op right)]`, or `[?(left)]` (op `exists`) that keeps elements where left is found."""

    left: Operand
    op: str
    right: Operand | None = None


Step: TypeAlias = Field | Wildcard | Slice | Filter
Operand: TypeAlias = tuple[Step, ...] | Literal


class _Mismatch(Exception):
    """A type error during evaluation: the expression as a whole has no result."""


@dataclass(frozen=True)
class JSONPath:
    """A parsed expression: `find` walks a JSON-shaped value and returns what it reaches."""

    text: str
    steps: tuple[Step, ...]

    def find(self, obj: Any) -> list[Any]:
        try:
            return _walk([obj], self.steps)
        except _Mismatch:
            return []


@functools.lru_cache(maxsize=512)
def parse(path: str) -> JSONPath:
    """Parse `path` (with or without braces); ValueError says what is wrong and where."""
    text = path.strip()
    if text.startswith("{"):
        if not text.endswith("}"):
            raise ValueError(f"invalid JSONPath {path!r}: unclosed action, missing '}}'")
        text = text[1:-1]
    elif "{" in text or "}" in text:
        raise ValueError(f"invalid JSONPath {path!r}: text outside the expression is not supported")
    if not text.strip():
        raise ValueError(f"invalid JSONPath {path!r}: empty expression")
    try:
        steps = _Parser(text).steps()
    except ValueError as err:
        raise ValueError(f"invalid JSONPath {path!r}: {err}") from None
    return JSONPath(text=path, steps=steps)


def evaluate(obj: Any, path: str) -> list[Any]:
    """All values `path` reaches in `obj`, in document order; [] when nothing matches."""
    return parse(path).find(obj)


class _Parser:
    """A cursor over the text inside the braces."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def steps(self) -> tuple[Step, ...]:
        steps: list[Step] = []
        while self.pos < len(self.text):
            step = self._step()
            if step is not None:
                steps.append(step)
        return tuple(steps)

    def _step(self) -> Step | None:
        char = self.text[self.pos]
        if char in " \t@$":
            self.pos += 1
            return None
        if self.text.startswith("..", self.pos):
            raise ValueError(f"recursive descent '..' at position {self.pos} is not supported")
        if char == ".":
            return self._field()
        if self.text.startswith("[?(", self.pos):
            return self._filter()
        if char == "[":
            return self._bracket()
        raise ValueError(f"unexpected character {char!r} at position {self.pos}")

    def _field(self) -> Step:
        self.pos += 1
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in _FIELD_TERMINATORS:
            self.pos += 2 if self.text[self.pos] == "\\" else 1
        name = self.text[start : self.pos].replace("\\", "")
        return Wildcard() if name == "*" else Field(name)

    def _bracket(self) -> Step:
        close = self.text.find("]", self.pos)
        if close < 0:
            raise ValueError(f"unterminated array index at position {self.pos}")
        content = self.text[self.pos + 1 : close].strip()
        self.pos = close + 1
        if content == "*":
            return Wildcard()
        if "," in content:
            raise ValueError(f"union [{content}] is not supported")
        if len(content) >= 2 and content[0] == content[-1] == "'":
            return Field(content[1:-1])
        return _slice(content)

    def _filter(self) -> Step:
        start = self.pos + len("[?(")
        close = _filter_end(self.text, start)
        if close + 1 >= len(self.text) or self.text[close + 1] != "]":
            raise ValueError(f"filter at position {self.pos} is not closed with ')]'")
        body = self.text[start:close]
        self.pos = close + 2
        match = _FILTER.match(body)
        if match is None:
            return Filter(left=_operand(body), op="exists")
        left, op, right = match.groups()
        if op not in _OPERATORS:
            raise ValueError(f"unrecognized filter operator {op!r}")
        return Filter(left=_operand(left), op=op, right=_operand(right))


def _filter_end(text: str, start: int) -> int:
    """Index of the ')' closing a filter body, skipping any inside a quoted string."""
    quote = ""
    pos = start
    while pos < len(text) and text[pos] != "\n":
        char = text[pos]
        if quote:
            if char == "\\":
                pos += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == ")":
            return pos
        pos += 1
    raise ValueError(f"unterminated filter at position {start - len('[?(')}")


def _slice(content: str) -> Slice:
    match = _SLICE.match(content)
    if match is None or not content:
        raise ValueError(f"invalid array index [{content}]")
    start_text, end_text, step_text = match.groups()
    if step_text is not None:
        raise ValueError(f"array slice step in [{content}] is not supported")
    start = int(start_text) if start_text else None
    if end_text is None:
        return Slice(start=start, end=(start or 0) + 1, derived_end=True)
    return Slice(start=start, end=int(end_text[1:]) if end_text[1:] else None)


def _operand(text: str) -> Operand:
    text = text.strip()
    if not text:
        raise ValueError("empty filter operand")
    if text[0] in "\"'":
        return Literal(_unquote(text))
    if text in ("true", "false"):
        return Literal(text == "true")
    if _NUMBER.match(text):
        return Literal(_number(text))
    return _Parser(text).steps()


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"cannot parse number {text}") from None


def _unquote(text: str) -> str:
    quote = text[0]
    if len(text) < 2 or text[-1] != quote:
        raise ValueError(f"unterminated quoted string {text}")
    out: list[str] = []
    chars = iter(text[1:-1])
    for char in chars:
        if char == quote:
            raise ValueError(f"unescaped quote inside {text}")
        if char != "\\":
            out.append(char)
            continue
        escaped = next(chars, "")
        if escaped not in _ESCAPES:
            raise ValueError(f"invalid escape sequence in {text}")
        out.append(_ESCAPES[escaped])
    return "".join(out)


def _walk(values: list[Any], steps: Sequence[Step]) -> list[Any]:
    for step in steps:
        values = _apply(values, step)
    return values


def _apply(values: list[Any], step: Step) -> list[Any]:
    if isinstance(step, Field):
        return _field(values, step.name)
    if isinstance(step, Wildcard):
        return _wildcard(values)
    if isinstance(step, Slice):
        return [item for value in values if value is not None for item in _slice_of(value, step)]
    return [item for value in values for item in _filtered(value, step)]


def _field(values: list[Any], name: str) -> list[Any]:
    if not name:
        return [value for value in values if value is not None]
    return [value[name] for value in values if isinstance(value, dict) and name in value]


def _wildcard(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if isinstance(value, dict):
            out.extend(value.values())
        elif isinstance(value, list):
            out.extend(value)
    return out


def _slice_of(value: Any, step: Slice) -> list[Any]:
    if not isinstance(value, list):
        raise _Mismatch(f"{type(value).__name__} is not an array")
    length = len(value)
    start = step.start or 0
    if start < 0:
        start += length
    end = length if step.end is None else step.end
    if end < 0 or (end == 0 and step.derived_end):
        end += length
    if end != start and (start >= length or end > length or start < 0):
        raise _Mismatch(f"array index out of bounds: length {length}")
    return value[start:end]


def _filtered(value: Any, step: Filter) -> list[Any]:
    if not isinstance(value, list):
        raise _Mismatch(f"{type(value).__name__} is not an array and cannot be filtered")
    return [item for item in value if _keeps(item, step)]


def _keeps(item: Any, step: Filter) -> bool:
    lefts = _operand_values(item, step.left)
    if step.right is None:
        return bool(lefts)
    rights = _operand_values(item, step.right)
    if len(lefts) != 1 or len(rights) != 1:
        raise _Mismatch("can only compare one element at a time")
    return _compare(lefts[0], step.op, rights[0])


def _operand_values(item: Any, operand: Operand) -> list[Any]:
    if isinstance(operand, Literal):
        return [operand.value]
    return _walk([item], operand)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise _Mismatch(f"invalid type for comparison: {type(value).__name__}")


def _compare(left: Any, op: str, right: Any) -> bool:
    """Go template comparison: both sides of the same basic kind; ordering not for booleans."""
    kind = _kind(left)
    if _kind(right) != kind:
        raise _Mismatch("incompatible types for comparison")
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if kind == "bool":
        raise _Mismatch("invalid type for comparison: bool")
    return bool(_ORDERINGS[op](left, right))
