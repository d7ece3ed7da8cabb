"""tf's tfplugin6 servicer with its gaps closed; every RPC still goes through tf's dispatch and codecs.

What changes against `tf.provider.ProviderServicer`:
- no exception reaches gRPC: each RPC answers with an error diagnostic that names the
  RPC and the resource type (tf re-raised, and Terraform showed "rpc error: Unknown");
- planning follows `framework.plan` for creates too (tf skipped the resource's `plan`
  on create and knew no nested attributes, write-only values or keep-prior), destroy
  plans are offered (`plan_destroy`), so a resource can refuse a destroy at plan time;
- apply gets an `ApplyContext` with the raw config (write-only values are only there)
  and the stop signal; its new state is made valid (`plan.final_state`);
- StopProvider only sets the stop signal: operations in flight finish (waits end early)
  and return their state, which Terraform records. tf stopped the gRPC server on it,
  so an apply in flight never answered and its object was lost from the state.
- private state is passed through from plan to apply.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

import grpc
from tf.gen import tfplugin_pb2 as pb
from tf.iface import Provider
from tf.provider import ProviderServicer
from tf.utils import Diagnostics, read_dynamic_value, to_dynamic_value

from . import plan
from .diagnostics import unexpected
from .resource import ApplyContext, PlanContext
from .tfadapter import product
from .tfwire import attribute_path, decode_state, encode_state

logger = logging.getLogger(__name__)

#: RPCs whose response carries diagnostics, guarded against exceptions
_GUARDED = (
    "GetMetadata",
    "GetProviderSchema",
    "ValidateProviderConfig",
    "ValidateResourceConfig",
    "ValidateDataResourceConfig",
    "UpgradeResourceState",
    "ConfigureProvider",
    "ReadResource",
    "PlanResourceChange",
    "ApplyResourceChange",
    "ImportResourceState",
    "MoveResourceState",
    "ReadDataSource",
    "GetFunctions",
)


class Servicer(ProviderServicer):
    """Serves one provider object; `stopping` is set when Terraform sends StopProvider."""

    def __init__(self, app: Provider, *, stopping: threading.Event) -> None:
        super().__init__(app)
        self.stopping = stopping

    def GetProviderSchema(self, request: Any, context: grpc.ServicerContext) -> Any:
        response = super().GetProviderSchema(request, context)
        response.server_capabilities.plan_destroy = True
        return response

    def PlanResourceChange(self, request: Any, context: grpc.ServicerContext) -> Any:
        diags = Diagnostics()
        type_name = request.type_name
        klass = self._get_res_cls(type_name)
        attrs, blocks = self._get_res_attrs(type_name), self._get_res_blocks(type_name)
        _, prior = decode_state(diags, attrs, blocks, request.prior_state)
        proposed_encoded, proposed = decode_state(diags, attrs, blocks, request.proposed_new_state)
        if diags.has_errors():
            return pb.PlanResourceChange.Response(diagnostics=diags.to_pb())
        config = read_dynamic_value(request.config) or {}
        schema = list(attrs.values())  # blocks (timeouts) are config only: planned as proposed
        resource = product(self.app.new_resource(klass))

        if proposed is None:
            if prior is not None:
                resource.plan_destroy(PlanContext(diags, type_name, changed_fields=set(), config={}), prior)
            return pb.PlanResourceChange.Response(
                planned_state=to_dynamic_value(None),
                planned_private=request.prior_private,
                diagnostics=diags.to_pb(),
            )

        planned = plan.planned_state(schema, prior=prior, proposed=proposed, config=config)
        ctx = PlanContext(
            diags,
            type_name,
            changed_fields=plan.changed_fields(schema, prior=prior, planned=planned),
            config=config,
        )
        planned = resource.plan(ctx, prior, planned)
        replace = (
            plan.replace_paths(schema, prior=prior, planned=planned) if prior is not None and planned else []
        )
        return pb.PlanResourceChange.Response(
            planned_state=encode_state(attrs, blocks, planned, proposed_encoded),
            requires_replace=[attribute_path(path) for path in replace],
            planned_private=request.prior_private,
            diagnostics=diags.to_pb(),
        )

    def ApplyResourceChange(self, request: Any, context: grpc.ServicerContext) -> Any:
        diags = Diagnostics()
        type_name = request.type_name
        klass = self._get_res_cls(type_name)
        attrs, blocks = self._get_res_attrs(type_name), self._get_res_blocks(type_name)
        _, prior = decode_state(diags, attrs, blocks, request.prior_state)
        planned_encoded, planned = decode_state(diags, attrs, blocks, request.planned_state)
        if diags.has_errors():
            return pb.ApplyResourceChange.Response(diagnostics=diags.to_pb())
        config = read_dynamic_value(request.config) or {}
        resource = product(self.app.new_resource(klass))
        ctx = ApplyContext(diags, type_name, config=config, stop=self.stopping)

        new_state: dict[str, Any] | None
        try:
            if planned is None:
                assert prior is not None, "Terraform sends no apply without a prior or a planned state"
                resource.delete(ctx, prior)
                # a delete that failed leaves the object: it stays in the state
                new_state = prior if diags.has_errors() else None
            elif prior is None:
                new_state = resource.create(ctx, planned)
            else:
                new_state = resource.update(ctx, prior, planned)
        except Exception as exc:
            unexpected(diags, exc, where=f"{type_name}: apply")
            # whatever existed before still does: keep it in the state
            new_state = prior
        new_state = plan.final_state(list(attrs.values()), new_state, diags, type_name=type_name)
        return pb.ApplyResourceChange.Response(
            new_state=encode_state(attrs, blocks, new_state, old=planned_encoded),
            private=request.planned_private,
            diagnostics=diags.to_pb(),
        )

    def StopProvider(self, request: Any, context: grpc.ServicerContext) -> Any:
        logger.info("provider: Terraform asked to stop; operations in flight finish and return their state")
        self.stopping.set()
        return pb.StopProvider.Response()


def _guard(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    response_type = getattr(pb, name).Response

    @functools.wraps(method)
    def guarded(self: Servicer, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Exception as exc:
            diags = Diagnostics()
            type_name = getattr(request, "type_name", "") or "provider"
            unexpected(diags, exc, where=f"{type_name}: {name}")
            return response_type(diagnostics=diags.to_pb())

    return guarded


for _name in _GUARDED:
    setattr(Servicer, _name, _guard(_name, getattr(Servicer, _name)))
