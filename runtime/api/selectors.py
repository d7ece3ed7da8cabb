"""Label and node selectors as clients evaluate them: pure functions over JSON-shaped objects.

Controllers decide from their caches which objects a selector picks (the pods of a
ReplicaSet, the nodes a DaemonSet runs on), so they need apimachinery's matching rules
without asking the API server:

- a `LabelSelector` object (`matchLabels` + `matchExpressions` with In, NotIn, Exists,
  DoesNotExist): a missing selector selects nothing, an empty one everything
  (`metav1.LabelSelectorAsSelector`);
- the string form of `?labelSelector=` (`a=b,c!=d,e in (x,y),f notin (z),g,!h,n>1`),
  parsed into the same `Requirement`s, and rendered back the way `Selector.String()` does;
- a `NodeSelector` (required node affinity): terms are ORed, the requirements of a term
  ANDed, `matchFields` only knows `metadata.name` (In or NotIn, one value), and an empty
  term selects nothing;
- a pod's node affinity: its `nodeSelector` and required terms filter nodes, its preferred
  terms weigh them (the scheduler and the DaemonSet controller both read it so).

NotIn and != select objects without the label, as in Kubernetes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .objects import nested

Labels = Mapping[str, str]

#: operators of the string form and of `Requirement.operator`
IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "in", "notin", "=", "==", "!="
EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN = "exists", "!", "gt", "lt"

#: LabelSelector / NodeSelector operator names -> Requirement operators
_OBJECT_OPERATORS = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}
_NODE_OPERATORS = {**_OBJECT_OPERATORS, "Gt": GREATER_THAN, "Lt": LESS_THAN}
_SET_OPERATORS = (IN, NOT_IN)
_ONE_VALUE_OPERATORS = (EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_INT = re.compile(r"[+-]?[0-9]+")


class SelectorError(ValueError):
    """A selector that cannot be evaluated (unknown operator, wrong number of values, bad syntax)."""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.operator in _SET_OPERATORS and not self.values:
            raise SelectorError(f"{self.key}: for 'in', 'notin' operators, values set can't be empty")
        if self.operator in _ONE_VALUE_OPERATORS and len(self.values) != 1:
            raise SelectorError(f"{self.key}: exact-match and numeric operators need exactly one value")
        if self.operator in (EXISTS, DOES_NOT_EXIST) and self.values:
            raise SelectorError(f"{self.key}: values set must be empty for exists and does not exist")
        if self.operator in (GREATER_THAN, LESS_THAN) and not _INT.fullmatch(self.values[0]):
            raise SelectorError(f"{self.key}: for 'Gt', 'Lt' operators, the value must be an integer")

    def matches(self, labels: Labels) -> bool:
        has = self.key in labels
        if self.operator in (IN, EQUALS, DOUBLE_EQUALS):
            return has and labels[self.key] in self.values
        if self.operator in (NOT_IN, NOT_EQUALS):
            return not has or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return has
        if self.operator == DOES_NOT_EXIST:
            return not has
        if not has or not _INT.fullmatch(labels[self.key]):
            return False
        value, bound = int(labels[self.key]), int(self.values[0])
        return value > bound if self.operator == GREATER_THAN else value < bound

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.operator in _SET_OPERATORS:
            return f"{self.key} {self.operator} ({','.join(sorted(self.values))})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(self.operator, self.operator)
        return f"{self.key}{symbol}{self.values[0]}"


@dataclass(frozen=True)
class Selector:
    """Requirements that must all hold; `everything` (no requirements) or `nothing` select trivially."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Labels | None) -> bool:
        if self.nothing:
            return False
        own = labels or {}
        return all(requirement.matches(own) for requirement in self.requirements)

    def empty(self) -> bool:
        """True when it selects everything."""
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


NOTHING = Selector(nothing=True)


def _sorted(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    return tuple(sorted(requirements, key=lambda requirement: requirement.key))


def label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """A `LabelSelector` object as a `Selector` (None selects nothing, {} everything)."""
    if selector is None:
        return NOTHING
    requirements = [
        Requirement(str(key), EQUALS, (str(value),))
        for key, value in (selector.get("matchLabels") or {}).items()
    ]
    for expression in selector.get("matchExpressions") or []:
        operator = _OBJECT_OPERATORS.get(str(expression.get("operator")))
        if operator is None:
            raise SelectorError(f"{expression.get('operator')!r} is not a valid label selector operator")
        values = tuple(str(v) for v in expression.get("values") or ())
        requirements.append(Requirement(str(expression.get("key", "")), operator, values))
    return Selector(_sorted(requirements))


def set_selector(labels: Labels | None) -> Selector:
    """A plain label map (a Service's selector, a nodeSelector): every pair must be present."""
    return Selector(_sorted(Requirement(k, EQUALS, (v,)) for k, v in (labels or {}).items()))


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Labels | None) -> bool:
    return label_selector(selector).matches(labels)


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """The `?labelSelector=` form of a `LabelSelector` object (empty: everything)."""
    parsed = label_selector(selector)
    if parsed.nothing:
        raise SelectorError("a missing selector selects nothing and has no string form")
    return str(parsed)


# -- the string form ---------------------------------------------------------------------------

_OPERATOR_TOKENS = frozenset(("==", "!=", "=", "!", ",", "(", ")", ">", "<"))
_TOKEN = re.compile(r"\s*(?:(?P<op>==|!=|=|!|,|\(|\)|>|<)|(?P<word>[^\s=!,()<>]+))")


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:
            raise SelectorError(f"unable to parse requirement: unexpected {text[position:]!r}")
        tokens.append(match.group("op") or match.group("word"))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.position = 0

    def peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise SelectorError(f"{self.text!r}: unexpected end of selector")
        self.position += 1
        return token

    def parse(self) -> Selector:
        requirements: list[Requirement] = []
        while self.peek() is not None:
            requirements.append(self.requirement())
            token = self.peek()
            if token is None:
                break
            if token != ",":
                raise SelectorError(f"{self.text!r}: expected ',' between requirements, found {token!r}")
            self.take()
            if self.peek() is None:
                raise SelectorError(f"{self.text!r}: a requirement must follow ','")
        return Selector(_sorted(requirements))

    def requirement(self) -> Requirement:
        token = self.take()
        if token == "!":
            return Requirement(self.key(self.take()), DOES_NOT_EXIST)
        key = self.key(token)
        following = self.peek()
        if following is None or following == ",":
            return Requirement(key, EXISTS)
        operator = self.take()
        if operator in (IN, NOT_IN):
            return Requirement(key, operator, self.value_set())
        if operator in ("=", "==", "!="):
            return Requirement(key, operator, (self.value(),))
        if operator in (">", "<"):
            return Requirement(key, GREATER_THAN if operator == ">" else LESS_THAN, (self.value(),))
        raise SelectorError(f"{self.text!r}: {operator!r} is not a valid operator after {key!r}")

    def key(self, token: str) -> str:
        if token in _OPERATOR_TOKENS:
            raise SelectorError(f"{self.text!r}: expected a label key, found {token!r}")
        return token

    def value(self) -> str:
        token = self.peek()
        if token is None or token == ",":
            return ""
        if token in _OPERATOR_TOKENS:
            raise SelectorError(f"{self.text!r}: expected a value, found {token!r}")
        return self.take()

    def value_set(self) -> tuple[str, ...]:
        if self.take() != "(":
            raise SelectorError(f"{self.text!r}: expected '(' to open a set of values")
        values: list[str] = []
        while True:
            token = self.take()
            if token == ")":
                values.append("")
                break
            if token == ",":
                values.append("")
                continue
            values.append(self.key(token))
            closing = self.take()
            if closing == ")":
                break
            if closing != ",":
                raise SelectorError(
                    f"{self.text!r}: expected ',' or ')' in a set of values, found {closing!r}"
                )
        return tuple(dict.fromkeys(values))


def parse_selector(text: str) -> Selector:
    """Parse the string form (`a=b,c!=d,e in (x,y),!f`); the empty string selects everything."""
    return _Parser(text).parse()


def as_label_selector(selector: Selector) -> dict[str, Any]:
    """A parsed string selector as a `LabelSelector` object (`metav1.ParseToLabelSelector`): `=` and `==`
    become `matchLabels`, `!=` a NotIn of its one value; `>` and `<` have no LabelSelector form."""
    if selector.nothing:
        raise SelectorError("a selector that selects nothing has no LabelSelector form")
    match_labels: dict[str, str] = {}
    expressions: list[dict[str, Any]] = []
    operators = {
        IN: "In",
        NOT_IN: "NotIn",
        NOT_EQUALS: "NotIn",
        EXISTS: "Exists",
        DOES_NOT_EXIST: "DoesNotExist",
    }
    for requirement in selector.requirements:
        if requirement.operator in (EQUALS, DOUBLE_EQUALS):
            match_labels[requirement.key] = requirement.values[0]
        elif requirement.operator in operators:
            expression: dict[str, Any] = {"key": requirement.key, "operator": operators[requirement.operator]}
            if requirement.values:
                expression["values"] = list(requirement.values)
            expressions.append(expression)
        else:
            raise SelectorError(
                f"{requirement}: a label selector compares values as strings, without '>' or '<'"
            )
    result: dict[str, Any] = {}
    if match_labels:
        result["matchLabels"] = match_labels
    if expressions:
        result["matchExpressions"] = expressions
    return result


# -- node selectors --------------------------------------------------------------------------------


def _node_requirement(expression: Mapping[str, Any]) -> Requirement:
    operator = _NODE_OPERATORS.get(str(expression.get("operator")))
    if operator is None:
        raise SelectorError(f"{expression.get('operator')!r} is not a valid node selector operator")
    values = tuple(str(v) for v in expression.get("values") or ())
    return Requirement(str(expression.get("key", "")), operator, values)


def _field_matches(expression: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    if expression.get("key") != "metadata.name":
        raise SelectorError(f"{expression.get('key')!r} is not a supported node field selector key")
    operator = expression.get("operator")
    if operator not in ("In", "NotIn"):
        raise SelectorError(f"{operator!r} is not a valid operator for node field selectors")
    values = [str(v) for v in expression.get("values") or ()]
    if len(values) != 1:
        raise SelectorError(
            f"unexpected number of values ({len(values)}) for node field selector operator {operator!r}"
        )
    name = str(nested(node, "metadata", "name", default=""))
    return name == values[0] if operator == "In" else name != values[0]


def node_selector_term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """One `NodeSelectorTerm`: all its expressions and fields hold; an empty term selects nothing."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    labels = nested(node, "metadata", "labels") or {}
    if not all(_node_requirement(expression).matches(labels) for expression in expressions):
        return False
    return all(_field_matches(expression, node) for expression in fields)


def _term_selects(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """`node_selector_term_matches`, a term that cannot be evaluated counting as not matching."""
    try:
        return node_selector_term_matches(term, node)
    except SelectorError:
        return False


def node_selector_matches(selector: Mapping[str, Any] | None, node: Mapping[str, Any]) -> bool:
    """A `NodeSelector`: some term matches. A term that cannot be evaluated counts as not matching,
    as the scheduler's lazy-error selector does; a missing selector matches every node."""
    if selector is None:
        return True
    return any(_term_selects(term, node) for term in selector.get("nodeSelectorTerms") or [])


# -- a pod's node affinity (component-helpers/scheduling/corev1/nodeaffinity) ------------------------


def _node_affinity(pod_spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return nested(pod_spec, "affinity", "nodeAffinity") or {}


def required_node_affinity_matches(pod_spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """`GetRequiredNodeAffinity(pod).Match(node)`: the pod's nodeSelector and required node affinity both
    select `node` (the scheduler's NodeAffinity filter, and where a DaemonSet's pods belong)."""
    labels = nested(node, "metadata", "labels") or {}
    if not set_selector(pod_spec.get("nodeSelector")).matches(labels):
        return False
    return node_selector_matches(
        _node_affinity(pod_spec).get("requiredDuringSchedulingIgnoredDuringExecution"), node
    )


def preferred_node_affinity_weight(pod_spec: Mapping[str, Any], node: Mapping[str, Any]) -> int:
    """The sum of the weights of the pod's preferred node affinity terms that select `node` (a term that
    cannot be evaluated selects nothing)."""
    preferred = _node_affinity(pod_spec).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(
        int(term.get("weight") or 0)
        for term in preferred
        if _term_selects(term.get("preference") or {}, node)
    )
