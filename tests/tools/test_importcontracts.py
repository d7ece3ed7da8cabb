"""Our import-linter contracts on small graphs: the circles `acyclic` reports."""

from __future__ import annotations

from grimp import ImportGraph

from tools.importcontracts import import_circles


def graph(*imports: tuple[str, str]) -> ImportGraph:
    built = ImportGraph()
    for importer, imported in imports:
        built.add_import(importer=importer, imported=imported)
    return built


def test_a_circle_through_three_modules_is_one_circle() -> None:
    imports = graph(("pkg.a", "pkg.b"), ("pkg.b", "pkg.c"), ("pkg.c", "pkg.a"), ("pkg.c", "pkg.d"))
    imports.add_module("pkg")
    assert import_circles(imports, "pkg") == [["pkg.a", "pkg.b", "pkg.c"]]


def test_layered_modules_have_no_circle() -> None:
    imports = graph(("pkg.a", "pkg.b"), ("pkg.a", "pkg.c"), ("pkg.b", "pkg.c"))
    imports.add_module("pkg")
    assert import_circles(imports, "pkg") == []


def test_two_circles_are_reported_apart_and_imports_from_outside_do_not_count() -> None:
    imports = graph(
        ("pkg.a", "pkg.b"),
        ("pkg.b", "pkg.a"),
        ("pkg.c", "pkg.d"),
        ("pkg.d", "pkg.c"),
        ("pkg.d", "other.x"),
        ("other.x", "pkg.c"),
    )
    imports.add_module("pkg")
    assert sorted(import_circles(imports, "pkg")) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]
