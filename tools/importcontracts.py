"""import-linter contracts of ours: a package imports nothing but the standard library and a list, and a
package's modules import each other without a circle.

import-linter's `forbidden` contract names what may not be imported; a distribution
needs the converse, "this and nothing else", or a dependency that is installed in the
development environment only (pulumi, tf, the kubernetes client) slips into code that
runs where it is not installed. `allowed` checks every import of the source packages,
direct ones, whose target is outside the root packages: its top-level name must be in
the standard library (`sys.stdlib_module_names`) or in `allowed_modules`.

    [tool.importlinter]
    contract_types = ["allowed: tools.importcontracts.AllowedImportsContract"]

    [[tool.importlinter.contracts]]
    type = "allowed"
    source_modules = ["runtime"]
    allowed_modules = ["runtime", "aiohttp", ...]

`acyclic` checks that no module of a package imports itself through others: layers
contracts order the subpackages, but a circle inside one (errors -> failures ->
kubeconfig -> errors) still makes the modules one unit that can only change together.
It reports each circle (a strongly connected component of the import graph) with its
modules.

    contract_types = ["acyclic: tools.importcontracts.AcyclicContract"]

    [[tool.importlinter.contracts]]
    type = "acyclic"
    packages = ["runtime", "playground.apiserver"]
"""

from __future__ import annotations

import sys
from typing import cast

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class AllowedImportsContract(Contract):
    """The source packages import only the standard library and the allowed packages."""

    type_name = "allowed"

    source_modules = fields.ListField(subfield=fields.StringField())
    allowed_modules = fields.ListField(subfield=fields.StringField())

    # the fields hold the parsed lists on an instance (import-linter sets them from the configuration)
    def _sources(self) -> list[str]:
        return cast(list[str], self.source_modules)

    def _allowed(self) -> list[str]:
        return cast(list[str], self.allowed_modules)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        sources = self._sources()
        allowed = set(self._allowed()) | set(sys.stdlib_module_names)
        outside: list[dict[str, object]] = []
        for source in sources:
            for module in sorted({source} | graph.find_descendants(source)):
                for imported in sorted(graph.find_modules_directly_imported_by(module)):
                    top = imported.split(".", 1)[0]
                    if top in allowed or any(imported == s or imported.startswith(f"{s}.") for s in sources):
                        continue
                    details = graph.get_import_details(importer=module, imported=imported)
                    lines = sorted({int(detail["line_number"]) for detail in details})
                    outside.append({"importer": module, "imported": imported, "lines": lines})
        return ContractCheck(kept=not outside, metadata={"outside": outside})

    def render_broken_contract(self, check: ContractCheck) -> None:
        allowed = ", ".join(sorted(self._allowed()))
        output.print(f"Only the standard library and {allowed} may be imported:")
        output.new_line()
        for entry in check.metadata["outside"]:
            lines = ", ".join(f"l.{line}" for line in entry["lines"])
            output.print_error(f"- {entry['importer']} -> {entry['imported']} ({lines})")
        output.new_line()


class AcyclicContract(Contract):
    """No module of the packages imports itself through other modules of the same package."""

    type_name = "acyclic"

    packages = fields.ListField(subfield=fields.StringField())

    def _packages(self) -> list[str]:
        return cast(list[str], self.packages)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        circles = [circle for package in self._packages() for circle in import_circles(graph, package)]
        return ContractCheck(kept=not circles, metadata={"circles": circles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print("These modules import each other in a circle:")
        output.new_line()
        for circle in check.metadata["circles"]:
            output.print_error(f"- {', '.join(circle)}")
        output.new_line()


def import_circles(graph: ImportGraph, package: str) -> list[list[str]]:
    """The circles among `package`'s modules: each strongly connected component of more than one module
    (Tarjan's algorithm, iterative), its modules sorted."""
    modules = sorted({package} | graph.find_descendants(package))
    inside = set(modules)
    edges = {module: sorted(graph.find_modules_directly_imported_by(module) & inside) for module in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            module, position = work.pop()
            if position == 0:
                index[module] = low[module] = len(index)
                stack.append(module)
                on_stack.add(module)
            if position < len(edges[module]):
                work.append((module, position + 1))
                target = edges[module][position]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
    return circles
