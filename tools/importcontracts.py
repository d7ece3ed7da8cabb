"""An import-linter contract of ours: a package imports nothing but the standard library and a list.

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
