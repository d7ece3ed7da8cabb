"""The runtime's containers: each runs its component from the image, with no more privilege than it needs.

The image's user is 65532 (`nonroot`): only the gateway and the fabric agent, which
change network configuration, run as root; every other component runs as the image's
user with no capabilities and no privilege escalation, as Liqo's components do. Every
root file system is read-only: what a component writes goes into an emptyDir.
"""

from __future__ import annotations

from runtime.api.image import ENTRYPOINT, runtime_image
from runtime.cmd.dispatch import COMPONENTS
from runtime.fabric import wireguard
from tests.runtime.forge.workloads import container, pod_spec, run_as_user, runtime_workloads

NETWORK_COMPONENTS = {"gateway", "fabric"}
IMAGE_USER = 65532


def test_every_component_has_a_workload_running_it_from_the_runtime_image() -> None:
    workloads = runtime_workloads()
    assert set(workloads) == set(COMPONENTS)
    for name, workload in workloads.items():
        assert container(workload)["command"] == [*ENTRYPOINT, name]
        assert container(workload)["image"] == runtime_image()


def test_the_components_that_change_no_network_run_as_the_images_user_on_a_read_only_root() -> None:
    for name, workload in runtime_workloads().items():
        if name in NETWORK_COMPONENTS:
            continue
        context = container(workload)["securityContext"]
        assert run_as_user(workload) == IMAGE_USER, name
        assert pod_spec(workload)["securityContext"]["runAsNonRoot"] is True, name
        assert context == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        }, name
        assert not pod_spec(workload).get("hostNetwork"), name


def test_the_fabric_agent_is_root_with_net_admin_only_and_a_read_only_root() -> None:
    fabric = runtime_workloads()["fabric"]
    assert pod_spec(fabric)["hostNetwork"] is True
    assert run_as_user(fabric) == 0
    assert container(fabric)["securityContext"] == {
        "runAsUser": 0,
        "runAsNonRoot": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"add": ["NET_ADMIN", "NET_RAW"], "drop": ["ALL"]},
    }


def test_the_gateway_is_root_and_privileged_as_liqos_on_a_read_only_root() -> None:
    # forwarding in /proc/sys and wireguard-go's /dev/net/tun need a privileged container
    gateway = runtime_workloads()["gateway"]
    assert run_as_user(gateway) == 0
    context = container(gateway)["securityContext"]
    assert context["privileged"] is True
    assert context["capabilities"]["add"] == ["NET_ADMIN", "NET_RAW"]
    assert context["readOnlyRootFilesystem"] is True


def test_wireguard_gos_sockets_go_into_an_empty_dir_where_the_gateway_looks_for_them() -> None:
    gateway = runtime_workloads()["gateway"]
    volumes = {volume["name"]: volume for volume in pod_spec(gateway)["volumes"]}
    (mount,) = [m for m in container(gateway)["volumeMounts"] if m["mountPath"] == str(wireguard.SOCKET_DIR)]
    assert volumes[mount["name"]] == {"name": mount["name"], "emptyDir": {}}
    assert not mount.get("readOnly")
