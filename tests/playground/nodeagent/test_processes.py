"""The process runner: runtime-image pods as real local processes, driven directly with pod dicts.

Most tests use a dict of objects in place of the API; the last ones run against an
emulator so a pod's process authenticates with its projected ServiceAccount token.
Processes are real: commands run by this interpreter in private mount namespaces
(the runner needs root on Linux, as the playground does).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from playground.nodeagent.containers import LogOptions, LogUnavailableError, PodReport
from playground.nodeagent.mounts import UNAVAILABLE
from playground.nodeagent.objects import APIObjectSource, IssuedToken
from playground.nodeagent.podrun import NodeContext, PodRun, ProcessSettings
from playground.nodeagent.processes import ProcessRunner
from runtime.api.image import runtime_image
from runtime.api.kinds import CONFIGMAPS, PODS, ROLEBINDINGS, ROLES, SECRETS
from runtime.api.objects import JSON
from runtime.core import Client
from tests.playground.conftest import eventually

IMAGE = runtime_image()
FAST = ProcessSettings(backoff_base=0.2, backoff_cap=0.4, config_retry=0.1, mount_retry_base=0.1)

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0,
    reason="the process runner needs root on Linux (mount namespaces)",
)


class Objects:
    """Secrets and ConfigMaps by (kind, name), changeable while pods run."""

    def __init__(self, objects: dict[tuple[str, str], JSON] | None = None) -> None:
        self.objects = objects or {}

    async def get(self, kind: str, namespace: str, name: str) -> JSON | None:
        return self.objects.get((kind, name))

    async def token(self, pod: JSON, *, audience: str, expiration_seconds: int) -> IssuedToken:
        raise AssertionError("these pods mount no ServiceAccount token")


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.notified: list[str] = []

    async def record(self, pod: JSON, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))

    def notify(self, uid: str) -> None:
        self.notified.append(uid)

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.events]


@contextlib.asynccontextmanager
async def process_runner(
    state: Path,
    objects: Any = None,
    recorder: Recorder | None = None,
    *,
    api: tuple[str, int] = ("127.0.0.1", 6443),
) -> AsyncIterator[ProcessRunner]:
    recorder = recorder or Recorder()
    runner = ProcessRunner(
        objects or Objects(),
        state_dir=state,
        node_address="127.0.0.1",
        api_host=api[0],
        api_port=api[1],
        notify=recorder.notify,
        record=recorder.record,
        settings=FAST,
    )
    try:
        yield runner
    finally:
        await runner.close()


def python(code: str) -> list[str]:
    return ["python", "-c", textwrap.dedent(code)]


def pod(*containers: JSON, restart: str = "Always", init: list[JSON] | None = None, **spec: Any) -> JSON:
    body: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": str(uuid.uuid4())},
        "spec": {
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": 5,
            "containers": list(containers),
            **spec,
        },
    }
    if init:
        body["spec"]["initContainers"] = init
    return body


def container(command: list[str], name: str = "c", **extra: Any) -> JSON:
    return {"name": name, "image": IMAGE, "command": command, **extra}


def uid(p: JSON) -> str:
    return str(p["metadata"]["uid"])


def report(runner: ProcessRunner, p: JSON) -> PodReport:
    found = runner.report(uid(p))
    assert found is not None
    return found


def state(runner: ProcessRunner, p: JSON, name: str = "c") -> JSON:
    found = report(runner, p)
    return next(c for c in [*found.containers, *found.init_containers] if c.name == name).state


async def read_logs(runner: ProcessRunner, p: JSON, name: str = "c", **options: Any) -> str:
    chunks = [chunk async for chunk in runner.logs(uid(p), name, LogOptions(**options))]
    return b"".join(chunks).decode()


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


# running, exit codes, restarts


def test_accepts_only_pods_of_the_runtime_image(tmp_path: Path) -> None:
    runner = ProcessRunner(
        Objects(),
        state_dir=tmp_path,
        node_address="10.1.2.3",
        api_host="h",
        api_port=1,
        notify=lambda uid: None,
    )
    assert runner.accepts(pod(container(["x"])))
    assert not runner.accepts(pod(container(["x"]), {"name": "side", "image": "nginx:1.27"}))
    assert runner.pod_ip(pod(container(["x"]))) == "10.1.2.3"


async def test_a_completed_process_reports_its_exit_and_output(tmp_path: Path) -> None:
    p = pod(
        container(
            python(
                "import os; print('hello', os.environ['GREETING'], os.environ['KUBERNETES_SERVICE_PORT'])"
            ),
            env=[
                {"name": "GREETING", "value": "from $(HOSTNAME_HINT)"},
                {"name": "HOSTNAME_HINT", "value": "x"},
            ],
        ),
        restart="Never",
    )
    async with process_runner(tmp_path) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).phase == "Succeeded", within=20)
        terminated = state(runner, p)["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
        assert terminated["containerID"].startswith("process://")
        assert await read_logs(runner, p) == "hello from $(HOSTNAME_HINT) 6443\n"
        assert report(runner, p).pod_ip == "127.0.0.1"


async def test_failures_restart_with_crash_loop_back_off(tmp_path: Path) -> None:
    recorder = Recorder()
    p = pod(container(python("import sys; print('boom'); sys.exit(3)")))
    async with process_runner(tmp_path, recorder=recorder) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).containers[0].restart_count >= 2, within=20)
        await eventually(lambda: "waiting" in state(runner, p), within=20)
        found = report(runner, p).containers[0]
        assert found.state["waiting"]["reason"] == "CrashLoopBackOff"
        assert found.state["waiting"]["message"].startswith("back-off ")
        assert found.last_state["terminated"]["exitCode"] == 3
        assert found.last_state["terminated"]["reason"] == "Error"
        assert report(runner, p).phase == "Running"
        assert await read_logs(runner, p) == "boom\n"
    assert recorder.events[:3] == [
        ("Normal", "Pulled", f'Container image "{IMAGE}" already present on machine'),
        ("Normal", "Created", "Created container: c"),
        ("Normal", "Started", "Started container c"),
    ]
    back_off = ("Warning", "BackOff", f"Back-off restarting failed container c in pod p_ns({uid(p)})")
    assert back_off in recorder.events


async def test_on_failure_restarts_until_success(tmp_path: Path) -> None:
    mark = tmp_path / "mnt"
    code = f"""
        import pathlib, sys
        marker = pathlib.Path({str(mark / "tried")!r})
        if not marker.exists():
            marker.touch()
            sys.exit(1)
    """
    p = pod(
        container(python(code), volumeMounts=[{"name": "scratch", "mountPath": str(mark)}]),
        restart="OnFailure",
        volumes=[{"name": "scratch", "emptyDir": {}}],
    )
    async with process_runner(tmp_path / "state") as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).phase == "Succeeded", within=20)
        found = report(runner, p).containers[0]
        assert found.restart_count == 1
        assert found.last_state["terminated"]["exitCode"] == 1
        assert not (mark / "tried").exists(), "the emptyDir is mounted only inside the container's namespace"


async def test_never_restart_failure_fails_the_pod(tmp_path: Path) -> None:
    p = pod(container(python("raise SystemExit(7)")), restart="Never")
    async with process_runner(tmp_path) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).phase == "Failed", within=20)
        assert state(runner, p)["terminated"]["exitCode"] == 7


async def test_init_containers_run_first_and_share_volumes(tmp_path: Path) -> None:
    mnt = str(tmp_path / "work")
    mounts = [{"name": "work", "mountPath": mnt}]
    p = pod(
        container(python(f"print(open({mnt + '/msg'!r}).read())"), volumeMounts=mounts),
        restart="Never",
        init=[
            container(
                python(f"open({mnt + '/msg'!r}, 'w').write('from init')"), name="setup", volumeMounts=mounts
            )
        ],
        volumes=[{"name": "work", "emptyDir": {}}],
    )
    async with process_runner(tmp_path / "state") as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).phase == "Succeeded", within=20)
        assert state(runner, p, "setup")["terminated"]["reason"] == "Completed"
        assert await read_logs(runner, p) == "from init\n"


async def test_a_failed_init_container_fails_a_never_restarting_pod(tmp_path: Path) -> None:
    p = pod(
        container(python("print('never')")),
        restart="Never",
        init=[container(python("raise SystemExit(2)"), name="setup")],
    )
    async with process_runner(tmp_path) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).phase == "Failed", within=20)
        assert state(runner, p)["waiting"]["reason"] == "PodInitializing"


# configuration and start errors


async def test_a_missing_secret_waits_until_it_appears(tmp_path: Path) -> None:
    objects = Objects()
    recorder = Recorder()
    p = pod(
        container(
            python("import os; print(os.environ['PASSWORD'])"),
            env=[{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}],
        ),
        restart="Never",
    )
    async with process_runner(tmp_path, objects, recorder) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: "waiting" in state(runner, p) and "message" in state(runner, p)["waiting"])
        assert state(runner, p)["waiting"] == {
            "reason": "CreateContainerConfigError",
            "message": 'secret "creds" not found',
        }
        assert ("Warning", "Failed", 'Error: secret "creds" not found') in recorder.events
        with pytest.raises(
            LogUnavailableError,
            match='container "c" in pod "p" is waiting to start: CreateContainerConfigError',
        ):
            await read_logs(runner, p)
        objects.objects[("Secret", "creds")] = {"data": {"password": base64.b64encode(b"hunter2").decode()}}
        await eventually(lambda: report(runner, p).phase == "Succeeded", within=20)
        assert await read_logs(runner, p) == "hunter2\n"


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ([], "playground: container c has no command: the runtime image has no default entrypoint"),
        (["no-such-program"], 'exec: "no-such-program": executable file not found in $PATH'),
    ],
    ids=["no-command", "unknown-program"],
)
async def test_a_container_that_cannot_start_is_a_run_container_error(
    tmp_path: Path, command: list[str], message: str
) -> None:
    p = pod(container(command), restart="Never")
    async with process_runner(tmp_path) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: state(runner, p).get("waiting", {}).get("reason") == "RunContainerError")
        assert state(runner, p)["waiting"]["message"] == message


async def test_without_mount_namespaces_pods_do_not_start(tmp_path: Path) -> None:
    recorder = Recorder()
    node = NodeContext(
        address="127.0.0.1",
        api_endpoint=lambda: ("127.0.0.1", 6443),
        pods_dir=tmp_path,
        objects=Objects(),
        notify=recorder.notify,
        record=recorder.record,
        settings=FAST,
        allocatable={},
        problem=UNAVAILABLE,
    )
    run = PodRun(pod(container(python("print(1)"))), pod_ip="127.0.0.1", node=node)
    run.start()
    try:
        await eventually(lambda: "message" in run.report().containers[0].state.get("waiting", {}))
        assert run.report().containers[0].state["waiting"] == {
            "reason": "RunContainerError",
            "message": UNAVAILABLE,
        }
    finally:
        await run.stop(1)


async def test_console_scripts_resolve_in_the_venv_first(tmp_path: Path) -> None:
    p = pod(container(["playground-apiserver", "--help"]), restart="Never")
    async with process_runner(tmp_path) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).phase == "Succeeded", within=20)
        assert "usage:" in await read_logs(runner, p)


# volumes at their mount paths


async def test_volumes_appear_at_their_mount_paths(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    objects = Objects(
        {
            ("Secret", "creds"): {"data": {"password": base64.b64encode(b"hunter2").decode()}},
            ("ConfigMap", "settings"): {"data": {"app.yaml": "level: debug\n"}},
        }
    )
    code = f"""
        import pathlib
        print(pathlib.Path({str(mnt / "secret/password")!r}).read_text())
        print(pathlib.Path({str(mnt / "app.yaml")!r}).read_text(), end="")
        try:
            pathlib.Path({str(mnt / "secret/new")!r}).write_text("x")
        except OSError as exc:
            print("read-only:", exc.strerror)
    """
    p = pod(
        container(
            python(code),
            volumeMounts=[
                {"name": "creds", "mountPath": str(mnt / "secret")},
                {"name": "settings", "mountPath": str(mnt / "app.yaml"), "subPath": "app.yaml"},
            ],
        ),
        restart="Never",
        volumes=[
            {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400}},
            {"name": "settings", "configMap": {"name": "settings"}},
        ],
    )
    async with process_runner(tmp_path / "state", objects) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).phase == "Succeeded", within=20)
        assert await read_logs(runner, p) == "hunter2\nlevel: debug\nread-only: Read-only file system\n"


# probes


async def test_liveness_failure_kills_and_restarts(tmp_path: Path) -> None:
    recorder = Recorder()
    probe = {
        "tcpSocket": {"port": 1},
        "periodSeconds": 0.1,
        "failureThreshold": 2,
        "terminationGracePeriodSeconds": 2,
    }
    p = pod(container(python("import time; time.sleep(600)"), livenessProbe=probe))
    async with process_runner(tmp_path, recorder=recorder) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).containers[0].restart_count >= 1, within=20)
        found = report(runner, p).containers[0]
        assert found.last_state["terminated"]["exitCode"] == 128 + signal.SIGTERM
        assert (
            "Warning",
            "Unhealthy",
            "Liveness probe failed: dial tcp 127.0.0.1:1: connect: connection refused",
        ) in recorder.events
        assert (
            "Normal",
            "Killing",
            "Container c failed liveness probe, will be restarted",
        ) in recorder.events


async def test_readiness_exec_probe_runs_inside_the_container_mounts(tmp_path: Path) -> None:
    mnt = str(tmp_path / "mnt")
    code = f"""
        import pathlib, time
        time.sleep(0.5)
        pathlib.Path({mnt + "/ready"!r}).touch()
        time.sleep(600)
    """
    probe = {"exec": {"command": ["test", "-f", f"{mnt}/ready"]}, "periodSeconds": 0.1, "timeoutSeconds": 5}
    p = pod(
        container(python(code), readinessProbe=probe, volumeMounts=[{"name": "scratch", "mountPath": mnt}]),
        volumes=[{"name": "scratch", "emptyDir": {}}],
    )
    recorder = Recorder()
    async with process_runner(tmp_path / "state", recorder=recorder) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: "running" in state(runner, p), within=20)
        assert not report(runner, p).containers[0].ready
        await eventually(lambda: report(runner, p).containers[0].ready, within=20)
        assert not await asyncio.to_thread(Path(mnt, "ready").exists)
    assert "Killing" not in recorder.reasons(), "closing the runner (agent shutdown) is no pod deletion"


async def test_startup_probe_gates_started_and_ready(tmp_path: Path) -> None:
    mnt = str(tmp_path / "mnt")
    code = f"import pathlib, time; time.sleep(0.5); pathlib.Path({mnt + '/up'!r}).touch(); time.sleep(600)"
    startup = {
        "exec": {"command": ["test", "-f", f"{mnt}/up"]},
        "periodSeconds": 0.1,
        "failureThreshold": 100,
    }
    p = pod(
        container(python(code), startupProbe=startup, volumeMounts=[{"name": "scratch", "mountPath": mnt}]),
        volumes=[{"name": "scratch", "emptyDir": {}}],
    )
    async with process_runner(tmp_path / "state") as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: "running" in state(runner, p), within=20)
        assert not report(runner, p).containers[0].started
        await eventually(lambda: report(runner, p).containers[0].started, within=20)
        assert report(runner, p).containers[0].ready


# stopping


async def test_stop_runs_pre_stop_then_sends_sigterm(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    code = f"""
        import pathlib, signal, sys, time
        def bye(*_):
            with open({str(out / "order")!r}, "a") as f:
                f.write("SIGTERM\\n")
            sys.exit(0)
        signal.signal(signal.SIGTERM, bye)
        pathlib.Path({str(out / "started")!r}).touch()
        time.sleep(600)
    """
    pre_stop = {
        "exec": {"command": ["python", "-c", f"open({str(out / 'order')!r}, 'a').write('preStop\\n')"]}
    }
    p = pod(container(python(code), lifecycle={"preStop": pre_stop}))
    recorder = Recorder()
    async with process_runner(tmp_path / "state", recorder=recorder) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: (out / "started").exists(), within=20)
        await runner.stop(uid(p), grace_period=10)
        assert (out / "order").read_text() == "preStop\nSIGTERM\n"
        assert recorder.events[-1] == ("Normal", "Killing", "Stopping container c")
        assert runner.report(uid(p)) is None
        assert not (tmp_path / "state" / "pods" / uid(p)).exists()


async def test_stop_kills_a_process_that_ignores_sigterm(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        time.sleep(600)
    """
    p = pod(container(python(code)))
    async with process_runner(tmp_path / "state") as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: pid_file.exists() and pid_file.read_text(), within=20)
        pid = int(pid_file.read_text())
        await runner.stop(uid(p), grace_period=0.3)
        assert not alive(pid)


AGENT = """
import asyncio, sys
from pathlib import Path
from playground.nodeagent.processes import ProcessRunner
from runtime.api.image import runtime_image

class Objects:
    async def get(self, kind, namespace, name):
        return None

async def main(state, out):
    code = (
        "import os, subprocess, sys, time\\n"
        f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\\n"
        f"open({out + '/grandchild'!r}, 'w').write(str(child.pid))\\n"
        f"open({out + '/main'!r}, 'w').write(str(os.getpid()))\\n"
        "time.sleep(600)\\n"
    )
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u-stale"},
           "spec": {"containers": [{"name": "c", "image": runtime_image(), "command": ["python", "-c", code]}]}}
    runner = ProcessRunner(Objects(), state_dir=Path(state), node_address="127.0.0.1", api_host="127.0.0.1",
                           api_port=6443, notify=lambda uid: None)
    await runner.start(pod, pod_ip="127.0.0.1")
    await asyncio.sleep(600)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_processes_do_not_outlive_a_killed_agent(tmp_path: Path) -> None:
    state, out = tmp_path / "state", tmp_path / "out"
    out.mkdir()
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    agent = await asyncio.create_subprocess_exec(sys.executable, str(script), str(state), str(out))
    try:
        await eventually(lambda: (out / "main").exists() and (out / "grandchild").exists(), within=30)
        main, grandchild = int((out / "main").read_text()), int((out / "grandchild").read_text())
    finally:
        agent.send_signal(signal.SIGKILL)
        await agent.wait()
    # the container's process asked to die with the agent; what it forked did not
    await eventually(lambda: not alive(main), within=10)
    assert alive(grandchild)
    async with process_runner(state) as runner:
        await runner.prepare()
        await eventually(lambda: not alive(grandchild), within=10)
        assert list((state / "pods").iterdir()) == []


# logs


async def test_log_options(tmp_path: Path) -> None:
    code = "import sys\nfor i in range(1, 6): print(f'line {i}')\nprint('oops', file=sys.stderr)"
    p = pod(container(python(code)), restart="Never")
    async with process_runner(tmp_path) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).phase == "Succeeded", within=20)
        everything = await read_logs(runner, p)
        assert everything.splitlines()[:5] == [f"line {i}" for i in range(1, 6)]
        assert "oops" in everything
        assert (await read_logs(runner, p, tail_lines=1)) in ("oops\n", "line 5\n")
        assert await read_logs(runner, p, tail_lines=0) == ""
        assert await read_logs(runner, p, limit_bytes=8) == "line 1\nl"
        stamped = (await read_logs(runner, p, timestamps=True)).splitlines()
        assert len(stamped) == 6
        assert all(line.split(" ", 1)[0].endswith("Z") for line in stamped)
        assert await read_logs(runner, p, since_time="2999-01-01T00:00:00Z") == ""
        assert await read_logs(runner, p, since_seconds=3600) == everything
        with pytest.raises(
            LogUnavailableError, match='previous terminated container "c" in pod "p" not found'
        ):
            await read_logs(runner, p, previous=True)


async def test_follow_streams_until_the_container_exits(tmp_path: Path) -> None:
    code = "import time\nfor i in range(5):\n    print(i, flush=True)\n    time.sleep(0.1)"
    p = pod(container(python(code)), restart="Never")
    async with process_runner(tmp_path) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: "waiting" not in state(runner, p), within=20)
        followed = await asyncio.wait_for(read_logs(runner, p, follow=True), 20)
        assert followed == "0\n1\n2\n3\n4\n"


async def test_previous_shows_the_last_instance(tmp_path: Path) -> None:
    code = "import os, time; print('pid', os.getpid()); time.sleep(0.3)"
    p = pod(container(python(code)))
    async with process_runner(tmp_path) as runner:
        await runner.start(p, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, p).containers[0].restart_count >= 1, within=20)
        await eventually(lambda: "running" in state(runner, p), within=20)
        await eventually(lambda: read_logs(runner, p), within=20)
        current, previous = await read_logs(runner, p), await read_logs(runner, p, previous=True)
        assert previous.startswith("pid ")
        assert current.startswith("pid ")
        assert current != previous


# against an API server: the projected ServiceAccount token works for in-cluster clients

IN_CLUSTER = """
import os
from kubernetes import client, config

config.load_incluster_config()
api = client.CoreV1Api()
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
namespace = open(f"{sa}/namespace").read()
print("namespace", namespace)
print("secret-file", open(os.environ["CREDS"] + "/password").read())
print("secret-env", os.environ["PASSWORD"])
print("allowed", api.read_namespaced_config_map("shared", namespace).data["k"])
try:
    api.list_namespaced_secret(namespace)
    print("denied no")
except client.ApiException as exc:
    print("denied", exc.status)
"""


async def test_a_pod_process_uses_its_service_account_in_cluster(
    fresh_emulator: Path, api: Client, ns: str, tmp_path: Path
) -> None:
    config = yaml.safe_load(await asyncio.to_thread(fresh_emulator.read_text))
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    server = config["clusters"][0]["cluster"]["server"].removeprefix("https://")
    host, port = server.rsplit(":", 1)
    await api.create(
        CONFIGMAPS, {"metadata": {"name": "kube-root-ca.crt", "namespace": ns}, "data": {"ca.crt": ca}}
    )
    await api.create(CONFIGMAPS, {"metadata": {"name": "shared", "namespace": ns}, "data": {"k": "v"}})
    await api.create(
        SECRETS, {"metadata": {"name": "creds", "namespace": ns}, "stringData": {"password": "hunter2"}}
    )
    rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
    await api.create(ROLES, {"metadata": {"name": "read-cm", "namespace": ns}, "rules": [rule]})
    binding = {
        "metadata": {"name": "read-cm", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-cm"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}],
    }
    await api.create(ROLEBINDINGS, binding)
    creds = str(tmp_path / "creds")
    body = {
        "metadata": {"name": "in-cluster", "namespace": ns},
        "spec": {
            "nodeName": "node-1",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "c",
                    "image": IMAGE,
                    "command": ["python", "-c", IN_CLUSTER],
                    "env": [
                        {"name": "CREDS", "value": creds},
                        {
                            "name": "PASSWORD",
                            "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}},
                        },
                    ],
                    "volumeMounts": [{"name": "creds", "mountPath": creds}],
                }
            ],
            "volumes": [{"name": "creds", "secret": {"secretName": "creds"}}],
        },
    }
    created = await api.create(PODS, body, namespace=ns)
    async with process_runner(tmp_path / "state", APIObjectSource(api), api=(host, int(port))) as runner:
        await runner.start(created, pod_ip="127.0.0.1")
        await eventually(lambda: report(runner, created).phase in ("Succeeded", "Failed"), within=30)
        output = await read_logs(runner, created)
        assert report(runner, created).phase == "Succeeded", output
        assert output.splitlines() == [
            f"namespace {ns}",
            "secret-file hunter2",
            "secret-env hunter2",
            "allowed v",
            "denied 403",
        ]
        token = json.loads(base64.urlsafe_b64decode(_token_claims(runner, created) + "=="))
        assert token["kubernetes.io"]["pod"]["uid"] == created["metadata"]["uid"]


def _token_claims(runner: ProcessRunner, p: JSON) -> str:
    volume = next(v["name"] for v in p["spec"]["volumes"] if v["name"].startswith("kube-api-access-"))
    token = (runner.pods_dir / uid(p) / "volumes" / volume / "token").read_text()
    return str(token.split(".")[1])
