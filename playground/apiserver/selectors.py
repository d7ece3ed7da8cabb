"""Label and field selectors: the `?labelSelector=` / `?fieldSelector=` strings and selector objects.

List and watch requests narrow their results with selector strings, and many kinds
(Deployments, Services, PodDisruptionBudgets, pod affinity, the scheduler's node
affinity) carry selector *objects*. This module parses and evaluates both the way
kube-apiserver's apimachinery does, including its grammar quirks (`x in ()` selects the
empty value, field selector values escape `\\,` `\\=` `\\\\`) and its error wording, so a
client that sends a bad selector reads the same 400 message it would get from a real
cluster.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from .errors import Cause, bad_request

# -- label key and value syntax (k8s.io/apimachinery/pkg/util/validation) --------------------------

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_NAME_RE = re.compile(_NAME_FMT)
_NAME_MAX = 63
_VALUE_FMT = f"({_NAME_FMT})?"
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_VALUE_RE = re.compile(_VALUE_FMT)
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*"
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN_FMT)
_SUBDOMAIN_MAX = 253


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = "".join(f"{' or ' if i else ''}'{example}', " for i, example in enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _byte_len(text: str) -> int:
    return len(text.encode())


def _subdomain_errors(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > _SUBDOMAIN_MAX:
        errs.append(_max_len_error(_SUBDOMAIN_MAX))
    if not _SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def label_key_errors(key: str) -> list[str]:
    """Why `key` is not a valid label key (a "qualified name"); empty when it is."""
    parts = key.split("/")
    if len(parts) > 2:
        example = _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
        prefix_hint = "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        return [f"a qualified name {example} {prefix_hint}"]
    errs: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {msg}" for msg in _subdomain_errors(prefix))
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > _NAME_MAX:
        errs.append(f"name part {_max_len_error(_NAME_MAX)}")
    if not _NAME_RE.fullmatch(name):
        errs.append(f"name part {_regex_error(_NAME_MSG, _NAME_FMT, 'MyName', 'my.name', '123-abc')}")
    return errs


def label_value_errors(value: str) -> list[str]:
    """Why `value` is not a valid label value; empty when it is."""
    errs = []
    if _byte_len(value) > _NAME_MAX:
        errs.append(_max_len_error(_NAME_MAX))
    if not _VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _quote(value: object) -> str:
    """How Go's field errors print a bad value: `%q` for a string, `%#v` for a string list."""
    if isinstance(value, list):
        return "[]string{" + ", ".join(_quote(v) for v in value) + "}"
    return json.dumps(value, ensure_ascii=False)


def _field_error(path: str, value: object, detail: str) -> str:
    """A field.Invalid error rendered as Go's `field.Error.Error()` does."""
    return f"{path}: Invalid value: {_quote(value)}: {detail}"


def _aggregate(messages: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message alone, several deduplicated in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# -- requirements -----------------------------------------------------------------------------------


class Op(StrEnum):
    """selection.Operator: the spellings are the ones kube-apiserver uses in messages."""

    IN = "in"
    NOT_IN = "notin"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_BINARY_OPS = (Op.IN, Op.NOT_IN, Op.EQUALS, Op.DOUBLE_EQUALS, Op.NOT_EQUALS, Op.GREATER_THAN, Op.LESS_THAN)


class SelectorError(ValueError):
    """A selector that cannot be built; `str()` is kube-apiserver's wording."""


_INT_RE = re.compile(r"[+-]?[0-9]+")


def _parse_int(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): None when it is not a 64-bit decimal integer."""
    if not _INT_RE.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


@dataclass(frozen=True)
class Requirement:
    """One `key op values` term of a label selector."""

    key: str
    op: Op
    values: tuple[str, ...] = ()

    @classmethod
    def build(cls, key: str, op: Op, values: Sequence[str]) -> Requirement:
        """labels.NewRequirement: validate, then build; raises SelectorError."""
        errs = _requirement_errors(key, op, values)
        if errs:
            raise SelectorError(_aggregate(errs))
        return cls(key, op, tuple(values))

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.op in (Op.IN, Op.EQUALS, Op.DOUBLE_EQUALS):
            return present and value in self.values
        if self.op in (Op.NOT_IN, Op.NOT_EQUALS):
            return not present or value not in self.values
        if self.op is Op.EXISTS:
            return present
        if self.op is Op.DOES_NOT_EXIST:
            return not present
        return present and self._compares(value)

    def _compares(self, value: str) -> bool:
        actual = _parse_int(value)
        wanted = _parse_int(self.values[0]) if len(self.values) == 1 else None
        if actual is None or wanted is None:
            return False
        return actual > wanted if self.op is Op.GREATER_THAN else actual < wanted

    def __str__(self) -> str:
        if self.op is Op.EXISTS:
            return self.key
        if self.op is Op.DOES_NOT_EXIST:
            return f"!{self.key}"
        values = ",".join(sorted(self.values)) if len(self.values) > 1 else "".join(self.values)
        if self.op in (Op.IN, Op.NOT_IN):
            return f"{self.key} {self.op.value} ({values})"
        symbol = {Op.GREATER_THAN: ">", Op.LESS_THAN: "<"}.get(self.op, self.op.value)
        return f"{self.key}{symbol}{values}"


def _requirement_errors(key: str, op: Op, values: Sequence[str]) -> list[str]:
    errs = []
    key_errs = label_key_errors(key)
    if key_errs:
        errs.append(_field_error("key", key, "; ".join(key_errs)))
    values_path = "values"
    if op in (Op.IN, Op.NOT_IN) and not values:
        errs.append(_field_error(values_path, [], "for 'in', 'notin' operators, values set can't be empty"))
    elif op in (Op.EQUALS, Op.DOUBLE_EQUALS, Op.NOT_EQUALS) and len(values) != 1:
        errs.append(
            _field_error(values_path, list(values), "exact-match compatibility requires one single value")
        )
    elif op in (Op.EXISTS, Op.DOES_NOT_EXIST) and values:
        errs.append(
            _field_error(values_path, list(values), "values set must be empty for exists and does not exist")
        )
    elif op in (Op.GREATER_THAN, Op.LESS_THAN):
        errs.extend(_comparison_errors(values, values_path))
    for i, value in enumerate(values):
        value_errs = label_value_errors(value)
        if value_errs:
            errs.append(_field_error(f"{values_path}[{i}][{key}]", value, "; ".join(value_errs)))
    return errs


def _comparison_errors(values: Sequence[str], values_path: str) -> list[str]:
    errs = []
    if len(values) != 1:
        errs.append(
            _field_error(values_path, list(values), "for 'Gt', 'Lt' operators, exactly one value is required")
        )
    errs.extend(
        _field_error(f"{values_path}[{i}]", value, "for 'Gt', 'Lt' operators, the value must be an integer")
        for i, value in enumerate(values)
        if _parse_int(value) is None
    )
    return errs


# -- the label selector string grammar (labels.Parse) ------------------------------------------------


class _Tok(Enum):
    END = "end"
    IDENT = "identifier"
    OPEN = "("
    CLOSE = ")"
    COMMA = ","
    NOT = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    GREATER = ">"
    LESS = "<"
    IN = "in"
    NOT_IN = "notin"


_SYMBOLS = {
    t.value: t for t in (_Tok.OPEN, _Tok.CLOSE, _Tok.COMMA, _Tok.NOT, _Tok.EQUALS, _Tok.GREATER, _Tok.LESS)
}
_PAIRS = {"==": _Tok.DOUBLE_EQUALS, "!=": _Tok.NOT_EQUALS}
_KEYWORDS = {"in": _Tok.IN, "notin": _Tok.NOT_IN}
_SPECIAL = frozenset("=!(),><")
_BLANK = frozenset(" \t\r\n")
_TOKEN_OPS = {
    _Tok.IN: Op.IN,
    _Tok.NOT_IN: Op.NOT_IN,
    _Tok.EQUALS: Op.EQUALS,
    _Tok.DOUBLE_EQUALS: Op.DOUBLE_EQUALS,
    _Tok.NOT_EQUALS: Op.NOT_EQUALS,
    _Tok.GREATER: Op.GREATER_THAN,
    _Tok.LESS: Op.LESS_THAN,
}


def _lex(text: str) -> Iterator[tuple[_Tok, str]]:
    pos = 0
    while True:
        while pos < len(text) and text[pos] in _BLANK:
            pos += 1
        if pos == len(text):
            yield _Tok.END, ""
            return
        if text[pos] in _SPECIAL:
            pair = text[pos : pos + 2]
            literal = pair if pair in _PAIRS else text[pos]
            yield _PAIRS.get(literal) or _SYMBOLS[literal], literal
            pos += len(literal)
            continue
        start = pos
        while pos < len(text) and text[pos] not in _SPECIAL and text[pos] not in _BLANK:
            pos += 1
        word = text[start:pos]
        yield _KEYWORDS.get(word, _Tok.IDENT), word


class _Parser:
    """labels.Parser: a recursive-descent parser over the lexed tokens."""

    def __init__(self, text: str) -> None:
        self._items = list(_lex(text))
        self._pos = 0

    def _peek(self, *, values: bool = True) -> tuple[_Tok, str]:
        return self._as_value(self._items[self._pos], values)

    def _next(self, *, values: bool = True) -> tuple[_Tok, str]:
        item = self._items[self._pos]
        self._pos += 1
        return self._as_value(item, values)

    @staticmethod
    def _as_value(item: tuple[_Tok, str], values: bool) -> tuple[_Tok, str]:
        """Where values are expected, `in` and `notin` are plain identifiers."""
        tok, lit = item
        return (_Tok.IDENT, lit) if values and tok in (_Tok.IN, _Tok.NOT_IN) else (tok, lit)

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self._peek()
            if tok is _Tok.END:
                return requirements
            if tok not in (_Tok.IDENT, _Tok.NOT):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except SelectorError as err:
                raise SelectorError(f"unable to parse requirement: {err}") from None
            tok, lit = self._next()
            if tok is _Tok.END:
                return requirements
            if tok is not _Tok.COMMA:
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            after, after_lit = self._peek()
            if after not in (_Tok.IDENT, _Tok.NOT):
                raise SelectorError(f"found '{after_lit}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        key, op = self._key_and_inferred_op()
        if op is not None:
            return Requirement.build(key, op, [])
        op = self._operator()
        values = self._value_set() if op in (Op.IN, Op.NOT_IN) else self._exact_value()
        return Requirement.build(key, op, sorted(values))

    def _key_and_inferred_op(self) -> tuple[str, Op | None]:
        tok, lit = self._next()
        op: Op | None = None
        if tok is _Tok.NOT:
            op = Op.DOES_NOT_EXIST
            tok, lit = self._next()
        if tok is not _Tok.IDENT:
            raise SelectorError(f"found '{lit}', expected: identifier")
        errs = label_key_errors(lit)
        if errs:
            raise SelectorError(_field_error("<nil>", lit, "; ".join(errs)))
        if op is None and self._peek()[0] in (_Tok.END, _Tok.COMMA):
            op = Op.EXISTS
        return lit, op

    def _operator(self) -> Op:
        tok, lit = self._next(values=False)
        if tok not in _TOKEN_OPS:
            raise SelectorError(f"found '{lit}', expected: {', '.join(op.value for op in _BINARY_OPS)}")
        return _TOKEN_OPS[tok]

    def _value_set(self) -> set[str]:
        tok, lit = self._next()
        if tok is not _Tok.OPEN:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self._peek()
        if tok is _Tok.CLOSE:
            self._next()
            return {""}
        if tok not in (_Tok.IDENT, _Tok.COMMA):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self._identifiers()
        self._next()
        return values

    def _identifiers(self) -> set[str]:
        """A comma-separated list that may hold empty values, up to (not including) `)`."""
        values: set[str] = set()
        while True:
            tok, lit = self._next()
            if tok is _Tok.IDENT:
                values.add(lit)
                following, following_lit = self._peek()
                if following is _Tok.CLOSE:
                    return values
                if following is not _Tok.COMMA:
                    raise SelectorError(f"found '{following_lit}', expected: ',' or ')'")
            elif tok is _Tok.COMMA:
                following = self._peek()[0]
                if not values or following in (_Tok.CLOSE, _Tok.COMMA):
                    values.add("")
                if following is _Tok.CLOSE:
                    return values
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        if self._peek()[0] in (_Tok.END, _Tok.COMMA):
            return {""}
        tok, lit = self._next()
        if tok is not _Tok.IDENT:
            raise SelectorError(f"found '{lit}', expected: identifier")
        return {lit}


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector: the AND of its requirements, sorted by key."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse a `?labelSelector=` string; a bad one is a 400 worded like kube-apiserver's."""
        try:
            requirements = _Parser(text).parse()
        except SelectorError as err:
            raise bad_request(str(err)) from None
        return cls(tuple(sorted(requirements, key=lambda r: r.key)))

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def requires_exact_match(self, key: str) -> str | None:
        """The single value `key` must have (`key=v`, `key==v`, `key in (v)`), if the selector pins one."""
        for r in self.requirements:
            if r.key == key:
                exact = r.op in (Op.EQUALS, Op.DOUBLE_EQUALS, Op.IN) and len(r.values) == 1
                return r.values[0] if exact else None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


# -- field selectors (fields.ParseSelector) ---------------------------------------------------------

_GENERIC_FIELDS = ("metadata.name", "metadata.namespace")


@dataclass(frozen=True)
class FieldTerm:
    key: str
    value: str
    negated: bool = False

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.key, "") == self.value) != self.negated


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not backslash-escaped; escapes stay in the terms."""
    terms, start, escaped = [], 0, False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """Split at the first operator; `!=` and `==` win over `=` at the same position."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape(value: str) -> str:
    out, escaped = [], False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise bad_request(f"invalid field selector: invalid escape sequence: \\{char}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise bad_request(f"invalid field selector: unescaped character in value: {ord(char)}")
        else:
            out.append(char)
    if escaped:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector: the AND of `key=value` / `key!=value` terms."""

    terms: tuple[FieldTerm, ...] = ()

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        """Parse a `?fieldSelector=` string; a bad one is a 400 worded like kube-apiserver's."""
        terms = []
        for part in sorted(_split_terms(text) if text else []):
            if not part:
                continue
            split = _split_term(part)
            if split is None:
                raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
            key, op, raw = split
            terms.append(FieldTerm(key, _unescape(raw), negated=op == "!="))
        return cls(tuple(terms))

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        """Fields missing from `fields` count as the empty string, as in apimachinery."""
        return all(t.matches(fields) for t in self.terms)

    def keys(self) -> set[str]:
        return {t.key for t in self.terms}

    def requires_exact_match(self, key: str) -> str | None:
        """The value `key` must equal (e.g. `metadata.name=x`), so a list can be narrowed to it."""
        return next((t.value for t in self.terms if t.key == key and not t.negated), None)

    def check_supported(self, supported: Collection[str], *, generic: bool = False) -> None:
        """Reject a term on a field the kind cannot select on, with kube-apiserver's 400.

        `generic` is for kinds with no field-label conversion of their own, which
        kube-apiserver answers with a different message naming the two metadata fields.
        """
        for term in self.terms:
            if term.key in supported:
                continue
            if generic:
                names = ", ".join(_quote(f) for f in _GENERIC_FIELDS)
                raise bad_request(f"{_quote(term.key)} is not a known field selector: only {names}")
            raise bad_request(f"field label not supported: {term.key}")


# -- metav1.LabelSelector objects -------------------------------------------------------------------

_OBJECT_OPS = {"In": Op.IN, "NotIn": Op.NOT_IN, "Exists": Op.EXISTS, "DoesNotExist": Op.DOES_NOT_EXIST}


def _object_requirements(selector: Mapping[str, Any]) -> list[Requirement]:
    """metav1.LabelSelectorAsSelector; raises SelectorError for an invalid selector."""
    requirements = [
        Requirement.build(key, Op.EQUALS, [value])
        for key, value in (selector.get("matchLabels") or {}).items()
    ]
    for expr in selector.get("matchExpressions") or []:
        operator = expr.get("operator")
        if operator not in _OBJECT_OPS:
            raise SelectorError(f"{_quote(operator)} is not a valid label selector operator")
        requirements.append(
            Requirement.build(expr.get("key", ""), _OBJECT_OPS[operator], expr.get("values") or [])
        )
    return sorted(requirements, key=lambda r: r.key)


def label_selector_matches(
    selector: Mapping[str, Any] | None, labels: Mapping[str, str], *, none_matches: bool
) -> bool:
    """Whether a metav1.LabelSelector object selects `labels`.

    `{}` selects everything. A missing (None) selector selects everything or nothing
    depending on the field: `none_matches` says which. An invalid selector selects nothing.
    """
    if selector is None:
        return none_matches
    try:
        requirements = _object_requirements(selector)
    except SelectorError:
        return False
    return all(r.matches(labels) for r in requirements)


def format_label_selector(selector: Mapping[str, Any] | None) -> str:
    """The string form of a selector object, as Scale `status.selector` carries it.

    Raises SelectorError when the object is not a valid selector.
    """
    if selector is None:
        return ""
    return str(LabelSelector(tuple(_object_requirements(selector))))


def _invalid(path: str, value: object, detail: str) -> Cause:
    return Cause(path, f"Invalid value: {_quote(value)}: {detail}")


def _label_name_causes(key: str, path: str) -> list[Cause]:
    return [_invalid(path, key, msg) for msg in label_key_errors(key)]


def validate_label_selector(selector: Mapping[str, Any] | None, path: str) -> list[Cause]:
    """Validation errors of a metav1.LabelSelector object found at `path` (e.g. `spec.selector`)."""
    if selector is None:
        return []
    causes = []
    labels_path = f"{path}.matchLabels"
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        causes += _label_name_causes(key, labels_path)
        causes += [_invalid(labels_path, value, msg) for msg in label_value_errors(value)]
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        causes += _requirement_causes(expr, f"{path}.matchExpressions[{i}]")
    return causes


def _requirement_causes(expr: Mapping[str, Any], path: str) -> list[Cause]:
    operator, values = expr.get("operator"), expr.get("values") or []
    causes = []
    if operator in ("In", "NotIn"):
        if not values:
            causes.append(
                Cause(
                    f"{path}.values",
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                    "FieldValueRequired",
                )
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            causes.append(
                Cause(
                    f"{path}.values",
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    "FieldValueForbidden",
                )
            )
    else:
        causes.append(_invalid(f"{path}.operator", operator, "not a valid selector operator"))
    causes += _label_name_causes(expr.get("key", ""), f"{path}.key")
    for i, value in enumerate(values):
        causes += [_invalid(f"{path}.values[{i}]", value, msg) for msg in label_value_errors(value)]
    return causes


# -- core/v1 NodeSelector ---------------------------------------------------------------------------

_NODE_OPS = {**_OBJECT_OPS, "Gt": Op.GREATER_THAN, "Lt": Op.LESS_THAN}
_NODE_NAME_FIELD = "metadata.name"


def _node_expression(expr: Mapping[str, Any]) -> Requirement:
    operator = expr.get("operator")
    if operator not in _NODE_OPS:
        raise SelectorError(f"{_quote(operator)} is not a valid node selector operator")
    return Requirement.build(expr.get("key", ""), _NODE_OPS[operator], expr.get("values") or [])


def _node_field(expr: Mapping[str, Any]) -> FieldTerm:
    values = expr.get("values") or []
    operator = expr.get("operator")
    if expr.get("key") != _NODE_NAME_FIELD or operator not in ("In", "NotIn") or len(values) != 1:
        raise SelectorError(f"invalid node field selector requirement: {expr}")
    return FieldTerm(_NODE_NAME_FIELD, values[0], negated=operator == "NotIn")


def node_selector_term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether one NodeSelectorTerm selects `node`.

    Its matchExpressions (against labels) and matchFields (against `metadata.name`)
    are ANDed. An empty term, or one that does not parse, selects nothing, as in the
    scheduler; preferred scheduling terms use the same rule.
    """
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False
    try:
        requirements = [_node_expression(e) for e in expressions]
        field_terms = [_node_field(f) for f in fields]
    except SelectorError:
        return False
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    node_fields = {_NODE_NAME_FIELD: metadata.get("name", "")}
    return all(r.matches(labels) for r in requirements) and all(t.matches(node_fields) for t in field_terms)


def node_selector_matches(node_selector: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether a core/v1 NodeSelector selects `node`: its nodeSelectorTerms are ORed."""
    return any(
        node_selector_term_matches(term, node) for term in node_selector.get("nodeSelectorTerms") or []
    )
