"""How a component's `kubeconfig` and `context` arguments become a cluster config, and their errors."""

from __future__ import annotations

import pytest

from pulumi_liqo._cluster import ClusterArgumentError, cluster_config

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: dev
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: dev-token}
contexts:
- name: dev
  context: {cluster: dev, user: admin}
current-context: dev
"""


def test_a_kubeconfig_and_a_context_make_the_cluster_config() -> None:
    assert cluster_config(KUBECONFIG, context="dev").server == "https://127.0.0.1:6443"


@pytest.mark.parametrize(
    ("kubeconfig", "context", "argument", "message"),
    [
        ("- a list", None, "kubeconfig", "the value is not a kubeconfig"),
        (KUBECONFIG, "prod", "context", "context 'prod' not found"),
        (KUBECONFIG.replace("dev-token", "[1]"), None, "kubeconfig", "token must be a string"),
    ],
    ids=["not-a-mapping", "unknown-context", "bad-user"],
)
def test_problems_are_reported_against_the_argument(
    kubeconfig: str, context: str | None, argument: str, message: str
) -> None:
    with pytest.raises(ClusterArgumentError) as raised:
        cluster_config(kubeconfig, context=context)
    assert raised.value.argument == argument
    assert str(raised.value).startswith(f"{argument}: ")
    assert message in str(raised.value)
