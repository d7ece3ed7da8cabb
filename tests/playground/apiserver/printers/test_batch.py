"""Jobs (status from conditions, completions, duration) and CronJobs."""

from __future__ import annotations

from typing import Any

import pytest

from .support import META, Obj, ago, row, rt


@pytest.mark.parametrize(
    ("group", "plural", "obj", "expected"),
    [
        (
            "batch",
            "jobs",
            {
                "spec": {
                    "completions": 3,
                    "parallelism": 1,
                    "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                    "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}},
                },
                "status": {
                    "succeeded": 3,
                    "startTime": ago(minutes=3),
                    "completionTime": ago(minutes=1, seconds=30),
                    "conditions": [
                        {"type": "SuccessCriteriaMet", "status": "True"},
                        {"type": "Complete", "status": "True"},
                    ],
                },
            },
            ["x", "Complete", "3/3", "90s", "3m20s", "pi", "perl", "batch.kubernetes.io/controller-uid=u1"],
        ),
        (
            "batch",
            "jobs",
            {"spec": {"parallelism": 2}, "status": {"succeeded": 1, "startTime": ago(minutes=2, seconds=5)}},
            ["x", "Running", "1/1 of 2", "2m5s", "3m20s", "", "", "<none>"],
        ),
        (
            "batch",
            "jobs",
            {"spec": {"parallelism": 1}},
            ["x", "Running", "0/1", "", "3m20s", "", "", "<none>"],
        ),
        (
            "batch",
            "jobs",
            {
                "spec": {"completions": 1},
                "status": {
                    "startTime": ago(hours=2),
                    "conditions": [
                        {"type": "FailureTarget", "status": "True"},
                        {"type": "Failed", "status": "True"},
                    ],
                },
            },
            ["x", "Failed", "0/1", "120m", "3m20s", "", "", "<none>"],
        ),
        (
            "batch",
            "jobs",
            {
                "metadata": {**META, "deletionTimestamp": ago(seconds=1)},
                "spec": {"completions": 2},
                "status": {"conditions": [{"type": "Suspended", "status": "True"}]},
            },
            ["x", "Terminating", "0/2", "", "3m20s", "", "", "<none>"],
        ),
        (
            "batch",
            "jobs",
            {"spec": {"completions": 2}, "status": {"conditions": [{"type": "Suspended", "status": "True"}]}},
            ["x", "Suspended", "0/2", "", "3m20s", "", "", "<none>"],
        ),
        (
            "batch",
            "jobs",
            {
                "spec": {"completions": 2},
                "status": {"conditions": [{"type": "FailureTarget", "status": "True"}]},
            },
            ["x", "FailureTarget", "0/2", "", "3m20s", "", "", "<none>"],
        ),
        (
            "batch",
            "jobs",
            {
                "spec": {"completions": 1},
                "status": {
                    "conditions": [
                        {"type": "Complete", "status": "False"},
                        {"type": "Complete", "status": "True"},
                    ]
                },
            },
            ["x", "Running", "0/1", "", "3m20s", "", "", "<none>"],
        ),
        (
            "batch",
            "cronjobs",
            {
                "spec": {
                    "schedule": "*/5 * * * *",
                    "suspend": False,
                    "jobTemplate": {
                        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
                    },
                },
                "status": {"active": [{"name": "x-1"}], "lastScheduleTime": ago(minutes=2)},
            },
            ["x", "*/5 * * * *", "<none>", "False", 1, "2m", "3m20s", "c", "busybox", "<none>"],
        ),
        (
            "batch",
            "cronjobs",
            {
                "spec": {
                    "schedule": "@daily",
                    "timeZone": "Europe/Rome",
                    "suspend": True,
                    "jobTemplate": {"spec": {"selector": {"matchLabels": {"a": "b"}}}},
                }
            },
            ["x", "@daily", "Europe/Rome", "True", 0, "<none>", "3m20s", "", "", "a=b"],
        ),
        (
            "batch",
            "cronjobs",
            {"spec": {"schedule": "0 0 * * *"}},
            ["x", "0 0 * * *", "<none>", "<unset>", 0, "<none>", "3m20s", "", "", "<none>"],
        ),
    ],
    ids=[
        "job-complete",
        "job-running-work-queue",
        "job-not-started",
        "job-failed",
        "job-terminating-wins-over-suspended",
        "job-suspended",
        "job-failure-target",
        "job-first-condition-of-a-type-decides",
        "cronjob",
        "cronjob-suspended-in-a-time-zone",
        "cronjob-suspend-unset",
    ],
)
def test_batch_cells(group: str, plural: str, obj: Obj, expected: list[Any]) -> None:
    """One row per case: every cell of a Job or CronJob row."""
    assert row(rt(group, plural), {"metadata": META, **obj}) == expected
