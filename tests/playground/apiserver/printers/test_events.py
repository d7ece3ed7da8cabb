"""Events: core/v1 and events.k8s.io/v1 Events print the same row."""

from __future__ import annotations

import pytest

from .support import Obj, ago, row, rt


@pytest.mark.parametrize(
    ("group", "event"),
    [
        (
            "",
            {
                "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"},
                "type": "Warning",
                "reason": "BackOff",
                "message": "Back-off restarting\n",
                "source": {"component": "kubelet", "host": "n1"},
                "firstTimestamp": ago(hours=1),
                "lastTimestamp": ago(minutes=2),
                "count": 7,
            },
        ),
        (
            "events.k8s.io",
            {
                "regarding": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"},
                "type": "Warning",
                "reason": "BackOff",
                "note": "Back-off restarting\n",
                "reportingController": "kubelet",
                "reportingInstance": "n1",
                "eventTime": ago(hours=1),
                "series": {"count": 7, "lastObservedTime": ago(minutes=2)},
            },
        ),
    ],
    ids=["core-v1", "events-k8s-io"],
)
def test_event_cells_are_the_same_from_either_api(group: str, event: Obj) -> None:
    cells = row(rt(group, "events"), {"metadata": {"name": "web-0.17a"}, **event})
    assert cells == [
        "2m",
        "Warning",
        "BackOff",
        "pod/web-0",
        "spec.containers{app}",
        "kubelet, n1",
        "Back-off restarting",
        "60m",
        7,
        "web-0.17a",
    ]


def test_singleton_event_without_timestamps_counts_once() -> None:
    cells = row(rt("", "events"), {"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"}})
    assert [cells[0], cells[3], cells[5], cells[7], cells[8]] == ["<unknown>", "node", "", "<unknown>", 1]
