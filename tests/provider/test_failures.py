"""The diagnostic a person reads when the provider's cluster fails, case by case, on real servers.

The provider's `kubernetes` attributes point at a server that fails for real (a certificate
another CA signed, the playground API server refusing a token or a permission); the `liqo_cluster` data source reads it, and the test checks the whole
diagnostic: its summary, and the detail naming the cluster, what failed and what to do.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from provider.datasources.cluster import ClusterDataSource
from provider.kube import Kube
from runtime.api.kinds import SERVICEACCOUNTS
from runtime.core import Client, ConfigOverrides, load_kubeconfig
from tests import broken_servers
from tests.runtime.serviceaccounts import service_account_kubeconfig

from . import harness

SUMMARY = "Failed to read the Liqo cluster identity in namespace liqo"


def _read(kube: Kube) -> tuple[str, str]:
    try:
        outcome = harness.read_data(
            ClusterDataSource(harness.Provider(kube)), harness.config(ClusterDataSource)
        )
    finally:
        kube.close()
    [(summary, detail, _)] = outcome.errors
    return summary, detail


def _attributes(**attributes: str) -> Kube:
    """The provider configured with `kubernetes = { ... }` attributes alone (no kubeconfig)."""
    return Kube(load_kubeconfig(overrides=ConfigOverrides(**attributes)))  # type: ignore[arg-type]


@pytest.fixture
def token_of_nobody(emulator: Path) -> Iterator[str]:
    """A token of a ServiceAccount with no rights at all, on the emulator."""

    async def issue() -> str:
        async with await Client.from_kubeconfig(emulator) as admin:
            await admin.apply(
                SERVICEACCOUNTS,
                {"metadata": {"name": "nobody", "namespace": "default"}},
                field_manager="test",
            )
            config = await service_account_kubeconfig(admin, emulator, "nobody", namespace="default")
        return str(config["users"][0]["user"]["token"])

    yield asyncio.run(issue())


def _server_and_ca(emulator: Path) -> tuple[str, str]:
    config = yaml.safe_load(emulator.read_text())
    cluster = config["clusters"][0]["cluster"]
    return cluster["server"], base64.b64decode(cluster["certificate-authority-data"]).decode()


async def test_a_server_certificate_of_another_ca_names_its_subject_issuer_and_the_fix() -> None:
    impostor, ours = broken_servers.authority("impostor-ca"), broken_servers.authority("rome-ca")
    async with broken_servers.tls_server(impostor, common_name="kube-apiserver", hosts=("127.0.0.1",)) as url:
        kube = _attributes(host=url, cluster_ca_certificate=ours.pem.decode(), token="t")
        summary, detail = await _in_thread(kube)
    assert summary == SUMMARY
    assert detail == (
        f"The cluster at {url} is not trusted: its certificate (subject CN=kube-apiserver, issued by "
        "CN=impostor-ca) is not signed by a certificate authority this client trusts (unable to get local issuer "
        "certificate). Set the cluster's CA certificate (certificate-authority-data in a kubeconfig) to the CA "
        "that signed it, or check that the address points at the cluster you mean."
    )


def test_a_refused_token_says_whose_credentials_and_to_get_fresh_ones(emulator: Path) -> None:
    server, ca = _server_and_ca(emulator)
    summary, detail = _read(_attributes(host=server, cluster_ca_certificate=ca, token="not-a-token"))
    assert summary == SUMMARY
    assert detail == (
        f"The cluster at {server} does not accept the credentials (a bearer token from the given attributes): 401 "
        "Unauthorized. They may have expired or been revoked, or belong to another cluster: get fresh "
        "credentials for this cluster."
    )


def test_a_missing_permission_quotes_the_api_server_and_says_what_rights_are_needed(
    emulator: Path, token_of_nobody: str
) -> None:
    server, ca = _server_and_ca(emulator)
    summary, detail = _read(_attributes(host=server, cluster_ca_certificate=ca, token=token_of_nobody))
    assert summary == SUMMARY
    assert detail == (
        f'The cluster at {server} forbids it: configmaps "liqo-clusterid-configmap" is forbidden: User '
        '"system:serviceaccount:default:nobody" cannot get resource "configmaps" in API group "" in the '
        'namespace "liqo". Use credentials that may do this (these are a bearer token from the given attributes), '
        "or grant the permission with RBAC. The liqo resources need cluster-admin rights on their cluster."
    )


async def _in_thread(kube: Kube) -> tuple[str, str]:
    """`_read` off the event loop, which serves the broken server meanwhile."""
    return await asyncio.to_thread(_read, kube)
