"""Peering on emulated clusters, end to end: ForeignCluster and token in, a Ready virtual node out, and back.

Every cluster runs the whole runtime in-process (see `harness.py`); the tests create only
what `liqo_generate` (the token Secret on the provider) and `liqo_peer` (the token Secret
and the ForeignCluster on the consumer) will create, and look at the outcome through the
API, as a user would.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from runtime.api import constants as c
from runtime.api.crds import FOREIGNCLUSTERS, IDENTITIES, RESOURCESLICES, TENANTS, VIRTUALNODES
from runtime.api.image import package_version
from runtime.api.kinds import (
    CONFIGMAPS,
    DEPLOYMENTS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    SECRETS,
    SERVICEACCOUNTS,
)
from runtime.api.objects import JSON
from runtime.api.quantity import parse_quantity
from runtime.controllers.core import unpeer
from runtime.controllers.core.objects import kubeconfig_of
from runtime.core import Client, ForbiddenError, NotFoundError
from runtime.forge import conditions
from tests import broken_servers
from tests.ports import free_port
from tests.runtime.liqo_docs import FOREIGNCLUSTERS_HEADER, MILAN_ESTABLISHED

from .harness import CONTROLLER_OPTIONS, Cluster, Clusters


async def _get(client: Client, resource: Any, name: str, *, namespace: str | None = None) -> JSON | None:
    try:
        return await client.get(resource, name, namespace=namespace)
    except NotFoundError:
        return None


async def _ready_node(cluster: Cluster, name: str) -> JSON | None:
    node = await _get(cluster.admin, NODES, name)
    ready = conditions.find(((node or {}).get("status") or {}).get("conditions"), "Ready")
    return node if ready is not None and ready.get("status") == "True" else None


async def _established(cluster: Cluster, provider: str) -> JSON | None:
    fc = await _get(cluster.admin, FOREIGNCLUSTERS, provider)
    status = (fc or {}).get("status") or {}
    return status if status.get("outgoingPeering") == "Established" else None


def _ready_condition(status: JSON) -> JSON:
    found = conditions.find(status.get("conditions"), c.CONDITION_READY)
    assert found is not None, status
    return found


async def _condition_reason(cluster: Cluster, provider: str, reason: str) -> JSON | None:
    fc = await _get(cluster.admin, FOREIGNCLUSTERS, provider)
    status = (fc or {}).get("status") or {}
    ready = conditions.find(status.get("conditions"), c.CONDITION_READY)
    return status if ready is not None and ready.get("reason") == reason else None


async def _gone(client: Client, resource: Any, name: str, *, namespace: str | None = None) -> bool:
    return await _get(client, resource, name, namespace=namespace) is None


async def _kubectl(cluster: Cluster, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(cluster.kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": str(cluster.kubeconfig.parent)},
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


def _key_fingerprint(certificate_pem: bytes) -> str:
    spki = (
        x509.load_pem_x509_certificate(certificate_pem)
        .public_key()
        .public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    )
    return "sha256:" + hashlib.sha256(spki).hexdigest()


async def _credential_client(consumer: Cluster, provider: str) -> Client:
    secret = await consumer.admin.get(
        SECRETS, f"{c.CREDENTIAL_SECRET_PREFIX}{provider}", namespace=f"liqo-tenant-{provider}"
    )
    kubeconfig = kubeconfig_of(secret)
    assert kubeconfig is not None
    return await Client.from_kubeconfig_dict(kubeconfig)


@pytest.mark.kubectl
async def test_peering_gives_a_ready_virtual_node_and_unpeering_removes_everything(
    clusters: Clusters,
) -> None:
    rome, milan = await asyncio.gather(
        clusters.cluster("rome"), clusters.cluster("milan", labels={"topology.kubernetes.io/region": "north"})
    )
    await clusters.peer(rome, milan, node_labels={"example.com/tier": "burst"})

    node = await clusters.eventually(lambda: _ready_node(rome, "liqo-milan"))
    labels = node["metadata"]["labels"]
    assert labels[c.LABEL_TYPE] == c.TYPE_VIRTUAL_NODE
    assert labels[c.LABEL_REMOTE_CLUSTER_ID] == milan.cluster_id
    assert c.LABEL_ROLE_AGENT in labels
    assert labels["example.com/tier"] == "burst"
    # milan's cluster labels, as its authentication service advertised them
    assert labels["topology.kubernetes.io/region"] == "north"
    assert {"key": c.TAINT_VIRTUAL_NODE, "effect": c.TAINT_VIRTUAL_NODE_EFFECT}.items() <= next(
        t for t in node["spec"]["taints"] if t["key"] == c.TAINT_VIRTUAL_NODE
    ).items()
    # the capacity is what milan granted: 90 % of its free worker, by default
    grant = await milan.admin.get(RESOURCESLICES, "rome", namespace="liqo-tenant-rome")
    granted = grant["status"]["resources"]
    assert parse_quantity(granted["cpu"]) == parse_quantity("3600m")
    assert parse_quantity(granted["pods"]) == parse_quantity("99")
    for resource in ("cpu", "memory", "pods"):
        assert parse_quantity(node["status"]["capacity"][resource]) == parse_quantity(granted[resource])

    status = await clusters.eventually(lambda: _established(rome, "milan"))
    assert status["role"] == "Provider"
    # these emulated clusters run no gateway pods: the network fabric stays Pending, and the peering is Ready
    # without it (as where a gateway cannot run)
    assert (status["authentication"], status["incomingPeering"], status["networking"]) == (
        "Established",
        "None",
        "Pending",
    )
    assert _ready_condition(status)["status"] == "True"
    assert status["virtualNodes"] == ["liqo-milan"]
    assert status["tenantNamespace"] == {"local": "liqo-tenant-milan", "remote": "liqo-tenant-rome"}
    assert status["apiServerUrl"] == milan.api_server_url
    assert status["remoteVersion"] == package_version()
    # milan's authentication service key, trusted on this first contact
    assert milan.auth_certificate is not None
    assert status["authServiceKeyFingerprint"] == _key_fingerprint(milan.auth_certificate)
    reasons = {
        cond["type"]: cond["reason"]
        for module in ("authentication", "offloading")
        for cond in status["modules"][module]["conditions"]
    }
    assert reasons == {
        c.CONDITION_AUTHENTICATED: c.REASON_CREDENTIAL_ISSUED,
        c.CONDITION_RESOURCES_GRANTED: c.REASON_RESOURCES_ACCEPTED,
        c.CONDITION_VIRTUAL_NODE_READY: c.REASON_VIRTUAL_NODE_READY,
    }

    # `kubectl get foreignclusters` reads like Liqo's documentation
    table = (await _kubectl(rome, "get", "foreignclusters")).splitlines()
    assert table[0].split() == FOREIGNCLUSTERS_HEADER
    assert table[1].split()[:6] == [*MILAN_ESTABLISHED[:4], "Pending", MILAN_ESTABLISHED[5]]

    # the consumer's credential reaches only its tenant namespace on the provider
    async with await _credential_client(rome, "milan") as credential:
        await credential.list(RESOURCESLICES, namespace="liqo-tenant-rome")
        for forbidden in (
            credential.list(PODS, namespace="default"),
            credential.list(SECRETS, namespace=c.DEFAULT_NAMESPACE),
            credential.list(NAMESPACES),
            credential.list(RESOURCESLICES),
            credential.get(SECRETS, "liqo-consumer", namespace="liqo-tenant-rome"),
        ):
            with pytest.raises(ForbiddenError):
                await forbidden

    # unpeer: everything goes, on both sides
    await rome.admin.delete(FOREIGNCLUSTERS, "milan")
    await clusters.eventually(lambda: _gone(rome.admin, FOREIGNCLUSTERS, "milan"))
    await clusters.eventually(lambda: _gone(rome.admin, NODES, "liqo-milan"))
    await clusters.eventually(lambda: _gone(rome.admin, NAMESPACES, "liqo-tenant-milan"))
    await clusters.eventually(lambda: _gone(milan.admin, NAMESPACES, "liqo-tenant-rome"))
    assert (await milan.admin.list(TENANTS)).items == []
    assert (await milan.admin.list(RESOURCESLICES)).items == []
    assert (await rome.admin.list(IDENTITIES)).items == []


@pytest.mark.slow
async def test_an_unpeer_deletes_the_virtual_node_and_says_unpeered_once(
    clusters: Clusters, caplog: pytest.LogCaptureFixture
) -> None:
    """Reconciles that read the caches before they show the unpeer's own writes repeat nothing."""
    rome, milan = await asyncio.gather(clusters.cluster("rome"), clusters.cluster("milan"))
    await clusters.peer(rome, milan)
    await clusters.eventually(lambda: _ready_node(rome, "liqo-milan"))
    caplog.set_level(logging.INFO, logger=unpeer.__name__)

    await rome.admin.delete(FOREIGNCLUSTERS, "milan")
    await clusters.eventually(lambda: _gone(rome.admin, FOREIGNCLUSTERS, "milan"))
    # the tenant namespace goes after the finalizer, so every reconcile the unpeer caused has run by then
    await clusters.eventually(lambda: _gone(rome.admin, NAMESPACES, "liqo-tenant-milan"))

    said = [r.getMessage() for r in caplog.records if r.name == unpeer.__name__]
    assert said.count("milan: deleting the VirtualNode liqo-tenant-milan/milan") == 1, said
    assert said.count("milan: unpeered") == 1, said


@pytest.mark.slow
async def test_bidirectional_peering_is_consumer_and_provider_on_both_sides(clusters: Clusters) -> None:
    rome, milan = await asyncio.gather(clusters.cluster("rome"), clusters.cluster("milan"))
    await asyncio.gather(clusters.peer(rome, milan), clusters.peer(milan, rome))

    await clusters.eventually(lambda: _ready_node(rome, "liqo-milan"))
    await clusters.eventually(lambda: _ready_node(milan, "liqo-rome"))
    for here, there in ((rome, "milan"), (milan, "rome")):
        status = await clusters.eventually(functools.partial(_established, here, there))
        status = await clusters.eventually(functools.partial(_incoming, here, there))
        assert status["role"] == "ConsumerAndProvider"

    # ending one direction leaves the other one alone
    await rome.admin.delete(FOREIGNCLUSTERS, "milan")
    await clusters.eventually(lambda: _gone(rome.admin, FOREIGNCLUSTERS, "milan"))
    await clusters.eventually(lambda: _gone(rome.admin, NODES, "liqo-milan"))
    await clusters.eventually(lambda: _not_incoming(milan, "rome"))
    # milan removed rome's tenant (its ServiceAccount goes last) from the namespace both directions share
    await clusters.eventually(
        lambda: _gone(milan.admin, SERVICEACCOUNTS, "liqo-consumer", namespace="liqo-tenant-rome")
    )
    assert await _ready_node(milan, "liqo-rome") is not None
    assert await _get(milan.admin, IDENTITIES, "rome", namespace="liqo-tenant-rome") is not None
    status = await _established(milan, "rome")
    assert status is not None and status["role"] == "Provider"


async def _incoming(cluster: Cluster, provider: str) -> JSON | None:
    status = await _established(cluster, provider)
    return status if status is not None and status.get("incomingPeering") == "Established" else None


async def _not_incoming(cluster: Cluster, provider: str) -> JSON | None:
    status = await _established(cluster, provider)
    return status if status is not None and status.get("incomingPeering") == "None" else None


@pytest.mark.slow
async def test_one_consumer_with_two_providers_has_two_virtual_nodes(clusters: Clusters) -> None:
    venice, florence, naples = await asyncio.gather(
        clusters.cluster("venice"), clusters.cluster("florence"), clusters.cluster("naples")
    )
    # florence has no GPU to give; naples has less cpu than asked for
    await asyncio.gather(
        clusters.peer(venice, florence, resources={"nvidia.com/gpu": "1"}),
        clusters.peer(venice, naples, resources={"cpu": "100", "memory": "1Gi"}),
    )

    denied = await clusters.eventually(
        lambda: _condition_reason(venice, "florence", c.REASON_RESOURCES_DENIED)
    )
    assert "nvidia.com/gpu" in _ready_condition(denied)["message"]
    assert (denied["authentication"], denied["outgoingPeering"], denied["virtualNodes"]) == (
        "Established",
        "Error",
        [],
    )
    node = await clusters.eventually(lambda: _ready_node(venice, "liqo-naples"))
    assert parse_quantity(node["status"]["capacity"]["cpu"]) == parse_quantity("3600m")
    assert parse_quantity(node["status"]["capacity"]["memory"]) == parse_quantity("1Gi")
    resized = await clusters.eventually(lambda: _established(venice, "naples"))
    offloading = resized["modules"]["offloading"]["conditions"]
    granted = conditions.find(offloading, c.CONDITION_RESOURCES_GRANTED)
    assert (
        granted is not None
        and granted["reason"] == c.REASON_RESOURCES_RESIZED
        and "cpu" in granted["message"]
    )

    # asking florence for its default share instead peers as well
    await venice.admin.patch(FOREIGNCLUSTERS, "florence", {"spec": {"resources": None}})
    node = await clusters.eventually(lambda: _ready_node(venice, "liqo-florence"))
    assert node["metadata"]["labels"][c.LABEL_REMOTE_CLUSTER_ID] == florence.cluster_id
    virtual = await venice.admin.list(NODES, label_selector=f"{c.LABEL_TYPE}={c.TYPE_VIRTUAL_NODE}")
    assert sorted(n["metadata"]["name"] for n in virtual.items) == ["liqo-florence", "liqo-naples"]


@pytest.mark.slow
async def test_each_failure_gives_a_condition_that_says_what_to_fix(clusters: Clusters) -> None:
    rome, milan, florence, turin = await asyncio.gather(
        clusters.cluster("rome"),
        clusters.cluster("milan"),
        clusters.cluster("florence"),
        clusters.cluster("turin", runtime=False),
    )
    assert milan.auth_url is not None
    # a token milan never issued
    await clusters.peer(rome, milan, token="00" * 32)
    # florence's id, but milan's authentication URL
    await clusters.peer(rome, florence, auth_url=milan.auth_url)
    # nothing listens there
    closed = f"https://127.0.0.1:{free_port()}"
    await clusters.foreign_cluster(
        rome, "naples", cluster_id="8e9f0a1b-2c3d-4e5f-8a7b-6c5d4e3f2a1b", auth_url=closed, token="11" * 32
    )
    # a cluster without the runtime: its URL answers, but not as an authentication service
    await clusters.peer(rome, turin, token="22" * 32, auth_url=turin.api_server_url)
    # a name that resolves nowhere
    await clusters.foreign_cluster(
        rome,
        "genoa",
        cluster_id="5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d",
        auth_url=broken_servers.UNRESOLVABLE_URL,
        token="33" * 32,
    )

    expected = {
        "milan": (
            c.REASON_AUTHENTICATION_FAILED,
            ["rejected the peering token", "liqo_generate", "cluster_token"],
        ),
        "florence": (c.REASON_CLUSTER_ID_MISMATCH, [milan.cluster_id, florence.cluster_id]),
        "naples": (
            c.REASON_PROVIDER_UNREACHABLE,
            [
                f"the authentication service at {closed} cannot be reached: the connection was refused (nothing"
                " listens there) — check that naples is up and that its auth_url is reachable from this cluster;"
                " retrying"
            ],
        ),
        "genoa": (
            c.REASON_PROVIDER_UNREACHABLE,
            ["cannot be reached: the name no-such-cluster.invalid does not resolve ("],
        ),
        "turin": (
            c.REASON_RUNTIME_NOT_INSTALLED,
            ["is not a Liqo authentication service", "installed on turin"],
        ),
    }
    for provider, (reason, words) in expected.items():
        status = await clusters.eventually(functools.partial(_condition_reason, rome, provider, reason))
        message = _ready_condition(status)["message"]
        for word in words:
            assert word in message, (provider, message)
        assert (status["authentication"], status["outgoingPeering"]) == ("Error", "Error")
        module = conditions.find(status["modules"]["authentication"]["conditions"], c.CONDITION_AUTHENTICATED)
        assert module is not None and module["reason"] == reason and module["status"] == "Error"
    events = await rome.admin.list(EVENTS, namespace="default")
    warnings = {e["reason"] for e in events.items if e["type"] == "Warning"}
    assert warnings >= {reason for reason, _ in expected.values()}

    # none of them holds up its deletion
    for provider in expected:
        await rome.admin.delete(FOREIGNCLUSTERS, provider)
    for provider in expected:
        await clusters.eventually(functools.partial(_gone, rome.admin, FOREIGNCLUSTERS, provider))


@pytest.mark.slow
async def test_unpeering_from_a_provider_that_is_gone_finishes_after_the_bound(clusters: Clusters) -> None:
    rome, milan = await asyncio.gather(clusters.cluster("rome"), clusters.cluster("milan"))
    await clusters.peer(rome, milan)
    await clusters.eventually(lambda: _ready_node(rome, "liqo-milan"))
    await clusters.stop(milan)

    await rome.admin.delete(FOREIGNCLUSTERS, "milan")

    async def disconnecting() -> bool:
        fc = await _get(rome.admin, FOREIGNCLUSTERS, "milan")
        return fc is not None and fc["status"]["outgoingPeering"] == "Disconnecting"

    # the finalizer holds the ForeignCluster while it waits for milan, within the bound
    await clusters.eventually(disconnecting)
    await clusters.eventually(
        lambda: _gone(rome.admin, FOREIGNCLUSTERS, "milan"), within=CONTROLLER_OPTIONS.unpeer_timeout + 15
    )
    await clusters.eventually(lambda: _gone(rome.admin, NODES, "liqo-milan"))
    await clusters.eventually(lambda: _gone(rome.admin, NAMESPACES, "liqo-tenant-milan"))
    events = await rome.admin.list(EVENTS, namespace="default")
    forced = [e for e in events.items if e["reason"] == "UnpeerForced"]
    assert len(forced) == 1 and forced[0]["type"] == "Warning"
    message = forced[0]["message"]
    assert "liqo-tenant-rome" in message and "milan" in message


async def _renewed(consumer: Cluster, provider: str, first_token: str) -> JSON | None:
    identity = await _get(consumer.admin, IDENTITIES, provider, namespace=f"liqo-tenant-{provider}")
    renewed = conditions.find(
        ((identity or {}).get("status") or {}).get("conditions"), c.CONDITION_CREDENTIAL_RENEWED
    )
    if renewed is None or renewed["reason"] != "Renewed":
        return None
    return identity if await _credential_token(consumer, provider) != first_token else None


async def _credential_token(consumer: Cluster, provider: str) -> str:
    secret = await consumer.admin.get(
        SECRETS, f"{c.CREDENTIAL_SECRET_PREFIX}{provider}", namespace=f"liqo-tenant-{provider}"
    )
    kubeconfig = kubeconfig_of(secret)
    assert kubeconfig is not None
    return str(kubeconfig["users"][0]["user"]["token"])


async def test_credentials_are_renewed_and_a_restarted_controller_manager_changes_nothing(
    tmp_path: Path,
) -> None:
    # the auth service issues 600 s credentials: renew them after about 2 s
    options = dataclasses.replace(CONTROLLER_OPTIONS, credential_renew_fraction=0.003)
    async with Clusters(tmp_path, options=options) as clusters:
        rome, milan = await asyncio.gather(clusters.cluster("rome"), clusters.cluster("milan"))
        # networking off: its step would keep moving while the peering is Ready (no gateways run here)
        await clusters.peer(rome, milan, networking=False)
        node = await clusters.eventually(lambda: _ready_node(rome, "liqo-milan"))
        first = await _credential_token(rome, "milan")

        identity = await clusters.eventually(lambda: _renewed(rome, "milan", first))
        assert identity["status"]["renewAfter"] < identity["status"]["expiresAt"]
        async with await _credential_client(rome, "milan") as renewed:
            await renewed.list(RESOURCESLICES, namespace="liqo-tenant-rome")

        before = await clusters.eventually(lambda: _established(rome, "milan"))
        await clusters.restart_controller_manager(rome)
        await asyncio.sleep(1.0)
        assert await _established(rome, "milan") == before
        again = await _ready_node(rome, "liqo-milan")
        assert again is not None and again["metadata"]["uid"] == node["metadata"]["uid"]


@pytest.mark.slow
async def test_an_auth_service_with_another_key_is_refused_until_a_user_trusts_it(clusters: Clusters) -> None:
    rome, milan = await asyncio.gather(clusters.cluster("rome"), clusters.cluster("milan"))
    await clusters.peer(rome, milan)
    first = await clusters.eventually(lambda: _established(rome, "milan"))
    assert milan.auth_certificate is not None
    trusted = _key_fingerprint(milan.auth_certificate)
    assert first["authServiceKeyFingerprint"] == trusted

    # a restart keeps the key: the service is still trusted
    await clusters.restart_auth_service(milan)
    assert _key_fingerprint(milan.auth_certificate) == trusted

    # milan's key replaced (as an impostor's would be), and rome has to authenticate again
    await milan.admin.delete(SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace=c.DEFAULT_NAMESPACE)
    await clusters.eventually(
        lambda: _get(milan.admin, SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace=c.DEFAULT_NAMESPACE)
    )
    await clusters.restart_auth_service(milan)
    replaced = _key_fingerprint(milan.auth_certificate)
    assert replaced != trusted
    await rome.admin.delete(IDENTITIES, "milan", namespace="liqo-tenant-milan")

    refused = await clusters.eventually(
        lambda: _condition_reason(rome, "milan", c.REASON_AUTH_SERVICE_KEY_CHANGED), within=20
    )
    message = _ready_condition(refused)["message"]
    for words in (replaced, trusted, f"{c.ANNOTATION_TRUST_AUTH_SERVICE_KEY}={replaced}"):
        assert words in message, message
    assert refused["authServiceKeyFingerprint"] == trusted
    assert refused["authentication"] == "Error"

    # the user trusts the new key by its fingerprint; the next contact checks that one
    await rome.admin.patch(
        FOREIGNCLUSTERS,
        "milan",
        {"metadata": {"annotations": {c.ANNOTATION_TRUST_AUTH_SERVICE_KEY: replaced}}},
    )

    async def trusting_the_new_key() -> JSON | None:
        status = await _established(rome, "milan")
        return status if status is not None and status["authServiceKeyFingerprint"] == replaced else None

    await clusters.eventually(trusting_the_new_key)


async def test_the_key_liqo_generate_publishes_is_pinned_from_the_first_contact(clusters: Clusters) -> None:
    """With `liqo_peer`'s auth_key_fingerprint, even the first contact is authenticated: another key at the
    authURL (an impostor in the path) is refused before the token is shown, with both fingerprints named."""
    rome, milan = await asyncio.gather(clusters.cluster("rome"), clusters.cluster("milan"))
    identity = await milan.admin.get(CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=c.DEFAULT_NAMESPACE)
    published = identity["data"][c.IDENTITY_AUTH_KEY]
    assert milan.auth_certificate is not None
    assert published == _key_fingerprint(milan.auth_certificate)
    impostor = "sha256:" + "0" * 64
    await clusters.peer(rome, milan, auth_key_fingerprint=impostor)

    refused = await clusters.eventually(
        lambda: _condition_reason(rome, "milan", c.REASON_AUTH_SERVICE_KEY_CHANGED), within=20
    )
    message = _ready_condition(refused)["message"]
    for words in ("milan", published, impostor):
        assert words in message, message
    assert (await milan.admin.list(TENANTS)).items == []

    await rome.admin.patch(
        FOREIGNCLUSTERS,
        "milan",
        {"metadata": {"annotations": {c.ANNOTATION_TRUST_AUTH_SERVICE_KEY: published}}},
    )
    established = await clusters.eventually(lambda: _established(rome, "milan"))
    assert established["authServiceKeyFingerprint"] == published


@pytest.mark.slow
@pytest.mark.kubectl
async def test_a_replaced_auth_service_key_is_trusted_again_by_the_annotation_while_the_identity_is_held(
    tmp_path: Path,
) -> None:
    # renewals every ~2 s: the consumer keeps its Identity and meets the new key when it renews
    options = dataclasses.replace(CONTROLLER_OPTIONS, credential_renew_fraction=0.003)
    async with Clusters(tmp_path, options=options) as clusters:
        rome, milan = await asyncio.gather(clusters.cluster("rome"), clusters.cluster("milan"))
        await clusters.peer(rome, milan)
        await clusters.eventually(lambda: _established(rome, "milan"))
        assert milan.auth_certificate is not None
        trusted = _key_fingerprint(milan.auth_certificate)

        await milan.admin.delete(SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace=c.DEFAULT_NAMESPACE)
        await clusters.eventually(
            lambda: _get(milan.admin, SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace=c.DEFAULT_NAMESPACE)
        )
        await clusters.restart_auth_service(milan)
        replaced = _key_fingerprint(milan.auth_certificate)
        assert replaced != trusted

        # the renewal meets the new key: the ForeignCluster says so, with the command that trusts it
        refused = await clusters.eventually(
            lambda: _condition_reason(rome, "milan", c.REASON_AUTH_SERVICE_KEY_CHANGED), within=30
        )
        message = _ready_condition(refused)["message"]
        assert trusted in message, message
        command = message.rpartition("or run ")[2]
        assert command == (
            f"kubectl annotate foreignclusters.core.liqo.io milan liqo.io/trust-auth-service-key={replaced}"
            " --overwrite"
        ), message
        assert refused["authServiceKeyFingerprint"] == trusted
        assert refused["authentication"] == "Error"
        identity = await rome.admin.get(IDENTITIES, "milan", namespace="liqo-tenant-milan")
        assert identity["spec"]["authServiceKeyFingerprint"] == trusted

        # the person types what the message says; the Identity is not deleted
        await _kubectl(rome, *command.split()[1:])

        async def trusting_the_new_key() -> JSON | None:
            status = await _established(rome, "milan")
            return status if status is not None and status["authServiceKeyFingerprint"] == replaced else None

        await clusters.eventually(trusting_the_new_key, within=30)

        async def renewed_with_the_new_key() -> JSON | None:
            found = await _get(rome.admin, IDENTITIES, "milan", namespace="liqo-tenant-milan")
            renewal = conditions.find(
                ((found or {}).get("status") or {}).get("conditions"), c.CONDITION_CREDENTIAL_RENEWED
            )
            pinned = ((found or {}).get("spec") or {}).get("authServiceKeyFingerprint")
            return (
                found if renewal is not None and renewal["status"] == "True" and pinned == replaced else None
            )

        await clusters.eventually(renewed_with_the_new_key, within=30)
        renewed_token = await _credential_token(rome, "milan")
        # a later renewal and reconcile write nothing old back
        await clusters.eventually(lambda: _renewed(rome, "milan", renewed_token), within=30)
        status = await _established(rome, "milan")
        assert status is not None and status["authServiceKeyFingerprint"] == replaced


@pytest.mark.slow
async def test_disabling_outgoing_peering_deletes_the_virtual_node_and_its_node(clusters: Clusters) -> None:
    rome, milan = await asyncio.gather(clusters.cluster("rome"), clusters.cluster("milan"))
    await clusters.peer(rome, milan)
    await clusters.eventually(lambda: _ready_node(rome, "liqo-milan"))
    await clusters.eventually(lambda: _get(rome.admin, LEASES, "liqo-milan", namespace="kube-node-lease"))

    await rome.admin.patch(FOREIGNCLUSTERS, "milan", {"spec": {"outgoingPeeringEnabled": False}})

    # the VirtualNode goes, and with it its virtual kubelet (which exits cleanly), the Node and its Lease
    tenant = "liqo-tenant-milan"
    await clusters.eventually(lambda: _gone(rome.admin, VIRTUALNODES, "milan", namespace=tenant))
    await clusters.eventually(lambda: _gone(rome.admin, DEPLOYMENTS, "liqo-vk-milan", namespace=tenant))
    await clusters.eventually(lambda: _gone(rome.admin, NODES, "liqo-milan"))
    await clusters.eventually(lambda: _gone(rome.admin, LEASES, "liqo-milan", namespace="kube-node-lease"))

    async def withdrawn() -> JSON | None:
        fc = await _get(rome.admin, FOREIGNCLUSTERS, "milan")
        status = (fc or {}).get("status") or {}
        return (
            status if status.get("outgoingPeering") == "None" and status.get("virtualNodes") == [] else None
        )

    await clusters.eventually(withdrawn)
