"""kubectl get on the kinds whose tables the server prints: the columns and cells a user sees.

Each test creates objects with kubectl, prints them with `kubectl get` and checks the
header and the cells that do not depend on controllers (a real cluster runs Jobs and
Deployments, the emulator does not), so the same assertions hold for both.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from .conftest import Cluster

pytestmark = [pytest.mark.kubectl, pytest.mark.usefixtures("kubectl_available")]


def _rows(text: str) -> list[list[str]]:
    """kubectl's tab-aligned table as cells (cells are separated by at least two spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.strip()]


def _apply(cluster: Cluster, *objects: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))


def _pod_template(name: str) -> dict[str, Any]:
    container = {"name": name, "image": "busybox:1.36", "command": ["sleep", "3600"]}
    return {"spec": {"restartPolicy": "Never", "containers": [container]}}


def test_get_jobs_wide_prints_status_completions_and_containers(cluster: Cluster, namespace: str) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sleeper", "namespace": namespace},
        "spec": {"completions": 2, "parallelism": 1, "template": _pod_template("sleep")},
    }
    _apply(cluster, job)
    header, row = _rows(cluster.kubectl("get", "jobs", "-n", namespace, "-o", "wide").stdout)
    assert header == [
        "NAME",
        "STATUS",
        "COMPLETIONS",
        "DURATION",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    assert row[:3] == ["sleeper", "Running", "0/2"]
    assert row[-3:-1] == ["sleep", "busybox:1.36"]


def test_get_cronjobs_wide_prints_schedule_time_zone_and_suspension(cluster: Cluster, namespace: str) -> None:
    cron_job = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": namespace},
        "spec": {
            "schedule": "*/5 * * * *",
            "timeZone": "Etc/UTC",
            "suspend": True,
            "jobTemplate": {"spec": {"template": _pod_template("tick")}},
        },
    }
    _apply(cluster, cron_job)
    header, row = _rows(cluster.kubectl("get", "cronjobs", "-n", namespace, "-o", "wide").stdout)
    assert header == [
        "NAME",
        "SCHEDULE",
        "TIMEZONE",
        "SUSPEND",
        "ACTIVE",
        "LAST SCHEDULE",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    assert row[:6] == ["tick", "*/5 * * * *", "Etc/UTC", "True", "0", "<none>"]
    assert row[7:] == ["tick", "busybox:1.36", "<none>"]


def test_get_priorityclasses_lists_the_system_classes(cluster: Cluster) -> None:
    header, *rows = _rows(cluster.kubectl("get", "priorityclasses").stdout)
    assert header == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    system = {row[0]: [row[1], row[2], row[4]] for row in rows if row[0].startswith("system-")}
    assert system == {
        "system-cluster-critical": ["2000000000", "false", "PreemptLowerPriority"],
        "system-node-critical": ["2000001000", "false", "PreemptLowerPriority"],
    }


def test_get_network_policies_and_disruption_budgets(cluster: Cluster, namespace: str) -> None:
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "db-only", "namespace": namespace},
        "spec": {"podSelector": {"matchLabels": {"role": "db"}}, "policyTypes": ["Ingress"]},
    }
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }
    _apply(cluster, policy, budget)
    policies = _rows(cluster.kubectl("get", "networkpolicies", "-n", namespace).stdout)
    assert [policies[0], policies[1][:2]] == [["NAME", "POD-SELECTOR", "AGE"], ["db-only", "role=db"]]
    budgets = _rows(cluster.kubectl("get", "pdb", "-n", namespace).stdout)
    assert budgets[0] == ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
    assert budgets[1][:4] == ["web", "1", "N/A", "0"]


def test_get_the_scale_subresource_of_a_deployment(cluster: Cluster, namespace: str) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
            },
        },
    }
    _apply(cluster, deployment)
    output = cluster.kubectl("get", "deployment", "web", "-n", namespace, "--subresource=scale").stdout
    header, row = _rows(output)
    assert header == ["NAME", "DESIRED", "AVAILABLE", "AGE"]
    assert row[:2] == ["web", "2"]
