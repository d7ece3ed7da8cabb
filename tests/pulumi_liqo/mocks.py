"""Pulumi's mock runtime, recording what each resource registration asked for: type, name, parent,
dependencies, provider, custom timeouts and inputs (with their secrecy), so tests can check a component's
graph as the engine would receive it."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks, rpc

#: what the dynamic providers would answer on create (the mock runtime runs no provider)
DYNAMIC_OUTPUTS: dict[str, dict[str, Any]] = {
    "pulumi-python:dynamic/liqo:Discovery": {
        "cluster_id": "6f0b5e52-1a4d-4a3c-9d2e-0c6a9c1f1e01",
        "discovered_pod_cidr": "10.244.0.0/16",
        "discovered_service_cidr": "10.96.0.0/12",
        "discovered_api_server_url": "https://127.0.0.1:6443",
    },
    "pulumi-python:dynamic/liqo:Runtime": {
        "cluster_id": "6f0b5e52-1a4d-4a3c-9d2e-0c6a9c1f1e01",
        "cluster_name": "rome",
        "auth_url": "https://127.0.0.1:30443",
        "version": "0.1.0",
        "missing_objects": [],
    },
    "pulumi-python:dynamic/liqo:Token": {
        "secret_name": "liqo-peering-token-0123456789ab",
        "cluster_id": "6f0b5e52-1a4d-4a3c-9d2e-0c6a9c1f1e01",
        "cluster_name": "rome",
        "auth_ep": "https://127.0.0.1:30443",
        "local_token": "ab" * 32,
        "expires_at": "",
    },
    "pulumi-python:dynamic/liqo:Offloading": {
        "twin_namespace_name": "liqo-demo-rome",
        "offloading_phase": "Ready",
        "cluster_status": {
            "milan": {
                "selected": True,
                "ready": True,
                "reason": "Accepted",
                "message": "The twin namespace exists",
            }
        },
    },
    "pulumi-python:dynamic/liqo:Peering": {
        "virtual_node": "liqo-rome",
        "authentication_status": "Established",
        "offloading_status": "Established",
        "networking_status": "None",
        "remote_version": "0.1.0",
    },
}


@dataclass
class Registration:
    type: str
    name: str
    urn: str
    parent: str
    provider: str
    dependencies: list[str]
    custom_timeouts: dict[str, str]
    inputs: dict[str, Any]
    retain_on_delete: bool
    additional_secret_outputs: list[str]
    #: top-level inputs that were secrets
    secret_inputs: set[str] = field(default_factory=set)


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[Any, Any]]:
        outputs = {**args.inputs, **DYNAMIC_OUTPUTS.get(args.typ, {})}
        return f"{args.name}-id-{uuid.uuid4().hex[:8]}", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        return {}, None


class RecordingMonitor(mocks.MockMonitor):
    def __init__(self) -> None:
        super().__init__(Mocks())
        self.registrations: list[Registration] = []

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type != "pulumi:pulumi:Stack":
            raw = rpc.deserialize_properties(request.object)
            timeouts = request.customTimeouts
            self.registrations.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    parent=request.parent,
                    provider=request.provider,
                    dependencies=list(request.dependencies),
                    custom_timeouts={
                        key: value
                        for key, value in (
                            ("create", timeouts.create),
                            ("update", timeouts.update),
                            ("delete", timeouts.delete),
                        )
                        if value
                    },
                    retain_on_delete=bool(request.retainOnDelete),
                    additional_secret_outputs=list(request.additionalSecretOutputs),
                    inputs={key: rpc.unwrap_rpc_secret(value) for key, value in raw.items()},
                    secret_inputs={key for key, value in raw.items() if rpc.is_rpc_secret(value)},
                )
            )
        return response

    def named(self, name: str) -> Registration:
        (found,) = [found for found in self.registrations if found.name == name]
        return found

    def children(self, parent: Registration) -> list[Registration]:
        return [found for found in self.registrations if found.parent == parent.urn]

    def by_type(self, type_: str) -> list[Registration]:
        return [found for found in self.registrations if found.type == type_]

    def one(self, type_: str) -> Registration:
        (found,) = self.by_type(type_)
        return found


def engine_state(properties: dict[str, Any]) -> dict[str, Any]:
    """Properties as the engine hands them back to a dynamic provider (its diff's olds and news): serialized
    to the wire and read back, so a None is dropped and an int comes back a float."""
    # on a thread of its own, as the provider server does it: a test's event loop may be running here
    with ThreadPoolExecutor(max_workers=1) as worker:
        struct = worker.submit(asyncio.run, rpc.serialize_properties(properties, {})).result()
    state: dict[str, Any] = rpc.deserialize_properties(struct, keep_unknowns=True)
    return state
