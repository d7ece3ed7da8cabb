"""What every bench script does around its measurements, written once.

A bench script parses its options (`parser`, `add_state_dir`), measures into a `Run`
(`recording` turns a failed step into `run.errors`; `scratch` gives it a state dir),
compares figures with its `Target`s, assembles its JSON document (`document`, with the
`environment` it ran in) and prints its table and that document (`publish`); `exit_code`
is what `--strict` makes of the verdicts and errors. The benches on playground clusters
do all that with two calls: `measure` and `conclude`.

The scripts run as `python bench/<name>.py`, which puts `bench/` first on `sys.path`,
where `bench/playground.py` would shadow the `playground` package; each script replaces
that entry with the repository root before its imports (so `bench.harness` imports too),
which no shared module can do for it. This module imports nothing but the standard library,
so a script that needs no more (`bench/network.py`) still runs on a bare interpreter.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar


def log(message: str) -> None:
    """Progress, on stderr (stdout carries the table and the JSON document)."""
    print(message, file=sys.stderr, flush=True)


def parser(doc: str | None, *, step_failures: bool = False) -> argparse.ArgumentParser:
    """A parser described by the first line of the script's docstring, with `--json` and `--strict`.

    `step_failures`: `--strict` also fails the run when a step failed (not only a missed target).
    """
    made = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    made.add_argument("--json", type=Path, help="write the JSON report here (default: stdout)")
    made.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a target is missed" + (" or a step failed" if step_failures else ""),
    )
    return made


def add_state_dir(parser: argparse.ArgumentParser, *, cleared: bool = False) -> None:
    """`--state-dir`, the playground's state dir (`scratch` makes a temporary one when it is not given)."""
    help_text = "the playground's state dir (default: a temporary one)" + (
        "; cleared at the end" if cleared else ""
    )
    parser.add_argument("--state-dir", type=Path, help=help_text)


@contextmanager
def scratch(given: Path | None, *, prefix: str) -> Iterator[Path]:
    """The directory `given`, or a temporary one named `prefix...` and removed at the end."""
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as directory:
        yield Path(directory)


@dataclass
class Run:
    """What one bench run measured so far; `errors` holds the steps that failed."""

    figures: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: when the run started (perf counter): the document's `seconds` count from here
    started: float = field(default_factory=time.perf_counter)


RunT = TypeVar("RunT", bound=Run)


@contextmanager
def recording(run: Run, errors: tuple[type[Exception], ...], *, with_type: bool = True) -> Iterator[None]:
    """Turn one of `errors` raised inside into an entry of `run.errors` (`Type: message`, or the message alone).

    The run then goes on to report what it measured before the step failed.
    """
    try:
        yield
    except errors as exc:
        run.errors.append(f"{type(exc).__name__}: {exc}" if with_type else str(exc))


@dataclass(frozen=True)
class Target:
    """A figure's limit: it must stay below `limit`, or reach it when `at_least` (a rate)."""

    name: str
    figure: str
    limit: float
    unit: str
    at_least: bool = False

    def met(self, value: float | None) -> bool:
        """Whether `value` keeps the target (a figure that was not measured does not)."""
        if value is None:
            return False
        return value >= self.limit if self.at_least else value < self.limit

    def verdict(self, figures: Mapping[str, float]) -> dict[str, Any]:
        """The target, the figure's value (None when it was not measured) and `pass`."""
        value = figures.get(self.figure)
        return {
            "name": self.name,
            "figure": self.figure,
            "value": value,
            "limit": self.limit,
            "unit": self.unit,
            "pass": self.met(value),
        }


def verdicts(targets: Iterable[Target], figures: Mapping[str, float]) -> list[dict[str, Any]]:
    return [target.verdict(figures) for target in targets]


def target_lines(
    verdicts: Sequence[Mapping[str, Any]],
    *,
    width: int,
    unit_width: int = 5,
    loads: Mapping[str, float] | None = None,
) -> list[str]:
    """The table's head and a row per verdict: name, value, limit, unit, (load when taken,) ok or MISSED."""
    load_head = "" if loads is None else "load  "
    lines = [f"{'target':<{width}} {'value':>10} {'limit':>8}  {'unit':<{unit_width}} {load_head}result"]
    for verdict in verdicts:
        value = "-" if verdict["value"] is None else verdict["value"]
        load = "" if loads is None else f"{loads.get(verdict['figure'], '-'):>5} "
        result = "ok" if verdict["pass"] else "MISSED"
        lines.append(
            f"{verdict['name']:<{width}} {value:>10} {verdict['limit']:>8}  "
            f"{verdict['unit']:<{unit_width}} {load}{result}"
        )
    return lines


def footnotes(report: Mapping[str, Any]) -> list[str]:
    """The table's last lines: the run's notes and errors."""
    return [f"note: {note}" for note in report["notes"]] + [f"error: {error}" for error in report["errors"]]


def environment(
    *, load_key: str = "load_average", versions: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Python (and `versions` of libraries that matter), CPUs, machine and the load average now, under `load_key`."""
    return {
        "python": platform.python_version(),
        **(versions or {}),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        load_key: [round(x, 2) for x in os.getloadavg()],
    }


def document(
    sections: Mapping[str, Any], *, started: float, environment: Mapping[str, Any]
) -> dict[str, Any]:
    """The JSON document: the environment, the script's sections in order, the seconds since `started`."""
    return {
        "environment": dict(environment),
        **sections,
        "seconds": round(time.perf_counter() - started, 1),
    }


def publish(
    table: str,
    report: Mapping[str, Any],
    path: Path | None,
    *,
    table_to: TextIO | None = None,
    announce: bool = True,
) -> None:
    """Print `table` (on stdout, or `table_to`), then the JSON document on stdout or into `path`.

    `announce`: when it goes into `path`, say so after the table.
    """
    print(table, file=table_to or sys.stdout, flush=True)
    text = json.dumps(report, indent=2)
    if path is None:
        print(text)
        return
    path.write_text(text + "\n")
    if announce:
        print(f"\nJSON report: {path}")


def exit_code(strict: bool, passed: Iterable[bool], errors: Sequence[str] = ()) -> int:
    """1 under `--strict` when a target is missed or a step failed; 0 otherwise."""
    return 1 if strict and (bool(errors) or not all(passed)) else 0


def measure(
    measurement: Callable[[Path, argparse.Namespace, RunT, Callable[[str], None]], Coroutine[Any, Any, None]],
    args: argparse.Namespace,
    run: RunT,
    *,
    prefix: str,
    errors: tuple[type[Exception], ...],
) -> None:
    """`measurement(state_dir, args, run, log)` in `args.state_dir` or a temporary `prefix...` dir.

    A step that raises one of `errors` ends the measurement and goes into `run.errors`.
    """
    with scratch(args.state_dir, prefix=prefix) as state_dir, recording(run, errors):
        asyncio.run(measurement(state_dir, args, run, log))


def conclude(
    run: Run,
    args: argparse.Namespace,
    *,
    targets: Iterable[Target],
    table: Callable[[dict[str, Any]], str],
    sections: Mapping[str, Any] | None = None,
    load_key: str = "load_average",
) -> int:
    """Report `run`: print `table` of its document and the document (`--json`); the exit code (`--strict`).

    The document: environment, figures, `sections`, targets, notes, errors and seconds.
    """
    report = document(
        {
            "figures": run.figures,
            **(sections or {}),
            "targets": verdicts(targets, run.figures),
            "notes": run.notes,
            "errors": run.errors,
        },
        started=run.started,
        environment=environment(load_key=load_key),
    )
    publish(table(report), report, args.json)
    return exit_code(args.strict, (verdict["pass"] for verdict in report["targets"]), run.errors)
