"""The reflection policy on real playground clusters: `liqo_install`'s options down to the virtual kubelet.

rome is installed as `liqo_install` does it with Secrets under `AllowList` and a label and
an annotation key never reflected; it peers with milan and offloads `policy`. The options
travel as flags of rome's controller manager to the virtual kubelet it deploys for milan
(a process pod), which reflects only the Secret annotated `liqo.io/allow-reflection`,
the ConfigMaps but the one annotated `liqo.io/skip-reflection`, and no copy with the
keys never reflected. Taking the allow annotation away removes the copy.
"""

from __future__ import annotations

import asyncio
import base64

import pytest

from playground import liqo
from playground.testing import Playground
from runtime.api import constants as c
from runtime.api.kinds import CONFIGMAPS, DEPLOYMENTS, SECRETS
from runtime.core import Client
from runtime.forge.reflection import ReflectionOptions

from .test_playground_offloading import get, offload, until, virtual_node_ready

pytestmark = [pytest.mark.slow]

NAMESPACE, TWIN = "policy", "policy-rome"
POLICY = ReflectionOptions(
    secret_type="AllowList",
    labels_not_reflected=("team",),
    annotations_not_reflected=("example.com/private",),
)
ALLOW = {c.ANNOTATION_ALLOW_REFLECTION: "true"}


async def virtual_kubelet_args(rome: Client) -> list[str]:
    deployment = await get(rome, DEPLOYMENTS, "liqo-vk-milan", namespace="liqo-tenant-milan")
    if deployment is None:
        return []
    return list(deployment["spec"]["template"]["spec"]["containers"][0].get("args") or [])


async def test_the_reflection_policy_reaches_the_virtual_kubelet(playground: Playground) -> None:
    clusters = await playground.up("rome", "milan")
    rome_identity, milan_identity = await asyncio.gather(
        liqo.install_runtime(clusters["rome"], reflection=POLICY), liqo.install_runtime(clusters["milan"])
    )
    assert rome_identity.cluster_id
    async with clusters["rome"].client() as rome, clusters["milan"].client() as milan:
        await liqo.peer(rome, milan_identity, await liqo.issue_token(milan))
        await until(lambda: virtual_node_ready(rome, "liqo-milan"), "rome: node liqo-milan Ready")
        args = await until(lambda: virtual_kubelet_args(rome), "rome: the virtual kubelet's Deployment")
        for flag in POLICY.args():
            assert flag in args, f"the virtual kubelet runs without {flag}"
        await offload(rome, NAMESPACE)

        secret = {"data": {"password": base64.b64encode(b"s3cret").decode()}}
        await rome.create(SECRETS, {"metadata": {"name": "plain"}, **secret}, namespace=NAMESPACE)
        await rome.create(
            SECRETS, {"metadata": {"name": "shared", "annotations": ALLOW}, **secret}, namespace=NAMESPACE
        )
        await rome.create(
            CONFIGMAPS,
            {
                "metadata": {
                    "name": "settings",
                    "labels": {"team": "a", "app": "shop"},
                    "annotations": {"example.com/private": "x", "note": "kept"},
                },
                "data": {"mode": "fast"},
            },
            namespace=NAMESPACE,
        )
        await rome.create(
            CONFIGMAPS,
            {"metadata": {"name": "home", "annotations": {c.ANNOTATION_SKIP_REFLECTION: "true"}}},
            namespace=NAMESPACE,
        )

        settings = await until(
            lambda: get(milan, CONFIGMAPS, "settings", namespace=TWIN),
            "milan: the copy of ConfigMap settings",
        )
        assert (
            "team" not in settings["metadata"]["labels"] and settings["metadata"]["labels"]["app"] == "shop"
        )
        assert settings["metadata"]["annotations"] == {"note": "kept"}
        await until(lambda: get(milan, SECRETS, "shared", namespace=TWIN), "milan: the copy of Secret shared")
        # by now the reflectors went through every object of the namespace: the others stayed home
        assert await get(milan, SECRETS, "plain", namespace=TWIN) is None
        assert await get(milan, CONFIGMAPS, "home", namespace=TWIN) is None

        await rome.patch(
            SECRETS,
            "shared",
            {"metadata": {"annotations": {c.ANNOTATION_ALLOW_REFLECTION: None}}},
            namespace=NAMESPACE,
        )

        async def shared_gone() -> bool:
            return await get(milan, SECRETS, "shared", namespace=TWIN) is None

        await until(shared_gone, "milan: the copy of Secret shared removed")
