"""A request body is read whole, however it arrives.

Go's HTTP client writes a body through a 4 KiB buffer, so a large one (a CRD applied by
pulumi-kubernetes, say) reaches the server in several TCP segments. kube-apiserver reads
up to the end of the body before decoding it; a server that decodes what has arrived so
far refuses a JSON body as malformed and, worse, accepts a YAML body cut short as a valid
smaller object (a CRD without its versions' `served` and `storage`).

Each test sends the head and the first half of the body, gives the server a moment to
answer early (it must not: it has half an object), then sends the rest.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from urllib.parse import urlencode, urlsplit

from .conftest import Cluster

#: how long the server gets to (wrongly) answer on half a body before the rest is sent
PAUSE_SECONDS = 1.0
#: enough data that the body cannot be mistaken for a small one
VALUES = {f"key-{index:03}": "v" * 100 for index in range(80)}


def _send_in_two_halves(
    cluster: Cluster, method: str, path: str, body: bytes, *, content_type: str, query: list[tuple[str, str]]
) -> tuple[int, dict[str, object]]:
    config = cluster.api.configuration
    url = urlsplit(config.host)
    context = ssl.create_default_context(cafile=config.ssl_ca_cert)
    if config.cert_file:
        context.load_cert_chain(config.cert_file, config.key_file)
    headers = {
        "Host": url.netloc,
        "Accept": "application/json",
        "Content-Type": content_type,
        "Content-Length": str(len(body)),
        "Connection": "close",
    }
    cluster.api.update_params_for_auth(headers, [], ["BearerToken"], path, method, None)
    head = f"{method} {path}?{urlencode(query)} HTTP/1.1\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    half = len(body) // 2
    assert url.hostname is not None and url.port is not None
    with (
        socket.create_connection((url.hostname, url.port), timeout=30) as raw,
        context.wrap_socket(raw, server_hostname=url.hostname) as tls,
    ):
        tls.sendall(head.encode() + body[:half])
        tls.settimeout(PAUSE_SECONDS)
        try:
            early = tls.recv(4096)
        except TimeoutError:
            early = b""
        assert not early, f"the server answered on half a body: {early[:600]!r}"
        tls.settimeout(30)
        tls.sendall(body[half:])
        response = http.client.HTTPResponse(tls)
        response.begin()
        return response.status, json.loads(response.read())


def test_json_body_in_two_pieces_is_read_whole(cluster: Cluster, namespace: str) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "halves"}, "data": VALUES}
    status, created = _send_in_two_halves(
        cluster,
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        json.dumps(obj).encode(),
        content_type="application/json",
        query=[("dryRun", "All")],
    )
    assert status == 201, created
    assert created["data"] == VALUES


def test_apply_yaml_body_in_two_pieces_is_applied_whole(cluster: Cluster, namespace: str) -> None:
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: halves", "data:"]
    lines += [f"  {key}: {value}" for key, value in VALUES.items()]
    status, applied = _send_in_two_halves(
        cluster,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/halves",
        "\n".join(lines).encode() + b"\n",
        content_type="application/apply-patch+yaml",
        query=[("fieldManager", "halves")],
    )
    assert status == 201, applied
    assert applied["data"] == VALUES
