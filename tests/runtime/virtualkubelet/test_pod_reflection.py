"""The pod reflector's writes for a new offloaded pod, against clients that record them (no API server).

The provider's Pod waits for its ShadowPod, not for the pod's token Secret (its kubelet mounts the
Secret before it starts any container, so the Pod never runs without its token): once the tokens
are issued, the Secret and the ShadowPod are written at once, one round trip to the provider
instead of two before its ShadowPod controller can start.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from runtime.api.crds import SHADOWPODS
from runtime.api.kinds import PODS, SECRETS, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.core import (
    Client,
    EventRecorder,
    Informer,
    InvalidError,
    Manager,
    Request,
    Resource,
    Settings,
    Store,
)
from runtime.forge import pods as forge
from runtime.virtualkubelet.reflection.generic import NamespacePair
from runtime.virtualkubelet.reflection.metrics import ReflectionMetrics
from runtime.virtualkubelet.reflection.workload import _REMOTE_PODS, PodReflectionOptions, PodReflector
from runtime.virtualkubelet.remote import CredentialRemote
from runtime.virtualkubelet.translation import AddressTranslator

LOCAL, TWIN = "work", "work-rome"
#: how long the provider's fake waits for the other write before it says they came one after the other
OVERLAP = 2.0


class Provider:
    """The provider's API: a Secret create that answers only once the ShadowPod create has arrived."""

    def __init__(self, *, secret_error: Exception | None = None) -> None:
        self.writes: list[str] = []
        self._shadow_sent = asyncio.Event()
        self._secret_error = secret_error

    async def create(self, resource: Resource, body: JSON, **_: Any) -> JSON:
        self.writes.append(resource.plural)
        if resource == SHADOWPODS:
            self._shadow_sent.set()
        elif resource == SECRETS:
            await asyncio.wait_for(self._shadow_sent.wait(), OVERLAP)
            if self._secret_error is not None:
                raise self._secret_error
        return body


class Consumer:
    """The consumer's API: TokenRequests answered with a token (and counted)."""

    on_request = None

    def __init__(self) -> None:
        self.token_requests = 0

    async def create(self, resource: Resource, body: JSON, *, subresource: str = "", **_: Any) -> JSON:
        assert (resource, subresource) == (SERVICEACCOUNTS, "token")
        self.token_requests += 1
        return {**body, "status": {"token": "a-token", "expirationTimestamp": "2030-01-01T00:00:00Z"}}


def informer(*objects: JSON) -> Informer:
    store = Store()
    for obj in objects:
        store.upsert(obj)
    return cast(Informer, SimpleNamespace(store=store))


def local_pod() -> JSON:
    token = {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": LOCAL, "uid": "pod-uid", "resourceVersion": "5"},
        "spec": {
            "nodeName": "liqo-milan",
            "serviceAccountName": "default",
            "containers": [{"name": "web", "image": "nginx"}],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [token]}}],
        },
    }


def reflector(
    provider: Provider, *, consumer: Consumer | None = None, api_server_support: str = "TokenAPI"
) -> tuple[PodReflector, NamespacePair]:
    client = cast(Client, consumer or Consumer())
    reflector = PodReflector(
        Manager(client, settings=Settings(server=None)),
        local=informer(local_pod()),
        local_client=client,
        remote=cast(CredentialRemote, SimpleNamespace(client=provider)),
        options=PodReflectionOptions(
            pods=forge.PodOptions(origin_cluster_id="rome-id", api_server_support=api_server_support),
            node_name="liqo-milan",
            host_ip="10.0.0.1",
            provider="milan",
            home_ca=b"-----BEGIN CERTIFICATE-----\n",
        ),
        translator=cast(AddressTranslator, SimpleNamespace()),
        recorder=cast(EventRecorder, SimpleNamespace(record=lambda *a, **k: asyncio.sleep(0))),
        workers=1,
        metrics=ReflectionMetrics(CollectorRegistry(), cluster_id="milan-id", node_name="liqo-milan"),
    )
    pair = NamespacePair(LOCAL, TWIN)
    pair.remote_informers = {
        (SHADOWPODS, None): informer(),
        (PODS, _REMOTE_PODS): informer(),
        (SECRETS, None): informer(),
    }
    return reflector, pair


async def test_a_new_pod_s_token_secret_and_shadow_pod_are_written_at_once() -> None:
    provider = Provider()
    found, pair = reflector(provider)
    await found.handle(Request(LOCAL, "web"), pair)
    assert sorted(provider.writes) == sorted([SHADOWPODS.plural, SECRETS.plural])


async def test_a_token_secret_that_cannot_be_written_fails_the_reflection_after_the_shadow_pod() -> None:
    refused = InvalidError({"code": 422, "reason": "Invalid", "message": "refused"})
    provider = Provider(secret_error=refused)
    found, pair = reflector(provider)
    with pytest.raises(InvalidError):
        await found.handle(Request(LOCAL, "web"), pair)
    assert SHADOWPODS.plural in provider.writes


async def test_no_token_is_requested_when_the_installation_keeps_tokens_home() -> None:
    provider, consumer = Provider(), Consumer()
    found, pair = reflector(provider, consumer=consumer, api_server_support="Disabled")
    await found.handle(Request(LOCAL, "web"), pair)
    assert provider.writes == [SHADOWPODS.plural]
    assert consumer.token_requests == 0
