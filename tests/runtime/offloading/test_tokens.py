"""Offloaded pods' ServiceAccount tokens, on emulated clusters: which API server takes them, and their refresh.

rome (consumer) peers with naples (provider) and offloads `work` (twin `work-rome`), as in
`test_pods.py`; the tests play the provider's kubelet where it would read a token (from the
token Secret, or by a TokenRequest for the Pod's ServiceAccount on naples) and present
each token to the API server it is meant for, as the pod would.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
import yaml

from runtime.api import constants as c
from runtime.api.kinds import PODS, SECRETS, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.core import Client, UnauthorizedError
from runtime.forge.serviceaccounts import token_secret_name
from tests.runtime.peering.harness import Cluster, Clusters

from .support import get
from .test_pods import NODE, TWIN, setup

KUBE_API_ACCESS: JSON = {
    "name": "kube-api-access-x1",
    "projected": {
        "sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {
                "downwardAPI": {
                    "items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]
                }
            },
        ]
    },
}


def token_pod(name: str, **annotations: str) -> JSON:
    """A pod on the virtual node mounting its ServiceAccount token as the API server's admission would."""
    mount = {"name": KUBE_API_ACCESS["name"], "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "nodeName": NODE,
            "containers": [{"name": "app", "image": "nginx", "volumeMounts": [mount]}],
            "volumes": [KUBE_API_ACCESS],
        },
    }


async def user_of(cluster: Cluster, token: str) -> str:
    """Who `cluster`'s API server says `token` is (a SelfSubjectReview, as `kubectl auth whoami`)."""
    config: dict[str, Any] = yaml.safe_load(await asyncio.to_thread(cluster.kubeconfig.read_text))
    config["users"][0]["user"] = {"token": token}
    async with await Client.from_kubeconfig_dict(config) as api:
        reviews = await api.resource_for("authentication.k8s.io/v1", "SelfSubjectReview")
        review = await api.create(
            reviews, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
    return str(review["status"]["userInfo"]["username"])


async def secret_token(naples: Cluster, pod: str) -> str | None:
    secret = await get(naples.admin, SECRETS, token_secret_name(pod), namespace=TWIN)
    encoded = ((secret or {}).get("data") or {}).get("token")
    return base64.b64decode(encoded).decode() if encoded else None


@pytest.mark.slow
async def test_the_default_token_is_the_consumers_and_is_refreshed_when_due(clusters: Clusters) -> None:
    rome, naples = await setup(clusters)
    await rome.admin.create(PODS, token_pod("reader"), namespace="work")
    first = await clusters.eventually(lambda: secret_token(naples, "reader"), within=30)
    assert await user_of(rome, first) == "system:serviceaccount:work:default"
    with pytest.raises(UnauthorizedError):
        await user_of(naples, first)

    # the tokens fall due (80% of their lifetime: the Secret says when); new ones replace them
    await naples.admin.patch(
        SECRETS,
        token_secret_name("reader"),
        {"metadata": {"annotations": {c.ANNOTATION_TOKEN_REFRESH_AT: "2001-01-01T00:00:00Z"}}},
        namespace=TWIN,
    )

    async def rotated() -> str | None:
        token = await secret_token(naples, "reader")
        return token if token not in (None, first) else None

    second = await clusters.eventually(rotated, within=30)
    assert await user_of(rome, second) == "system:serviceaccount:work:default"
    secret = await naples.admin.get(SECRETS, token_secret_name("reader"), namespace=TWIN)
    assert secret["metadata"]["annotations"][c.ANNOTATION_TOKEN_REFRESH_AT] > "2001-01-01T00:00:00Z"


@pytest.mark.slow
async def test_a_pod_in_remote_mode_gets_a_token_of_the_providers_api_server(clusters: Clusters) -> None:
    rome, naples = await setup(clusters)
    await clusters.eventually(lambda: get(naples.admin, SERVICEACCOUNTS, "default", namespace=TWIN))
    await rome.admin.create(
        PODS, token_pod("remote", **{c.ANNOTATION_API_SERVER_SUPPORT: "remote"}), namespace="work"
    )
    remote = await clusters.eventually(lambda: get(naples.admin, PODS, "remote", namespace=TWIN), within=30)
    spec = remote["spec"]
    assert spec["serviceAccountName"] == "default" and spec["automountServiceAccountToken"] is False
    [volume] = [v for v in spec["volumes"] if v["name"] == KUBE_API_ACCESS["name"]]
    assert volume["projected"]["sources"] == KUBE_API_ACCESS["projected"]["sources"]
    assert await get(naples.admin, SECRETS, token_secret_name("remote"), namespace=TWIN) is None

    # what naples' kubelet mounts: a token of the Pod's ServiceAccount, bound to the Pod
    issued = await naples.admin.create(
        SERVICEACCOUNTS,
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": 3607,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "remote",
                    "uid": remote["metadata"]["uid"],
                },
            },
        },
        namespace=TWIN,
        name=spec["serviceAccountName"],
        subresource="token",
    )
    token = issued["status"]["token"]
    assert await user_of(naples, token) == f"system:serviceaccount:{TWIN}:default"
    with pytest.raises(UnauthorizedError):
        await user_of(rome, token)


@pytest.mark.slow
async def test_a_pod_with_api_server_support_disabled_gets_no_token(clusters: Clusters) -> None:
    rome, naples = await setup(clusters)
    await rome.admin.create(
        PODS, token_pod("tokenless", **{c.ANNOTATION_API_SERVER_SUPPORT: "disabled"}), namespace="work"
    )
    remote = await clusters.eventually(
        lambda: get(naples.admin, PODS, "tokenless", namespace=TWIN), within=30
    )
    sources = [s for v in remote["spec"]["volumes"] for s in (v.get("projected") or {}).get("sources") or []]
    assert sources and not [s for s in sources if "serviceAccountToken" in s or "secret" in s]
    assert remote["spec"]["automountServiceAccountToken"] is False
    assert await get(naples.admin, SECRETS, token_secret_name("tokenless"), namespace=TWIN) is None
