"""Kubeconfig files for the emulated cluster, with every credential inlined.

kubectl, the `kubernetes` Python client and `kubernetes_asyncio` all read the same
`clientcmd` v1 format; inlining the CA, the client certificate and key as base64
`*-data` fields keeps one file self-contained. The file holds credentials, so it is
written owner-only (0600) and atomically: a reader never sees a half-written file.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from .pki import write_file_atomically


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _user_entry(
    *, client_cert_pem: bytes | None, client_key_pem: bytes | None, token: str | None
) -> dict[str, str]:
    if (client_cert_pem is None) != (client_key_pem is None):
        raise ValueError("a client certificate and its key go together")
    entry: dict[str, str] = {}
    if client_cert_pem is not None and client_key_pem is not None:
        entry["client-certificate-data"] = _b64(client_cert_pem)
        entry["client-key-data"] = _b64(client_key_pem)
    if token is not None:
        entry["token"] = token
    return entry


def kubeconfig(
    *,
    server: str,
    ca_pem: bytes,
    cluster: str,
    user: str,
    client_cert_pem: bytes | None = None,
    client_key_pem: bytes | None = None,
    token: str | None = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    """A one-cluster, one-user kubeconfig whose current context is `<user>@<cluster>`."""
    context_name = f"{user}@{cluster}"
    context: dict[str, str] = {"cluster": cluster, "user": user}
    if namespace:
        context["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [
            {"name": cluster, "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}
        ],
        "users": [
            {
                "name": user,
                "user": _user_entry(
                    client_cert_pem=client_cert_pem, client_key_pem=client_key_pem, token=token
                ),
            }
        ],
        "contexts": [{"name": context_name, "context": context}],
        "current-context": context_name,
    }


def write_kubeconfig(path: Path, config: dict[str, Any]) -> None:
    """Write `config` as YAML to `path`, mode 0600, replacing any previous file atomically."""
    text = yaml.safe_dump(config, default_flow_style=False, sort_keys=False)
    write_file_atomically(Path(path), text.encode("utf-8"))
