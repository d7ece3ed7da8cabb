"""The provider under real Terraform: offline init from the mirror, validate, provider configuration
diagnostics, and the `liqo_cluster` data source against a playground API server."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from runtime.api import constants

from .conftest import Terraform, create_configmap

pytestmark = pytest.mark.slow

HEADER = """terraform {
  required_providers {
    liqo = { source = "liqo-iac/liqo" }
  }
}
"""
# the line number of the first line of a provider body in `config(...)`
PROVIDER_LINE = HEADER.count("\n") + 3


def config(provider_body: str, rest: str = "") -> str:
    return f'{HEADER}\nprovider "liqo" {{\n{provider_body}\n}}\n{rest}'


def flat(text: str) -> str:
    """Terraform wraps diagnostics at 78 columns: compare with whitespace collapsed."""
    return " ".join(text.split())


def identity(name: str) -> dict[str, str]:
    return {
        constants.IDENTITY_CLUSTER_ID: f"id-{name}",
        constants.IDENTITY_CLUSTER_NAME: name,
        constants.IDENTITY_CLUSTER_LABELS: '{"region": "eu-south", "tier": "edge"}',
        constants.IDENTITY_POD_CIDR: "10.200.0.0/16",
        constants.IDENTITY_SERVICE_CIDR: "10.96.0.0/12",
        constants.IDENTITY_VERSION: "0.1.0",
    }


def test_init_installs_from_the_mirror_offline_and_writes_a_lock_file(terraform: Terraform) -> None:
    terraform.write(config('  kubernetes = { config_path = "kubeconfig" }'))
    # a proxy that refuses every connection: any attempt to reach a registry would fail
    result = terraform.init(env={"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})

    assert "Installed liqo-iac/liqo v0.1.0" in result.stdout
    lock = (terraform.workdir / ".terraform.lock.hcl").read_text()
    assert 'provider "registry.terraform.io/liqo-iac/liqo"' in lock
    assert 'version = "0.1.0"' in lock
    assert '"h1:' in lock
    assert list(Path(terraform.env["HOME"]).iterdir()) == [], "nothing is written under $HOME"


def test_validate_accepts_the_provider_blocks_of_the_liqo_guide(terraform: Terraform) -> None:
    terraform.write(
        HEADER
        + """
variable "milan_kubeconfig" {
  type    = string
  default = "./milan-config"
}

provider "liqo" {
  alias = "milan"
  kubernetes = {
    config_path = var.milan_kubeconfig
  }
}

provider "liqo" {
  alias = "rome"
  kubernetes = {
    config_path    = "./rome-config"
    config_context = "kind-rome"
    exec = {
      api_version = "client.authentication.k8s.io/v1"
      command     = "kubelogin"
      args        = ["get-token"]
      env         = { CLUSTER = "rome" }
    }
  }
}

data "liqo_cluster" "milan" {
  provider = liqo.milan
}
"""
    )
    terraform.init()

    result = terraform.validate()

    assert "The configuration is valid" in result.stdout


def test_validate_reports_conflicting_paths_on_the_attribute(terraform: Terraform) -> None:
    terraform.write(
        config(
            '  kubernetes = {\n    config_path  = "a"\n    config_paths = ["a", "b"]\n  }',
            'data "liqo_cluster" "c" {}',
        )
    )
    terraform.init()

    result = terraform.validate(check=False)

    assert result.returncode == 1
    text = flat(result.output)
    assert "Error: Conflicting kubeconfig paths" in text
    assert f'on main.tf line {PROVIDER_LINE + 2}, in provider "liqo":' in text
    assert 'config_paths = ["a", "b"]' in text


@pytest.mark.parametrize(
    ("body", "summary", "line", "shown"),
    [
        (
            '    config_path = "{missing}"',
            "Invalid provider setting kubernetes.config_path",
            1,
            "no such file; check the path",
        ),
        (
            '    config_path    = "{kubeconfig}"\n    config_context = "nope"',
            "Invalid provider setting kubernetes.config_context",
            2,
            "context 'nope' not found",
        ),
        (
            '    config_path        = "{kubeconfig}"\n    client_certificate = "-----BEGIN CERTIFICATE-----"',
            "Missing client_key",
            None,
            "client_certificate is set without client_key",
        ),
        (
            '    config_context = "kind-rome"',
            "No cluster configured",
            None,
            "never falls back to the current kubectl context",
        ),
    ],
    ids=["missing-kubeconfig", "unknown-context", "certificate-without-key", "no-kubeconfig-named"],
)
def test_bad_provider_settings_are_diagnostics_on_their_attribute(
    terraform: Terraform, kubeconfig: Path, body: str, summary: str, line: int | None, shown: str
) -> None:
    filled = body.format(missing=terraform.workdir / "missing", kubeconfig=kubeconfig)
    terraform.write(config(f"  kubernetes = {{\n{filled}\n  }}", 'data "liqo_cluster" "this" {}'))
    terraform.init()

    result = terraform.plan(check=False)

    assert result.returncode == 1
    text = flat(result.output)
    assert f"Error: {summary}" in text
    assert 'with provider["registry.terraform.io/liqo-iac/liqo"]' in text
    if line is not None:
        attribute_line = PROVIDER_LINE + line
        source = filled.splitlines()[line - 1].strip()
        assert (
            f'on main.tf line {attribute_line}, in provider "liqo": {attribute_line}: {flat(source)}' in text
        )
    assert shown in text
    assert "Traceback" not in result.output


def test_plan_without_the_runtime_says_to_install_it_first(terraform: Terraform, kubeconfig: Path) -> None:
    namespace = f"liqo-{uuid.uuid4().hex[:8]}"
    terraform.write(
        config(
            f'  kubernetes = {{ config_path = "{kubeconfig}" }}',
            f'data "liqo_cluster" "this" {{\n  namespace = "{namespace}"\n}}\n',
        )
    )
    terraform.init()

    result = terraform.plan(check=False)

    assert result.returncode == 1
    text = flat(result.output)
    assert "Error: Liqo runtime not installed" in text
    assert "with data.liqo_cluster.this, on main.tf line" in text
    host = f"https://127.0.0.1:{_port(kubeconfig)}"
    assert (
        f"the Liqo runtime is not installed in the cluster at {host} (namespace {namespace}): "
        "apply a liqo_install resource first"
    ) in text


def test_apply_reads_the_cluster_identity_into_outputs(terraform: Terraform, kubeconfig: Path) -> None:
    namespace = f"liqo-{uuid.uuid4().hex[:8]}"
    create_configmap(kubeconfig, namespace, constants.CLUSTER_IDENTITY_CONFIGMAP, identity("rome"))
    terraform.write(
        config(
            f'  kubernetes = {{ config_path = "{kubeconfig}" }}',
            f'data "liqo_cluster" "this" {{\n  namespace = "{namespace}"\n}}\n'
            'output "cluster" { value = data.liqo_cluster.this }\n',
        )
    )
    terraform.init()

    terraform.apply()

    assert terraform.output()["cluster"] == {
        "id": "id-rome",
        "name": "rome",
        "namespace": namespace,
        "labels": {"region": "eu-south", "tier": "edge"},
        "version": "0.1.0",
        "pod_cidr": "10.200.0.0/16",
        "service_cidr": "10.96.0.0/12",
    }
    assert terraform.plan("-detailed-exitcode").returncode == 0
    assert list(Path(terraform.env["HOME"]).iterdir()) == [], "nothing is written under $HOME"


def test_settings_known_only_after_apply_defer_the_cluster(terraform: Terraform, kubeconfig: Path) -> None:
    namespace = f"liqo-{uuid.uuid4().hex[:8]}"
    create_configmap(kubeconfig, namespace, constants.CLUSTER_IDENTITY_CONFIGMAP, identity("milan"))
    provider = "  kubernetes = { config_path = terraform_data.cluster.output }"
    resource = f'resource "terraform_data" "cluster" {{\n  input = "{kubeconfig}"\n}}\n'
    reading = f'data "liqo_cluster" "this" {{\n  namespace = "{namespace}"\n'
    output = 'output "name" { value = data.liqo_cluster.this.name }\n'

    terraform.write(config(provider, resource + reading + "}\n" + output))
    terraform.init()
    early = terraform.plan(check=False)

    assert early.returncode == 1
    assert "kubernetes.config_path will only be known after apply" in flat(early.output)
    assert "Add `depends_on`" in flat(early.output)

    terraform.write(
        config(provider, resource + reading + "  depends_on = [terraform_data.cluster]\n}\n" + output)
    )
    terraform.apply()

    assert terraform.output() == {"name": "milan"}


def _port(kubeconfig: Path) -> str:
    text = kubeconfig.read_text()
    return text.split("server: https://127.0.0.1:", 1)[1].split()[0]
