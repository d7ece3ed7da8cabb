"""An installation whose image its nodes cannot get fails at once, naming the image, the pod and the cluster,
instead of waiting out its bound: the kubelet's waiting reasons read from the pods (pure), then on the
playground's nodes (the node agent's reserved image that never pulls; kubelet and containerd on real nodes,
`tests/playground/test_realnodes.py`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from playground import liqo
from playground.cluster import Cluster
from playground.nodeagent.simulated import FAIL_PULL_IMAGE
from playground.testing import Playground
from runtime.api import constants as c
from runtime.operations import install as installer
from runtime.operations.install import ImagePullError, image_failure

#: an image no node has or can get: the node agent's reserved one, a name no registry resolves on real nodes
UNPULLABLE = f"{FAIL_PULL_IMAGE}:0.1.0"


def pod(
    *, init: list[dict[str, Any]] | None = None, main: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": "liqo-auth-7d9c", "namespace": "liqo"},
        "spec": {
            "nodeName": "rome-worker",
            "initContainers": [{"name": "setup", "image": "setup:1"}],
            "containers": [{"name": "auth", "image": "registry.example.com/liqo/runtime:0.1.0"}],
        },
        "status": {"initContainerStatuses": init or [], "containerStatuses": main or []},
    }


def waiting(name: str, reason: str, message: str = "", image: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "state": {"waiting": {"reason": reason, "message": message}}}
    if image is not None:
        entry["image"] = image
    return entry


@pytest.mark.parametrize(
    "reason", ["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "ErrImageInspect"]
)
def test_every_image_failure_of_the_kubelet_is_one(reason: str) -> None:
    failure = image_failure(
        pod(main=[waiting("auth", reason, "not found")]), cluster="the cluster at https://x"
    )

    assert failure is not None
    assert (failure.image, failure.pod, failure.container, failure.node, failure.reason) == (
        "registry.example.com/liqo/runtime:0.1.0",
        "liqo/liqo-auth-7d9c",
        "auth",
        "rome-worker",
        reason,
    )
    assert str(failure) == (
        "pod liqo/liqo-auth-7d9c (container auth, node rome-worker) on the cluster at https://x cannot pull "
        f'image "registry.example.com/liqo/runtime:0.1.0": {reason}: not found'
    )


@pytest.mark.parametrize(
    "status",
    [
        pytest.param({}, id="no-status-yet"),
        pytest.param({"main": [waiting("auth", "ContainerCreating")]}, id="creating"),
        pytest.param({"main": [waiting("auth", "CrashLoopBackOff")]}, id="crash-loop"),
        pytest.param({"main": [{"name": "auth", "state": {"running": {}}}]}, id="running"),
    ],
)
def test_other_states_are_no_image_failure(status: dict[str, Any]) -> None:
    assert image_failure(pod(**status)) is None


def test_an_init_container_s_image_counts_with_the_image_its_status_names() -> None:
    failure = image_failure(pod(init=[waiting("setup", "ErrImagePull", image="docker.io/library/setup:1")]))

    assert failure is not None
    assert (failure.container, failure.image) == ("setup", "docker.io/library/setup:1")
    assert str(failure).startswith("pod liqo/liqo-auth-7d9c (container setup, node rome-worker) cannot pull")


async def failed_install(cluster: Cluster, image: str) -> ImagePullError:
    """Install the runtime from `image` as `liqo_install` does; the error its wait ends with (then purge it)."""
    async with cluster.client() as api:
        cidrs = await installer.discover_cidrs(api)
        options = dataclasses.replace(liqo.install_options(cluster, cidrs, cluster_labels={}), image=image)
        await installer.apply(
            api, options, field_manager=c.FIELD_MANAGER_TERRAFORM, progress=installer.Progress()
        )
        try:
            with pytest.raises(ImagePullError) as caught:
                await installer.wait_ready(api, options, seconds=liqo.INSTALL_SECONDS)
        finally:
            await installer.uninstall(
                api,
                options.namespace,
                force=True,
                purge=True,
                seconds=120,
                field_manager=c.FIELD_MANAGER_TERRAFORM,
            )
    return caught.value


@pytest.mark.slow
async def test_an_install_whose_image_cannot_be_pulled_fails_naming_the_image(playground: Playground) -> None:
    (cluster,) = await playground.up("pull")

    failure = await failed_install(cluster, UNPULLABLE)

    assert failure.image == UNPULLABLE
    assert failure.reason in ("ErrImagePull", "ImagePullBackOff")
    assert failure.pod.startswith("liqo/liqo-")
    assert failure.node.startswith("pull-")
    assert "context 'playground-pull'" in failure.cluster
    assert f'cannot pull image "{UNPULLABLE}"' in str(failure)
