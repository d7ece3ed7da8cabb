"""The provider block: `provider "liqo" { kubernetes = { ... } }`, as the hashicorp/kubernetes provider
reads its own, turned into the one loader's arguments (`runtime.core.load_kubeconfig`).

Attribute names, environment variables and meanings are hashicorp/kubernetes' (so the
Liqo guide's `kubernetes = { config_path = ... }` and existing `KUBE_*` setups work):

- each attribute left null falls back to its `KUBE_*` variable;
- kubeconfig files: `config_path`, else `config_paths` (merged like `KUBECONFIG`), else
  `KUBE_CONFIG_PATH`, else `KUBE_CONFIG_PATHS` (explicit attributes before the
  environment, where hashicorp/kubernetes lets `KUBE_CONFIG_PATH` beat `config_paths`);
- the static attributes (host, credentials, CA, insecure, proxy) override the file;
  with no file, `host` and credentials alone are the configuration;
- with neither a file nor a host, Terraform running in a pod (`KUBERNETES_SERVICE_HOST`
  and `_PORT` set) uses the pod's ServiceAccount (`runtime.core.load_incluster_config`),
  as hashicorp/kubernetes and hashicorp/helm do; anywhere else it is an error on
  `kubernetes.config_path`. Like them, no kubeconfig is read implicitly: a provider
  block left empty never lands on whatever cluster kubectl's current context names
  (`KUBECONFIG` and `~/.kube/config` are read only when a path names them).

`check` runs at validate time on the raw config (no file I/O, no heavy imports);
`load` runs at configure time and reports every problem as a diagnostic on the
`kubernetes.<attribute>` it belongs to. Values unknown at plan time are not checked:
the caller defers the cluster until they are known.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tf.types import Bool, List, Map, String, Unknown
from tf.utils import Diagnostics

from .framework.plan import is_known, unknown_paths
from .framework.schema import Attribute, NestedAttribute

if TYPE_CHECKING:
    from runtime.core import ClusterConfig, ConfigOverrides

KUBERNETES: Final = "kubernetes"
EXEC: Final = "exec"

#: exec credential API versions client-go speaks
EXEC_API_VERSIONS: Final = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")

#: attribute -> the environment variable it falls back to (hashicorp/kubernetes' names)
ENVIRONMENT: Final = {
    "config_path": "KUBE_CONFIG_PATH",
    "config_paths": "KUBE_CONFIG_PATHS",
    "config_context": "KUBE_CTX",
    "config_context_cluster": "KUBE_CTX_CLUSTER",
    "config_context_auth_info": "KUBE_CTX_AUTH_INFO",
    "host": "KUBE_HOST",
    "username": "KUBE_USER",
    "password": "KUBE_PASSWORD",
    "token": "KUBE_TOKEN",
    "client_certificate": "KUBE_CLIENT_CERT_DATA",
    "client_key": "KUBE_CLIENT_KEY_DATA",
    "cluster_ca_certificate": "KUBE_CLUSTER_CA_CERT_DATA",
    "insecure": "KUBE_INSECURE",
    "proxy_url": "KUBE_PROXY_URL",
    "tls_server_name": "KUBE_TLS_SERVER_NAME",
}

_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def _string(name: str, description: str, *, sensitive: bool = False) -> Attribute:
    variable = ENVIRONMENT.get(name)
    if variable:
        description = f"{description} Can be set with `{variable}`."
    return Attribute(name, String(), optional=True, sensitive=sensitive, description=description)


#: the `kubernetes` attribute a `KubeconfigError` belongs to, by its `KubeconfigField` (a StrEnum: its
#: values key this map, so runtime.core stays unimported until configure needs it)
ATTRIBUTE_OF_FIELD: Final[Mapping[str, str]] = {
    "kubeconfig": "config_path",
    "context": "config_context",
    "cluster": "config_context_cluster",
    "user": "config_context_auth_info",
    "server": "host",
    "certificate-authority": "cluster_ca_certificate",
    "insecure-skip-tls-verify": "insecure",
    "client-certificate": "client_certificate",
    "client-key": "client_key",
    "token": "token",
    "username": "username",
    "exec": "exec",
    "proxy-url": "proxy_url",
}

KUBERNETES_ATTRIBUTE: Final = NestedAttribute(
    KUBERNETES,
    [
        _string(
            "config_path",
            "Path to a kubeconfig file (`~/.kube/config` is read only when named). Without any path or "
            "`host`, Terraform running in a pod uses its ServiceAccount; anywhere else that is an error.",
        ),
        Attribute(
            "config_paths",
            List(String()),
            optional=True,
            description=(
                "Kubeconfig files merged like a `KUBECONFIG` list (the first file that defines a name wins). "
                "Conflicts with `config_path`. Can be set with `KUBE_CONFIG_PATHS` "
                "(paths separated by `:`)."
            ),
        ),
        _string("config_context", "Context of the kubeconfig to use instead of its current-context."),
        _string("config_context_cluster", "Cluster of the kubeconfig to use instead of the context's."),
        _string("config_context_auth_info", "User of the kubeconfig to use instead of the context's."),
        _string(
            "host",
            "Address of the Kubernetes API server (`https://host:port`); overrides the kubeconfig's. "
            "With no kubeconfig path, `host` and the credentials below are the whole configuration.",
        ),
        _string("username", "Username for HTTP basic authentication."),
        _string("password", "Password for HTTP basic authentication.", sensitive=True),
        _string("token", "Bearer token to authenticate with.", sensitive=True),
        _string("client_certificate", "PEM-encoded client certificate for TLS authentication."),
        _string("client_key", "PEM-encoded private key of `client_certificate`.", sensitive=True),
        _string(
            "cluster_ca_certificate", "PEM-encoded CA bundle to verify the API server's certificate with."
        ),
        Attribute(
            "insecure",
            Bool(),
            optional=True,
            description=(
                "Skip verifying the API server's certificate (never together with `cluster_ca_certificate`). "
                "Can be set with `KUBE_INSECURE`."
            ),
        ),
        _string(
            "tls_server_name", "Name to verify the API server's certificate against, instead of the host."
        ),
        _string("proxy_url", "URL of the proxy to reach the API server through (http, https)."),
        NestedAttribute(
            EXEC,
            [
                Attribute(
                    "api_version",
                    String(),
                    required=True,
                    description=f"ExecCredential API version: one of {', '.join(EXEC_API_VERSIONS)}.",
                ),
                Attribute(
                    "command", String(), required=True, description="Command that prints an ExecCredential."
                ),
                Attribute("args", List(String()), optional=True, description="Arguments of the command."),
                Attribute(
                    "env",
                    Map(String()),
                    optional=True,
                    description="Environment variables to add for the command.",
                ),
            ],
            optional=True,
            description="An exec credential plugin (as in kubeconfig `users[].user.exec`) that supplies a token.",
        ),
    ],
    optional=True,
    description=(
        "How to reach the Kubernetes cluster this provider instance manages: attributes and environment "
        "variables of the hashicorp/kubernetes provider. Omitted (no path, no host): the pod's ServiceAccount "
        "when Terraform runs in a pod, else an error; the current kubectl context is never used implicitly."
    ),
)


class SettingError(ValueError):
    """A provider setting (attribute or environment variable) that cannot be used; `attribute` names it."""

    def __init__(self, message: str, *, attribute: str) -> None:
        super().__init__(message)
        self.attribute = attribute


@dataclass(frozen=True)
class Settings:
    """The `kubernetes` block after environment defaults, as `load_kubeconfig` takes it."""

    paths: tuple[str, ...] = ()
    context: str | None = None
    cluster: str | None = None
    user: str | None = None
    #: ConfigOverrides fields (host, token, ...) and the exec plugin's fields
    overrides: Mapping[str, Any] = field(default_factory=dict)
    exec: Mapping[str, Any] | None = None
    #: attribute -> environment variable, for the values that came from the environment
    from_environment: Mapping[str, str] = field(default_factory=dict)


def block(config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The `kubernetes` object of a provider config ({} when absent)."""
    value = (config or {}).get(KUBERNETES)
    return value if isinstance(value, Mapping) else {}


def unknown_attributes(config: Mapping[str, Any] | None) -> list[str]:
    """Dotted paths of the provider settings not known yet (values from resources still to be created)."""
    value = (config or {}).get(KUBERNETES)
    if value is Unknown:
        return [KUBERNETES]
    return [] if is_known(value) else unknown_paths(value, (KUBERNETES,))


def check(diagnostics: Diagnostics, config: Mapping[str, Any] | None) -> None:
    """Validate-time checks that need neither files nor the environment; unknown values are skipped."""
    values = block(config)
    if _set(values.get("config_path")) and _set(values.get("config_paths")):
        diagnostics.add_error(
            "Conflicting kubeconfig paths",
            "Set either config_path (one file) or config_paths (several files merged), not both.",
            path=[KUBERNETES, "config_paths"],
        )
    if _set(values.get("insecure")) and values.get("insecure") and _set(values.get("cluster_ca_certificate")):
        diagnostics.add_error(
            "Conflicting TLS settings",
            "insecure = true skips verifying the API server, so a cluster_ca_certificate would be ignored; "
            "keep the certificate (the safe choice) and drop insecure.",
            path=[KUBERNETES, "insecure"],
        )
    for first, second in (("client_certificate", "client_key"), ("client_key", "client_certificate")):
        if _set(values.get(first)) and values.get(second) is None:
            diagnostics.add_error(
                f"Missing {second}",
                f"{first} is set without {second}: TLS client authentication needs both.",
                path=[KUBERNETES, second],
            )
    exec_block = values.get(EXEC)
    if isinstance(exec_block, Mapping):
        api_version = exec_block.get("api_version")
        if _set(api_version) and api_version not in EXEC_API_VERSIONS:
            diagnostics.add_error(
                "Unsupported exec API version",
                f'"{api_version}" is not one of {", ".join(EXEC_API_VERSIONS)}.',
                path=[KUBERNETES, EXEC, "api_version"],
            )


def settings(config: Mapping[str, Any] | None, environ: Mapping[str, str]) -> Settings:
    """The effective settings: attributes, else their `KUBE_*` variables (SettingError on a bad variable)."""
    values = block(config)
    from_environment: dict[str, str] = {}

    def pick(name: str) -> Any:
        value = values.get(name)
        if value is not None:
            return value
        variable = ENVIRONMENT[name]
        text = environ.get(variable, "")
        if text == "":
            return None
        from_environment[name] = variable
        return text

    paths: tuple[str, ...] = ()
    if values.get("config_path"):
        paths = (str(values["config_path"]),)
    elif values.get("config_paths"):
        paths = tuple(str(p) for p in values["config_paths"])
    elif environ.get(ENVIRONMENT["config_path"]):
        paths = (environ[ENVIRONMENT["config_path"]],)
        from_environment["config_path"] = ENVIRONMENT["config_path"]
    elif environ.get(ENVIRONMENT["config_paths"]):
        paths = tuple(p for p in environ[ENVIRONMENT["config_paths"]].split(os.pathsep) if p)
        from_environment["config_paths"] = ENVIRONMENT["config_paths"]

    insecure = pick("insecure")
    if isinstance(insecure, str):
        if insecure not in _TRUE | _FALSE:
            raise SettingError(
                f'{ENVIRONMENT["insecure"]}="{insecure}" is not a boolean; use true or false',
                attribute="insecure",
            )
        insecure = insecure in _TRUE
    overrides = {
        name: pick(name)
        for name in (
            "host",
            "username",
            "password",
            "token",
            "client_certificate",
            "client_key",
            "cluster_ca_certificate",
            "tls_server_name",
            "proxy_url",
        )
    }
    overrides["insecure"] = insecure
    exec_block = values.get(EXEC)
    return Settings(
        paths=paths,
        context=pick("config_context"),
        cluster=pick("config_context_cluster"),
        user=pick("config_context_auth_info"),
        overrides={name: value for name, value in overrides.items() if value is not None},
        exec=dict(exec_block) if isinstance(exec_block, Mapping) else None,
        from_environment=from_environment,
    )


#: the variables of a pod's service environment: Terraform runs in a pod when both are set
IN_CLUSTER_ENVIRONMENT: Final = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


def load(
    diagnostics: Diagnostics,
    config: Mapping[str, Any] | None,
    environ: Mapping[str, str],
    *,
    service_account_dir: Path | None = None,
) -> ClusterConfig | None:
    """The cluster configuration, or None with an error on the offending `kubernetes.<attribute>`.

    With neither a kubeconfig path nor a host: the pod's ServiceAccount (from
    `service_account_dir`, the standard mount by default) when Terraform runs in a pod,
    else an error on `kubernetes.config_path`.
    """
    from runtime.core import ConfigOverrides, KubeconfigError, load_incluster_config, load_kubeconfig

    try:
        effective = settings(config, environ)
    except SettingError as exc:
        _report(diagnostics, exc.attribute, str(exc))
        return None
    if not effective.paths and "host" not in effective.overrides:
        if not all(environ.get(name) for name in IN_CLUSTER_ENVIRONMENT):
            _report(diagnostics, "config_path", NO_CLUSTER, summary="No cluster configured")
            return None
        if effective.overrides or effective.exec is not None:
            _report(diagnostics, "host", IN_CLUSTER_OVERRIDES)
            return None
        try:
            if service_account_dir is None:
                return load_incluster_config(environ=environ)
            return load_incluster_config(service_account_dir=service_account_dir, environ=environ)
        except KubeconfigError as exc:
            _report(
                diagnostics,
                "config_path",
                f"Terraform runs in a pod (KUBERNETES_SERVICE_HOST is set) and no kubeconfig path or host is "
                f"set, so the pod's ServiceAccount is used, but {exc}",
            )
            return None
    try:
        return load_kubeconfig(
            list(effective.paths) or None,
            context=effective.context,
            cluster=effective.cluster,
            user=effective.user,
            overrides=_overrides(effective, ConfigOverrides),
        )
    except KubeconfigError as exc:
        attribute = ATTRIBUTE_OF_FIELD[exc.field] if exc.field else ""
        if attribute == "config_path" and "config_paths" in block(config) and block(config)["config_paths"]:
            attribute = "config_paths"
        detail = str(exc)
        variable = effective.from_environment.get(attribute)
        if variable:
            detail += f" (the value comes from the environment variable {variable})"
        _report(diagnostics, attribute, detail)
        return None


NO_CLUSTER: Final = (
    "No cluster to manage: the provider sets no kubeconfig (config_path, config_paths, or the environment "
    "variables KUBE_CONFIG_PATH, KUBE_CONFIG_PATHS) and no host, and Terraform does not run in a pod. As the "
    "hashicorp/kubernetes and helm providers, this provider never falls back to the current kubectl context "
    '(which may name another cluster than you think): set kubernetes = { config_path = "~/.kube/config" } '
    "(with config_context to choose a context) in the provider block, or export KUBE_CONFIG_PATH."
)
IN_CLUSTER_OVERRIDES: Final = (
    "Credentials or TLS settings are set without a host or kubeconfig to use them with. Set host (or "
    "config_path) too; in a pod, leave them all unset to use the pod's ServiceAccount."
)


def _report(diagnostics: Diagnostics, attribute: str, detail: str, *, summary: str = "") -> None:
    path: list[str | tuple[str | int]] | None = None
    if attribute in KUBERNETES_ATTRIBUTE.object.by_name:
        path = [KUBERNETES, attribute]
    if not summary:
        summary = f"Invalid provider setting kubernetes.{attribute}" if attribute else "Invalid kubeconfig"
    diagnostics.add_error(summary, detail, path=path)


def _overrides(effective: Settings, factory: type[ConfigOverrides]) -> ConfigOverrides:
    from runtime.core import ExecConfig

    exec_config = None
    if effective.exec is not None:
        exec_config = ExecConfig(
            command=str(effective.exec["command"]),
            api_version=str(effective.exec["api_version"]),
            args=tuple(str(a) for a in effective.exec.get("args") or ()),
            env=tuple((str(k), str(v)) for k, v in sorted((effective.exec.get("env") or {}).items())),
        )
    return factory(**effective.overrides, exec=exec_config)


def _set(value: Any) -> bool:
    return value is not None and value is not Unknown
