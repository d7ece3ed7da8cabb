"""Every active namespace gets ServiceAccount `default` and ConfigMap `kube-root-ca.crt`, and keeps them."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import yaml

from playground.controllers import serviceaccount
from playground.controllers.serviceaccount import DESCRIPTION, repaired_configmap, root_ca_configmap
from playground.controlplane import ControlPlaneOptions
from runtime.api.kinds import CONFIGMAPS, NAMESPACES, SERVICEACCOUNTS
from runtime.api.resource import Resource
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually, running


def _root_ca(kubeconfig: Path) -> str:
    config = yaml.safe_load(kubeconfig.read_text())
    return base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()


async def _get(client: Client, resource: Resource, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, namespace=namespace)
    except NotFoundError:
        return None


async def _served(client: Client, namespace: str) -> None:
    await eventually(lambda: _get(client, SERVICEACCOUNTS, "default", namespace))
    await eventually(lambda: _get(client, CONFIGMAPS, "kube-root-ca.crt", namespace))


async def test_a_new_namespace_gets_the_default_account_and_the_root_ca(fresh_emulator: Path) -> None:
    root_ca = _root_ca(fresh_emulator)
    options = ControlPlaneOptions(root_ca=root_ca)
    async with running(fresh_emulator, serviceaccount.setup, options=options) as client:
        name = f"t-{uuid.uuid4().hex[:10]}"
        await client.create(NAMESPACES, {"metadata": {"name": name}})

        await _served(client, name)
        configmap = await client.get(CONFIGMAPS, "kube-root-ca.crt", namespace=name)
        assert configmap["data"] == {"ca.crt": root_ca}
        assert configmap["metadata"]["annotations"]["kubernetes.io/description"] == DESCRIPTION
        assert root_ca.startswith("-----BEGIN CERTIFICATE-----")

        # the namespaces that existed before the controllers started are served too
        for existing in ("default", "kube-system"):
            await _served(client, existing)


async def test_deleted_or_edited_objects_are_put_back(fresh_emulator: Path) -> None:
    root_ca = _root_ca(fresh_emulator)
    options = ControlPlaneOptions(root_ca=root_ca)
    async with running(fresh_emulator, serviceaccount.setup, options=options) as client:
        name = f"t-{uuid.uuid4().hex[:10]}"
        await client.create(NAMESPACES, {"metadata": {"name": name}})
        await _served(client, name)
        account = await client.get(SERVICEACCOUNTS, "default", namespace=name)
        configmap = await client.get(CONFIGMAPS, "kube-root-ca.crt", namespace=name)

        await client.delete(SERVICEACCOUNTS, "default", namespace=name)
        await client.delete(CONFIGMAPS, "kube-root-ca.crt", namespace=name)

        async def recreated(resource: Resource, old: dict[str, Any]) -> bool:
            obj = await _get(client, resource, old["metadata"]["name"], name)
            return obj is not None and obj["metadata"]["uid"] != old["metadata"]["uid"]

        await eventually(lambda: recreated(SERVICEACCOUNTS, account))
        await eventually(lambda: recreated(CONFIGMAPS, configmap))

        await client.patch(
            CONFIGMAPS,
            "kube-root-ca.crt",
            {"metadata": {"annotations": None}, "data": {"ca.crt": "tampered", "extra": "x"}},
            namespace=name,
        )

        async def repaired() -> bool:
            cm = await client.get(CONFIGMAPS, "kube-root-ca.crt", namespace=name)
            annotations = cm["metadata"].get("annotations") or {}
            return (
                cm.get("data") == {"ca.crt": root_ca}
                and annotations.get("kubernetes.io/description") == DESCRIPTION
            )

        await eventually(repaired)


async def test_a_terminating_namespace_gets_nothing(fresh_emulator: Path) -> None:
    async with await Client.from_kubeconfig(fresh_emulator) as client:
        name = f"t-{uuid.uuid4().hex[:10]}"
        await client.create(NAMESPACES, {"metadata": {"name": name}})
        await client.delete(NAMESPACES, name)  # no namespace controller: it stays Terminating
    options = ControlPlaneOptions(root_ca=_root_ca(fresh_emulator))
    async with running(fresh_emulator, serviceaccount.setup, options=options) as client:
        marker = f"t-{uuid.uuid4().hex[:10]}"
        await client.create(NAMESPACES, {"metadata": {"name": marker}})
        await _served(client, marker)
        assert await _get(client, SERVICEACCOUNTS, "default", name) is None
        assert await _get(client, CONFIGMAPS, "kube-root-ca.crt", name) is None


def test_a_configmap_with_the_bundle_and_the_description_needs_no_repair() -> None:
    good = root_ca_configmap("ns", "PEM")
    assert repaired_configmap(good, "PEM") is None
    stale = repaired_configmap(good, "NEW")
    assert stale is not None and stale["data"] == {"ca.crt": "NEW"}
    extra = {**good, "data": {"ca.crt": "PEM", "other": "x"}}
    assert (repaired_configmap(extra, "PEM") or {}).get("data") == {"ca.crt": "PEM"}
    bare = {
        **good,
        "metadata": {"name": "kube-root-ca.crt", "namespace": "ns", "annotations": {"keep": "me"}},
    }
    fixed = repaired_configmap(bare, "PEM")
    assert fixed is not None
    assert fixed["metadata"]["annotations"] == {"keep": "me", "kubernetes.io/description": DESCRIPTION}
