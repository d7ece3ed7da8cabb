"""Admission webhooks against real webhook servers on 127.0.0.1 (plain HTTP and HTTPS)."""

from __future__ import annotations

import asyncio
import base64
import datetime
import functools
import ipaddress
import json
import socket
import ssl
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from playground.apiserver.admission import AdmissionRequest, WebhookDispatcher, admission_review, rule_matches
from playground.apiserver.errors import APIError
from playground.apiserver.identity import UserInfo
from playground.apiserver.service_resolver import ResolveError

Obj = dict[str, Any]
Answer = Obj | web.StreamResponse
Handler = Callable[[Obj], Awaitable[Answer]]

ALICE = UserInfo("alice", ("devs", "system:authenticated"), uid="u-1", extra={"scopes": ("a",)})
SERVICE_HOST = "webhook.default.svc"


# --- a small stand-in for patch.json_patch ------------------------------------------------------


def fake_json_patch(obj: Obj, ops: list[Any]) -> Obj:
    for op in ops:
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = obj
        for part in parents:
            target = target[part]
        if op["op"] not in ("add", "replace"):
            raise APIError(422, "Invalid", f"unsupported op {op['op']}")
        target[last] = op["value"]
    return obj


# --- webhook servers ---------------------------------------------------------------------------


@dataclass
class Call:
    review: Obj
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class WebhookServer:
    base_url: str = ""
    handlers: dict[str, Handler] = field(default_factory=dict)
    calls: dict[str, list[Call]] = field(default_factory=lambda: defaultdict(list))
    #: set when the test is over, so handlers that hang can finish
    stopping: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str) -> str:
        return self.base_url + path

    async def handle(self, request: web.Request) -> web.StreamResponse:
        review = await request.json()
        self.calls[request.path].append(Call(review, dict(request.query), dict(request.headers)))
        answer = await self.handlers[request.path](review)
        return answer if isinstance(answer, web.StreamResponse) else web.json_response(answer)


async def start(server: WebhookServer, ssl_context: ssl.SSLContext | None) -> web.AppRunner:
    app = web.Application()
    app.router.add_post("/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    port = runner.addresses[0][1]
    server.base_url = f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
    return runner


@dataclass(frozen=True)
class Pki:
    ca_pem: bytes
    cert_file: Path
    key_file: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("webhook-ca"))
        .issuer_name(_name("webhook-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(SERVICE_HOST))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(SERVICE_HOST), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    directory = tmp_path_factory.mktemp("pki")
    cert_file, key_file = directory / "tls.crt", directory / "tls.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return Pki(ca_cert.public_bytes(serialization.Encoding.PEM), cert_file, key_file)


@pytest.fixture
async def server() -> AsyncIterator[WebhookServer]:
    webhooks = WebhookServer()
    runner = await start(webhooks, None)
    yield webhooks
    webhooks.stopping.set()
    await runner.cleanup()


@pytest.fixture
async def tls_server(pki: Pki) -> AsyncIterator[WebhookServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.cert_file, pki.key_file)
    webhooks = WebhookServer()
    runner = await start(webhooks, context)
    yield webhooks
    webhooks.stopping.set()
    await runner.cleanup()


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield port


# --- configurations and requests ---------------------------------------------------------------


def answer(review: Obj, **response: Any) -> Obj:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": True, **response},
    }


def json_patch_answer(review: Obj, ops: list[Obj]) -> Obj:
    patch = base64.b64encode(json.dumps(ops).encode()).decode()
    return answer(review, patchType="JSONPatch", patch=patch)


async def allow(review: Obj) -> Answer:
    return answer(review)


def hook(name: str, url: str = "", **overrides: Any) -> Obj:
    spec: Obj = {
        "name": name,
        "clientConfig": {"url": url},
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["pods"],
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    spec.update(overrides)
    return spec


def configuration(name: str, *webhooks: Obj) -> Obj:
    return {"metadata": {"name": name}, "webhooks": list(webhooks)}


def pod(name: str = "web", **labels: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": dict(labels)},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def pod_request(operation: str = "CREATE", **fields: Any) -> AdmissionRequest:
    defaults: Obj = {
        "operation": operation,
        "group": "",
        "version": "v1",
        "resource": "pods",
        "kind": "Pod",
        "namespaced": True,
        "user": ALICE,
        "name": "web",
        "namespace": "default",
        "object": pod(),
    }
    defaults.update(fields)
    return AdmissionRequest(**defaults)


@pytest.fixture
async def make_dispatcher() -> AsyncIterator[Callable[..., WebhookDispatcher]]:
    made: list[WebhookDispatcher] = []

    def make(
        *,
        mutating: list[Obj] | None = None,
        validating: list[Obj] | None = None,
        namespaces: dict[str, Obj] | None = None,
        services: dict[tuple[str, str, int], str] | None = None,
    ) -> WebhookDispatcher:
        configs = {"mutating": mutating or [], "validating": validating or []}
        known = namespaces if namespaces is not None else {"default": {"metadata": {"name": "default"}}}
        dispatcher = WebhookDispatcher(
            configurations=lambda kind: configs[kind],
            namespace=known.get,
            resolve_service=functools.partial(_resolve, services or {}),
            apply_patch=fake_json_patch,
        )
        made.append(dispatcher)
        return dispatcher

    yield make
    for dispatcher in made:
        await dispatcher.close()


def _resolve(services: dict[tuple[str, str, int], str], namespace: str, name: str, port: int) -> str:
    if (namespace, name, port) not in services:
        raise ResolveError(f'no endpoints available for service "{name}"')
    return services[(namespace, name, port)]


# --- rule matching -----------------------------------------------------------------------------


def rule(**fields: Any) -> Obj:
    base: Obj = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}
    base.update(fields)
    return base


def req(
    operation: str = "CREATE",
    *,
    group: str = "",
    resource: str = "pods",
    subresource: str = "",
    namespaced: bool = True,
) -> AdmissionRequest:
    return AdmissionRequest(
        operation=operation,
        group=group,
        version="v1",
        resource=resource,
        subresource=subresource,
        kind="Whatever",
        namespaced=namespaced,
        user=ALICE,
        namespace="default" if namespaced else "",
    )


@pytest.mark.parametrize(
    ("the_rule", "request_", "expected"),
    [
        (rule(operations=["CREATE"]), req("CREATE"), True),
        (rule(operations=["CREATE"]), req("UPDATE"), False),
        (rule(operations=["*"]), req("CONNECT", subresource="exec"), False),
        (rule(operations=["*"], resources=["pods/exec"]), req("CONNECT", subresource="exec"), True),
        (rule(operations=["DELETE", "UPDATE"]), req("DELETE"), True),
        (rule(apiGroups=["apps"]), req(group="apps", resource="deployments"), True),
        (rule(apiGroups=["apps"]), req(), False),
        (rule(apiVersions=["v1beta1"]), req(), False),
        (rule(resources=["pods"]), req(), True),
        (rule(resources=["pods"]), req(subresource="status"), False),
        (rule(resources=["*"]), req(subresource="status"), False),
        (rule(resources=["*/*"]), req(subresource="status"), True),
        (rule(resources=["*/*"]), req(), True),
        (rule(resources=["pods/status"]), req(subresource="status"), True),
        (rule(resources=["pods/status"]), req(), False),
        (rule(resources=["*/status"]), req(resource="services", subresource="status"), True),
        (rule(resources=["*/status"]), req(subresource="scale"), False),
        (rule(resources=["pods/*"]), req(subresource="log"), True),
        (rule(resources=["deployments"]), req(), False),
        (rule(resources=[]), req(), False),
        (rule(scope="Namespaced"), req(), True),
        (rule(scope="Namespaced"), req(resource="nodes", namespaced=False), False),
        (rule(scope="Cluster"), req(resource="nodes", namespaced=False), True),
        (rule(scope="Cluster"), req(), False),
        (rule(scope="Cluster"), req(resource="namespaces", namespaced=False), True),
        (rule(scope="Namespaced"), req(resource="namespaces", namespaced=False), False),
        (rule(scope="*"), req(resource="nodes", namespaced=False), True),
    ],
)
def test_rule_matching_follows_operations_groups_versions_resources_and_scope(
    the_rule: Obj, request_: AdmissionRequest, expected: bool
) -> None:
    assert rule_matches(the_rule, request_) is expected


# --- the AdmissionReview ------------------------------------------------------------------------


def test_admission_review_for_a_namespace_update_names_the_namespace_itself() -> None:
    review = admission_review(
        AdmissionRequest(
            operation="UPDATE",
            group="",
            version="v1",
            resource="namespaces",
            kind="Namespace",
            namespaced=False,
            user=ALICE,
            name="team-a",
            object={"metadata": {"name": "team-a"}},
            old_object={"metadata": {"name": "team-a"}},
        )
    )["request"]
    assert review["namespace"] == "team-a"
    assert review["options"] == {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}
    assert "subResource" not in review


def test_admission_review_of_a_scale_subresource_carries_the_subresource_kind() -> None:
    review = admission_review(
        AdmissionRequest(
            operation="UPDATE",
            group="apps",
            version="v1",
            resource="deployments",
            subresource="scale",
            kind="Scale",
            kind_group="autoscaling",
            kind_version="v1",
            namespaced=True,
            user=ALICE,
            name="web",
            namespace="default",
        )
    )["request"]
    assert review["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert review["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert review["subResource"] == review["requestSubResource"] == "scale"


# --- mutating ----------------------------------------------------------------------------------


async def test_mutating_webhook_adds_a_label_with_a_json_patch(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    async def add_label(review: Obj) -> Answer:
        return json_patch_answer(review, [{"op": "add", "path": "/metadata/labels/injected", "value": "yes"}])

    server.handlers["/mutate"] = add_label
    dispatcher = make_dispatcher(
        mutating=[configuration("inject", hook("inject.example.com", server.url("/mutate")))]
    )
    request = pod_request(options={"fieldManager": "kubectl-create"})

    result = await dispatcher.mutate(request)

    assert result is not None
    assert result["metadata"]["labels"] == {"injected": "yes"}
    assert request.object is not None and request.object["metadata"]["labels"] == {}
    [call] = server.calls["/mutate"]
    assert call.query == {"timeout": "10s"}
    sent = call.review["request"]
    assert call.review["apiVersion"] == "admission.k8s.io/v1" and call.review["kind"] == "AdmissionReview"
    assert sent["uid"] == request.uid
    assert sent["kind"] == sent["requestKind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert sent["resource"] == sent["requestResource"] == {"group": "", "version": "v1", "resource": "pods"}
    assert (sent["name"], sent["namespace"], sent["operation"], sent["dryRun"]) == (
        "web",
        "default",
        "CREATE",
        False,
    )
    assert sent["userInfo"] == {
        "username": "alice",
        "groups": ["devs", "system:authenticated"],
        "uid": "u-1",
        "extra": {"scopes": ["a"]},
    }
    assert sent["object"] == pod() and sent["oldObject"] is None
    assert sent["options"] == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "CreateOptions",
        "fieldManager": "kubectl-create",
    }


async def test_mutating_webhooks_run_in_configuration_name_order_and_see_earlier_patches(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    seen: list[tuple[str, Obj]] = []

    def labeller(tag: str) -> Handler:
        async def handle(review: Obj) -> Answer:
            seen.append((tag, dict(review["request"]["object"]["metadata"]["labels"])))
            return json_patch_answer(review, [{"op": "add", "path": f"/metadata/labels/{tag}", "value": "1"}])

        return handle

    for tag in ("first", "second", "third"):
        server.handlers[f"/{tag}"] = labeller(tag)
    dispatcher = make_dispatcher(
        mutating=[
            configuration("b-config", hook("third.example.com", server.url("/third"))),
            configuration(
                "a-config",
                hook("first.example.com", server.url("/first")),
                hook("second.example.com", server.url("/second")),
            ),
        ]
    )

    result = await dispatcher.mutate(pod_request())

    assert [tag for tag, _ in seen] == ["first", "second", "third"]
    assert seen[2][1] == {"first": "1", "second": "1"}
    assert result is not None and result["metadata"]["labels"] == {"first": "1", "second": "1", "third": "1"}


async def test_patch_type_other_than_json_patch_fails_the_call(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    async def merge_patch(review: Obj) -> Answer:
        return answer(review, patchType="MergePatch", patch=base64.b64encode(b"[{}]").decode())

    server.handlers["/mutate"] = merge_patch
    dispatcher = make_dispatcher(
        mutating=[configuration("m", hook("merge.example.com", server.url("/mutate")))]
    )

    with pytest.raises(APIError) as caught:
        await dispatcher.mutate(pod_request())

    assert caught.value.code == 500
    assert caught.value.message == (
        'Internal error occurred: failed calling webhook "merge.example.com": '
        'unsupported patch type "MergePatch"'
    )


async def test_patch_on_delete_is_an_internal_error(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    async def add_label(review: Obj) -> Answer:
        return json_patch_answer(review, [{"op": "add", "path": "/metadata/labels/x", "value": "y"}])

    server.handlers["/mutate"] = add_label
    webhook = hook("del.example.com", server.url("/mutate"), failurePolicy="Ignore")
    webhook["rules"][0]["operations"] = ["DELETE"]
    dispatcher = make_dispatcher(mutating=[configuration("m", webhook)])

    with pytest.raises(APIError) as caught:
        await dispatcher.mutate(pod_request("DELETE", object=None, old_object=pod()))

    assert caught.value.code == 500
    assert "attempted to modify the object, which is not supported for this operation" in caught.value.message


# --- validating --------------------------------------------------------------------------------


async def test_validating_webhook_denial_carries_its_message_code_and_reason(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    async def deny(review: Obj) -> Answer:
        return answer(
            review,
            allowed=False,
            status={"code": 403, "reason": "Forbidden", "message": "images from docker.io are not allowed"},
            warnings=["image uses the latest tag"],
        )

    server.handlers["/validate"] = deny
    dispatcher = make_dispatcher(
        validating=[configuration("policy", hook("policy.example.com", server.url("/validate")))]
    )
    warnings: list[str] = []

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request(), warnings=warnings)

    assert (caught.value.code, caught.value.reason) == (403, "Forbidden")
    assert caught.value.message == (
        'admission webhook "policy.example.com" denied the request: images from docker.io are not allowed'
    )
    assert warnings == ["image uses the latest tag"]


async def test_denial_without_a_status_is_a_400_without_explanation(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    async def deny(review: Obj) -> Answer:
        return answer(review, allowed=False)

    server.handlers["/validate"] = deny
    dispatcher = make_dispatcher(
        validating=[configuration("v", hook("quiet.example.com", server.url("/validate")))]
    )

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request())

    assert caught.value.code == 400
    assert (
        caught.value.message == 'admission webhook "quiet.example.com" denied the request without explanation'
    )


async def test_validating_webhooks_run_concurrently_and_report_the_first_failure_in_order(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    def slow_deny(message: str) -> Handler:
        async def handle(review: Obj) -> Answer:
            await asyncio.sleep(0.3)
            return answer(review, allowed=False, status={"message": message}, warnings=[message])

        return handle

    server.handlers["/a"], server.handlers["/b"] = slow_deny("a says no"), slow_deny("b says no")
    dispatcher = make_dispatcher(
        validating=[
            configuration("z", hook("b.example.com", server.url("/b"))),
            configuration("y", hook("a.example.com", server.url("/a"))),
        ]
    )
    warnings: list[str] = []
    started = time.monotonic()

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request(), warnings=warnings)

    assert time.monotonic() - started < 0.55
    assert caught.value.message == 'admission webhook "a.example.com" denied the request: a says no'
    assert warnings == ["a says no", "b says no"]


async def test_validating_webhook_may_not_return_a_patch(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    async def patching(review: Obj) -> Answer:
        return json_patch_answer(review, [{"op": "add", "path": "/metadata/labels/x", "value": "y"}])

    server.handlers["/validate"] = patching
    dispatcher = make_dispatcher(
        validating=[configuration("v", hook("sneaky.example.com", server.url("/validate")))]
    )

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request())

    assert caught.value.message == (
        'Internal error occurred: failed calling webhook "sneaky.example.com": '
        "received invalid webhook response: validating webhook may not return response.patch"
    )


async def test_response_with_another_uid_is_rejected(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    async def wrong_uid(review: Obj) -> Answer:
        body = answer(review)
        body["response"]["uid"] = "not-it"
        return body

    server.handlers["/validate"] = wrong_uid
    dispatcher = make_dispatcher(
        validating=[configuration("v", hook("uid.example.com", server.url("/validate")))]
    )
    request = pod_request()

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(request)

    assert f'expected response.uid="{request.uid}", got "not-it"' in caught.value.message


async def test_error_status_from_the_webhook_server_fails_the_call(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    async def broken(review: Obj) -> Answer:
        return web.Response(status=500, text="boom")

    server.handlers["/validate"] = broken
    dispatcher = make_dispatcher(
        validating=[configuration("v", hook("broken.example.com", server.url("/validate")))]
    )

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request())

    assert caught.value.message == (
        'Internal error occurred: failed calling webhook "broken.example.com": failed to call webhook: '
        'an error on the server ("boom") has prevented the request from succeeding'
    )


# --- failurePolicy and timeouts ----------------------------------------------------------------


async def test_unreachable_webhook_fails_closed_by_default(
    closed_port: int, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    url = f"http://127.0.0.1:{closed_port}/validate"
    dispatcher = make_dispatcher(validating=[configuration("v", hook("down.example.com", url))])

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request())

    assert (caught.value.code, caught.value.reason) == (500, "InternalError")
    assert caught.value.message == (
        'Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: '
        f'Post "{url}?timeout=10s": dial tcp 127.0.0.1:{closed_port}: connect: connection refused'
    )


async def test_unreachable_webhook_is_skipped_with_failure_policy_ignore(
    closed_port: int, server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    async def add_label(review: Obj) -> Answer:
        return json_patch_answer(review, [{"op": "add", "path": "/metadata/labels/ok", "value": "1"}])

    server.handlers["/mutate"] = add_label
    dispatcher = make_dispatcher(
        mutating=[
            configuration(
                "m",
                hook("down.example.com", f"http://127.0.0.1:{closed_port}/", failurePolicy="Ignore"),
                hook("up.example.com", server.url("/mutate")),
            )
        ],
        validating=[
            configuration(
                "v", hook("down.example.com", f"http://127.0.0.1:{closed_port}/", failurePolicy="Ignore")
            )
        ],
    )

    result = await dispatcher.mutate(pod_request())
    await dispatcher.validate(pod_request())

    assert result is not None and result["metadata"]["labels"] == {"ok": "1"}


async def test_slow_webhook_is_cut_off_after_its_timeout_seconds(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    async def slow(review: Obj) -> Answer:
        await server.stopping.wait()
        return answer(review)

    server.handlers["/slow"] = slow
    dispatcher = make_dispatcher(
        validating=[configuration("v", hook("slow.example.com", server.url("/slow"), timeoutSeconds=1))]
    )
    started = time.monotonic()

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request())

    assert 0.9 < time.monotonic() - started < 2
    assert caught.value.message == (
        'Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: '
        f'Post "{server.url("/slow")}?timeout=1s": context deadline exceeded'
    )


async def test_webhook_without_v1_review_version_follows_failure_policy(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    server.handlers["/validate"] = allow
    old = hook("old.example.com", server.url("/validate"), admissionReviewVersions=["v1beta1"])
    dispatcher = make_dispatcher(validating=[configuration("v", old)])
    ignoring = make_dispatcher(validating=[configuration("v", {**old, "failurePolicy": "Ignore"})])

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request())
    await ignoring.validate(pod_request())

    assert "webhook does not accept known AdmissionReview versions" in caught.value.message
    assert server.calls["/validate"] == []


# --- dry run -----------------------------------------------------------------------------------


async def test_dry_run_is_refused_by_a_webhook_with_side_effects(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    server.handlers["/validate"] = allow
    dispatcher = make_dispatcher(
        validating=[
            configuration("v", hook("effects.example.com", server.url("/validate"), sideEffects="Some"))
        ]
    )

    await dispatcher.validate(pod_request())
    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request(dry_run=True))

    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    assert caught.value.message == 'admission webhook "effects.example.com" does not support dry run'
    assert len(server.calls["/validate"]) == 1


async def test_dry_run_reaches_a_webhook_without_side_effects_on_dry_run(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    server.handlers["/validate"] = allow
    dispatcher = make_dispatcher(
        validating=[
            configuration("v", hook("safe.example.com", server.url("/validate"), sideEffects="NoneOnDryRun"))
        ]
    )

    await dispatcher.validate(pod_request(dry_run=True))

    [call] = server.calls["/validate"]
    assert call.review["request"]["dryRun"] is True


# --- selectors ---------------------------------------------------------------------------------


async def test_namespace_selector_picks_requests_by_their_namespace_labels(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    server.handlers["/validate"] = allow
    selector = {"matchExpressions": [{"key": "policy", "operator": "In", "values": ["strict"]}]}
    dispatcher = make_dispatcher(
        validating=[
            configuration("v", hook("ns.example.com", server.url("/validate"), namespaceSelector=selector))
        ],
        namespaces={
            "strict": {"metadata": {"name": "strict", "labels": {"policy": "strict"}}},
            "relaxed": {"metadata": {"name": "relaxed"}},
        },
    )

    await dispatcher.validate(pod_request(namespace="strict"))
    await dispatcher.validate(pod_request(namespace="relaxed"))
    await dispatcher.validate(req(resource="nodes", namespaced=False))

    assert [c.review["request"]["namespace"] for c in server.calls["/validate"]] == ["strict"]


async def test_namespace_selector_on_a_namespace_uses_its_own_labels(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    server.handlers["/validate"] = allow
    webhook = hook(
        "ns.example.com", server.url("/validate"), namespaceSelector={"matchLabels": {"team": "a"}}
    )
    webhook["rules"][0]["resources"] = ["namespaces"]
    dispatcher = make_dispatcher(validating=[configuration("v", webhook)], namespaces={})

    def namespace_request(**labels: str) -> AdmissionRequest:
        obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": labels}}
        return pod_request(
            resource="namespaces", kind="Namespace", namespaced=False, name="team-a", namespace="", object=obj
        )

    await dispatcher.validate(namespace_request(team="a"))
    await dispatcher.validate(namespace_request(team="b"))

    assert len(server.calls["/validate"]) == 1


async def test_namespace_selector_for_a_missing_namespace_is_not_found(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    server.handlers["/validate"] = allow
    webhook = hook("ns.example.com", server.url("/validate"), namespaceSelector={"matchLabels": {"x": "y"}})
    dispatcher = make_dispatcher(validating=[configuration("v", webhook)], namespaces={})

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request(namespace="ghost"))

    assert (caught.value.code, caught.value.message) == (404, 'namespaces "ghost" not found')


async def test_object_selector_matches_the_object_or_the_old_object(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    server.handlers["/validate"] = allow
    webhook = hook(
        "obj.example.com", server.url("/validate"), objectSelector={"matchLabels": {"watched": "true"}}
    )
    dispatcher = make_dispatcher(validating=[configuration("v", webhook)])

    await dispatcher.validate(pod_request("UPDATE", object=pod("a"), old_object=pod("a", watched="true")))
    await dispatcher.validate(pod_request("UPDATE", object=pod("b", watched="true"), old_object=pod("b")))
    await dispatcher.validate(pod_request("UPDATE", object=pod("c"), old_object=pod("c", watched="no")))

    assert [c.review["request"]["object"]["metadata"]["name"] for c in server.calls["/validate"]] == [
        "a",
        "b",
    ]


async def test_admission_configuration_objects_never_reach_webhooks(
    server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    server.handlers["/validate"] = allow
    webhook = hook("all.example.com", server.url("/validate"), rules=[rule()])
    dispatcher = make_dispatcher(validating=[configuration("v", webhook)])
    exempt = AdmissionRequest(
        operation="CREATE",
        group="admissionregistration.k8s.io",
        version="v1",
        resource="validatingwebhookconfigurations",
        kind="ValidatingWebhookConfiguration",
        namespaced=False,
        user=ALICE,
        name="v",
        object=configuration("v", webhook),
    )

    await dispatcher.validate(exempt)
    await dispatcher.validate(pod_request())

    assert [c.review["request"]["kind"]["kind"] for c in server.calls["/validate"]] == ["Pod"]


# --- services and TLS --------------------------------------------------------------------------


def service_hook(name: str, ca_pem: bytes | None, **overrides: Any) -> Obj:
    client_config: Obj = {
        "service": {"namespace": "default", "name": "webhook", "path": "/validate", "port": 8443}
    }
    if ca_pem is not None:
        client_config["caBundle"] = base64.b64encode(ca_pem).decode()
    return hook(name, clientConfig=client_config, **overrides)


async def test_https_service_webhook_is_trusted_through_its_ca_bundle(
    tls_server: WebhookServer, pki: Pki, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    tls_server.handlers["/validate"] = allow
    dispatcher = make_dispatcher(
        validating=[configuration("v", service_hook("tls.example.com", pki.ca_pem))],
        services={("default", "webhook", 8443): tls_server.base_url},
    )

    await dispatcher.validate(pod_request())

    [call] = tls_server.calls["/validate"]
    assert call.query == {"timeout": "10s"}
    assert call.headers["User-Agent"] == "kube-apiserver-admission"


async def test_https_url_webhook_is_trusted_through_its_ca_bundle(
    tls_server: WebhookServer, pki: Pki, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    tls_server.handlers["/validate"] = allow
    webhook = hook("tls.example.com", tls_server.url("/validate"))
    webhook["clientConfig"]["caBundle"] = base64.b64encode(pki.ca_pem).decode()
    dispatcher = make_dispatcher(validating=[configuration("v", webhook)])

    await dispatcher.validate(pod_request())

    assert len(tls_server.calls["/validate"]) == 1


async def test_https_webhook_without_ca_bundle_fails_certificate_verification(
    tls_server: WebhookServer, make_dispatcher: Callable[..., WebhookDispatcher]
) -> None:
    tls_server.handlers["/validate"] = allow
    dispatcher = make_dispatcher(
        validating=[configuration("v", service_hook("tls.example.com", None))],
        services={("default", "webhook", 8443): tls_server.base_url},
    )

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request())

    assert caught.value.message.startswith(
        'Internal error occurred: failed calling webhook "tls.example.com": failed to call webhook: '
        'Post "https://webhook.default.svc:8443/validate?timeout=10s": '
        "tls: failed to verify certificate: x509: "
    )
    assert tls_server.calls["/validate"] == []


async def test_service_without_endpoints_fails_the_call(
    make_dispatcher: Callable[..., WebhookDispatcher],
) -> None:
    dispatcher = make_dispatcher(validating=[configuration("v", service_hook("gone.example.com", None))])

    with pytest.raises(APIError) as caught:
        await dispatcher.validate(pod_request())

    assert caught.value.message == (
        'Internal error occurred: failed calling webhook "gone.example.com": failed to call webhook: '
        'Post "https://webhook.default.svc:8443/validate?timeout=10s": '
        'no endpoints available for service "webhook"'
    )
