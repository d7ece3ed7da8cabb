"""An HTTPS admission webhook server for the behaviour suite, on a thread with its own event loop.

Its certificate comes from a CA made here (configurations carry it as `caBundle`) and
names the address it listens on, plus any DNS names asked for (a Service webhook is
verified as `<service>.<namespace>.svc`). Each path names a behaviour (`allow`,
`label`, `deny`, `warn`) and a token unique to the test, so the AdmissionReviews a test
receives are its own.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import ssl
import threading
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes import client

Obj = dict[str, Any]
DENIAL = "configmaps are closed today"
WARNING = "this configmap will self-destruct"


# --- certificates --------------------------------------------------------------------------------------


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificates(directory: Path, host: str, dns_names: tuple[str, ...]) -> tuple[bytes, Path, Path]:
    """A CA and a serving certificate for `host` and `dns_names`: (CA PEM, cert file, key file)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("webhook-test-ca"))
        .issuer_name(_name("webhook-test-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(host))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(host)), *(x509.DNSName(name) for name in dns_names)]
            ),
            False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = directory / "webhook.crt", directory / "webhook.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return ca.public_bytes(serialization.Encoding.PEM), cert_file, key_file


# --- the webhook server --------------------------------------------------------------------------------


def _label_patch(request: Obj) -> list[Obj]:
    if (request["object"].get("metadata") or {}).get("labels"):
        return [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]
    return [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]


def _answer(behaviour: str, request: Obj) -> Obj:
    response: Obj = {"uid": request["uid"], "allowed": behaviour != "deny"}
    if behaviour == "deny":
        response["status"] = {"code": 403, "reason": "Forbidden", "message": DENIAL}
    elif behaviour == "warn":
        response["warnings"] = [WARNING]
    elif behaviour == "label":
        patch = json.dumps(_label_patch(request)).encode()
        response |= {"patchType": "JSONPatch", "patch": base64.b64encode(patch).decode()}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


class WebhookServer:
    """HTTPS on `host`; `/<behaviour>/<token>` answers as the behaviour says and records the review."""

    def __init__(self, directory: Path, *, host: str = "127.0.0.1", dns_names: tuple[str, ...] = ()) -> None:
        self.host = host
        self.ca_pem, self._cert, self._key = _certificates(directory, host, dns_names)
        self.port = 0
        self._reviews: dict[str, list[Obj]] = defaultdict(list)
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="webhook-server", daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca_pem).decode()

    def url(self, behaviour: str, token: str) -> str:
        return f"https://{self.host}:{self.port}/{behaviour}/{token}"

    def reviews(self, token: str) -> list[Obj]:
        """The AdmissionReview requests received for a token, oldest first."""
        with self._lock:
            return [r for path, rs in self._reviews.items() if path.endswith("/" + token) for r in rs]

    def forget(self, token: str) -> None:
        with self._lock:
            for path in [p for p in self._reviews if p.endswith("/" + token)]:
                del self._reviews[path]

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(timeout=10)

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _serve(self) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self._cert, self._key)
        app = web.Application()
        app.router.add_post("/{behaviour}/{token}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0, ssl_context=context)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def _handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        with self._lock:
            self._reviews[request.path].append(review["request"])
        return web.json_response(_answer(request.match_info["behaviour"], review["request"]))


class Configurations:
    """Creates webhook configurations and deletes every one of them when the test ends."""

    def __init__(self, api: client.AdmissionregistrationV1Api) -> None:
        self.api = api
        self._made: list[tuple[str, str]] = []

    def add(self, kind: str, webhooks: list[Obj]) -> str:
        name = f"test-{uuid.uuid4().hex[:10]}"
        body = {"metadata": {"name": name}, "webhooks": webhooks}
        if kind == "mutating":
            self.api.create_mutating_webhook_configuration(body)
        else:
            self.api.create_validating_webhook_configuration(body)
        self._made.append((kind, name))
        return name

    def delete_all(self) -> None:
        for kind, name in self._made:
            try:
                if kind == "mutating":
                    self.api.delete_mutating_webhook_configuration(name)
                else:
                    self.api.delete_validating_webhook_configuration(name)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
