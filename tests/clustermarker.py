"""Which tests start playground clusters (the real leg runs exactly those, marked `cluster`).

A test starts clusters when its function, a fixture it uses (however indirectly), or a
helper of `tests/` that one of them calls refers to an entry point of the playground:
`playground.testing`'s `Playground`, `clusters` and `aclusters`, `playground.cluster.up`
under them, or `python -m playground` / `playground.demo` in a command line. Found by
reading what each function's code refers to (the globals it loads, resolved in its
module, and its constants), following
functions and classes of `tests/` but not the libraries: deterministic, at collection,
with nothing to remember when a test is written.
"""

from __future__ import annotations

import dis
import inspect
import types
from collections.abc import Iterator
from typing import Any

import pytest

from playground import cluster, testing

CLUSTER_MARKER = pytest.mark.cluster
#: what starts playground clusters in the test's process
ENTRY_POINTS: tuple[object, ...] = (testing.Playground, testing.clusters, testing.aclusters, cluster.up)
#: `python -m <module>` starts playground clusters in a subprocess
CLI_MODULES = frozenset({"playground", "playground.demo"})
_TESTS_PACKAGE = "tests"


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """`code` and every code object nested in it (inner functions, lambdas, comprehensions)."""
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _code_objects(constant)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []


def _ours(value: object) -> bool:
    return str(getattr(value, "__module__", "")).split(".")[0] == _TESTS_PACKAGE


def _functions_of(value: object) -> list[types.FunctionType]:
    """The Python functions behind `value`: itself, or every method of a class."""
    if isinstance(value, types.FunctionType):
        return [value]
    if inspect.isclass(value):
        found = []
        for member in vars(value).values():
            function = getattr(member, "__func__", member)
            if isinstance(function, types.FunctionType):
                found.append(function)
        return found
    return []


def function_starts_clusters(
    function: types.FunctionType, *, seen: set[types.CodeType] | None = None
) -> bool:
    """Whether `function`, or a function or class of `tests/` it refers to, reaches an entry point."""
    seen = set() if seen is None else seen
    function = inspect.unwrap(function)
    if function.__code__ in seen:
        return False
    seen.add(function.__code__)
    for code in _code_objects(function.__code__):
        strings = [text for constant in code.co_consts for text in _strings(constant)]
        names = {
            instruction.argval
            for instruction in dis.get_instructions(code)
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME")
        }
        referred = [function.__globals__[name] for name in names if name in function.__globals__]
        strings += [text for value in referred for text in _strings(value)]
        if "-m" in strings and CLI_MODULES & set(strings):
            return True
        for value in referred:
            if any(value is entry for entry in ENTRY_POINTS):
                return True
            if _ours(value) and any(
                function_starts_clusters(inner, seen=seen) for inner in _functions_of(value)
            ):
                return True
    return False


def starts_clusters(item: pytest.Function) -> bool:
    """Whether the test `item`, or one of the fixtures it uses, starts playground clusters."""
    functions = [item.function]
    for definitions in item._fixtureinfo.name2fixturedefs.values():
        functions += [definition.func for definition in definitions]
    seen: set[types.CodeType] = set()
    return any(
        isinstance(function, types.FunctionType) and function_starts_clusters(function, seen=seen)
        for function in functions
    )
