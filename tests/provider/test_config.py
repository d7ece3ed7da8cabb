"""The provider block: environment fallbacks, validate-time checks, and load-time diagnostics on attributes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tf.types import Unknown
from tf.utils import Diagnostics

from provider import config

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: dev
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
- name: prod
  cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: dev-token}
- name: viewer
  user: {token: viewer-token}
contexts:
- name: dev
  context: {cluster: dev, user: admin}
- name: prod
  context: {cluster: prod, user: viewer}
current-context: dev
"""


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return path


def errors(diagnostics: Diagnostics) -> list[tuple[str, list[Any] | None]]:
    return [(d.summary, d.path) for d in diagnostics.diagnostics]


def test_attributes_win_over_their_environment_variables() -> None:
    values = {"kubernetes": {"host": "https://a:6443", "token": None}}
    environ = {"KUBE_HOST": "https://b:6443", "KUBE_TOKEN": "t", "KUBE_CTX": "c", "KUBE_INSECURE": "true"}

    settings = config.settings(values, environ)

    assert settings.overrides == {"host": "https://a:6443", "token": "t", "insecure": True}
    assert settings.context == "c"
    assert settings.from_environment == {
        "token": "KUBE_TOKEN",
        "config_context": "KUBE_CTX",
        "insecure": "KUBE_INSECURE",
    }


@pytest.mark.parametrize(
    ("values", "environ", "paths"),
    [
        ({"config_path": "a"}, {"KUBE_CONFIG_PATH": "b"}, ("a",)),
        ({"config_paths": ["a", "b"]}, {"KUBE_CONFIG_PATH": "c"}, ("a", "b")),
        ({}, {"KUBE_CONFIG_PATH": "c", "KUBE_CONFIG_PATHS": "d:e"}, ("c",)),
        ({}, {"KUBE_CONFIG_PATHS": "d:e"}, ("d", "e")),
        ({}, {}, ()),
    ],
    ids=["path", "paths-before-env", "env-path", "env-paths", "none"],
)
def test_kubeconfig_paths_come_from_attributes_then_environment(
    values: dict[str, Any], environ: dict[str, str], paths: tuple[str, ...]
) -> None:
    assert config.settings({"kubernetes": values}, environ).paths == paths


def test_a_kube_insecure_that_is_not_a_boolean_is_an_error_on_insecure() -> None:
    with pytest.raises(config.SettingError) as raised:
        config.settings(None, {"KUBE_INSECURE": "yes"})
    assert raised.value.attribute == "insecure"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"config_path": "a", "config_paths": ["b"]},
            [("Conflicting kubeconfig paths", ["kubernetes", "config_paths"])],
        ),
        (
            {"insecure": True, "cluster_ca_certificate": "PEM"},
            [("Conflicting TLS settings", ["kubernetes", "insecure"])],
        ),
        ({"client_certificate": "PEM"}, [("Missing client_key", ["kubernetes", "client_key"])]),
        ({"client_key": "PEM"}, [("Missing client_certificate", ["kubernetes", "client_certificate"])]),
        (
            {"exec": {"api_version": "client.authentication.k8s.io/v1alpha1", "command": "x"}},
            [("Unsupported exec API version", ["kubernetes", "exec", "api_version"])],
        ),
        ({"config_path": Unknown, "config_paths": ["b"], "client_certificate": Unknown}, []),
        ({"config_path": "a", "insecure": False, "cluster_ca_certificate": "PEM"}, []),
    ],
    ids=[
        "two-paths",
        "insecure-with-ca",
        "cert-without-key",
        "key-without-cert",
        "exec-version",
        "unknown",
        "fine",
    ],
)
def test_check_reports_conflicts_on_the_attribute(values: dict[str, Any], expected: list[Any]) -> None:
    diagnostics = Diagnostics()
    config.check(diagnostics, {"kubernetes": values})
    assert errors(diagnostics) == expected


def test_unknown_attributes_are_named_with_their_path() -> None:
    assert config.unknown_attributes({"kubernetes": {"config_path": Unknown, "host": "h"}}) == [
        "kubernetes.config_path"
    ]
    assert config.unknown_attributes({"kubernetes": Unknown}) == ["kubernetes"]
    assert config.unknown_attributes({"kubernetes": None}) == []


def test_load_reads_the_context_and_applies_overrides(kubeconfig: Path) -> None:
    diagnostics = Diagnostics()
    values = {"kubernetes": {"config_path": str(kubeconfig), "config_context": "prod", "token": "mine"}}

    loaded = config.load(diagnostics, values, {})

    assert errors(diagnostics) == []
    assert loaded is not None
    assert (loaded.server, loaded.token, loaded.context_name) == ("https://10.0.0.1:6443", "mine", "prod")


def test_load_with_host_alone_needs_no_file() -> None:
    diagnostics = Diagnostics()
    loaded = config.load(
        diagnostics, None, {"KUBE_HOST": "https://api:6443", "KUBE_TOKEN": "t", "KUBE_INSECURE": "1"}
    )
    assert loaded is not None
    assert (loaded.server, loaded.token, loaded.insecure_skip_tls_verify) == ("https://api:6443", "t", True)


@pytest.mark.parametrize("block", [None, {"kubernetes": {}}, {"kubernetes": {"config_context": "dev"}}])
def test_no_path_and_no_host_outside_a_pod_is_an_error_on_config_path(
    kubeconfig: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: dict[str, Any] | None
) -> None:
    # kubectl's current context names a cluster: the provider still does not fall back to it
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(KUBECONFIG)
    diagnostics = Diagnostics()

    loaded = config.load(diagnostics, block, {"KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)})

    assert loaded is None
    [diagnostic] = diagnostics.diagnostics
    assert (diagnostic.summary, diagnostic.path) == ("No cluster configured", ["kubernetes", "config_path"])
    assert "never falls back to the current kubectl context" in str(diagnostic.detail)
    assert "KUBE_CONFIG_PATH" in str(diagnostic.detail)


@pytest.fixture
def service_account(tmp_path: Path) -> Path:
    from playground.apiserver.pki import CertificateAuthority

    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text("sa-token")
    (directory / "ca.crt").write_bytes(CertificateAuthority.generate("test-ca").cert_pem)
    (directory / "namespace").write_text("ci\n")
    return directory


IN_A_POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def test_no_path_and_no_host_in_a_pod_use_its_service_account(service_account: Path) -> None:
    diagnostics = Diagnostics()

    loaded = config.load(diagnostics, None, IN_A_POD, service_account_dir=service_account)

    assert diagnostics.diagnostics == []
    assert loaded is not None
    assert (loaded.server, loaded.token_file, loaded.namespace) == (
        "https://10.96.0.1:443",
        service_account / "token",
        "ci",
    )


def test_a_kubeconfig_path_wins_over_the_pod_s_service_account(
    kubeconfig: Path, service_account: Path
) -> None:
    loaded = config.load(
        Diagnostics(),
        None,
        {**IN_A_POD, "KUBE_CONFIG_PATH": str(kubeconfig)},
        service_account_dir=service_account,
    )

    assert loaded is not None
    assert loaded.server == "https://127.0.0.1:6443"


def test_a_pod_without_its_service_account_token_says_so_on_config_path(service_account: Path) -> None:
    (service_account / "token").unlink()
    diagnostics = Diagnostics()

    assert config.load(diagnostics, None, IN_A_POD, service_account_dir=service_account) is None

    [diagnostic] = diagnostics.diagnostics
    assert diagnostic.path == ["kubernetes", "config_path"]
    assert "Terraform runs in a pod" in str(diagnostic.detail)
    assert f"cannot read the token {service_account}/token" in str(diagnostic.detail)


def test_credentials_without_a_host_or_kubeconfig_are_an_error_on_host(service_account: Path) -> None:
    diagnostics = Diagnostics()

    assert (
        config.load(diagnostics, None, {**IN_A_POD, "KUBE_TOKEN": "t"}, service_account_dir=service_account)
        is None
    )
    assert errors(diagnostics) == [("Invalid provider setting kubernetes.host", ["kubernetes", "host"])]


@pytest.mark.parametrize(
    ("values", "environ", "summary", "path", "detail"),
    [
        (
            {"config_path": "{missing}"},
            {},
            "Invalid provider setting kubernetes.config_path",
            ["kubernetes", "config_path"],
            "no such file",
        ),
        (
            {"config_paths": ["{kubeconfig}", "{missing}"]},
            {},
            "Invalid provider setting kubernetes.config_paths",
            ["kubernetes", "config_paths"],
            "no such file",
        ),
        (
            {},
            {"KUBE_CONFIG_PATH": "{missing}"},
            "Invalid provider setting kubernetes.config_path",
            ["kubernetes", "config_path"],
            "(the value comes from the environment variable KUBE_CONFIG_PATH)",
        ),
        (
            {"config_path": "{kubeconfig}", "config_context": "nope"},
            {},
            "Invalid provider setting kubernetes.config_context",
            ["kubernetes", "config_context"],
            "context 'nope' not found",
        ),
        (
            {"config_path": "{kubeconfig}"},
            {"KUBE_CTX_AUTH_INFO": "nobody"},
            "Invalid provider setting kubernetes.config_context_auth_info",
            ["kubernetes", "config_context_auth_info"],
            "(the value comes from the environment variable KUBE_CTX_AUTH_INFO)",
        ),
        (
            {"host": "ftp://api"},
            {},
            "Invalid provider setting kubernetes.host",
            ["kubernetes", "host"],
            "only https:// (or http://) servers are supported",
        ),
        (
            {},
            {"KUBE_INSECURE": "maybe"},
            "Invalid provider setting kubernetes.insecure",
            ["kubernetes", "insecure"],
            "KUBE_INSECURE",
        ),
    ],
    ids=[
        "missing-file",
        "missing-one-of-paths",
        "missing-env-file",
        "unknown-context",
        "env-user",
        "bad-host",
        "env-bool",
    ],
)
def test_load_reports_problems_on_the_attribute(
    kubeconfig: Path,
    tmp_path: Path,
    values: dict[str, Any],
    environ: dict[str, str],
    summary: str,
    path: list[str],
    detail: str,
) -> None:
    def fill(value: Any) -> Any:
        if isinstance(value, list):
            return [fill(v) for v in value]
        return value.format(missing=tmp_path / "missing", kubeconfig=kubeconfig)

    diagnostics = Diagnostics()

    loaded = config.load(
        diagnostics,
        {"kubernetes": {k: fill(v) for k, v in values.items()}},
        {k: fill(v) for k, v in environ.items()},
    )

    assert loaded is None
    [diagnostic] = diagnostics.diagnostics
    assert (diagnostic.summary, diagnostic.path) == (summary, path)
    assert detail in str(diagnostic.detail)


def test_every_kubeconfig_field_has_a_provider_attribute() -> None:
    from runtime.core import KubeconfigField

    assert set(config.ATTRIBUTE_OF_FIELD) == {str(field) for field in KubeconfigField}
    assert set(config.ATTRIBUTE_OF_FIELD.values()) <= set(config.KUBERNETES_ATTRIBUTE.object.by_name)
