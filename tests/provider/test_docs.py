"""The registry-style docs pages are complete and in step with the schemas (`python -m provider.docs`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tf.schema import Schema

from provider import docs
from provider.framework.schema import walk
from provider.provider import LiqoProvider

PAGES = docs.pages()
INDEX = docs.DOCS / "index.md"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(docs.DOCS)))
def test_every_schema_has_its_page_and_the_page_is_up_to_date(path: Path) -> None:
    assert path.exists(), (
        f"{path} is missing: write it with a schema region, then run python -m provider.docs"
    )
    page = path.read_text()
    assert docs.render(page, PAGES[path]) == page, "the schema changed: run python -m provider.docs"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(docs.DOCS)))
def test_every_attribute_appears_with_its_description(path: Path) -> None:
    schema: Schema = PAGES[path]
    page = path.read_text()
    attributes = list(walk(schema.attributes))
    for block in schema.block_types:
        attributes += list(walk(block.block.attributes, (block.type_name,)))
    for dotted, attribute in attributes:
        assert attribute.description, f"{dotted} has no description"
        assert f"- `{attribute.name}` (" in page, f"{dotted} is not documented in {path.name}"
        assert attribute.description in page, f"the description of {dotted} is not in {path.name}"


def _entries() -> list[tuple[str, str, str]]:
    """(type, kind, folder) of every resource and data source the provider serves."""
    provider = LiqoProvider(environ={})
    prefix = provider.get_model_prefix()
    entries = [(prefix + cls.get_name(), "resource", "resources") for cls in provider.get_resources()]
    entries += [
        (prefix + cls.get_name(), "data source", "data-sources") for cls in provider.get_data_sources()
    ]
    return entries


@pytest.mark.parametrize(("name", "kind", "folder"), _entries(), ids=lambda value: str(value))
def test_the_index_lists_every_resource_and_data_source_with_a_link_to_its_page(
    name: str, kind: str, folder: str
) -> None:
    page = f"{folder}/{name.removeprefix('liqo_')}.md"
    assert (docs.DOCS / page).exists()
    assert f"| {kind} | [{name}]({page}) |" in INDEX.read_text(), (
        f"docs/terraform/index.md does not list {name}"
    )


def test_the_index_lists_every_resource_and_data_source() -> None:
    text = INDEX.read_text()
    for path in docs.pages():
        if path != INDEX:
            assert f"]({path.relative_to(INDEX.parent)})" in text, path


def test_render_refuses_a_page_without_a_schema_region() -> None:
    with pytest.raises(ValueError, match="schema"):
        docs.render("# A page\n", Schema())
