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
    types: dict[str, dict[str, Any]],
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
    for reference in dict.fromkeys(_reference(spec) for spec in inputs.values()):
        if reference:
            lines += _type_table(reference, types[reference])
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
    return "\n".join(lines) + "\n"


def description(spec: dict[str, Any]) -> str:
    """A property's description on one line, as the pages show it."""
    return " ".join(str(spec.get("description") or "").split())


def _text(spec: dict[str, Any]) -> str:
    return description(spec).replace("|", "\\|")


def _type_table(reference: str, spec: dict[str, Any]) -> list[str]:
    """The fields of an object type the arguments refer to (`ReflectionArgs`), as a table of their own."""
    lines = [
        "",
        f"#### `{_type_name(reference)}`",
        "",
        "| Python | Other languages | Type | Description |",
        "| --- | --- | --- | --- |",
    ]
    for name, field in (spec.get("properties") or {}).items():
        lines.append(f"| `{_snake_case(name)}` | `{name}` | {_type(field)} | {_text(field)} |")
    return lines


def _reference(spec: dict[str, Any]) -> str:
    """The type token an argument refers to ("" for a plain type)."""
    return str(spec.get("$ref", "")).removeprefix("#/types/")


def _type_name(reference: str) -> str:
    return reference.rpartition(":")[2]


def _snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _type(spec: dict[str, Any]) -> str:
    if _reference(spec):
        return f"`{_type_name(_reference(spec))}`"
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
