"""Kubeconfig files (plus explicit overrides) to a `ClusterConfig`, by kubectl's rules.

The rules are client-go clientcmd's, so a file means here what it means to kubectl:
- several files merge like a `KUBECONFIG` list: per cluster, user and context name the
  first file that defines it wins, and so does the first file that sets current-context;
- with no path, `KUBECONFIG` is read (files that do not exist are skipped, as kubectl
  does), else `~/.kube/config`;
- relative paths inside a file (certificate-authority, client-certificate, client-key,
  tokenFile, an exec command with a slash) resolve against that file's directory;
- `*-data` fields win over their file-path twins; a context names a cluster and a user,
  and the cluster and user names can be overridden (the Terraform provider's
  `config_context_cluster` / `config_context_auth_info`).

`ConfigOverrides` are explicit attributes (the provider's `kubernetes {}` block): they
win over what the file says, and with no path at all and a host, they are the whole
config. Loading is synchronous and cheap (a few small files) so the provider can call
it at plan time; async callers run it in a thread. Everything wrong is reported as a
`KubeconfigError` naming the file, the context/cluster/user and what to do.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import yaml

from ..errors import KubeconfigError, KubeconfigField
from .config import EXEC_API_VERSIONS, ClusterConfig, ConfigOverrides, ExecConfig, ExecInteractiveMode
from .pem import PEMError, check_certificates, check_private_key

logger = logging.getLogger(__name__)

StrPath = str | os.PathLike[str]

DEFAULT_KUBECONFIG = Path("~/.kube/config")
#: the cluster extension client-go hands to exec plugins as spec.cluster.config
EXEC_EXTENSION = "client.authentication.k8s.io/exec"
_INTERACTIVE_MODES: tuple[ExecInteractiveMode, ...] = ("Never", "IfAvailable", "Always")
_ATTRIBUTES_SOURCE = "the given attributes"


def default_kubeconfig_paths() -> list[Path]:
    """kubectl's default: the files of `KUBECONFIG` that exist, else `~/.kube/config`."""
    value = os.environ.get("KUBECONFIG", "")
    if not value:
        return [DEFAULT_KUBECONFIG.expanduser()]
    listed = [Path(item).expanduser() for item in value.split(os.pathsep) if item]
    existing = list(dict.fromkeys(path for path in listed if path.exists()))
    if not existing:
        raise KubeconfigError(
            f"none of the files in KUBECONFIG ({value}) exists; fix KUBECONFIG or give a path",
            field=KubeconfigField.KUBECONFIG,
        )
    return existing


def load_kubeconfig(
    paths: StrPath | Sequence[StrPath] | None = None,
    *,
    context: str | None = None,
    cluster: str | None = None,
    user: str | None = None,
    overrides: ConfigOverrides | None = None,
) -> ClusterConfig:
    """The config of `context` (else current-context) in the merged files, with `overrides` applied.

    `paths` is one path or a list merged like `KUBECONFIG`; `~` is expanded. With no
    path, `overrides.host` alone makes a config from the overrides; otherwise the
    default files are read.
    """
    overrides = overrides or ConfigOverrides()
    listed: Sequence[StrPath] = [paths] if isinstance(paths, str | os.PathLike) else paths or ()
    files = [Path(path).expanduser() for path in listed]
    if not files:
        if overrides.host:
            return _resolve(_Merged([]), context=None, cluster=None, user=None, overrides=overrides)
        files = default_kubeconfig_paths()
    merged = _Merged([])
    for path in files:
        merged.add(_read_file(path), origin=str(path), base=path.parent)
    return _resolve(merged, context=context, cluster=cluster, user=user, overrides=overrides)


def load_kubeconfig_dict(
    config: Mapping[str, Any],
    *,
    base_path: StrPath | None = None,
    context: str | None = None,
    cluster: str | None = None,
    user: str | None = None,
    overrides: ConfigOverrides | None = None,
) -> ClusterConfig:
    """Like `load_kubeconfig` for an already parsed kubeconfig; relative paths resolve against `base_path`."""
    base = Path(base_path).expanduser() if base_path is not None else Path()
    merged = _Merged([])
    merged.add(config, origin="in-memory kubeconfig", base=base)
    return _resolve(
        merged, context=context, cluster=cluster, user=user, overrides=overrides or ConfigOverrides()
    )


# files and merging


def _read_file(path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KubeconfigError(
            f"kubeconfig {path}: no such file; check the path", field=KubeconfigField.KUBECONFIG
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise KubeconfigError(
            f"kubeconfig {path}: cannot read it ({reason})", field=KubeconfigField.KUBECONFIG
        ) from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise KubeconfigError(
            f"kubeconfig {path}: invalid YAML{at}: {problem}; fix the file", field=KubeconfigField.KUBECONFIG
        ) from None
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise KubeconfigError(
            f"kubeconfig {path}: not a kubeconfig (its top level is a {type(doc).__name__}, "
            "expected a mapping with clusters, contexts and users)",
            field=KubeconfigField.KUBECONFIG,
        )
    return doc


@dataclass(frozen=True)
class _Entry:
    """One named cluster, user or context, and the file it came from."""

    name: str
    body: Mapping[str, Any]
    origin: str
    base: Path

    def label(self, kind: str) -> str:
        return f"{kind} '{self.name}' in {self.origin}"


@dataclass
class _Merged:
    origins: list[str]
    current_context: str | None = None
    clusters: dict[str, _Entry] = dataclasses.field(default_factory=dict)
    users: dict[str, _Entry] = dataclasses.field(default_factory=dict)
    contexts: dict[str, _Entry] = dataclasses.field(default_factory=dict)

    @property
    def where(self) -> str:
        return ", ".join(self.origins) or _ATTRIBUTES_SOURCE

    def add(self, doc: Mapping[str, Any], *, origin: str, base: Path) -> None:
        """Merge one file: names already defined and a current-context already set are kept."""
        self.origins.append(origin)
        if self.current_context is None:
            self.current_context = _opt_str(doc, "current-context", f"kubeconfig {origin}") or None
        for section, key, target in (
            ("clusters", "cluster", self.clusters),
            ("users", "user", self.users),
            ("contexts", "context", self.contexts),
        ):
            items = doc.get(section) or []
            if not isinstance(items, list):
                raise KubeconfigError(
                    f"kubeconfig {origin}: {section} must be a list", field=KubeconfigField.KUBECONFIG
                )
            seen: set[str] = set()
            for index, item in enumerate(items):
                name = item.get("name") if isinstance(item, Mapping) else None
                if not isinstance(name, str) or not name:
                    raise KubeconfigError(
                        f"kubeconfig {origin}: {section}[{index}] has no name",
                        field=KubeconfigField.KUBECONFIG,
                    )
                if name in seen:
                    raise KubeconfigError(
                        f"kubeconfig {origin}: {key} '{name}' is listed twice; keep one",
                        field=KubeconfigField.KUBECONFIG,
                    )
                seen.add(name)
                body = item.get(key) or {}
                if not isinstance(body, Mapping):
                    raise KubeconfigError(
                        f"kubeconfig {origin}: {key} '{name}' must be a mapping",
                        field=KubeconfigField.KUBECONFIG,
                    )
                target.setdefault(name, _Entry(name, body, origin, base))


# one context's cluster and user


@dataclass(frozen=True)
class _ClusterPart:
    label: str
    server: str | None = None
    certificate_authority: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    exec_extension: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class _UserPart:
    label: str
    client_certificate: bytes | None = None
    client_key: bytes | None = None
    token: str | None = None
    token_file: Path | None = None
    username: str | None = None
    password: str | None = None
    exec: ExecConfig | None = None


def _resolve(
    merged: _Merged,
    *,
    context: str | None,
    cluster: str | None,
    user: str | None,
    overrides: ConfigOverrides,
) -> ClusterConfig:
    where = merged.where
    context_name = context or merged.current_context
    context_body: Mapping[str, Any] = {}
    if context_name:
        entry = merged.contexts.get(context_name)
        if entry is None:
            raise KubeconfigError(
                f"context '{context_name}' not found in {where}; available: {_names(merged.contexts)}",
                field=KubeconfigField.CONTEXT,
            )
        context_body = entry.body
    elif merged.origins and not overrides.host and not cluster:
        raise KubeconfigError(
            f"no current-context in {where} and no context given; choose one of: {_names(merged.contexts)}",
            field=KubeconfigField.CONTEXT,
        )
    context_label = f"context '{context_name}' in {where}" if context_name else where
    cluster_name = cluster or _opt_str(context_body, "cluster", context_label) or None
    user_name = user or _opt_str(context_body, "user", context_label) or None
    namespace = _opt_str(context_body, "namespace", context_label) or "default"

    cluster_part = _ClusterPart(label=context_label)
    if cluster_name:
        cluster_entry = merged.clusters.get(cluster_name)
        if cluster_entry is None:
            raise KubeconfigError(
                f"cluster '{cluster_name}' of {context_label} not found; available: {_names(merged.clusters)}",
                field=KubeconfigField.CLUSTER if cluster else KubeconfigField.CONTEXT,
            )
        cluster_part = _cluster(cluster_entry)
    user_part = _UserPart(label=context_label)
    if user_name:
        user_entry = merged.users.get(user_name)
        if user_entry is None:
            raise KubeconfigError(
                f"user '{user_name}' of {context_label} not found; available: {_names(merged.users)}",
                field=KubeconfigField.USER if user else KubeconfigField.CONTEXT,
            )
        user_part = _user(user_entry)

    return _with_overrides(
        cluster_part,
        user_part,
        overrides,
        namespace=namespace,
        context_name=context_name,
        cluster_name=cluster_name,
        user_name=user_name,
        source=where,
    )


def _cluster(entry: _Entry) -> _ClusterPart:
    body, label = entry.body, entry.label("cluster")
    ca = _bytes(
        body, "certificate-authority", entry, label=label, field=KubeconfigField.CERTIFICATE_AUTHORITY
    )
    if ca is not None:
        _check_pem(
            ca, check_certificates, f"certificate-authority of {label}", KubeconfigField.CERTIFICATE_AUTHORITY
        )
    server = _opt_str(body, "server", label)
    return _ClusterPart(
        label=label,
        server=server or None,
        certificate_authority=ca,
        insecure=_opt_bool(body, "insecure-skip-tls-verify", label),
        tls_server_name=_opt_str(body, "tls-server-name", label) or None,
        proxy_url=_opt_str(body, "proxy-url", label) or None,
        exec_extension=_exec_extension(body, label),
    )


def _user(entry: _Entry) -> _UserPart:
    body, label = entry.body, entry.label("user")
    if body.get("auth-provider"):
        provider = body["auth-provider"].get("name") if isinstance(body["auth-provider"], Mapping) else None
        raise KubeconfigError(
            f"{label} uses auth-provider '{provider}', which is not supported; "
            "switch to an exec plugin (kubelogin for OIDC, gke-gcloud-auth-plugin for GKE)",
            field=KubeconfigField.USER,
        )
    impersonation = [key for key in ("as", "as-uid", "as-groups", "as-user-extra") if body.get(key)]
    if impersonation:
        raise KubeconfigError(
            f"{label} impersonates ({', '.join(impersonation)}), which is not supported; "
            "use credentials of the identity itself",
            field=KubeconfigField.USER,
        )
    cert = _bytes(body, "client-certificate", entry, label=label, field=KubeconfigField.CLIENT_CERTIFICATE)
    if cert is not None:
        _check_pem(
            cert, check_certificates, f"client-certificate of {label}", KubeconfigField.CLIENT_CERTIFICATE
        )
    key = _bytes(body, "client-key", entry, label=label, field=KubeconfigField.CLIENT_KEY)
    if key is not None:
        _check_pem(key, check_private_key, f"client-key of {label}", KubeconfigField.CLIENT_KEY)
    token_file = None
    token_file_value = _opt_str(body, "tokenFile", label)
    if token_file_value:
        token_file = _local_path(token_file_value, entry.base)
        _check_readable(token_file, f"tokenFile {token_file} of {label}", field=KubeconfigField.TOKEN)
    exec_body = body.get("exec")
    return _UserPart(
        label=label,
        client_certificate=cert,
        client_key=key,
        token=_opt_str(body, "token", label) or None,
        token_file=token_file,
        username=_opt_str(body, "username", label) or None,
        password=_opt_str(body, "password", label) or None,
        exec=_exec(exec_body, entry) if exec_body else None,
    )


def _exec(body: Any, entry: _Entry) -> ExecConfig:
    where = f"exec plugin of {entry.label('user')}"
    if not isinstance(body, Mapping):
        raise KubeconfigError(f"{where}: exec must be a mapping", field=KubeconfigField.EXEC)
    api_version = _opt_str(body, "apiVersion", where)
    command = _opt_str(body, "command", where)
    if not command:
        raise KubeconfigError(f"{where}: no command; set exec.command", field=KubeconfigField.EXEC)
    if os.sep in command or "/" in command:
        command = str(_local_path(command, entry.base))
    args = body.get("args") or []
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise KubeconfigError(f"{where}: args must be a list of strings", field=KubeconfigField.EXEC)
    env_items = body.get("env") or []
    if not isinstance(env_items, list):
        raise KubeconfigError(f"{where}: env must be a list of name/value pairs", field=KubeconfigField.EXEC)
    env: list[tuple[str, str]] = []
    for index, item in enumerate(env_items):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise KubeconfigError(
                f"{where}: env[{index}] must have a name and a value", field=KubeconfigField.EXEC
            )
        env.append((item["name"], str(item.get("value") or "")))
    mode = body.get("interactiveMode")
    if mode is None and api_version == EXEC_API_VERSIONS[0]:
        raise KubeconfigError(
            f"{where}: interactiveMode is required for {api_version} (Never, IfAvailable or Always)",
            field=KubeconfigField.EXEC,
        )
    mode = mode or "IfAvailable"
    if mode not in _INTERACTIVE_MODES:
        raise KubeconfigError(
            f"{where}: interactiveMode '{mode}' is not one of {', '.join(_INTERACTIVE_MODES)}",
            field=KubeconfigField.EXEC,
        )
    config = ExecConfig(
        command=command,
        api_version=api_version or "",
        args=tuple(args),
        env=tuple(env),
        interactive_mode=cast(ExecInteractiveMode, mode),
        provide_cluster_info=_opt_bool(body, "provideClusterInfo", where),
        install_hint=_opt_str(body, "installHint", where),
    )
    _check_exec(config, where)
    return config


def _check_exec(config: ExecConfig, where: str) -> None:
    if config.api_version not in EXEC_API_VERSIONS:
        raise KubeconfigError(
            f"{where}: apiVersion '{config.api_version}' is not supported; use {' or '.join(EXEC_API_VERSIONS)}",
            field=KubeconfigField.EXEC,
        )
    if not config.command:
        raise KubeconfigError(f"{where}: no command", field=KubeconfigField.EXEC)


def _exec_extension(body: Mapping[str, Any], label: str) -> Mapping[str, Any] | None:
    extensions = body.get("extensions") or []
    if not isinstance(extensions, list):
        raise KubeconfigError(f"{label}: extensions must be a list", field=KubeconfigField.KUBECONFIG)
    for item in extensions:
        if isinstance(item, Mapping) and item.get("name") == EXEC_EXTENSION:
            extension = item.get("extension")
            return extension if isinstance(extension, Mapping) else None
    return None


# overrides, and the checks client-go makes on the merged result


def _with_overrides(
    cluster: _ClusterPart,
    user: _UserPart,
    overrides: ConfigOverrides,
    *,
    namespace: str,
    context_name: str | None,
    cluster_name: str | None,
    user_name: str | None,
    source: str,
) -> ClusterConfig:
    server = overrides.host or cluster.server
    if not server:
        what = f"cluster '{cluster_name}'" if cluster_name else "the context (it names no cluster)"
        raise KubeconfigError(
            f"no server for {what} in {source}; set the cluster's server (or host)",
            field=KubeconfigField.SERVER,
        )
    server = _url(
        server, f"server of {cluster.label}" if not overrides.host else "host", field=KubeconfigField.SERVER
    )

    ca = cluster.certificate_authority
    if overrides.cluster_ca_certificate:
        ca = _pem_override(
            overrides.cluster_ca_certificate, check_certificates, KubeconfigField.CERTIFICATE_AUTHORITY
        )
    elif overrides.insecure:
        ca = None  # client-go: insecure given explicitly drops the file's CA
    insecure = overrides.insecure if overrides.insecure is not None else cluster.insecure
    if insecure and ca is not None:
        raise KubeconfigError(
            f"{cluster.label}: insecure-skip-tls-verify and a certificate authority are both set; "
            "keep one (the certificate authority is the safe choice)",
            field=KubeconfigField.INSECURE,
        )

    cert, key = user.client_certificate, user.client_key
    if overrides.client_certificate:
        cert = _pem_override(
            overrides.client_certificate, check_certificates, KubeconfigField.CLIENT_CERTIFICATE
        )
    if overrides.client_key:
        key = _pem_override(overrides.client_key, check_private_key, KubeconfigField.CLIENT_KEY)
    if cert is not None and key is None:
        raise KubeconfigError(
            f"{user.label}: client-certificate given without client-key; add the key (client-key or client-key-data)",
            field=KubeconfigField.CLIENT_KEY,
        )
    if key is not None and cert is None:
        raise KubeconfigError(
            f"{user.label}: client-key given without client-certificate; add the certificate",
            field=KubeconfigField.CLIENT_CERTIFICATE,
        )

    bearer = user
    if overrides.sets_bearer:
        bearer = _UserPart(
            label=_ATTRIBUTES_SOURCE,
            token=overrides.token or None,
            username=overrides.username or None,
            password=overrides.password or None,
            exec=overrides.exec,
        )
        if overrides.exec is not None:
            _check_exec(overrides.exec, KubeconfigField.EXEC)
    methods = [
        name
        for name, present in (
            ("token", bool(bearer.token or bearer.token_file)),
            ("basic auth", bool(bearer.username or bearer.password)),
            ("exec plugin", bearer.exec is not None),
        )
        if present
    ]
    if len(methods) > 1:
        raise KubeconfigError(
            f"{bearer.label}: more than one authentication method ({', '.join(methods)}); keep one",
            field=KubeconfigField.TOKEN if overrides.sets_bearer else KubeconfigField.USER,
        )
    if bearer.password and not bearer.username:
        raise KubeconfigError(
            f"{bearer.label}: a password without a username", field=KubeconfigField.USERNAME
        )
    exec_config = bearer.exec
    if exec_config is not None and cluster.exec_extension is not None:
        exec_config = dataclasses.replace(exec_config, cluster_extension=cluster.exec_extension)

    proxy_url = overrides.proxy_url or cluster.proxy_url
    if proxy_url:
        proxy_url = _url(
            proxy_url, f"proxy-url of {cluster.label}", field=KubeconfigField.PROXY_URL, proxy=True
        )

    return ClusterConfig(
        server=server,
        certificate_authority=ca,
        insecure_skip_tls_verify=insecure,
        tls_server_name=overrides.tls_server_name or cluster.tls_server_name,
        client_certificate=cert,
        client_key=key,
        token=bearer.token,
        token_file=bearer.token_file,
        username=bearer.username,
        password=bearer.password,
        exec=exec_config,
        proxy_url=proxy_url,
        namespace=namespace,
        context_name=context_name,
        cluster_name=cluster_name,
        user_name=user_name,
        source=source,
    )


# field helpers


def _names(entries: Mapping[str, _Entry]) -> str:
    return ", ".join(sorted(entries)) or "none"


def _opt_str(body: Mapping[str, Any], key: str, label: str) -> str:
    value = body.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise KubeconfigError(f"{label}: {key} must be a string", field=KubeconfigField.KUBECONFIG)
    return value


def _opt_bool(body: Mapping[str, Any], key: str, label: str) -> bool:
    value = body.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise KubeconfigError(f"{label}: {key} must be true or false", field=KubeconfigField.KUBECONFIG)
    return value


def _local_path(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _bytes(
    body: Mapping[str, Any], key: str, entry: _Entry, *, label: str, field: KubeconfigField
) -> bytes | None:
    """`<key>-data` (base64) if set, else the file `<key>` names (relative to its kubeconfig)."""
    data = _opt_str(body, f"{key}-data", label)
    if data:
        try:
            return base64.b64decode("".join(data.split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KubeconfigError(f"{key}-data of {label}: invalid base64 ({exc})", field=field) from None
    value = _opt_str(body, key, label)
    if not value:
        return None
    path = _local_path(value, entry.base)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise KubeconfigError(
            f"{key} {path} of {label}: no such file; fix the path or inline the PEM as {key}-data",
            field=field,
        ) from None
    except OSError as exc:
        raise KubeconfigError(f"{key} {path} of {label}: {exc.strerror}", field=field) from None


def _check_readable(path: Path, what: str, *, field: KubeconfigField) -> None:
    try:
        with path.open("rb"):
            pass
    except FileNotFoundError:
        raise KubeconfigError(f"{what}: no such file", field=field) from None
    except OSError as exc:
        raise KubeconfigError(f"{what}: {exc.strerror}", field=field) from None


def _check_pem(data: bytes, check: Callable[[bytes], None], what: str, field: KubeconfigField) -> None:
    try:
        check(data)
    except PEMError as exc:
        raise KubeconfigError(f"{what}: {exc}", field=field) from None


def _pem_override(text: str, check: Callable[[bytes], None], field: KubeconfigField) -> bytes:
    data = text.encode()
    _check_pem(data, check, f"the given {field}", field)
    return data


def _url(value: str, what: str, *, field: KubeconfigField, proxy: bool = False) -> str:
    url = value.strip().rstrip("/")
    if "://" not in url:
        url = f"{'http' if proxy else 'https'}://{url}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise KubeconfigError(f"{what} '{value}' is not a valid URL ({exc})", field=field) from None
    if parts.scheme not in ("http", "https"):
        supported = "http:// and https:// proxies" if proxy else "https:// (or http://) servers"
        raise KubeconfigError(f"{what} '{value}': only {supported} are supported", field=field)
    if not parts.hostname:
        raise KubeconfigError(f"{what} '{value}' has no host; expected https://host:port", field=field)
    return url
