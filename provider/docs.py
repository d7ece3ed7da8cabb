"""The "Schema" sections of the registry-style docs pages, generated from the schemas themselves.

Pages under `docs/terraform/` are written by hand (overview, examples, import) with one
generated region between `<!-- schema -->` and `<!-- /schema -->`, in tfplugindocs'
format: attributes grouped as Required / Optional / Read-Only, nested attributes and
blocks in their own sections, each with its description. `python -m provider.docs`
rewrites the regions; a test fails when a page is missing or out of date, so a schema
change cannot ship with stale docs.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tf.schema import Attribute as TfAttribute
from tf.schema import NestedBlock, Schema
from tf.types import Bool, List, Map, Number, Set, String, TfType
from tf.utils import Diagnostics

from .framework.schema import Object, nested_object

DOCS = Path(__file__).resolve().parent.parent / "docs" / "terraform"
BEGIN, END = "<!-- schema -->", "<!-- /schema -->"
_REGION = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
_WRITE_ONLY = "[Write-only](https://developer.hashicorp.com/terraform/language/resources/ephemeral#write-only-arguments)"


def pages() -> dict[Path, Schema]:
    """Every docs page and the schema its region shows: the provider, each data source and resource."""
    from .provider import LiqoProvider

    provider = LiqoProvider(environ={})
    found: dict[Path, Schema] = {DOCS / "index.md": provider.get_provider_schema(Diagnostics())}
    for data_source in provider.get_data_sources():
        found[DOCS / "data-sources" / f"{data_source.get_name()}.md"] = data_source.get_schema()
    for resource in provider.get_resources():
        found[DOCS / "resources" / f"{resource.get_name()}.md"] = resource.get_schema()
    return found


def schema_markdown(schema: Schema) -> str:
    """The region for one schema: its attributes and blocks, then their nested schemas."""
    lines = ["## Schema", ""]
    nested: list[tuple[str, Sequence[TfAttribute], Sequence[NestedBlock]]] = []
    lines += _groups(schema.attributes, schema.block_types, anchor="", nested=nested)
    while nested:
        name, attributes, blocks = nested.pop(0)
        lines += [f'<a id="nested--{name}"></a>', f"### Nested Schema for `{name}`", ""]
        lines += _groups(attributes, blocks, anchor=name, nested=nested)
    return "\n".join(lines).rstrip() + "\n"


def render(page: str, schema: Schema) -> str:
    """`page` with its schema region replaced by the current one."""
    region = f"{BEGIN}\n{schema_markdown(schema)}{END}"
    if not _REGION.search(page):
        raise ValueError(f"the page has no {BEGIN} ... {END} region")
    return _REGION.sub(lambda _: region, page)


def _groups(
    attributes: Sequence[TfAttribute],
    blocks: Sequence[NestedBlock],
    *,
    anchor: str,
    nested: list[tuple[str, Sequence[TfAttribute], Sequence[NestedBlock]]],
) -> list[str]:
    groups: dict[str, list[str]] = {"Required": [], "Optional": [], "Read-Only": []}
    for attribute in attributes:
        group = "Required" if attribute.required else "Optional" if attribute.optional else "Read-Only"
        path = f"{anchor}.{attribute.name}" if anchor else attribute.name
        kinds = [_type_name(attribute.type)]
        if attribute.sensitive:
            kinds.append("Sensitive")
        if getattr(attribute, "write_only", False):
            kinds.append(_WRITE_ONLY)
        line = f"- `{attribute.name}` ({', '.join(kinds)}) {attribute.description or ''}".rstrip()
        inner = nested_object(attribute.type)
        if inner is not None:
            line += f" (see [below for nested schema](#nested--{path}))"
            nested.append((path, inner.attributes, []))
        groups[group].append(line)
    for block in blocks:
        path = f"{anchor}.{block.type_name}" if anchor else block.type_name
        description = getattr(block, "description", "") or block.block.description or ""
        line = f"- `{block.type_name}` (Block) {description} (see [below for nested schema](#nested--{path}))"
        groups["Optional"].append(line)
        nested.append((path, block.block.attributes, block.block.block_types))
    lines: list[str] = []
    for title, entries in groups.items():
        if entries:
            lines += [f"### {title}" if not anchor else f"{title}:", "", *entries, ""]
    return lines


def _type_name(type_: TfType) -> str:
    if isinstance(type_, Object):
        return "Attributes"
    if isinstance(type_, List) and isinstance(type_.element_type, Object):
        return "Attributes List"
    if isinstance(type_, Set):
        return f"Set of {_type_name(type_.element_type)}"
    if isinstance(type_, List):
        return f"List of {_type_name(type_.element_type)}"
    if isinstance(type_, Map):
        return f"Map of {_type_name(type_.element_type)}"
    names: dict[type[Any], str] = {String: "String", Number: "Number", Bool: "Boolean"}
    for kind, name in names.items():
        if isinstance(type_, kind):
            return name
    return "Dynamic"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m provider.docs", description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    for path, schema in pages().items():
        path.write_text(render(path.read_text(), schema))
        print(f"updated {path}")


if __name__ == "__main__":
    main()
