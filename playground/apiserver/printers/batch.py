"""Printers for batch/v1 Jobs and CronJobs.

A Job's STATUS comes from its conditions (Complete, Failed, then deletion, Suspended,
FailureTarget, else Running), COMPLETIONS from succeeded pods against spec.completions
(or `/1 of <parallelism>` for a work queue), DURATION from status start/completion times.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .columns import AGE, CONTAINERS, IMAGES, NAME, Cell, Column, Obj, Printer
from .fields import get_int, get_list, get_map, get_str, get_value, name_of
from .format import (
    age,
    aware,
    created,
    format_label_selector,
    go_bool,
    human_duration,
    layout_containers,
    parse_timestamp,
)

_SELECTOR_DOC = "A label query over pods that should match the pod count."


def _condition_true(conditions: list[Any], kind: str) -> bool:
    """`hasJobCondition`: the status of the first condition of `kind` is True."""
    first = next((c for c in conditions if get_str(c, "type") == kind), None)
    return first is not None and get_str(first, "status") == "True"


def _job_status(job: Obj) -> str:
    conditions = get_list(job, "status", "conditions")
    if _condition_true(conditions, "Complete"):
        return "Complete"
    if _condition_true(conditions, "Failed"):
        return "Failed"
    if get_map(job, "metadata").get("deletionTimestamp"):
        return "Terminating"
    if _condition_true(conditions, "Suspended"):
        return "Suspended"
    if _condition_true(conditions, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def _completions(job: Obj) -> str:
    succeeded = get_int(job, "status", "succeeded")
    completions = get_value(job, "spec", "completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        return f"{succeeded}/{completions}"
    parallelism = get_int(job, "spec", "parallelism")
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _duration(job: Obj, now: datetime) -> str:
    """Start to completion, or start to now while the job runs; empty before it starts."""
    start = parse_timestamp(get_value(job, "status", "startTime"))
    if start is None:
        return ""
    end = parse_timestamp(get_value(job, "status", "completionTime"))
    return human_duration((end or aware(now)) - start)


def _job_cells(job: Obj, now: datetime) -> list[Cell]:
    spec = get_map(job, "spec")
    names, images = layout_containers(get_map(spec, "template", "spec"))
    return [
        name_of(job),
        _job_status(job),
        _completions(job),
        _duration(job, now),
        created(job, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _cron_job_cells(cron_job: Obj, now: datetime) -> list[Cell]:
    spec, status = get_map(cron_job, "spec"), get_map(cron_job, "status")
    job_spec = get_map(spec, "jobTemplate", "spec")
    names, images = layout_containers(get_map(job_spec, "template", "spec"))
    last_schedule = status.get("lastScheduleTime")
    return [
        name_of(cron_job),
        get_str(spec, "schedule"),
        time_zone if isinstance(time_zone := spec.get("timeZone"), str) else "<none>",
        go_bool(spec.get("suspend")),
        len(get_list(status, "active")),
        "<none>" if last_schedule is None else age(last_schedule, now=now),
        created(cron_job, now),
        names,
        images,
        format_label_selector(job_spec.get("selector")),
    ]


JOB = Printer(
    columns=(
        NAME,
        Column("Status", "Status of the job."),
        Column("Completions", "The number of pods which reached phase Succeeded."),
        Column("Duration", "Time required to complete the job."),
        AGE,
        CONTAINERS,
        IMAGES,
        Column("Selector", _SELECTOR_DOC, priority=1),
    ),
    cells=_job_cells,
)
CRON_JOB = Printer(
    columns=(
        NAME,
        Column("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
        Column("Timezone", "The time zone name for the given schedule."),
        Column("Suspend", "This flag tells the controller to suspend subsequent executions.", type="boolean"),
        Column("Active", "A list of pointers to currently running jobs.", type="integer"),
        Column("Last Schedule", "Information when was the last time the job was successfully scheduled."),
        AGE,
        CONTAINERS,
        IMAGES,
        Column("Selector", _SELECTOR_DOC, priority=1),
    ),
    cells=_cron_job_cells,
)

PRINTERS: dict[tuple[str, str], Printer] = {("batch", "jobs"): JOB, ("batch", "cronjobs"): CRON_JOB}
