"""What a client needs to reach one cluster, and the settings that override a kubeconfig.

`ClusterConfig` is the one value every loader produces (kubeconfig files, a pod's
ServiceAccount files, a Terraform provider's attributes) and `Client.from_config`
consumes, so the runtime, the playground and the provider share one loader. It holds
credentials, so its `repr` (and `str`) show only which secrets are set, never their
values: a config can be logged or shown in a test failure without leaking a key,
token or password.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

ExecInteractiveMode = Literal["Never", "IfAvailable", "Always"]

#: the ExecCredential versions client-go still speaks (v1alpha1 is gone)
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")

_SECRET_FIELDS = frozenset({"client_key", "token", "password"})


@dataclass(frozen=True, repr=False)
class ExecConfig:
    """An exec credential plugin (`users[].user.exec`, or the provider's `exec {}` block)."""

    command: str
    api_version: str = "client.authentication.k8s.io/v1"
    args: tuple[str, ...] = ()
    #: extra environment for the plugin, in order (values may be secrets: never shown)
    env: tuple[tuple[str, str], ...] = ()
    interactive_mode: ExecInteractiveMode = "IfAvailable"
    #: pass the cluster (server, CA, ...) to the plugin in KUBERNETES_EXEC_INFO
    provide_cluster_info: bool = False
    #: shown when the command cannot be found
    install_hint: str = ""
    #: the cluster's `client.authentication.k8s.io/exec` extension (spec.cluster.config)
    cluster_extension: Mapping[str, Any] | None = None

    def __repr__(self) -> str:
        env = ", ".join(name for name, _ in self.env)
        return (
            f"ExecConfig(command={self.command!r}, api_version={self.api_version!r}, args={self.args!r}, "
            f"env=[{env}], interactive_mode={self.interactive_mode!r}, "
            f"provide_cluster_info={self.provide_cluster_info})"
        )


@dataclass(frozen=True, repr=False)
class ClusterConfig:
    """Everything needed to reach one cluster as one user; certificates and keys are PEM bytes."""

    server: str
    #: PEM bundle of the CAs to trust; None: the system's roots (unless insecure)
    certificate_authority: bytes | None = None
    insecure_skip_tls_verify: bool = False
    #: the name to verify the server's certificate against (and send as SNI) instead of the URL's host
    tls_server_name: str | None = None
    client_certificate: bytes | None = None
    client_key: bytes | None = None
    token: str | None = None
    #: re-read while the client runs (bound ServiceAccount tokens rotate); wins over `token`
    token_file: Path | None = None
    username: str | None = None
    password: str | None = None
    exec: ExecConfig | None = None
    #: an http(s) proxy for every request (else the environment's HTTPS_PROXY/NO_PROXY apply)
    proxy_url: str | None = None
    #: the context's namespace ("default" when it names none)
    namespace: str = "default"
    context_name: str | None = None
    cluster_name: str | None = None
    user_name: str | None = None
    #: where the config came from, for messages: kubeconfig paths, "in-cluster ...", "provider attributes"
    source: str = ""

    def __repr__(self) -> str:
        return f"ClusterConfig({_redacted(self)})"

    @property
    def user_label(self) -> str:
        """How messages name the credentials: "user 'u' in /path" (or the source alone)."""
        if self.user_name:
            return f"user '{self.user_name}' in {self.source}"
        return self.source or "the cluster config"

    @property
    def cluster_label(self) -> str:
        """How messages name the cluster: "the cluster of context 'c' (https://...)", else by its server URL."""
        if self.context_name:
            return f"the cluster of context '{self.context_name}' ({self.server})"
        return f"the cluster at {self.server}"

    @property
    def credentials_label(self) -> str:
        """Whose credentials these are, and of which kind: "user 'u' in /path, client certificate CN=admin", or
        without a user name, "a bearer token from the given attributes"."""
        kinds = []
        if self.client_certificate:
            kinds.append(_certificate_subject(self.client_certificate))
        if self.token_file is not None:
            kinds.append(f"the token in {self.token_file}")
        elif self.token:
            kinds.append("a bearer token")
        if self.exec is not None:
            kinds.append(f"the exec plugin {self.exec.command}")
        if self.username:
            kinds.append(f"basic auth as {self.username}")
        if self.user_name:
            return ", ".join([self.user_label, *kinds])
        return f"{' and '.join(kinds) or 'no credentials'} from {self.source or 'the cluster config'}"


@dataclass(frozen=True, repr=False)
class ConfigOverrides:
    """Explicit attributes that win over a kubeconfig (hashicorp/kubernetes provider's `kubernetes {}`).

    PEM fields are text as users paste them. `insecure` None means "not set". Setting any
    of `token`, `username`/`password` or `exec` replaces all of the kubeconfig user's
    token, token file, basic auth and exec plugin (one bearer source, not a mix);
    `client_certificate`/`client_key` replace the kubeconfig's one by one.
    """

    host: str | None = None
    username: str | None = None
    password: str | None = None
    token: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None
    cluster_ca_certificate: str | None = None
    insecure: bool | None = None
    tls_server_name: str | None = None
    proxy_url: str | None = None
    exec: ExecConfig | None = None

    def __repr__(self) -> str:
        return f"ConfigOverrides({_redacted(self)})"

    @property
    def sets_bearer(self) -> bool:
        """Whether these attributes bring their own token, basic auth or exec plugin."""
        return bool(self.token or self.username or self.password or self.exec)


def _certificate_subject(pem: bytes) -> str:
    """ "client certificate CN=..., O=..." (the user and groups the API server sees), from its PEM."""
    from cryptography import x509

    try:
        subject = x509.load_pem_x509_certificate(pem).subject.rfc4514_string()
    except ValueError:
        return "a client certificate"
    return f"client certificate {subject}"


def _redacted(obj: ClusterConfig | ConfigOverrides) -> str:
    shown = []
    for spec in fields(obj):
        value = getattr(obj, spec.name)
        if value is None or value == spec.default:
            continue
        if spec.name in _SECRET_FIELDS:
            shown.append(f"{spec.name}=<redacted>")
        elif isinstance(value, bytes):
            shown.append(f"{spec.name}=<{len(value)} bytes>")
        elif isinstance(value, str) and "-----BEGIN" in value:
            shown.append(f"{spec.name}=<PEM, {len(value)} chars>")
        else:
            shown.append(f"{spec.name}={value!r}")
    return ", ".join(shown)
