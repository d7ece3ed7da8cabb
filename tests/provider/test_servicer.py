"""The tfplugin6 servicer in-process: planning through tf's codecs, destroy plans, errors as diagnostics."""

from __future__ import annotations

import threading
from typing import Any, ClassVar, cast

import grpc
from tf.gen import tfplugin_pb2 as pb
from tf.iface import DataSource, Provider
from tf.schema import Schema
from tf.types import String, Unknown
from tf.utils import Diagnostics, read_dynamic_value, to_dynamic_value

from provider.framework.resource import ApplyContext, PlanContext, ReadContext, Resource, State
from provider.framework.schema import Attribute
from provider.framework.servicer import Servicer
from provider.framework.tfadapter import served


class Peer(Resource):
    name: ClassVar[str] = "peer"
    schema: ClassVar[Schema] = Schema(
        attributes=[
            Attribute("cluster_id", String(), required=True, requires_replace=True, description="d"),
            Attribute("cpu", String(), optional=True, description="d"),
            Attribute("node", String(), computed=True, description="d"),
            Attribute("note", String(), computed=True, description="d"),
        ]
    )
    calls: ClassVar[list[str]] = []

    def plan(self, ctx: PlanContext, current: State | None, planned: State) -> State:
        # the resource knows the node name at plan time
        return {**planned, "node": f"liqo-{planned['cluster_id']}"}

    def plan_destroy(self, ctx: PlanContext, prior: State) -> None:
        if prior.get("cpu") == "busy":
            ctx.diagnostics.add_error("Cannot destroy a busy peer", path=["cpu"])

    def create(self, ctx: ApplyContext, planned: State) -> State:
        if planned["cpu"] == "explode":
            raise RuntimeError("boom")
        return {**planned, "note": "created"}

    def read(self, ctx: ReadContext, current: State) -> State:
        return current

    def update(self, ctx: ApplyContext, current: State, planned: State) -> State:
        return {**planned, "note": "updated"}

    def delete(self, ctx: ApplyContext, current: State) -> None:
        ctx.diagnostics.add_error("Peer unreachable", "try force")


class App(Provider):
    def get_model_prefix(self) -> str:
        return "liqo_"

    def full_name(self) -> str:
        return "registry.terraform.io/liqo-iac/liqo"

    def get_provider_schema(self, diags: Diagnostics) -> Schema:
        return Schema()

    def validate_config(self, diags: Diagnostics, config: Any) -> None:
        raise KeyError("a bug")

    def configure_provider(self, diags: Diagnostics, config: Any) -> None:
        return None

    def get_data_sources(self) -> list[type[DataSource]]:
        return []

    def get_resources(self) -> list[type[Any]]:
        return [served(Peer)]


# The servicer never touches its gRPC context, so the in-process calls pass none.
NO_CONTEXT = cast(grpc.ServicerContext, None)

PRIOR = {"cluster_id": "c1", "cpu": "1", "node": "liqo-c1", "note": "created"}


def servicer() -> Servicer:
    return Servicer(App(), stopping=threading.Event())


def plan_request(prior: dict[str, Any] | None, proposed: dict[str, Any] | None) -> Any:
    config = {**(proposed or {}), "node": None, "note": None}
    return pb.PlanResourceChange.Request(
        type_name="liqo_peer",
        prior_state=to_dynamic_value(prior),
        proposed_new_state=to_dynamic_value(proposed),
        config=to_dynamic_value(config if proposed is not None else None),
        prior_private=b"private",
    )


def test_create_plan_runs_the_resource_plan_hook() -> None:
    proposed = {"cluster_id": "c2", "cpu": "1", "node": None, "note": None}

    response = servicer().PlanResourceChange(plan_request(None, proposed), NO_CONTEXT)

    assert list(response.diagnostics) == []
    assert read_dynamic_value(response.planned_state) == {
        "cluster_id": "c2",
        "cpu": "1",
        "node": "liqo-c2",
        "note": Unknown,
    }


def test_update_plan_names_the_attribute_that_forces_replacement() -> None:
    proposed = {**PRIOR, "cluster_id": "c9"}

    response = servicer().PlanResourceChange(plan_request(PRIOR, proposed), NO_CONTEXT)

    assert [[step.attribute_name for step in path.steps] for path in response.requires_replace] == [
        ["cluster_id"]
    ]
    assert read_dynamic_value(response.planned_state)["note"] is Unknown
    assert response.planned_private == b"private"


def test_destroy_plan_lets_the_resource_refuse() -> None:
    response = servicer().PlanResourceChange(plan_request({**PRIOR, "cpu": "busy"}, None), NO_CONTEXT)

    assert read_dynamic_value(response.planned_state) is None
    [diagnostic] = response.diagnostics
    assert diagnostic.summary == "Cannot destroy a busy peer"
    assert diagnostic.attribute.steps[0].attribute_name == "cpu"


def test_an_exception_in_apply_is_a_diagnostic_and_no_state() -> None:
    planned = {"cluster_id": "c2", "cpu": "explode", "node": "liqo-c2", "note": Unknown}
    request = pb.ApplyResourceChange.Request(
        type_name="liqo_peer",
        prior_state=to_dynamic_value(None),
        planned_state=to_dynamic_value(planned),
        config=to_dynamic_value({**planned, "node": None, "note": None}),
    )

    response = servicer().ApplyResourceChange(request, NO_CONTEXT)

    [diagnostic] = response.diagnostics
    assert diagnostic.summary == "liqo_peer: apply: unexpected error: RuntimeError: boom"
    assert "bug in the liqo provider" in diagnostic.detail
    assert read_dynamic_value(response.new_state) is None


def test_a_failed_delete_keeps_the_object_in_the_state() -> None:
    request = pb.ApplyResourceChange.Request(
        type_name="liqo_peer", prior_state=to_dynamic_value(PRIOR), planned_state=to_dynamic_value(None)
    )

    response = servicer().ApplyResourceChange(request, NO_CONTEXT)

    assert [d.summary for d in response.diagnostics] == ["Peer unreachable"]
    assert read_dynamic_value(response.new_state) == PRIOR


def test_an_exception_in_any_rpc_is_an_error_diagnostic() -> None:
    response = servicer().ValidateProviderConfig(
        pb.ValidateProviderConfig.Request(config=to_dynamic_value({})), NO_CONTEXT
    )

    [diagnostic] = response.diagnostics
    assert diagnostic.severity == pb.Diagnostic.ERROR
    assert diagnostic.summary == "provider: ValidateProviderConfig: unexpected error: KeyError: 'a bug'"


def test_stop_provider_sets_the_stop_signal_and_answers() -> None:
    served = servicer()
    response = served.StopProvider(pb.StopProvider.Request(), NO_CONTEXT)
    assert response.Error == ""
    assert served.stopping.is_set()
