"""What a pod asks of a node and what a node offers, as whole numbers the filters can compare.

Amounts are integers in the units kube-scheduler compares: millicores for cpu, and the
quantity rounded up for everything else (bytes, pods, devices). A pod's request follows
`k8s.io/component-helpers/resource.PodRequests`:

- the sum over its containers;
- at least the largest init container, which runs alone, plus the sidecars (init containers
  with `restartPolicy: Always`) started before it; sidecars also add to the sum, since they
  keep running next to the containers;
- plus the pod overhead of its RuntimeClass.

A container with a limit but no request asks for its limit (the API server's defaulting, done
here again so pods written without it count the same). For scoring, kube-scheduler counts a
container that requests no cpu or memory as asking for 100m and 200Mi, so empty pods still
spread; `non_zero_requests` gives those numbers (an explicit 0 stays 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from runtime.api.quantity import parse_quantity

#: resource name -> amount (millicores for cpu, whole units for the rest)
Resources = dict[str, int]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
#: kube-scheduler's `DefaultMilliCPURequest` and `DefaultMemoryRequest`, for scoring only
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024


def amount(name: str, value: str | int | float) -> int:
    """One quantity in the units the scheduler compares (millicores for cpu); ValueError if malformed."""
    quantity = parse_quantity(value)
    return quantity.milli_value() if name == CPU else quantity.int_value()


def amounts(values: Mapping[str, Any] | None) -> Resources:
    return {name: amount(name, value) for name, value in (values or {}).items()}


def container_requests(container: Mapping[str, Any]) -> Resources:
    resources = container.get("resources") or {}
    return {**amounts(resources.get("limits")), **amounts(resources.get("requests"))}


def pod_requests(pod: Mapping[str, Any]) -> Resources:
    """Everything `pod` requests of its node: containers, init containers (max rule, sidecars) and overhead."""
    return _pod_total(pod, container_requests)


def non_zero_requests(pod: Mapping[str, Any]) -> Resources:
    """The cpu and memory the scorer counts for `pod`: unset container requests count as 100m and 200Mi."""
    total = _pod_total(pod, _non_zero)
    return {CPU: total.get(CPU, 0), MEMORY: total.get(MEMORY, 0)}


def _non_zero(container: Mapping[str, Any]) -> Resources:
    requests = container_requests(container)
    return {CPU: requests.get(CPU, DEFAULT_MILLI_CPU), MEMORY: requests.get(MEMORY, DEFAULT_MEMORY)}


def _pod_total(pod: Mapping[str, Any], of: Callable[[Mapping[str, Any]], Resources]) -> Resources:
    spec = pod.get("spec") or {}
    total: Resources = {}
    sidecars: Resources = {}
    largest_init: Resources = {}
    for container in spec.get("initContainers") or []:
        requests = of(container)
        if container.get("restartPolicy") == "Always":
            add(total, requests)
            add(sidecars, requests)
            init = dict(sidecars)
        else:
            init = add(dict(requests), sidecars)
        for name, value in init.items():
            largest_init[name] = max(largest_init.get(name, 0), value)
    for container in spec.get("containers") or []:
        add(total, of(container))
    for name, value in largest_init.items():
        total[name] = max(total.get(name, 0), value)
    return add(total, amounts(spec.get("overhead")))


def add(total: Resources, more: Mapping[str, int]) -> Resources:
    """Add `more` into `total` (in place) and return it."""
    for name, value in more.items():
        total[name] = total.get(name, 0) + value
    return total


def allocatable(node: Mapping[str, Any]) -> Resources:
    """What a node offers pods: its `status.allocatable` (a node without it offers nothing, as in kube)."""
    return amounts((node.get("status") or {}).get("allocatable"))
