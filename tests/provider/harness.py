"""Drive a resource type in-process as the servicer does: a full config, Terraform's proposed state, the
framework's planning and the resource's hooks, then its apply operations, dict in and dict out."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from tf.utils import AttributePath, Diagnostics

from provider.framework import plan as planning
from provider.framework.resource import (
    ApplyContext,
    DataSource,
    ImportContext,
    PlanContext,
    ReadContext,
    Resource,
    State,
)
from provider.framework.tfadapter import served, served_data_source
from provider.kube import Kube


@dataclass
class Provider:
    kube: Kube


@dataclass
class Outcome:
    """What one operation returned, with its diagnostics."""

    state: State | None
    diagnostics: Diagnostics
    replace: list[AttributePath] = field(default_factory=list)

    @property
    def errors(self) -> list[tuple[str, str, Any]]:
        return [
            (d.summary, d.detail or "", d.path) for d in self.diagnostics.diagnostics if d.severity == "error"
        ]

    @property
    def warnings(self) -> list[tuple[str, str]]:
        return [(d.summary, d.detail or "") for d in self.diagnostics.diagnostics if d.severity == "warning"]


def config(resource: type[Resource] | type[DataSource], **values: Any) -> State:
    """A whole config: every attribute (null unless given) and the blocks."""
    schema = resource.get_schema()
    full: State = {attribute.name: None for attribute in schema.attributes}
    full.update({block.type_name: None for block in schema.block_types})
    unknown = set(values) - set(full)
    assert not unknown, f"not attributes of {resource.get_name()}: {unknown}"
    full.update(values)
    return full


def proposed(resource: Resource, cfg: State, prior: State | None) -> State:
    """Terraform's proposed new state: the config, with computed values it leaves null taken from the prior state."""
    result = dict(cfg)
    if prior is not None:
        for attribute in resource.get_schema().attributes:
            if attribute.computed and cfg.get(attribute.name) is None:
                result[attribute.name] = prior.get(attribute.name)
    return result


def validate(resource: Resource, cfg: State) -> Outcome:
    """Validation as Terraform's ValidateResourceConfig gets it: the schema's checks (tf's), then ours."""
    diagnostics = Diagnostics()
    served(type(resource))(resource.provider).validate(diagnostics, f"liqo_{resource.get_name()}", cfg)
    return Outcome(None, diagnostics)


def plan(resource: Resource, cfg: State, *, prior: State | None = None) -> Outcome:
    diagnostics = Diagnostics()
    attributes = resource.get_schema().attributes
    planned = planning.planned_state(
        attributes, prior=prior, proposed=proposed(resource, cfg, prior), config=cfg
    )
    ctx = PlanContext(
        diagnostics,
        f"liqo_{resource.get_name()}",
        changed_fields=planning.changed_fields(attributes, prior=prior, planned=planned),
        config=cfg,
    )
    planned = resource.plan(ctx, prior, planned) or planned
    replace = planning.replace_paths(attributes, prior=prior, planned=planned) if prior is not None else []
    return Outcome(planned, diagnostics, replace)


def plan_destroy(resource: Resource, prior: State) -> Outcome:
    diagnostics = Diagnostics()
    resource.plan_destroy(
        PlanContext(diagnostics, f"liqo_{resource.get_name()}", changed_fields=set()), prior
    )
    return Outcome(None, diagnostics)


def create(resource: Resource, planned: State, cfg: State, *, stop: threading.Event | None = None) -> Outcome:
    diagnostics = Diagnostics()
    ctx = ApplyContext(diagnostics, f"liqo_{resource.get_name()}", config=cfg, stop=stop or threading.Event())
    state = resource.create(ctx, planned)
    return Outcome(_final(resource, state, diagnostics), diagnostics)


def update(resource: Resource, prior: State, planned: State, cfg: State) -> Outcome:
    diagnostics = Diagnostics()
    state = resource.update(
        ApplyContext(diagnostics, f"liqo_{resource.get_name()}", config=cfg), prior, planned
    )
    return Outcome(_final(resource, state, diagnostics), diagnostics)


def read(resource: Resource, current: State) -> Outcome:
    diagnostics = Diagnostics()
    return Outcome(
        resource.read(ReadContext(diagnostics, f"liqo_{resource.get_name()}"), current), diagnostics
    )


def delete(resource: Resource, current: State, *, stop: threading.Event | None = None) -> Outcome:
    diagnostics = Diagnostics()
    ctx = ApplyContext(diagnostics, f"liqo_{resource.get_name()}", stop=stop or threading.Event())
    resource.delete(ctx, current)
    return Outcome(None, diagnostics)


def import_(resource: Resource, id: str) -> Outcome:
    diagnostics = Diagnostics()
    return Outcome(
        resource.import_(ImportContext(diagnostics, f"liqo_{resource.get_name()}"), id), diagnostics
    )


def read_data(source: DataSource, cfg: State) -> Outcome:
    diagnostics = Diagnostics()
    served_data_source(type(source))(source.provider).validate(diagnostics, f"liqo_{source.get_name()}", cfg)
    if diagnostics.has_errors():
        return Outcome(None, diagnostics)
    return Outcome(source.read(ReadContext(diagnostics, f"liqo_{source.get_name()}"), cfg), diagnostics)


def _final(resource: Resource, state: State | None, diagnostics: Diagnostics) -> State | None:
    """The state as the servicer returns it (write-only nulls, no unknowns: an unknown is a provider bug)."""
    return planning.final_state(
        resource.get_schema().attributes, state, diagnostics, type_name=f"liqo_{resource.get_name()}"
    )
