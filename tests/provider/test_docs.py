"""The registry-style docs pages are complete and in step with the schemas (`python -m provider.docs`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tf.schema import Schema

from provider import docs
from provider.framework.schema import walk

PAGES = docs.pages()


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


def test_render_refuses_a_page_without_a_schema_region() -> None:
    with pytest.raises(ValueError, match="schema"):
        docs.render("# A page\n", Schema())
