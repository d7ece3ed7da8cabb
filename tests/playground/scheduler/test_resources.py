"""What a pod requests: containers summed, init containers by the max rule (with sidecars), overhead."""

from __future__ import annotations

import pytest

from playground.scheduler.resources import allocatable, non_zero_requests, pod_requests
from runtime.api.objects import JSON

from .builders import container, node, pod

MI = 2**20


def spec_pod(**spec: object) -> JSON:
    return {"metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (pod("empty"), {}),
        (pod("one", cpu="250m", memory="64Mi"), {"cpu": 250, "memory": 64 * MI}),
        (
            spec_pod(containers=[container("a", cpu="100m"), container("b", cpu="1.5", memory="1G")]),
            {"cpu": 1600, "memory": 10**9},
        ),
        (
            spec_pod(
                initContainers=[container("init", cpu="2", memory="10Mi")],
                containers=[container("a", cpu="500m", memory="100Mi")],
            ),
            {"cpu": 2000, "memory": 100 * MI},
        ),
        (
            # a sidecar runs beside the containers and beside the init containers started after it
            spec_pod(
                initContainers=[
                    container("sidecar", cpu="100m", restartPolicy="Always"),
                    container("init", cpu="1"),
                ],
                containers=[container("a", cpu="200m")],
            ),
            {"cpu": 1100},
        ),
        (
            spec_pod(
                initContainers=[container("sidecar", cpu="300m", restartPolicy="Always")],
                containers=[container("a", cpu="200m")],
            ),
            {"cpu": 500},
        ),
        (
            spec_pod(containers=[container("a", cpu="100m")], overhead={"cpu": "250m", "memory": "120Mi"}),
            {"cpu": 350, "memory": 120 * MI},
        ),
        (
            spec_pod(
                containers=[
                    {"name": "a", "image": "x", "resources": {"limits": {"cpu": "1", "nvidia.com/gpu": "2"}}}
                ]
            ),
            {"cpu": 1000, "nvidia.com/gpu": 2},
        ),
        (
            spec_pod(
                containers=[
                    {
                        "name": "a",
                        "image": "x",
                        "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "500m"}},
                    }
                ]
            ),
            {"cpu": 500},
        ),
    ],
    ids=[
        "no-requests",
        "one-container",
        "containers-sum",
        "init-max",
        "sidecar-under-init",
        "sidecar-adds",
        "overhead",
        "limits-default-requests",
        "requests-win-over-limits",
    ],
)
def test_pod_requests(body: JSON, expected: dict[str, int]) -> None:
    assert pod_requests(body) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (pod("empty"), {"cpu": 100, "memory": 200 * MI}),
        (pod("cpu-only", cpu="1"), {"cpu": 1000, "memory": 200 * MI}),
        (pod("explicit-zero", cpu="0", memory="0"), {"cpu": 0, "memory": 0}),
        (spec_pod(containers=[container("a"), container("b")]), {"cpu": 200, "memory": 400 * MI}),
    ],
    ids=["defaults", "memory-default", "explicit-zero-stays", "per-container"],
)
def test_non_zero_requests_for_scoring(body: JSON, expected: dict[str, int]) -> None:
    assert non_zero_requests(body) == expected


def test_allocatable_in_scheduler_units() -> None:
    assert allocatable(
        node("n", cpu="3500m", memory="1Gi", pods="10", extra={"example.com/dongle": "2"})
    ) == {
        "cpu": 3500,
        "memory": 2**30,
        "pods": 10,
        "example.com/dongle": 2,
    }
    assert allocatable({"metadata": {"name": "bare"}}) == {}


def test_malformed_quantity_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="'lots'"):
        pod_requests(pod("bad", cpu="lots"))
