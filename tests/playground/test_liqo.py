"""The pure parts of `playground.liqo`: `liqo_install`'s options for a playground cluster, the identity."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from playground import liqo
from playground.cluster import Cluster
from playground.spec import ClusterSpec
from runtime.api import constants as c
from runtime.forge.install import InstallOptionsError
from runtime.operations.install import Cidrs


def cluster(tmp_path: Path, name: str = "milan") -> Cluster:
    spec = ClusterSpec(
        name=name,
        pod_cidr="10.200.0.0/16",
        service_cidr="10.96.0.0/12",
        node_network="172.30.5.0/24",
        node_addresses=("172.30.5.2",),
    )
    return Cluster(spec, state_dir=tmp_path)


def test_install_options_take_the_discovered_cidrs_the_labels_and_the_webhook_by_service(
    tmp_path: Path,
) -> None:
    milan = cluster(tmp_path)

    options = liqo.install_options(
        milan,
        Cidrs(pod_cidr="10.201.0.0/16", service_cidr="10.97.0.0/16"),
        cluster_labels={"region": "north"},
    )

    assert uuid.UUID(options.cluster_id)
    assert options.cluster_name == "milan"
    # other clusters' pods reach the API server at the control-plane node's address, as on kind
    assert options.api_server_url == milan.spec.internal_api_server_url == "https://172.30.5.2:6443"
    assert (options.pod_cidr, options.service_cidr) == ("10.201.0.0/16", "10.97.0.0/16")
    assert options.cluster_labels == {"region": "north"}
    assert options.webhook_mode == "service"
    assert options.namespace == liqo.NAMESPACE


def test_install_options_fall_back_on_the_cluster_spec_and_a_fresh_id(tmp_path: Path) -> None:
    milan = cluster(tmp_path)

    first = liqo.install_options(milan, Cidrs(pod_cidr=None, service_cidr=None), cluster_labels={})
    second = liqo.install_options(milan, Cidrs(pod_cidr=None, service_cidr=None), cluster_labels={})

    assert (first.pod_cidr, first.service_cidr) == ("10.200.0.0/16", "10.96.0.0/12")
    assert first.cluster_labels == {}
    assert first.cluster_id != second.cluster_id


def test_install_options_are_validated(tmp_path: Path) -> None:
    with pytest.raises(InstallOptionsError, match=r"^cluster_labels: value 'not valid!' of 'region'"):
        liqo.install_options(
            cluster(tmp_path),
            Cidrs(pod_cidr=None, service_cidr=None),
            cluster_labels={"region": "not valid!"},
        )


def test_identity_from_the_published_configmap_data() -> None:
    data = {
        c.IDENTITY_CLUSTER_ID: "0b8c3f0e-7f1a-4c1e-9d1a-2b3c4d5e6f70",
        c.IDENTITY_CLUSTER_NAME: "milan",
        c.IDENTITY_AUTH_URL: "https://127.0.0.1:30443",
        "extra": "ignored",
    }

    assert liqo.Identity.from_data(data) == liqo.Identity(
        cluster_id="0b8c3f0e-7f1a-4c1e-9d1a-2b3c4d5e6f70",
        cluster_name="milan",
        auth_url="https://127.0.0.1:30443",
    )
