"""`make demo-real` end to end: Liqo's quick start on real nodes, then `terraform destroy` and `playground down`.

`python -m playground.demo --real` as the Makefile runs it (a state dir, mirror and HOME
of the test's own): two clusters of real nodes (containerd, kubelet, kube-proxy,
CoreDNS), the runtime image and the test images built from Debian packages and loaded,
`terraform apply` of examples/terraform. Then, as a user would check it: every runtime
component (controller manager, auth service, webhook, fabric agent, virtual kubelet,
gateways) a container Running on a real node; the offloaded nginx Running as containers
on milan; names resolved across the peering both ways (a pod of rome reaches the
offloaded nginx by `nginx.liqo-demo`, an offloaded pod reaches a Service of rome by its
name through its copy on milan); `kubectl logs`, `exec` (stdin, exit code, a TTY),
`attach` and `port-forward` of an offloaded pod from rome, through the virtual kubelet; then `terraform destroy` removes the runtime's pods, and
`playground down` leaves no process, mount, cgroup, network namespace or rule on the
host. Skips without a `KUBEBUILDER_ASSETS` folder that runs real nodes (make real-k8s).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from playground.cluster import STATE_DIR_ENV, Cluster
from playground.demo import CLUSTERS, CONSUMER, OFFLOADED, PROVIDER, TWIN
from playground.network import names
from playground.realbinary import Assets, find_assets
from playground.realnode import mountns, tunables
from runtime.api import constants as c
from runtime.api.kinds import NAMESPACES, NODES, PODS, SERVICES
from runtime.api.objects import JSON
from runtime.core import Client
from tests.playground.conftest import eventually
from tests.playground.test_realnodes import host_rules, node_leftovers
from tools.release.executable import cache_root
from tools.release.mirror import CLI_CONFIG
from tools.release.mirror import ENVIRONMENT as MIRROR_ENV

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: the bound of the whole demo (about two minutes here once the images and the provider are cached)
DEMO_TIMEOUT = 900
WELCOME = "<title>Welcome to nginx!</title>"


@pytest.fixture
def assets() -> Assets:
    found = find_assets(os.environ)
    if found is None or not found.runs_real_nodes or found.kubectl is None:
        pytest.skip(
            "make demo-real needs KUBEBUILDER_ASSETS naming a folder that runs real nodes (make real-k8s)"
        )
    return found


def _run(argv: list[str], *, env: dict[str, str], cwd: Path = ROOT, timeout: float = 300) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(argv)}:\n{output}"
    return output


def _kubectl(argv: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, check=False)


def _is_running(pod: JSON) -> bool:
    return bool(pod["status"].get("phase") == "Running") and all(
        status.get("ready") for status in pod["status"].get("containerStatuses") or [{}]
    )


async def _containers_on_real_nodes(api: Client, cluster: str) -> dict[str, str]:
    """Every pod of the runtime in `cluster` (namespace liqo and the tenant namespaces): its node, checked to be a
    Running container on a real node of `cluster`."""
    nodes = {node["metadata"]["name"]: node for node in (await api.list(NODES)).items}
    placed = {}
    for pod in (await api.list(PODS)).items:
        namespace = pod["metadata"]["namespace"]
        if namespace != c.DEFAULT_NAMESPACE and not namespace.startswith("liqo-tenant-"):
            continue
        name, node = pod["metadata"]["name"], pod["spec"].get("nodeName", "")
        assert _is_running(pod), (cluster, name, pod["status"])
        assert node.startswith(f"{cluster}-"), (cluster, name, node)
        assert nodes[node]["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
        assert all(
            status["containerID"].startswith("containerd://") for status in pod["status"]["containerStatuses"]
        ), (cluster, name)
        placed[f"{namespace}/{name}"] = node
    return placed


async def _offloaded_fetch_by_name(rome: Client, milan: Client, kubectl: list[str]) -> None:
    """A pod offloaded to milan fetches from `home`, a Service of rome's pod, by its name (its copy on milan)."""
    home = {
        "metadata": {"name": "home", "labels": {"app": "home"}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": f"{CONSUMER}-control-plane"},
            "containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}],
        },
    }
    await rome.create(PODS, home, namespace=OFFLOADED)
    service = {"metadata": {"name": "home"}, "spec": {"selector": {"app": "home"}, "ports": [{"port": 80}]}}
    await rome.create(SERVICES, service, namespace=OFFLOADED)
    fetch = {
        "metadata": {"name": "to-home"},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE},
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "curl",
                    "image": "curlimages/curl:8.11.1",
                    "args": [
                        "-sS",
                        "--retry",
                        "20",
                        "--retry-connrefused",
                        "--retry-delay",
                        "1",
                        "http://home/",
                    ],
                }
            ],
        },
    }
    await rome.create(PODS, fetch, namespace=OFFLOADED)

    async def done() -> str | None:
        phase = (await rome.get(PODS, "to-home", namespace=OFFLOADED))["status"].get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    await eventually(done, within=120, every=1)
    # its log, read on rome through the virtual kubelet: the page of rome's pod
    log = await asyncio.to_thread(_run, [*kubectl, "logs", "-n", OFFLOADED, "to-home"], env=dict(os.environ))
    assert WELCOME in log
    assert (await rome.get(PODS, "to-home", namespace=OFFLOADED))["status"]["phase"] == "Succeeded"
    twin = await milan.get(PODS, "to-home", namespace=TWIN)
    assert twin["spec"]["nodeName"] == f"{PROVIDER}-control-plane"


async def _exec_offloaded(rome: Client, milan: Client, kubectl: list[str]) -> None:
    """`kubectl exec` of an offloaded nginx from rome runs in its twin pod on milan, exit code and stdin too."""
    pods = (await rome.list(PODS, namespace=OFFLOADED, label_selector="app=nginx")).items
    name = pods[0]["metadata"]["name"]
    twin_ip = (await milan.get(PODS, name, namespace=TWIN))["status"]["podIP"]
    shown = await asyncio.to_thread(
        _run,
        [*kubectl, "exec", "-n", OFFLOADED, name, "--", "ip", "-4", "-o", "addr", "show", "dev", "eth0"],
        env=dict(os.environ),
    )
    assert f"inet {twin_ip}/24" in shown
    # stdin reaches the command (`ip -batch -` reads its commands there)
    batch = await asyncio.to_thread(
        _kubectl,
        [*kubectl, "exec", "-i", "-n", OFFLOADED, name, "--", "ip", "-4", "-o", "-batch", "-"],
        "addr show dev eth0\n",
    )
    assert f"inet {twin_ip}/24" in batch.stdout, batch.stderr
    failing = await asyncio.to_thread(
        _kubectl, [*kubectl, "exec", "-n", OFFLOADED, name, "--", "ip", "link", "show", "nosuch"]
    )
    assert failing.returncode == 1, failing.stderr
    assert 'Device "nosuch" does not exist.' in failing.stderr


def _exec_in_a_terminal(argv: list[str]) -> str:
    """What `argv` (a `kubectl exec -it`) printed, run with a pseudo-terminal as its stdin and stdout."""
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            argv, stdin=terminal, stdout=terminal, stderr=subprocess.PIPE, timeout=60, check=False
        )
        os.close(terminal)
        terminal = -1
        output = b""
        with contextlib.suppress(OSError):  # EIO once the terminal's last writer is gone
            while chunk := os.read(controller, 4096):
                output += chunk
        assert done.returncode == 0, done.stderr.decode()
        return output.decode()
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)


async def _debug_offloaded(rome: Client, milan: Client, kubectl: list[str]) -> None:
    """`kubectl port-forward` to an offloaded nginx answers from its twin on milan, `kubectl attach` shows the
    request in nginx's output as it happens, and `kubectl exec -it` runs the command in a terminal there."""
    pods = (await rome.list(PODS, namespace=OFFLOADED, label_selector="app=nginx")).items
    name = pods[0]["metadata"]["name"]
    attach = await asyncio.create_subprocess_exec(
        *kubectl, "attach", "-n", OFFLOADED, name, "-c", "nginx", stdout=asyncio.subprocess.PIPE
    )
    forward = await asyncio.create_subprocess_exec(
        *kubectl, "port-forward", "-n", OFFLOADED, f"pod/{name}", ":80", stdout=asyncio.subprocess.PIPE
    )
    try:
        assert forward.stdout is not None and attach.stdout is not None
        line = (await asyncio.wait_for(forward.stdout.readline(), 30)).decode()
        port = int(re.findall(r"127\.0\.0\.1:(\d+)", line)[0])

        async def attached_sees_a_request() -> bool:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.0\r\nHost: nginx\r\nUser-Agent: through-liqo\r\n\r\n")
            assert WELCOME in (await asyncio.wait_for(reader.read(), 10)).decode()
            writer.close()
            # attach's streams are open once nginx's next access line comes through them
            with contextlib.suppress(TimeoutError):
                while seen := await asyncio.wait_for(attach.stdout.readline(), 2):  # type: ignore[union-attr]
                    if b"through-liqo" in seen:
                        return True
            return False

        await eventually(attached_sees_a_request, within=60, every=1)
    finally:
        for process in (forward, attach):
            process.terminate()
            await process.wait()
    twin_ip = (await milan.get(PODS, name, namespace=TWIN))["status"]["podIP"]
    shown = await asyncio.to_thread(
        _exec_in_a_terminal,
        [
            *kubectl,
            "exec",
            "-it",
            "-n",
            OFFLOADED,
            name,
            "--",
            "ip",
            "-4",
            "-o",
            "addr",
            "show",
            "dev",
            "eth0",
        ],
    )
    # a terminal's line discipline on milan ends the lines with CR LF
    assert f"inet {twin_ip}/24" in shown and "\r\n" in shown, shown


async def test_the_quick_start_runs_on_real_nodes_and_leaves_nothing_behind(
    assets: Assets, tmp_path: Path
) -> None:
    state_dir, home = tmp_path / "state", tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        STATE_DIR_ENV: str(state_dir),
        MIRROR_ENV: str(tmp_path / "mirror"),
        "HOME": str(home),
        # the provider's executable from the cache this session uses (built once, not again under the test's HOME)
        "XDG_CACHE_HOME": str(cache_root().parents[1]),
    }
    mine = names.state_id(state_dir)
    others = await asyncio.to_thread(mountns.names)
    settings = await asyncio.to_thread(tunables.current)
    clusters: list[Cluster] = []
    try:
        output = await asyncio.to_thread(
            _run, [sys.executable, "-m", "playground.demo", "--real"], env=env, timeout=DEMO_TIMEOUT
        )
        clusters = [Cluster.load(name, state_dir=state_dir) for name in CLUSTERS]
        assert any(mine in text for text in await asyncio.to_thread(host_rules, state_dir)), (
            "the bridge's table"
        )
        assert "Creating cluster 'rome' (1 node, real nodes)" in output
        assert "Apply complete! Resources: 6 added, 0 changed, 0 destroyed." in output
        # the demo's own check: a pod of rome fetched the offloaded nginx by `nginx.liqo-demo`
        assert WELCOME in output.split("by its Service's name")[1]
        kubectl = {
            name: [str(assets.kubectl), "--kubeconfig", str(state_dir / name / "kubeconfig")]
            for name in CLUSTERS
        }
        async with (
            await Client.from_kubeconfig(state_dir / CONSUMER / "kubeconfig") as rome,
            await Client.from_kubeconfig(state_dir / PROVIDER / "kubeconfig") as milan,
        ):
            on_rome = await _containers_on_real_nodes(rome, CONSUMER)
            on_milan = await _containers_on_real_nodes(milan, PROVIDER)
            components = {key.rsplit("-", 2)[0] for key in on_rome if key.startswith("liqo/")}
            assert {"liqo/liqo-auth", "liqo/liqo-controller-manager", "liqo/liqo-webhook"} <= components, (
                on_rome
            )
            assert any(key.startswith("liqo/liqo-fabric-") for key in on_rome)
            assert any(key.startswith("liqo-tenant-milan/liqo-vk-milan-") for key in on_rome), on_rome
            assert any(key.startswith("liqo-tenant-milan/gw-milan-") for key in on_rome), on_rome
            assert any(key.startswith("liqo-tenant-rome/gw-rome-") for key in on_milan), on_milan
            # the offloaded nginx: on liqo-milan in rome, containers on milan's real node
            offloaded = (await rome.list(PODS, namespace=OFFLOADED, label_selector="app=nginx")).items
            assert len(offloaded) == 2 and all(pod["spec"]["nodeName"] == "liqo-milan" for pod in offloaded)
            for pod in offloaded:
                twin = await milan.get(PODS, pod["metadata"]["name"], namespace=TWIN)
                assert _is_running(twin) and twin["spec"]["nodeName"] == f"{PROVIDER}-control-plane"
                assert twin["status"]["containerStatuses"][0]["containerID"].startswith("containerd://")
            await _offloaded_fetch_by_name(rome, milan, kubectl[CONSUMER])
            await _exec_offloaded(rome, milan, kubectl[CONSUMER])
            await _debug_offloaded(rome, milan, kubectl[CONSUMER])

            cli_config = tmp_path / "mirror" / CLI_CONFIG
            terraform = [str(Path(sys.executable).parent / "terraform")]
            await asyncio.to_thread(
                _run,
                [*terraform, "destroy", "-auto-approve", "-input=false", "-no-color"],
                env={**env, "TF_CLI_CONFIG_FILE": str(cli_config), "CHECKPOINT_DISABLE": "1"},
                cwd=state_dir / "terraform",
            )

            async def runtime_gone(api: Client) -> bool:
                """No container of the runtime left (without `purge` the namespace liqo stays, with the
                cluster's identity, for a reinstall to keep it)."""
                pods = (await api.list(PODS)).items
                return not [pod for pod in pods if pod["metadata"]["namespace"].startswith("liqo")]

            async def no_tenant_namespace(api: Client) -> bool:
                """The tenant namespaces went with the peering, none left Terminating (the provider's
                uninstall lets its runtime finish their deletion before it goes)."""
                return not [
                    ns
                    for ns in (await api.list(NAMESPACES)).items
                    if ns["metadata"]["name"].startswith("liqo-tenant-")
                ]

            for api in (rome, milan):
                await eventually(functools.partial(runtime_gone, api), within=120, every=1)
                await eventually(functools.partial(no_tenant_namespace, api), within=60, every=1)
    finally:
        await asyncio.to_thread(
            _run,
            [sys.executable, "-m", "playground", "down", "--state-dir", str(state_dir)],
            env=env,
            timeout=180,
        )
    for cluster in clusters:
        assert await asyncio.to_thread(node_leftovers, state_dir, cluster) == []
    # the host's rules (nftables, iptables) name nothing of this state dir: its bridge's table went with it
    # (other playgrounds on the machine come and go meanwhile: their rules are theirs)
    assert [
        line
        for text in await asyncio.to_thread(host_rules, state_dir)
        for line in text.splitlines()
        if mine in line
    ] == []
    if not others and not await asyncio.to_thread(mountns.names):
        assert await asyncio.to_thread(tunables.current) == settings
