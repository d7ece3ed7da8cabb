"""The simulated runner on its own: lifecycles, reserved failing images, logs, adoption."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Literal

import pytest

from playground.nodeagent.containers import LogOptions, LogUnavailableError, PodReport
from playground.nodeagent.simulated import CRASH_IMAGE, EXIT0_IMAGE, FAIL_PULL_IMAGE, SimulatedRunner
from runtime.api.image import runtime_image
from runtime.api.objects import JSON
from tests.playground.conftest import eventually

BACKOFF = 0.05


def spec_pod(
    *,
    uid: str = "uid-1",
    containers: list[JSON] | None = None,
    init: list[JSON] | None = None,
    restart_policy: str = "Always",
    status: JSON | None = None,
) -> JSON:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": uid},
        "spec": {
            "containers": containers or [{"name": "main", "image": "nginx"}],
            "initContainers": init or [],
            "restartPolicy": restart_policy,
        },
        "status": status or {},
    }


Event = tuple[str, str, str]


@pytest.fixture
def events() -> list[Event]:
    """The Events the runner records, as (type, reason, message)."""
    return []


@pytest.fixture
async def runner(events: list[Event]) -> AsyncIterator[tuple[SimulatedRunner, list[str]]]:
    notified: list[str] = []

    async def record(pod: JSON, type: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        assert pod["metadata"]["uid"] == "uid-1"
        events.append((type, reason, message))

    simulated = SimulatedRunner(
        notify=notified.append, record=record, backoff=BACKOFF, backoff_max=4 * BACKOFF
    )
    yield simulated, notified
    await simulated.close()


def started(name: str, image: str) -> list[Event]:
    return [
        ("Normal", "Pulled", f'Container image "{image}" already present on machine'),
        ("Normal", "Created", f"Created container: {name}"),
        ("Normal", "Started", f"Started container {name}"),
    ]


def report(simulated: SimulatedRunner, uid: str = "uid-1") -> PodReport:
    found = simulated.report(uid)
    assert found is not None
    return found


def state(simulated: SimulatedRunner, name: str = "main", uid: str = "uid-1") -> JSON:
    found = report(simulated, uid)
    for container in [*found.init_containers, *found.containers]:
        if container.name == name:
            return container.state
    raise AssertionError(f"no container {name}")


def test_runtime_image_pods_are_not_simulated() -> None:
    simulated = SimulatedRunner(notify=lambda uid: None)
    assert simulated.accepts(spec_pod())
    assert not simulated.accepts(spec_pod(containers=[{"name": "c", "image": runtime_image()}]))
    assert not simulated.accepts(spec_pod(init=[{"name": "i", "image": runtime_image("v9")}]))
    assert simulated.pod_ip(spec_pod()) is None


async def test_containers_run_and_are_ready_after_init_containers_complete(
    runner: tuple[SimulatedRunner, list[str]], events: list[Event]
) -> None:
    simulated, notified = runner
    pod = spec_pod(
        containers=[{"name": "web", "image": "nginx"}, {"name": "app", "image": "busybox"}],
        init=[{"name": "setup", "image": "busybox"}, {"name": "migrate", "image": "alpine"}],
    )
    await simulated.start(pod, pod_ip="10.244.1.2")
    await eventually(lambda: report(simulated).phase == "Running")
    found = report(simulated)
    assert [c.name for c in found.containers] == ["web", "app"]
    assert all(c.ready and c.started and "running" in c.state for c in found.containers)
    for init in found.init_containers:
        assert init.state["terminated"]["exitCode"] == 0
        assert init.state["terminated"]["reason"] == "Completed"
        assert not init.ready
    assert "uid-1" in notified
    await eventually(lambda: len(events) == 12)
    assert events[:6] == [*started("setup", "busybox"), *started("migrate", "alpine")]
    assert sorted(events[6:]) == sorted([*started("web", "nginx"), *started("app", "busybox")])
    await simulated.start(pod, pod_ip="10.244.1.2")  # idempotent
    assert report(simulated).containers[0].container_id == found.containers[0].container_id


async def test_fail_pull_alternates_err_image_pull_and_back_off(
    runner: tuple[SimulatedRunner, list[str]], events: list[Event]
) -> None:
    simulated, _ = runner
    await simulated.start(
        spec_pod(containers=[{"name": "main", "image": f"{FAIL_PULL_IMAGE}:1"}]), pod_ip="x"
    )
    seen: set[str] = set()

    def reasons() -> bool:
        seen.add(state(simulated).get("waiting", {}).get("reason", ""))
        return {"ErrImagePull", "ImagePullBackOff"} <= seen

    await eventually(reasons, every=0.01)
    assert report(simulated).phase == "Pending"
    await eventually(lambda: len(events) >= 5)
    image = f"{FAIL_PULL_IMAGE}:1"
    assert events[0] == ("Normal", "Pulling", f'Pulling image "{image}"')
    assert events[1][:2] == ("Warning", "Failed")
    assert events[1][2].startswith(f'Failed to pull image "{image}": ')
    assert events[2:5] == [
        ("Warning", "Failed", "Error: ErrImagePull"),
        ("Normal", "BackOff", f'Back-off pulling image "{image}"'),
        ("Warning", "Failed", "Error: ImagePullBackOff"),
    ]


async def test_crash_restarts_with_crash_loop_back_off(
    runner: tuple[SimulatedRunner, list[str]], events: list[Event]
) -> None:
    simulated, _ = runner
    await simulated.start(spec_pod(containers=[{"name": "main", "image": CRASH_IMAGE}]), pod_ip="x")
    waiting: list[JSON] = []

    def restarted() -> bool:
        current = state(simulated)
        if current.get("waiting", {}).get("reason") == "CrashLoopBackOff":
            waiting.append(current["waiting"])
        return report(simulated).containers[0].restart_count >= 3

    await eventually(restarted, every=0.005)
    found = report(simulated)
    assert found.phase == "Running"
    assert found.containers[0].last_state["terminated"]["exitCode"] == 1
    assert waiting
    assert any(
        w["message"].startswith("back-off 50ms restarting failed container=main pod=p_ns(uid-1)")
        for w in waiting
    )
    assert events[:4] == [
        *started("main", CRASH_IMAGE),
        ("Warning", "BackOff", "Back-off restarting failed container main in pod p_ns(uid-1)"),
    ]
    assert events.count(("Normal", "Started", "Started container main")) >= 3


@pytest.mark.parametrize(
    ("image", "policy", "phase", "exit_code"),
    [
        (CRASH_IMAGE, "Never", "Failed", 1),
        (EXIT0_IMAGE, "Never", "Succeeded", 0),
        (EXIT0_IMAGE, "OnFailure", "Succeeded", 0),
    ],
    ids=["crash-never", "exit0-never", "exit0-onfailure"],
)
async def test_containers_that_stop_for_good_end_the_pod(
    runner: tuple[SimulatedRunner, list[str]], image: str, policy: str, phase: str, exit_code: int
) -> None:
    simulated, _ = runner
    await simulated.start(
        spec_pod(containers=[{"name": "main", "image": image}], restart_policy=policy), pod_ip="x"
    )
    await eventually(lambda: report(simulated).phase == phase)
    assert state(simulated)["terminated"]["exitCode"] == exit_code
    assert report(simulated).containers[0].restart_count == 0


async def test_exit0_with_restart_policy_always_restarts(runner: tuple[SimulatedRunner, list[str]]) -> None:
    simulated, _ = runner
    await simulated.start(spec_pod(containers=[{"name": "main", "image": EXIT0_IMAGE}]), pod_ip="x")
    await eventually(lambda: report(simulated).containers[0].restart_count >= 2)
    assert report(simulated).phase == "Running"


async def test_failing_init_container_fails_a_pod_that_never_restarts(
    runner: tuple[SimulatedRunner, list[str]],
) -> None:
    simulated, _ = runner
    pod = spec_pod(init=[{"name": "setup", "image": CRASH_IMAGE}], restart_policy="Never")
    await simulated.start(pod, pod_ip="x")
    await eventually(lambda: report(simulated).phase == "Failed")
    assert state(simulated)["waiting"]["reason"] == "PodInitializing"


async def test_init_container_that_cannot_be_pulled_holds_the_pod_pending(
    runner: tuple[SimulatedRunner, list[str]],
) -> None:
    simulated, _ = runner
    await simulated.start(spec_pod(init=[{"name": "setup", "image": FAIL_PULL_IMAGE}]), pod_ip="x")
    await eventually(
        lambda: (
            "waiting" in state(simulated, "setup")
            and state(simulated, "setup")["waiting"]["reason"] != "PodInitializing"
        )
    )
    assert report(simulated).phase == "Pending"
    assert state(simulated)["waiting"]["reason"] == "PodInitializing"


async def test_sidecar_init_container_keeps_running_next_to_the_containers(
    runner: tuple[SimulatedRunner, list[str]],
) -> None:
    simulated, _ = runner
    pod = spec_pod(init=[{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}])
    await simulated.start(pod, pod_ip="x")
    await eventually(lambda: report(simulated).phase == "Running" and "running" in state(simulated))
    assert "running" in state(simulated, "proxy")
    assert report(simulated).init_containers[0].ready


async def test_stop_records_killing_and_forgets_the_pod(
    runner: tuple[SimulatedRunner, list[str]], events: list[Event]
) -> None:
    simulated, _ = runner
    await simulated.start(spec_pod(), pod_ip="x")
    await eventually(lambda: report(simulated).phase == "Running")
    await simulated.stop("uid-1", grace_period=30)
    assert events[-1] == ("Normal", "Killing", "Stopping container main")
    assert simulated.report("uid-1") is None
    await simulated.stop("uid-1", grace_period=30)  # idempotent


async def test_adopted_pod_keeps_its_running_containers(
    runner: tuple[SimulatedRunner, list[str]], events: list[Event]
) -> None:
    simulated, _ = runner
    status = {
        "containerStatuses": [
            {
                "name": "main",
                "image": "nginx",
                "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}},
                "restartCount": 4,
                "containerID": "simulated://abc",
            }
        ],
        "initContainerStatuses": [
            {
                "name": "setup",
                "image": "busybox",
                "state": {
                    "terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": "2024-01-01T00:00:00Z"}
                },
                "restartCount": 0,
                "containerID": "simulated://def",
            }
        ],
    }
    await simulated.start(spec_pod(init=[{"name": "setup", "image": "busybox"}], status=status), pod_ip="x")
    await eventually(lambda: report(simulated).phase == "Running")
    main = report(simulated).containers[0]
    assert main.state == {"running": {"startedAt": "2024-01-01T00:00:00Z"}}
    assert (main.container_id, main.restart_count) == ("simulated://abc", 4)
    setup = report(simulated).init_containers[0]
    assert setup.state["terminated"]["finishedAt"] == "2024-01-01T00:00:00Z"
    assert setup.container_id == "simulated://def"
    assert events == []  # nothing started anew


async def read(stream: AsyncIterator[bytes]) -> str:
    return b"".join([chunk async for chunk in stream]).decode()


async def test_logs_say_the_container_is_simulated(runner: tuple[SimulatedRunner, list[str]]) -> None:
    simulated, _ = runner
    await simulated.start(spec_pod(), pod_ip="x")
    await eventually(lambda: report(simulated).phase == "Running")
    text = await read(simulated.logs("uid-1", "main", LogOptions()))
    lines = text.splitlines()
    assert lines[0] == "simulated container main of ns/p: image nginx"
    assert "only simulates" in lines[1]
    assert (await read(simulated.logs("uid-1", "main", LogOptions(tail_lines=1)))).splitlines() == lines[-1:]
    stamped = await read(simulated.logs("uid-1", "main", LogOptions(timestamps=True)))
    assert stamped.splitlines()[0].split(" ", 1)[1] == lines[0]
    assert stamped.splitlines()[0].split(" ", 1)[0].endswith("Z")
    assert await read(simulated.logs("uid-1", "main", LogOptions(limit_bytes=10))) == text[:10]
    with pytest.raises(
        LogUnavailableError, match='previous terminated container "main" in pod "p" not found'
    ):
        simulated.logs("uid-1", "main", LogOptions(previous=True))
    with pytest.raises(LogUnavailableError, match="container nope is not valid for pod p"):
        simulated.logs("uid-1", "nope", LogOptions())
    with pytest.raises(LogUnavailableError):
        simulated.logs("other-uid", "main", LogOptions())


async def test_previous_logs_of_a_crashing_container(runner: tuple[SimulatedRunner, list[str]]) -> None:
    simulated, _ = runner
    await simulated.start(spec_pod(containers=[{"name": "main", "image": CRASH_IMAGE}]), pod_ip="x")
    await eventually(lambda: report(simulated).containers[0].restart_count >= 2)
    text = await read(simulated.logs("uid-1", "main", LogOptions(previous=True)))
    assert "exiting with code 1" in text


async def test_waiting_container_has_no_logs(runner: tuple[SimulatedRunner, list[str]]) -> None:
    simulated, _ = runner
    await simulated.start(spec_pod(containers=[{"name": "main", "image": FAIL_PULL_IMAGE}]), pod_ip="x")
    await eventually(lambda: "ErrImagePull" in str(state(simulated)))
    with pytest.raises(LogUnavailableError, match="is waiting to start: trying and failing to pull image"):
        simulated.logs("uid-1", "main", LogOptions())


async def test_following_logs_ends_when_the_pod_stops(runner: tuple[SimulatedRunner, list[str]]) -> None:
    simulated, _ = runner
    await simulated.start(spec_pod(), pod_ip="x")
    await eventually(lambda: report(simulated).phase == "Running")
    stream = simulated.logs("uid-1", "main", LogOptions(follow=True))
    first = await anext(stream)
    assert first.startswith(b"simulated container main")
    await anext(stream)
    await simulated.stop("uid-1", grace_period=0)
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
