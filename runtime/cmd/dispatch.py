"""Run one component: `python -m runtime [common options] <component> [component options]`.

Each component is a module with `async def main(argv) -> int`, imported only when it
is asked for (by module path, so a component not built yet is reported, not crashed
on). The dispatcher owns what every component shares:

- logging: `--log-level` and `--log-format` are accepted before or after the component
  name and removed before the component parses its own arguments;
- signals: SIGTERM and SIGINT cancel the component's task (cancellation is the stop
  signal everywhere in the runtime), so it shuts down cleanly and exits 0;
- exit codes: what `main` returns; 1 when it crashes; 2 for usage errors (an unknown
  or missing component, bad options).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from .logs import FORMATS, LEVELS, LogFormat, setup_logging

logger = logging.getLogger(__name__)

Main = Callable[[Sequence[str]], Awaitable[int]]

USAGE_ERROR = 2
CRASHED = 1


@dataclass(frozen=True)
class Component:
    module: str
    summary: str


COMPONENTS: Mapping[str, Component] = {
    "controller-manager": Component(
        "runtime.controllers.main",
        "the controllers: peerings, tenants, resource slices, virtual nodes",
    ),
    "auth": Component("runtime.auth.main", "the authentication service: peering tokens for credentials"),
    "webhook": Component("runtime.webhook.main", "admission webhooks validating the runtime's kinds"),
    "virtual-kubelet": Component(
        "runtime.virtualkubelet.main", "the virtual node standing for one provider cluster"
    ),
    "gateway": Component("runtime.fabric.gateway", "one peering's gateway: the WireGuard end of its tunnel"),
    "fabric": Component(
        "runtime.fabric.agent", "a node's routes and masquerade bypass to remote pod networks"
    ),
}


class ComponentMissingError(Exception):
    """The component's module is not part of this installation."""


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", choices=LEVELS, default="info", help="the lowest level logged")
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        default="text",
        help="one record per line: key=value pairs (text) or JSON objects (json)",
    )


def _top_parser(components: Mapping[str, Component]) -> argparse.ArgumentParser:
    listing = "\n".join(f"  {name:<20}{component.summary}" for name, component in components.items())
    parser = argparse.ArgumentParser(
        prog="python -m runtime",
        description="Run one component of the Liqo runtime.",
        epilog=f"components:\n{listing}\n\n`python -m runtime <component> --help` shows its options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    _common_options(parser)
    parser.add_argument("component", nargs="?", metavar="component", help="the component to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def _split_common(argv: Sequence[str], defaults: argparse.Namespace) -> tuple[argparse.Namespace, list[str]]:
    """The common options found in a component's arguments, and the arguments left for the component."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    _common_options(parser)
    parser.set_defaults(log_level=defaults.log_level, log_format=defaults.log_format)
    return parser.parse_known_args(list(argv))


def load(name: str, components: Mapping[str, Component] = COMPONENTS) -> Main:
    """The component's `main`; ComponentMissingError when its module is not installed."""
    module_path = components[name].module
    try:
        module = importlib.import_module(module_path)
    except ModuleNotFoundError as exc:
        # only the component's own package being absent counts; a missing dependency inside it is a crash
        if exc.name is None or not (module_path == exc.name or module_path.startswith(exc.name + ".")):
            raise
        raise ComponentMissingError(
            f"the {name} component is not part of this installation (no module {module_path})"
        ) from None
    entry = getattr(module, "main", None)
    if not callable(entry):
        raise ComponentMissingError(f"the {name} component's module {module_path} has no main(argv)")
    return cast(Main, entry)


async def supervise(entry: Main, argv: Sequence[str], *, name: str) -> int:
    """Run `entry(argv)` as a task that SIGTERM and SIGINT cancel; 0 when it stops because of them."""
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(_exit_code(entry, argv), name=name)

    def stop(signum: signal.Signals) -> None:
        logger.info("%s: received %s, shutting down", name, signum.name)
        task.cancel()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop, signum)
    try:
        return await task
    except asyncio.CancelledError:
        if task.cancelled():
            return 0
        raise
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


async def _exit_code(entry: Main, argv: Sequence[str]) -> int:
    """`entry(argv)`, with argparse's SystemExit (--help: 0, a usage error: 2) turned into the code."""
    try:
        return await entry(argv)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        return USAGE_ERROR


def run(name: str, argv: Sequence[str], *, components: Mapping[str, Component] = COMPONENTS) -> int:
    """Run component `name` with its arguments (common options included); the process exit code."""
    return main([name, *argv], components=components)


def main(argv: Sequence[str] | None = None, *, components: Mapping[str, Component] = COMPONENTS) -> int:
    parser = _top_parser(components)
    try:
        top = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    if top.component is None:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: name a component: {', '.join(components)}", file=sys.stderr)
        return USAGE_ERROR
    if top.component not in components:
        print(
            f"{parser.prog}: error: unknown component {top.component!r}; the components are: "
            f"{', '.join(components)}",
            file=sys.stderr,
        )
        return USAGE_ERROR
    common, rest = _split_common(top.args, top)
    setup_logging(level=common.log_level, log_format=cast(LogFormat, common.log_format))
    try:
        entry = load(top.component, components)
    except ComponentMissingError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    if "-h" in rest or "--help" in rest:
        print(f"common options (any component): --log-level {{{','.join(LEVELS)}}}, ", end="")
        print(f"--log-format {{{','.join(FORMATS)}}}\n")
    try:
        return asyncio.run(supervise(entry, rest, name=top.component))
    except Exception:
        logger.exception("%s: crashed", top.component)
        return CRASHED


def controller_manager() -> int:
    return run("controller-manager", sys.argv[1:])


def auth() -> int:
    return run("auth", sys.argv[1:])


def webhook() -> int:
    return run("webhook", sys.argv[1:])


def virtual_kubelet() -> int:
    return run("virtual-kubelet", sys.argv[1:])
