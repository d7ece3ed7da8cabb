"""The fabric's builders (pure) and WireGuard keys."""

from __future__ import annotations

import base64
import subprocess

import pytest

from runtime.api import constants as c
from runtime.forge import networking as forge
from runtime.forge import wireguard


def test_keys_are_wireguards_and_the_public_key_matches_wg_pubkey() -> None:
    private = wireguard.private_key()
    assert len(base64.b64decode(private)) == 32
    public = wireguard.public_key(private)
    assert wireguard.is_public_key(public)
    try:
        expected = subprocess.run(["wg", "pubkey"], input=private, capture_output=True, text=True, check=True)
    except FileNotFoundError:
        pytest.skip("wg is not installed")
    assert public == expected.stdout.strip()


def test_a_private_key_that_is_not_one_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValueError, match="not a WireGuard private key") as raised:
        wireguard.public_key("c2VjcmV0")
    assert "c2VjcmV0" not in str(raised.value)


def test_interface_names_fit_linux_and_differ_per_gateway() -> None:
    first, second = forge.interface_name("uid-1"), forge.interface_name("uid-2")
    assert first != second and len(first) <= 15 and first.startswith("liqo-")


def test_the_gateway_runs_the_runtime_with_its_key_as_a_file_and_the_server_is_a_udp_service() -> None:
    deployment = forge.gateway_deployment(
        "gw-milan",
        namespace="liqo-tenant-milan",
        mode="client",
        remote_cluster_id="id",
        remote_cluster_name="milan",
        interface="liqo-0123456789",
        image="img",
        pod_cidr="10.244.0.0/16",
    )
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["command"] == ["python3", "-m", "runtime", "gateway"]
    assert "--key-file=/etc/wireguard/keys/privateKey" in container["args"]
    assert "--pod-cidr=10.244.0.0/16" in container["args"]
    assert not any("privateKey=" in arg for arg in container["args"])
    assert pod["volumes"][0] == {"name": "keys", "secret": {"secretName": "gw-milan", "defaultMode": 0o400}}
    assert deployment["spec"]["template"]["metadata"]["labels"][c.LABEL_COMPONENT] == "gateway"
    service = forge.gateway_service(
        "gw-rome", namespace="t", remote_cluster_id="id", service_type="NodePort", port=51840
    )
    assert service["spec"]["ports"] == [
        {"name": "wireguard", "port": 51840, "targetPort": forge.GATEWAY_PORT, "protocol": "UDP"}
    ]


def test_a_configuration_carries_only_the_halves_given() -> None:
    mine = forge.Cidrs(pod=("10.244.0.0/16",), external=("10.70.0.0/16",))
    body = forge.configuration("rome", namespace="t", remote_cluster_id="id", remote=mine)
    assert body["spec"] == {"remoteClusterID": "id", "remote": {"cidr": mine.json()}}
    assert forge.Cidrs.of(body["spec"]["remote"]) == mine
    assert forge.Cidrs.of(None) == forge.Cidrs()
