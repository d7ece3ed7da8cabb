"""A provider with one test resource, `liqo_slow`, served by the real `provider.server` in a subprocess.

`liqo_slow`'s create writes `started` to its `marker` file, then waits (up to
`wait_seconds`) for Terraform's stop signal, then finishes its work and returns its
state: the shape of an apply that is still writing when Ctrl-C arrives.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, ClassVar

from tf.iface import DataSource, Provider
from tf.schema import Schema
from tf.types import Number, String
from tf.utils import Diagnostics

from provider.framework.resource import ApplyContext, ReadContext, Resource, State
from provider.framework.schema import Attribute
from provider.framework.tfadapter import served
from provider.server import serve


class SlowResource(Resource):
    name: ClassVar[str] = "slow"
    schema: ClassVar[Schema] = Schema(
        attributes=[
            Attribute(
                "marker", String(), required=True, description="File the create writes to when it starts."
            ),
            Attribute(
                "wait_seconds", Number(), optional=True, description="Bound of the wait for the stop signal."
            ),
            Attribute("secret", String(), optional=True, write_only=True, description="A write-only input."),
            Attribute("outcome", String(), computed=True, description="How the create ended."),
        ]
    )

    def create(self, ctx: ApplyContext, planned: State) -> State:
        marker = Path(planned["marker"])
        marker.write_text("started")
        stopped = ctx.stop.wait(float(planned.get("wait_seconds") or 30))
        time.sleep(0.2)  # the rest of the work, after the stop arrived
        secret = ctx.config.get("secret")
        marker.write_text("finished")
        return {**planned, "outcome": f"stopped={stopped} secret={'set' if secret else 'unset'}"}

    def read(self, ctx: ReadContext, current: State) -> State:
        return current

    def update(self, ctx: ApplyContext, current: State, planned: State) -> State:
        return planned

    def delete(self, ctx: ApplyContext, current: State) -> None:
        return None


class FakeProvider(Provider):
    def get_model_prefix(self) -> str:
        return "liqo_"

    def full_name(self) -> str:
        return "registry.terraform.io/liqo-iac/liqo"

    def get_provider_schema(self, diags: Diagnostics) -> Schema:
        return Schema()

    def validate_config(self, diags: Diagnostics, config: dict[str, Any]) -> None:
        return None

    def configure_provider(self, diags: Diagnostics, config: dict[str, Any]) -> None:
        return None

    def get_data_sources(self) -> list[type[DataSource]]:
        return []

    def get_resources(self) -> list[type[Any]]:
        return [served(SlowResource)]


def main() -> None:
    sys.exit(serve(FakeProvider))


if __name__ == "__main__":
    main()
