"""The kubeconfig loader, credentials and TLS: kubectl's merge and override rules, errors, in-cluster, exec plugins.

Loader tests are fast unit tests on files in a tmp dir; credential tests drive the
`Authenticator` directly (token file rotation on looptime's clock, exec plugins as a
tiny Python script); the last tests connect to the emulator with client certificates,
a `tls-server-name`, an http proxy, in-cluster files and an exec plugin printing a
ServiceAccount token, which also proves bearer auth and the retry after a 401 end to end.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
import os
import re
import ssl
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from playground.apiserver.pki import CertificateAuthority
from runtime.api.kinds import CONFIGMAPS, NAMESPACES, ROLEBINDINGS, ROLES, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.core.client import Client
from runtime.core.errors import APIConnectionError, ForbiddenError, UnauthorizedError
from runtime.core.kubeconfig import (
    Authenticator,
    ClusterConfig,
    ConfigOverrides,
    CredentialError,
    ExecConfig,
    KubeconfigError,
    KubeconfigField,
    load_incluster_config,
    load_kubeconfig,
    load_kubeconfig_dict,
)
from runtime.core.kubeconfig.tls import _memory_files, _private_files, load_cert_chain

from .conftest import Emulator


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


V1 = "client.authentication.k8s.io/v1"
#: well-formed PEM armor (the loader checks structure; OpenSSL parses contents when connecting)
FAKE_CERT = b64(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")


@dataclass(frozen=True)
class PKI:
    ca: bytes
    cert: bytes
    key: bytes
    other_key: bytes


@pytest.fixture(scope="module")
def pki() -> PKI:
    ca = CertificateAuthority.generate("test-ca")
    cert, key = ca.issue_client("alice")
    _, other_key = ca.issue_client("bob")
    return PKI(ca.cert_pem, cert, key, other_key)


def kubeconfig(
    *,
    clusters: dict[str, JSON] | None = None,
    users: dict[str, JSON] | None = None,
    contexts: dict[str, JSON] | None = None,
    current: str | None = None,
) -> JSON:
    doc: JSON = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": body} for name, body in (clusters or {}).items()],
        "users": [{"name": name, "user": body} for name, body in (users or {}).items()],
        "contexts": [{"name": name, "context": body} for name, body in (contexts or {}).items()],
    }
    if current is not None:
        doc["current-context"] = current
    return doc


def write(path: Path, doc: JSON | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def simple(user: JSON | None = None, *, server: str = "https://one.example:6443") -> JSON:
    return kubeconfig(
        clusters={"one": {"server": server}},
        users={"u": user or {}},
        contexts={"ctx": {"cluster": "one", "user": "u", "namespace": "team"}},
        current="ctx",
    )


# merging, selection, paths


def test_files_merge_with_the_first_definition_and_the_first_current_context_winning(tmp_path: Path) -> None:
    first = write(
        tmp_path / "a" / "config",
        kubeconfig(
            clusters={"shared": {"server": "https://first:6443"}},
            users={"u": {"token": "first-token"}},
            contexts={"a": {"cluster": "shared", "user": "u"}},
        ),
    )
    second = write(
        tmp_path / "b" / "config",
        kubeconfig(
            clusters={"shared": {"server": "https://second:6443"}, "own": {"server": "https://own:6443"}},
            users={"u": {"token": "second-token"}},
            contexts={"a": {"cluster": "own", "user": "u"}, "b": {"cluster": "shared", "user": "u"}},
            current="b",
        ),
    )
    third = write(tmp_path / "c" / "config", kubeconfig(current="a"))

    config = load_kubeconfig([first, second, third])

    assert (config.context_name, config.server, config.token) == ("b", "https://first:6443", "first-token")
    assert load_kubeconfig([first, second], context="a").server == "https://first:6443"
    assert load_kubeconfig([third, first, second]).context_name == "a"
    assert config.source == f"{first}, {second}, {third}"


def test_relative_paths_resolve_against_the_file_that_names_them(tmp_path: Path, pki: PKI) -> None:
    home = tmp_path / "home"
    (home / "certs").mkdir(parents=True)
    (home / "certs" / "ca.pem").write_bytes(pki.ca)
    (home / "certs" / "alice.pem").write_bytes(pki.cert)
    (home / "certs" / "alice.key").write_bytes(pki.key)
    (home / "token").write_text("file-token\n")
    users = write(
        home / "config",
        kubeconfig(
            clusters={"one": {"server": "https://one:6443", "certificate-authority": "certs/ca.pem"}},
            users={
                "alice": {"client-certificate": "certs/alice.pem", "client-key": "certs/alice.key"},
                "bot": {"tokenFile": "token"},
                "plugin": {
                    "exec": {"apiVersion": V1, "command": "bin/login", "interactiveMode": "Never"},
                },
                "on-path": {"exec": {"apiVersion": V1, "command": "kubelogin", "interactiveMode": "Never"}},
            },
        ),
    )
    contexts = write(
        tmp_path / "elsewhere" / "config",
        kubeconfig(
            contexts={
                name: {"cluster": "one", "user": name} for name in ("alice", "bot", "plugin", "on-path")
            }
        ),
    )

    alice = load_kubeconfig([contexts, users], context="alice")
    assert (alice.certificate_authority, alice.client_certificate, alice.client_key) == (
        pki.ca,
        pki.cert,
        pki.key,
    )
    assert load_kubeconfig([contexts, users], context="bot").token_file == home / "token"
    plugin = load_kubeconfig([contexts, users], context="plugin").exec
    assert plugin is not None and plugin.command == str(home / "bin" / "login")
    on_path = load_kubeconfig([contexts, users], context="on-path").exec
    assert on_path is not None and on_path.command == "kubelogin"


def test_data_fields_win_over_files_and_namespace_comes_from_the_context(tmp_path: Path, pki: PKI) -> None:
    path = write(
        tmp_path / "config",
        kubeconfig(
            clusters={
                "one": {
                    "server": "one.example:6443/",
                    "certificate-authority": "missing.pem",
                    "certificate-authority-data": b64(pki.ca),
                    "tls-server-name": "kubernetes.default",
                    "proxy-url": "http://proxy.example:3128",
                }
            },
            users={"u": {"client-certificate-data": b64(pki.cert), "client-key-data": b64(pki.key)}},
            contexts={
                "ctx": {"cluster": "one", "user": "u", "namespace": "team"},
                "bare": {"cluster": "one"},
            },
            current="ctx",
        ),
    )
    config = load_kubeconfig(path)
    assert config.server == "https://one.example:6443"
    assert (config.certificate_authority, config.client_key) == (pki.ca, pki.key)
    assert (config.tls_server_name, config.proxy_url) == ("kubernetes.default", "http://proxy.example:3128")
    assert (config.namespace, config.cluster_name, config.user_name) == ("team", "one", "u")
    bare = load_kubeconfig(path, context="bare")
    assert (bare.namespace, bare.user_name, bare.client_certificate) == ("default", None, None)


def test_cluster_and_user_names_override_the_contexts(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config",
        kubeconfig(
            clusters={"one": {"server": "https://one:6443"}, "two": {"server": "https://two:6443"}},
            users={"a": {"token": "token-a"}, "b": {"token": "token-b"}},
            contexts={"ctx": {"cluster": "one", "user": "a"}},
            current="ctx",
        ),
    )
    config = load_kubeconfig(path, cluster="two", user="b")
    assert (config.server, config.token, config.context_name) == ("https://two:6443", "token-b", "ctx")


def test_the_home_directory_is_expanded_and_the_default_is_read_only_without_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    write(tmp_path / ".kube" / "config", simple({"token": "t"}, server="https://default:6443"))
    write(tmp_path / "other", simple({"token": "t"}, server="https://other:6443"))
    assert load_kubeconfig().server == "https://default:6443"
    assert load_kubeconfig("~/other").server == "https://other:6443"
    host_only = load_kubeconfig(overrides=ConfigOverrides(host="https://attributes:6443", token="t"))
    assert (host_only.server, host_only.source) == ("https://attributes:6443", "the given attributes")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "missing"), str(tmp_path / "other")]))
    assert load_kubeconfig().server == "https://other:6443"


def test_attributes_alone_make_a_config_without_reading_any_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pki: PKI
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config: reading it would fail
    config = load_kubeconfig(
        overrides=ConfigOverrides(
            host="https://10.0.0.1:6443",
            cluster_ca_certificate=pki.ca.decode(),
            client_certificate=pki.cert.decode(),
            client_key=pki.key.decode(),
            tls_server_name="kubernetes",
            proxy_url="http://proxy:3128",
        )
    )
    assert config.server == "https://10.0.0.1:6443"
    assert (config.certificate_authority, config.client_certificate, config.client_key) == (
        pki.ca,
        pki.cert,
        pki.key,
    )
    assert (config.tls_server_name, config.proxy_url, config.context_name) == (
        "kubernetes",
        "http://proxy:3128",
        None,
    )


def test_explicit_attributes_win_over_the_kubeconfig(tmp_path: Path, pki: PKI) -> None:
    path = write(
        tmp_path / "config",
        kubeconfig(
            clusters={"one": {"server": "https://one:6443", "certificate-authority-data": b64(pki.ca)}},
            users={
                "u": {
                    "client-certificate-data": b64(pki.cert),
                    "client-key-data": b64(pki.key),
                    "exec": {"apiVersion": V1, "command": "login", "interactiveMode": "Never"},
                }
            },
            contexts={"ctx": {"cluster": "one", "user": "u"}},
            current="ctx",
        ),
    )
    config = load_kubeconfig(
        path,
        overrides=ConfigOverrides(host="https://override:443", token="override-token", insecure=True),
    )
    assert (config.server, config.token, config.exec) == ("https://override:443", "override-token", None)
    assert config.insecure_skip_tls_verify and config.certificate_authority is None
    assert config.client_certificate == pki.cert  # certificates are replaced only by certificate attributes
    plugin = ExecConfig(command="aws", args=("eks", "get-token"), env=(("AWS_PROFILE", "dev"),))
    with_exec = load_kubeconfig(
        path, overrides=ConfigOverrides(exec=plugin, client_key=pki.other_key.decode())
    )
    assert (with_exec.exec, with_exec.token, with_exec.client_key) == (plugin, None, pki.other_key)
    assert with_exec.certificate_authority == pki.ca


@pytest.mark.parametrize(
    ("doc", "kwargs", "message", "field"),
    [
        (
            kubeconfig(contexts={"a": {}, "b": {}}, current="a"),
            {"context": "x"},
            "context 'x' not found in {path}; available: a, b",
            KubeconfigField.CONTEXT,
        ),
        (
            kubeconfig(contexts={"a": {}, "b": {}}),
            {},
            "no current-context in {path} and no context given; choose one of: a, b",
            KubeconfigField.CONTEXT,
        ),
        (
            kubeconfig(clusters={"c": {}}, contexts={"x": {"cluster": "c"}}, current="x"),
            {},
            "no server for cluster 'c' in {path}",
            KubeconfigField.SERVER,
        ),
        (
            kubeconfig(
                clusters={"c": {"server": "https://c"}}, contexts={"x": {"cluster": "c"}}, current="x"
            ),
            {"cluster": "d"},
            "cluster 'd' of context 'x' in {path} not found; available: c",
            KubeconfigField.CLUSTER,
        ),
        (
            kubeconfig(
                clusters={"c": {"server": "https://c"}}, contexts={"x": {"cluster": "c", "user": "gone"}}
            ),
            {"context": "x"},
            "user 'gone' of context 'x' in {path} not found; available: none",
            KubeconfigField.CONTEXT,
        ),
        (
            simple(),
            {"user": "admin"},
            "user 'admin' of context 'ctx' in {path} not found; available: u",
            KubeconfigField.USER,
        ),
        (
            kubeconfig(
                clusters={"c": {"server": "https://c", "certificate-authority": "nope/ca.pem"}},
                contexts={"x": {"cluster": "c"}},
                current="x",
            ),
            {},
            "certificate-authority {dir}/nope/ca.pem of cluster 'c' in {path}: no such file",
            KubeconfigField.CERTIFICATE_AUTHORITY,
        ),
        (
            kubeconfig(
                clusters={
                    "c": {"server": "https://c", "certificate-authority-data": b64(b"not a certificate")}
                },
                contexts={"x": {"cluster": "c"}},
                current="x",
            ),
            {},
            "certificate-authority of cluster 'c' in {path}: invalid PEM: no -----BEGIN",
            KubeconfigField.CERTIFICATE_AUTHORITY,
        ),
        (
            kubeconfig(
                clusters={"c": {"server": "https://c", "certificate-authority-data": "%%%"}},
                contexts={"x": {"cluster": "c"}},
                current="x",
            ),
            {},
            "certificate-authority-data of cluster 'c' in {path}: invalid base64",
            KubeconfigField.CERTIFICATE_AUTHORITY,
        ),
        (
            simple({"client-certificate-data": FAKE_CERT}),
            {},
            "client-certificate given without client-key",
            KubeconfigField.CLIENT_KEY,
        ),
        (
            simple({"token": "t", "username": "me", "password": "pw"}),
            {},
            "user 'u' in {path}: more than one authentication method (token, basic auth); keep one",
            KubeconfigField.USER,
        ),
        (
            kubeconfig(
                clusters={
                    "c": {
                        "server": "https://c",
                        "insecure-skip-tls-verify": True,
                        "certificate-authority-data": FAKE_CERT,
                    }
                },
                contexts={"x": {"cluster": "c"}},
                current="x",
            ),
            {},
            "insecure-skip-tls-verify and a certificate authority are both set",
            KubeconfigField.INSECURE,
        ),
        (
            simple({"auth-provider": {"name": "oidc"}}),
            {},
            "user 'u' in {path} uses auth-provider 'oidc', which is not supported; switch to an exec plugin",
            KubeconfigField.USER,
        ),
        (
            simple({"exec": {"apiVersion": V1, "command": "login"}}),
            {},
            f"exec plugin of user 'u' in {{path}}: interactiveMode is required for {V1}",
            KubeconfigField.EXEC,
        ),
        (
            simple({"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "login"}}),
            {},
            "apiVersion 'client.authentication.k8s.io/v1alpha1' is not supported",
            KubeconfigField.EXEC,
        ),
        (
            simple({"tokenFile": "missing-token"}),
            {},
            "tokenFile {dir}/missing-token of user 'u' in {path}: no such file",
            KubeconfigField.TOKEN,
        ),
        (
            kubeconfig(
                clusters={"c": {"server": "https://c", "proxy-url": "socks5://proxy:1080"}},
                contexts={"x": {"cluster": "c"}},
                current="x",
            ),
            {},
            "proxy-url of cluster 'c' in {path} 'socks5://proxy:1080': only http:// and https:// proxies",
            KubeconfigField.PROXY_URL,
        ),
        (
            simple(server="https://host:port"),
            {},
            "server of cluster 'one' in {path} 'https://host:port' is not a valid URL",
            KubeconfigField.SERVER,
        ),
        (
            "apiVersion: v1\nclusters:\n\t- name: a\n",
            {},
            "{path}: invalid YAML at line 3, column 1: found character '\\t' that cannot start any token",
            KubeconfigField.KUBECONFIG,
        ),
        (
            "- just\n- a list\n",
            {},
            "{path}: not a kubeconfig (its top level is a list",
            KubeconfigField.KUBECONFIG,
        ),
    ],
    ids=[
        "unknown-context",
        "no-current-context",
        "no-server",
        "unknown-cluster-override",
        "context-names-a-missing-user",
        "unknown-user-override",
        "missing-ca-file",
        "ca-not-pem",
        "ca-not-base64",
        "certificate-without-key",
        "two-auth-methods",
        "insecure-with-ca",
        "auth-provider",
        "exec-v1-without-interactive-mode",
        "exec-old-api-version",
        "missing-token-file",
        "socks-proxy",
        "bad-server-url",
        "invalid-yaml",
        "not-a-mapping",
    ],
)
def test_every_problem_is_named_with_its_file_entry_and_field(
    tmp_path: Path, doc: JSON | str, kwargs: dict[str, Any], message: str, field: KubeconfigField | None
) -> None:
    path = write(tmp_path / "config", doc)
    with pytest.raises(KubeconfigError) as err:
        load_kubeconfig(path, **kwargs)
    assert message.format(path=path, dir=tmp_path) in str(err.value)
    assert err.value.field == field


@pytest.mark.parametrize(
    ("overrides", "message", "field"),
    [
        (
            ConfigOverrides(client_key="-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
            "the given client-key: invalid PEM",
            KubeconfigField.CLIENT_KEY,
        ),
        (
            ConfigOverrides(cluster_ca_certificate="garbage"),
            "the given certificate-authority: invalid PEM",
            KubeconfigField.CERTIFICATE_AUTHORITY,
        ),
        (
            ConfigOverrides(token="t", username="me"),
            "the given attributes: more than one authentication method (token, basic auth)",
            KubeconfigField.TOKEN,
        ),
        (
            ConfigOverrides(exec=ExecConfig(command="x", api_version="v1")),
            "exec: apiVersion 'v1' is not supported",
            KubeconfigField.EXEC,
        ),
    ],
    ids=["key-is-a-certificate", "ca-garbage", "token-and-basic", "exec-api-version"],
)
def test_bad_overrides_are_reported_against_their_field(
    overrides: ConfigOverrides, message: str, field: KubeconfigField
) -> None:
    with pytest.raises(KubeconfigError) as err:
        load_kubeconfig(overrides=dataclasses.replace(overrides, host="https://h:6443"))
    assert message in str(err.value)
    assert err.value.field == field


def test_missing_and_unreadable_kubeconfigs_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match=re.escape(f"kubeconfig {tmp_path}/nope: no such file")) as err:
        load_kubeconfig(tmp_path / "nope")
    assert err.value.field == KubeconfigField.KUBECONFIG
    with pytest.raises(KubeconfigError, match=re.escape(f"kubeconfig {tmp_path}: cannot read it")):
        load_kubeconfig(tmp_path)


def test_secrets_never_show_in_repr_or_str(pki: PKI) -> None:
    config = ClusterConfig(
        server="https://h:6443",
        certificate_authority=pki.ca,
        client_certificate=pki.cert,
        client_key=pki.key,
        token="s3cret-token",
        username="me",
        password="s3cret-password",
        exec=ExecConfig(command="login", env=(("API_KEY", "s3cret-env"),)),
    )
    overrides = ConfigOverrides(token="s3cret-token", password="s3cret-password", client_key=pki.key.decode())
    shown = [repr(config), str(config), repr(overrides), str(overrides), repr(config.exec)]
    key_body = pki.key.decode().splitlines()[1]
    for text in shown:
        for secret in ("s3cret-token", "s3cret-password", "s3cret-env", key_body):
            assert secret not in text
    assert "token=<redacted>" in repr(config) and "API_KEY" in repr(config)
    assert f"client_key=<{len(pki.key)} bytes>" not in repr(config)


def test_load_kubeconfig_dict_resolves_relative_paths_against_the_base(tmp_path: Path, pki: PKI) -> None:
    (tmp_path / "ca.pem").write_bytes(pki.ca)
    doc = kubeconfig(
        clusters={"c": {"server": "https://c:6443", "certificate-authority": "ca.pem"}},
        contexts={"x": {"cluster": "c"}},
        current="x",
    )
    assert load_kubeconfig_dict(doc, base_path=tmp_path).certificate_authority == pki.ca


# in-cluster


@pytest.fixture
def service_account(tmp_path: Path, pki: PKI, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text("sa-token")
    (directory / "ca.crt").write_bytes(pki.ca)
    (directory / "namespace").write_text("liqo\n")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    return directory


def test_in_cluster_reads_the_service_environment_and_account_files(
    service_account: Path, pki: PKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_incluster_config(service_account_dir=service_account)
    assert (config.server, config.namespace, config.certificate_authority) == (
        "https://10.96.0.1:443",
        "liqo",
        pki.ca,
    )
    assert config.token_file == service_account / "token" and config.token is None
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    assert load_incluster_config(service_account_dir=service_account).server == "https://[fd00::1]:443"


def test_in_cluster_outside_a_pod_or_without_a_token_says_so(
    service_account: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (service_account / "token").unlink()
    with pytest.raises(KubeconfigError, match=re.escape(f"cannot read the token {service_account}/token")):
        load_incluster_config(service_account_dir=service_account)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    with pytest.raises(KubeconfigError, match="not running in a pod: KUBERNETES_SERVICE_HOST"):
        load_incluster_config(service_account_dir=service_account)


# credentials


@pytest.mark.looptime
async def test_a_token_file_is_re_read_every_minute_and_after_a_401(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("one\n")
    auth = Authenticator(ClusterConfig(server="http://api", token_file=token))
    first = await auth.request_auth()
    assert first.headers == {"Authorization": "Bearer one"}
    token.write_text("two")
    await asyncio.sleep(59)
    assert (await auth.request_auth()).headers == {"Authorization": "Bearer one"}
    await asyncio.sleep(1)
    assert (await auth.request_auth()).headers == {"Authorization": "Bearer two"}
    token.write_text("three")
    assert await auth.unauthorized(first)
    assert (await auth.request_auth()).headers == {"Authorization": "Bearer three"}
    token.unlink()
    await asyncio.sleep(60)
    assert (await auth.request_auth()).headers == {"Authorization": "Bearer three"}  # keeps the last one


async def test_static_tokens_and_basic_auth_are_sent_and_not_retried() -> None:
    auth = Authenticator(ClusterConfig(server="http://api", username="me", password="pw"))
    used = await auth.request_auth()
    assert used.headers == {"Authorization": f"Basic {b64(b'me:pw')}"}
    assert not await auth.unauthorized(used)


PLUGIN = """
import datetime, json, os, sys

state = os.environ["PLUGIN_STATE"]
runs = int(open(state).read()) + 1 if os.path.exists(state) else 1
open(state, "w").write(str(runs))
open(state + ".info", "w").write(os.environ.get("KUBERNETES_EXEC_INFO", ""))
mode = os.environ.get("PLUGIN_MODE", "")
if mode == "fail":
    sys.stderr.write("credentials expired: run `cloud login`\\n")
    sys.exit(3)
tokens = os.environ.get("PLUGIN_TOKENS", "").split(",")
token = tokens[min(runs, len(tokens)) - 1] or f"token-{runs}"
if mode == "garbage":
    print(f"{token} is not JSON")
    sys.exit(0)
status = {"token": token}
if os.environ.get("PLUGIN_LIFETIME"):
    expiry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=float(os.environ["PLUGIN_LIFETIME"]))
    status["expirationTimestamp"] = expiry.strftime("%Y-%m-%dT%H:%M:%SZ")
version = os.environ.get("PLUGIN_API_VERSION", "client.authentication.k8s.io/v1")
print(json.dumps({"apiVersion": version, "kind": "ExecCredential", "status": status}))
"""


@dataclass
class Plugin:
    script: Path
    state: Path

    def config(self, env: dict[str, str] | None = None, *, provide_cluster_info: bool = False) -> ExecConfig:
        return ExecConfig(
            command=sys.executable,
            args=(str(self.script),),
            env=(("PLUGIN_STATE", str(self.state)), *(env or {}).items()),
            provide_cluster_info=provide_cluster_info,
            install_hint="install it with `pip install cloud-login`",
        )

    @property
    def runs(self) -> int:
        return int(self.state.read_text()) if self.state.exists() else 0

    @property
    def info(self) -> JSON:
        result: JSON = json.loads(Path(f"{self.state}.info").read_text())
        return result


@pytest.fixture
def plugin(tmp_path: Path) -> Plugin:
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN)
    return Plugin(script, tmp_path / "runs")


def exec_auth(plugin: ExecConfig, **fields: Any) -> Authenticator:
    return Authenticator(
        ClusterConfig(server="http://api", exec=plugin, user_name="u", source="test", **fields)
    )


async def test_an_exec_token_is_cached_until_it_expires(plugin: Plugin) -> None:
    auth = exec_auth(plugin.config({"PLUGIN_LIFETIME": "3600"}))
    assert (await auth.request_auth()).headers == {"Authorization": "Bearer token-1"}
    assert (await auth.request_auth()).headers == {"Authorization": "Bearer token-1"}
    assert plugin.runs == 1
    forever = exec_auth(plugin.config())
    await forever.request_auth()
    await forever.request_auth()
    assert plugin.runs == 2


async def test_an_exec_token_about_to_expire_is_fetched_again(plugin: Plugin) -> None:
    auth = exec_auth(plugin.config({"PLUGIN_LIFETIME": "5"}))  # within the refresh margin
    assert (await auth.request_auth()).headers == {"Authorization": "Bearer token-1"}
    assert (await auth.request_auth()).headers == {"Authorization": "Bearer token-2"}


async def test_after_a_401_the_plugin_runs_again_once(plugin: Plugin) -> None:
    auth = exec_auth(plugin.config())
    used = await auth.request_auth()
    assert await auth.unauthorized(used)
    assert (await auth.request_auth()).headers == {"Authorization": "Bearer token-2"}
    # another request sent with the stale token: it is retried with the fresh one, the plugin does not run again
    assert await auth.unauthorized(used)
    assert plugin.runs == 2


async def test_the_plugin_sees_its_env_and_kubernetes_exec_info(plugin: Plugin, pki: PKI) -> None:
    config = plugin.config(provide_cluster_info=True)
    auth = exec_auth(
        config, certificate_authority=pki.ca, tls_server_name="kubernetes", proxy_url="http://proxy:3128"
    )
    await auth.request_auth()
    assert plugin.info == {
        "apiVersion": V1,
        "kind": "ExecCredential",
        "spec": {
            "interactive": False,
            "cluster": {
                "server": "http://api",
                "tls-server-name": "kubernetes",
                "certificate-authority-data": b64(pki.ca),
                "proxy-url": "http://proxy:3128",
            },
        },
    }
    await exec_auth(plugin.config({"PLUGIN_LIFETIME": "1"})).request_auth()
    assert plugin.info == {"apiVersion": V1, "kind": "ExecCredential", "spec": {"interactive": False}}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PLUGIN_MODE": "fail"}, "failed with exit code 3: credentials expired: run `cloud login`"),
        ({"PLUGIN_MODE": "garbage", "PLUGIN_TOKENS": "s3cret"}, "its output is not JSON"),
        (
            {"PLUGIN_API_VERSION": "client.authentication.k8s.io/v1beta1", "PLUGIN_TOKENS": "s3cret"},
            "returned apiVersion 'client.authentication.k8s.io/v1beta1', but is configured for",
        ),
    ],
    ids=["exit-code", "not-json", "wrong-version"],
)
async def test_plugin_failures_name_the_command_and_never_the_token(
    plugin: Plugin, env: dict[str, str], message: str
) -> None:
    with pytest.raises(CredentialError) as err:
        await exec_auth(plugin.config(env)).request_auth()
    assert message in str(err.value)
    assert f"exec plugin '{sys.executable}' (user 'u' in test)" in str(err.value)
    assert "s3cret" not in str(err.value)
    assert isinstance(err.value, APIConnectionError) and err.value.field == KubeconfigField.EXEC


async def test_a_missing_plugin_shows_its_install_hint(tmp_path: Path) -> None:
    plugin = ExecConfig(
        command=str(tmp_path / "no-such-login"), install_hint="install it with `brew install login`"
    )
    with pytest.raises(
        CredentialError, match="cannot be started: No such file or directory; install it with"
    ):
        await exec_auth(plugin).request_auth()
    interactive = ExecConfig(command="login", interactive_mode="Always")
    with pytest.raises(CredentialError, match="needs an interactive terminal"):
        await exec_auth(interactive).request_auth()


# TLS


def test_client_keys_load_from_memory_or_a_private_directory_that_is_removed(
    tmp_path: Path, pki: PKI
) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    with _memory_files(pki.cert, pki.key) as paths:
        assert all(path.startswith("/proc/self/fd/") for path in paths)
        context.load_cert_chain(*paths)
    with _private_files(pki.cert, pki.key, parent=str(tmp_path)) as paths:
        assert all(os.stat(path).st_mode & 0o777 == 0o600 for path in paths)
        assert os.stat(os.path.dirname(paths[0])).st_mode & 0o777 == 0o700
        context.load_cert_chain(*paths)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(
        KubeconfigError, match="user 'u': client-key does not match client-certificate"
    ) as err:
        load_cert_chain(context, pki.cert, pki.other_key, label="user 'u'")
    assert err.value.field == KubeconfigField.CLIENT_KEY


# against the emulator


@contextlib.asynccontextmanager
async def connected(config: ClusterConfig) -> AsyncIterator[Client]:
    async with await Client.from_config(config) as client:
        yield client


def emulator_config(emulator: Emulator, **overrides: Any) -> ClusterConfig:
    return load_kubeconfig(emulator.kubeconfig, overrides=ConfigOverrides(**overrides))


async def test_client_certificates_and_tls_server_name_reach_the_emulator(emulator: Emulator) -> None:
    config = await asyncio.to_thread(emulator_config, emulator)
    port = config.server.rpartition(":")[2]
    async with connected(config) as client:
        assert (await client.get(NAMESPACES, "default"))["metadata"]["name"] == "default"
    named = await asyncio.to_thread(emulator_config, emulator, tls_server_name="localhost")
    assert named.server == f"https://127.0.0.1:{port}"
    async with connected(named) as client:
        await client.list(CONFIGMAPS, namespace="default")
    wrong = await asyncio.to_thread(emulator_config, emulator, tls_server_name="not-the-server.example")
    async with connected(wrong) as client:
        with pytest.raises(APIConnectionError, match=r"not-the-server\.example"):
            await client.list(CONFIGMAPS, namespace="default")


@contextlib.asynccontextmanager
async def connect_proxy() -> AsyncIterator[tuple[str, list[str]]]:
    """An http CONNECT proxy on loopback; yields its URL and the request lines it served."""
    seen: list[str] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line = head.split(b"\r\n")[0].decode()
        seen.append(line)
        host, _, port = line.split(" ")[1].rpartition(":")
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", seen


async def test_requests_go_through_the_configured_proxy(emulator: Emulator) -> None:
    async with connect_proxy() as (url, seen):
        config = await asyncio.to_thread(emulator_config, emulator, proxy_url=url)
        async with connected(config) as client:
            await client.list(CONFIGMAPS, namespace="default")
    port = config.server.rpartition(":")[2]
    assert seen == [f"CONNECT 127.0.0.1:{port} HTTP/1.1"]


@pytest.fixture
async def reader_token(client: Client, namespace: str) -> str:
    """A ServiceAccount token (TokenRequest) allowed to list ConfigMaps in `namespace`."""
    await client.create(SERVICEACCOUNTS, {"metadata": {"name": "reader", "namespace": namespace}})
    rules = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
    await client.create(ROLES, {"metadata": {"name": "reader", "namespace": namespace}, "rules": rules})
    await client.create(
        ROLEBINDINGS,
        {
            "metadata": {"name": "reader", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
        },
    )
    review = await client.create(
        SERVICEACCOUNTS,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
        namespace=namespace,
        name="reader",
        subresource="token",
    )
    token: str = review["status"]["token"]
    return token


def token_user(emulator: Emulator, **user: Any) -> ClusterConfig:
    doc = yaml.safe_load(emulator.kubeconfig.read_text())
    doc["users"][0]["user"] = user
    return load_kubeconfig_dict(doc)


async def test_an_exec_plugin_token_authenticates_and_a_401_runs_it_again(
    emulator: Emulator, namespace: str, reader_token: str, plugin: Plugin
) -> None:
    exec_body = {
        "apiVersion": V1,
        "command": sys.executable,
        "args": [str(plugin.script)],
        "env": [
            {"name": "PLUGIN_STATE", "value": str(plugin.state)},
            {"name": "PLUGIN_TOKENS", "value": f"not-a-token,{reader_token}"},
        ],
        "interactiveMode": "Never",
    }
    config = await asyncio.to_thread(token_user, emulator, exec=exec_body)
    async with connected(config) as client:
        assert (await client.list(CONFIGMAPS, namespace=namespace)).items == []
        assert plugin.runs == 2  # the first token got a 401; the plugin ran again and the list was retried
        with pytest.raises(ForbiddenError, match=f"system:serviceaccount:{namespace}:reader"):
            await client.list(CONFIGMAPS, namespace="default")
        assert plugin.runs == 2


async def test_a_rotated_token_file_is_picked_up_after_a_401(
    emulator: Emulator, namespace: str, reader_token: str, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("not-a-token")
    config = await asyncio.to_thread(token_user, emulator, tokenFile=str(token))
    async with connected(config) as client:
        with pytest.raises(UnauthorizedError):
            await client.list(CONFIGMAPS, namespace=namespace)
        token.write_text(reader_token)
        assert (await client.list(CONFIGMAPS, namespace=namespace)).items == []


async def test_in_cluster_credentials_reach_the_emulator(
    emulator: Emulator, namespace: str, reader_token: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = await asyncio.to_thread(emulator_config, emulator)
    assert admin.certificate_authority is not None
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text(reader_token)
    (directory / "ca.crt").write_bytes(admin.certificate_authority)
    (directory / "namespace").write_text(namespace)
    host, _, port = admin.server.removeprefix("https://").rpartition(":")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    async with await Client.in_cluster(service_account_dir=directory) as client:
        assert client.config.namespace == namespace
        assert (await client.list(CONFIGMAPS, namespace=namespace)).items == []
