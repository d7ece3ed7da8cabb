"""The API sections of the docs pages under docs/pulumi/, generated from the package schema.

Each page is written by hand (what the component does, its lifecycle, examples) with one
generated region between `<!-- api -->` and `<!-- /api -->`: the type token, the Args
(Python name, schema name for other languages, type, whether required, description)
and the Outputs, from `_schema.schema()`, so what the docs say is what the code takes.
`python -m pulumi_liqo._docs` rewrites the regions; a test fails when a page is missing
or out of date.
"""

import argparse
import inspect
import re
from pathlib import Path
from typing import Any

import pulumi
from pulumi.provider.experimental.util import camel_case

from ._schema import COMPONENTS, schema

DOCS = Path(__file__).resolve().parent.parent / "docs" / "pulumi"
BEGIN, END = "<!-- api -->", "<!-- /api -->"
_REGION = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)


def pages() -> dict[Path, str]:
    """Every component's page and its generated region."""
    package = schema()
    found: dict[Path, str] = {}
    for component in COMPONENTS:
        token = f"{package['name']}:index:{component.__name__}"
        found[DOCS / f"{component.__name__.lower()}.md"] = api_markdown(
            component, token, package["resources"][token], types=package.get("types") or {}
        )
    return found


def api_markdown(
    component: type[pulumi.ComponentResource],
    token: str,
    resource: dict[str, Any],
    *,
    types: dict[str, Any] | None = None,
) -> str:
    args = inspect.get_annotations(component.__init__)["args"]
    required = set(resource.get("requiredInputs") or [])
    lines = [
        "## API",
        "",
        f"Type token `{token}`; Python `pulumi_liqo.{component.__name__}(name, args, opts)`.",
        "",
        f"### Arguments (`{args.__name__}`)",
        "",
        "| Python | Other languages | Type | Required | Description |",
        "| --- | --- | --- | --- | --- |",
    ]
    inputs = resource.get("inputProperties") or {}
    for python in inspect.get_annotations(args):
        name = camel_case(python)
        spec = inputs[name]
        lines.append(
            f"| `{python}` | `{name}` | {_type(spec)} | {'yes' if name in required else 'no'} | {_text(spec)} |"
        )
    lines += [
        "",
        "### Outputs",
        "",
        "| Python | Other languages | Type | Description |",
        "| --- | --- | --- | --- |",
    ]
    outputs = resource.get("properties") or {}
    for python in [key for key in inspect.get_annotations(component) if not key.startswith("_")]:
        name = camel_case(python)
        if name in outputs:
            lines.append(f"| `{python}` | `{name}` | {_type(outputs[name])} | {_text(outputs[name])} |")
    for ref in _references(resource, types or {}):
        lines += _type_markdown(ref, (types or {})[ref])
    return "\n".join(lines) + "\n"


def _references(resource: dict[str, Any], types: dict[str, Any]) -> list[str]:
    """The object types a component's arguments and outputs use, at any depth, in order of first use."""
    found: list[str] = []

    def visit(spec: Any) -> None:
        if isinstance(spec, dict):
            ref = spec.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/types/") and ref[8:] not in found:
                found.append(ref[8:])
                visit(types.get(ref[8:]) or {})
            for value in spec.values():
                visit(value)
        elif isinstance(spec, list):
            for value in spec:
                visit(value)

    visit([resource.get("inputProperties") or {}, resource.get("properties") or {}])
    return found


def _type_markdown(token: str, spec: dict[str, Any]) -> list[str]:
    required = set(spec.get("required") or [])
    lines = [
        "",
        f"### `{token.rsplit(':', 1)[-1]}`",
        "",
        "| Python | Other languages | Type | Required | Description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, prop in (spec.get("properties") or {}).items():
        python = _snake(name)
        lines.append(
            f"| `{python}` | `{name}` | {_type(prop)} | {'yes' if name in required else 'no'} | {_text(prop)} |"
        )
    return lines


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def description(spec: dict[str, Any]) -> str:
    """A property's description on one line, as the pages show it."""
    return " ".join(str(spec.get("description") or "").split())


def _text(spec: dict[str, Any]) -> str:
    return description(spec).replace("|", "\\|")


def _type(spec: dict[str, Any]) -> str:
    ref = spec.get("$ref")
    if isinstance(ref, str):
        return f"`{ref.rsplit(':', 1)[-1]}`"
    kind = spec.get("type", "object")
    if kind == "array":
        return f"list of {_type(spec.get('items') or {})}"
    if kind == "object" and "additionalProperties" in spec:
        return f"map of {_type(spec['additionalProperties'])}"
    return str(kind)


def render(page: str, region: str) -> str:
    """`page` with its API region replaced by `region`."""
    if not _REGION.search(page):
        raise ValueError(f"the page has no {BEGIN} ... {END} region for its API")
    return _REGION.sub(lambda _: f"{BEGIN}\n{region}{END}", page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Rewrite the API regions of docs/pulumi/*.md.")
    parser.parse_args(argv)
    for path, region in pages().items():
        page = path.read_text()
        updated = render(page, region)
        if updated != page:
            path.write_text(updated)
            print(f"updated {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
