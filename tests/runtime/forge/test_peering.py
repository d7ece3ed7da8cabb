"""The ForeignCluster and token Secret a front end writes on the consumer, and reading them back."""

from __future__ import annotations

import base64

import pytest

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS
from runtime.forge import peering

CLUSTER_ID = "4f1e9f4e-2f55-4b4a-9a59-0d3c1b1f8a10"
TOKEN = "ab" * 32


def test_the_token_secret_is_named_after_the_provider_and_holds_the_token() -> None:
    secret = peering.token_secret("milan", TOKEN, namespace="liqo")

    assert secret["metadata"]["name"] == "liqo-token-milan" == peering.token_secret_name("milan")
    assert secret["metadata"]["namespace"] == "liqo"
    assert secret["metadata"]["labels"][c.LABEL_COMPONENT] == c.COMPONENT_PEERING
    assert base64.b64decode(secret["data"][c.TOKEN_SECRET_KEY]).decode() == TOKEN
    assert peering.token_of(secret) == TOKEN


def test_the_foreign_cluster_asks_for_an_out_of_band_peering_with_its_token_secret() -> None:
    body = peering.foreign_cluster(
        "milan",
        cluster_id=CLUSTER_ID,
        auth_url="https://127.0.0.1:30443",
        namespace="liqo",
        resources={"cpu": "2", "nvidia.com/gpu": "1"},
        node_labels={"team": "a"},
    )

    assert (body["apiVersion"], body["kind"]) == (FOREIGNCLUSTERS.api_version, FOREIGNCLUSTERS.kind)
    assert body["metadata"]["name"] == "milan"
    assert body["metadata"]["labels"][c.LABEL_REMOTE_CLUSTER_ID] == CLUSTER_ID
    assert body["spec"] == {
        "clusterID": CLUSTER_ID,
        "clusterName": "milan",
        "peeringType": "OutOfBand",
        "authURL": "https://127.0.0.1:30443",
        "tokenSecretRef": {"name": "liqo-token-milan", "namespace": "liqo"},
        "outgoingPeeringEnabled": True,
        "networkingEnabled": True,
        "podSecurity": "baseline",
        "resources": {"cpu": "2", "nvidia.com/gpu": "1"},
        "nodeLabels": {"team": "a"},
    }


def test_the_foreign_cluster_owns_copies_of_its_inputs() -> None:
    resources = {"cpu": "2"}
    body = peering.foreign_cluster(
        "milan",
        cluster_id=CLUSTER_ID,
        auth_url="https://a",
        namespace="liqo",
        resources=resources,
        node_labels={},
    )
    resources["cpu"] = "3"
    assert body["spec"]["resources"] == {"cpu": "2"}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({c.TOKEN_SECRET_KEY: base64.b64encode(f"{TOKEN}\n".encode()).decode()}, TOKEN),
        ({c.TOKEN_SECRET_KEY: "%%% not base64"}, ""),
        ({c.TOKEN_SECRET_KEY: base64.b64encode(b"\xff\xfe").decode()}, ""),
        ({"other": "eA=="}, ""),
        (None, ""),
    ],
    ids=["newline stripped", "not base64", "not utf-8", "no token key", "no data"],
)
def test_token_of_reads_the_token_or_nothing(data: dict[str, str] | None, expected: str) -> None:
    assert peering.token_of({"data": data}) == expected


def test_token_of_no_secret_is_empty() -> None:
    assert peering.token_of(None) == ""


def test_resources_split_into_the_standard_and_the_extended_ones() -> None:
    standard, extended = peering.split_resources(
        {"cpu": "2", "memory": "4Gi", "pods": 20, "ephemeral-storage": "1Gi", "nvidia.com/gpu": "1"}
    )
    assert standard == {"cpu": "2", "memory": "4Gi", "pods": "20", "ephemeral-storage": "1Gi"}
    assert extended == {"nvidia.com/gpu": "1"}
