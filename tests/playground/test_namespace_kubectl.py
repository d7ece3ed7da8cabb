"""`kubectl delete namespace --wait` finishes on a playground cluster, as on kind.

The API server alone only marks a deleted namespace Terminating (tests/apiserver/
test_kubectl.py keeps that as an expected failure of the emulator alone); on a whole
cluster the namespace controller empties it and releases its finalizer, so kubectl's
wait ends with the namespace and everything in it gone. Everything goes through
kubectl and the API, so this passes unchanged in real-binary mode (`KUBEBUILDER_ASSETS`).
"""

from __future__ import annotations

import asyncio
import os
import shutil

import pytest

from playground.testing import Playground
from runtime.api.kinds import CONFIGMAPS, DEPLOYMENTS, NAMESPACES, PODS, SECRETS, SERVICEACCOUNTS, SERVICES
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually

#: kubectl's own limit on the wait; the test fails (rather than hangs) if it is reached
KUBECTL_TIMEOUT = "120s"


async def _kubectl(kubeconfig: str, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        kubeconfig,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "HOME": os.path.dirname(kubeconfig), "KUBECTL_INTERACTIVE_DELETE": "false"},
    )
    out, err = await process.communicate()
    return int(process.returncode or 0), out.decode(), err.decode()


async def _running_pods(api: Client, namespace: str) -> bool:
    pods = (await api.list(PODS, namespace=namespace, label_selector="app=web")).items
    return len(pods) == 2 and all(pod["status"].get("phase") == "Running" for pod in pods)


@pytest.mark.kubectl
@pytest.mark.slow
async def test_kubectl_delete_namespace_waits_until_it_and_its_content_are_gone(
    playground: Playground,
) -> None:
    assert shutil.which("kubectl"), "kubectl is not on PATH"
    (cluster,) = await playground.up("nsdel", nodes=2)
    name = "doomed"
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]},
    }
    async with cluster.client() as api:
        await api.create(NAMESPACES, {"metadata": {"name": name}})
        await api.create(
            DEPLOYMENTS,
            {
                "metadata": {"name": "web"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template},
            },
            namespace=name,
        )
        await api.create(
            SERVICES,
            {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
            namespace=name,
        )
        await api.create(CONFIGMAPS, {"metadata": {"name": "settings"}, "data": {"a": "1"}}, namespace=name)
        await api.create(
            SECRETS, {"metadata": {"name": "password"}, "stringData": {"p": "x"}}, namespace=name
        )
        await eventually(lambda: _running_pods(api, name), within=30)

        code, out, err = await _kubectl(
            str(cluster.kubeconfig),
            "delete",
            "namespace",
            name,
            "--wait=true",
            f"--timeout={KUBECTL_TIMEOUT}",
        )

        assert (code, out) == (0, f'namespace "{name}" deleted\n'), err
        with pytest.raises(NotFoundError):
            await api.get(NAMESPACES, name)
        for resource in (PODS, DEPLOYMENTS, SERVICES, CONFIGMAPS, SECRETS, SERVICEACCOUNTS):
            assert (await api.list(resource, namespace=name)).items == [], resource
