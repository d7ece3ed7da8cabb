"""docs/pulumi/ is the API reference: every component has its page, in step with the code
(`python -m pulumi_liqo._docs`), and the package schema other languages get is complete."""

from __future__ import annotations

from pathlib import Path

import pytest

from pulumi_liqo import _docs
from pulumi_liqo._schema import COMPONENTS, schema

PAGES = _docs.pages()
SCHEMA = schema()


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_every_component_has_its_page_and_the_page_is_up_to_date(path: Path) -> None:
    assert path.exists(), (
        f"{path} is missing: write it with an API region, then run python -m pulumi_liqo._docs"
    )
    page = path.read_text()
    assert _docs.render(page, PAGES[path]) == page, "the API changed: run python -m pulumi_liqo._docs"


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.__name__)
def test_every_argument_and_output_is_described(component: type) -> None:
    resource = SCHEMA["resources"][f"liqo:index:{component.__name__}"]
    assert resource["isComponent"]
    assert resource.get("description")
    page = (_docs.DOCS / f"{component.__name__.lower()}.md").read_text()
    for kind in ("inputProperties", "properties"):
        for name, spec in resource[kind].items():
            assert spec.get("description"), f"{component.__name__}.{name} has no description"
            assert _docs.description(spec).replace("|", "\\|") in page, f"{name} is not on the page"


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.__name__)
def test_the_index_lists_every_component(component: type) -> None:
    index = (_docs.DOCS / "index.md").read_text()
    assert (
        f"| [{component.__name__}]({component.__name__.lower()}.md) | `liqo:index:{component.__name__}` |"
        in index
    )


def test_required_arguments_are_those_without_a_default() -> None:
    assert set(SCHEMA["resources"]["liqo:index:Peer"]["requiredInputs"]) == {
        "kubeconfig",
        "clusterId",
        "clusterName",
        "clusterAuthurl",
        "clusterToken",
    }
    assert set(SCHEMA["resources"]["liqo:index:Install"]["requiredInputs"]) == {"kubeconfig", "clusterName"}


def test_render_refuses_a_page_without_an_api_region() -> None:
    with pytest.raises(ValueError, match="region"):
        _docs.render("# A page\n", "")


def test_every_nested_type_is_described_on_the_page_that_uses_it() -> None:
    assert set(SCHEMA["types"]) == {
        "liqo:index:ClusterSelectorTermArgs",
        "liqo:index:NodeSelectorRequirementArgs",
        "liqo:index:ClusterStatus",
        "liqo:index:ReflectionArgs",
    }
    pages = {
        token: _docs.DOCS / f"{component.__name__.lower()}.md"
        for component in COMPONENTS
        for token in _docs._references(
            SCHEMA["resources"][f"liqo:index:{component.__name__}"], SCHEMA["types"]
        )
    }
    for token, spec in SCHEMA["types"].items():
        page = pages[token].read_text()
        assert f"### `{token.rsplit(':', 1)[-1]}`" in page
        for name, prop in spec["properties"].items():
            assert prop.get("description"), f"{token}.{name} has no description"
            assert _docs.description(prop).replace("|", "\\|") in page, f"{token}.{name} is not on the page"
