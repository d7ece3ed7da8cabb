"""Our resource and data source types served to tf's dispatch: the one place where they meet tf's interfaces.

tf instantiates the classes `Provider.get_resources()` and `get_data_sources()` return
and calls them with its own contexts for the RPCs our servicer leaves to it (read,
import, validate, upgrade). `served` makes, for each of our types, a tf class that holds
an instance of ours and hands each call over with our context; our servicer takes the
instance back (`product`) for planning and applying, where it passes richer contexts.
So no resource subclasses tf's interfaces, and a resource's methods take exactly the
contexts it uses.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar

from tf import iface
from tf.schema import Schema
from tf.utils import Diagnostics

from .resource import (
    ApplyContext,
    DataSource,
    ImportContext,
    PlanContext,
    ProviderContext,
    ReadContext,
    Resource,
)

State = dict[str, Any]


class _Product(Protocol):
    """What tf asks of every type it serves, before any RPC: made with the provider, a name, a schema."""

    def __init__(self, provider: ProviderContext) -> None: ...

    @classmethod
    def get_name(cls) -> str: ...

    @classmethod
    def get_schema(cls) -> Schema: ...


P = TypeVar("P", bound=_Product)


class _Serving(Generic[P]):
    """Holds an instance of our type `product_type` and answers tf's name and schema questions from it."""

    product_type: type[P]

    def __init__(self, provider: ProviderContext) -> None:
        self.product = self.product_type(provider)

    @classmethod
    def get_name(cls) -> str:
        return cls.product_type.get_name()

    @classmethod
    def get_schema(cls) -> Schema:
        return cls.product_type.get_schema()


class ServedResource(_Serving[Resource], iface.Resource):
    """tf's view of one of our resource types (a subclass per type, made by `served`)."""

    def validate(self, diags: Diagnostics, type_name: str, config: State) -> None:
        super().validate(diags, type_name, config)
        self.product.validate(diags, config)

    def plan(self, ctx: iface.PlanContext, current: State | None, planned: State) -> State:
        ours = PlanContext(ctx.diagnostics, ctx.type_name, changed_fields=ctx.changed_fields)
        return self.product.plan(ours, current, planned)

    def create(self, ctx: iface.CreateContext, planned: State) -> State | None:
        return self.product.create(ApplyContext(ctx.diagnostics, ctx.type_name), planned)

    def read(self, ctx: iface.ReadContext, current: State) -> State | None:
        return self.product.read(ReadContext(ctx.diagnostics, ctx.type_name), current)

    def update(self, ctx: iface.UpdateContext, current: State, planned: State) -> State | None:
        return self.product.update(ApplyContext(ctx.diagnostics, ctx.type_name), current, planned)

    def delete(self, ctx: iface.DeleteContext, current: State) -> None:
        self.product.delete(ApplyContext(ctx.diagnostics, ctx.type_name), current)

    def import_(self, ctx: iface.ImportContext, id: str) -> State | None:
        return self.product.import_(ImportContext(ctx.diagnostics, ctx.type_name), id)

    def upgrade(self, ctx: iface.UpgradeContext, version: int, old: State) -> State | None:
        return self.product.upgrade(version, old)


class ServedDataSource(_Serving[DataSource], iface.DataSource):
    """tf's view of one of our data source types (a subclass per type, made by `served_data_source`)."""

    def validate(self, diags: Diagnostics, type_name: str, config: State) -> None:
        super().validate(diags, type_name, config)
        self.product.check(diags, config)

    def read(self, ctx: iface.ReadDataContext, config: State) -> State | None:
        return self.product.read(ReadContext(ctx.diagnostics, ctx.type_name), config)


def served(resource: type[Resource]) -> type[ServedResource]:
    """The tf class that serves `resource`."""
    return type(f"Served{resource.__name__}", (ServedResource,), {"product_type": resource})


def served_data_source(data_source: type[DataSource]) -> type[ServedDataSource]:
    """The tf class that serves `data_source`."""
    return type(f"Served{data_source.__name__}", (ServedDataSource,), {"product_type": data_source})


def product(served_resource: iface.Resource) -> Resource:
    """Our resource behind the instance tf made (every resource type this provider serves is `served`)."""
    if not isinstance(served_resource, ServedResource):
        raise TypeError(
            f"{type(served_resource).__name__} is not served through provider.framework.tfadapter"
        )
    return served_resource.product
