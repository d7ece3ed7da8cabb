"""Server-side `meta.k8s.io/v1` Table output, as `kubectl get` asks for it.

kubectl does not format objects itself: it sends `Accept: application/json;as=Table;v=v1;
g=meta.k8s.io` and prints the columns the server returns (priority > 0 only with `-o wide`;
`--show-labels` reads the labels of each row's object). This module builds those Tables
the way kube-apiserver does, so the emulator prints what a real cluster would:

- built-in kinds get the columns and cell formats of `pkg/printers/internalversion`
  (generated, like the apiserver, with every wide column included);
- custom resources get NAME plus their printer columns evaluated with JSONPath, like the
  apiextensions table convertor (an `Age` column only when the CRD declares none);
- any other kind gets the generic convertor's NAME and CREATED AT.

`table()` is pure: the caller passes the objects, the list metadata and the current time.
For watches, pass `no_headers=True` after the first event, as kube-apiserver does.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, TypeAlias

from .errors import bad_request
from .jsonpath import evaluate
from .resources.base import PrinterColumn, ResourceType

Obj = dict[str, Any]
Cell: TypeAlias = str | int | float | bool | None

TABLE_API_VERSION = "meta.k8s.io/v1"
INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")

_NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources "
    "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
    "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
_CREATED_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this "
    "value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for "
    "lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$")
_ZERO_TIME = "0001-01-01T00:00:00Z"
_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
_DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL = "kubernetes.io/role"


# --- durations and timestamps -------------------------------------------------------------------------


def human_duration(delta: timedelta) -> str:
    """`k8s.io/apimachinery/pkg/util/duration.HumanDuration`: ~2-3 significant figures."""
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return _two_units(minutes, "m", seconds % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return _two_units(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return _two_units(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return _two_units(days // 365, "y", days % 365, "d")
    return f"{days // 365}y"


def _two_units(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    return f"{major}{major_unit}{minor}{minor_unit}" if minor else f"{major}{major_unit}"


def parse_timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (`metav1.Time` or `MicroTime`) as an aware datetime; None if absent or bad."""
    match = _RFC3339.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    base, fraction, zone = match.groups()
    try:
        return datetime.fromisoformat(f"{base}.{fraction[:6]}{zone}" if fraction else f"{base}{zone}")
    except ValueError:
        return None


def age(timestamp: Any, *, now: datetime) -> str:
    """How long ago `timestamp` was, as the printers' AGE cells show it (`<unknown>` if unset)."""
    when = parse_timestamp(timestamp)
    if when is None:
        return "<unknown>"
    return human_duration(_aware(now) - when)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# --- small accessors and formatters -------------------------------------------------------------------


def _map(obj: Any, *keys: str) -> Obj:
    """The dict at `keys` inside `obj`, or {} when any step is missing or not a dict."""
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj if isinstance(obj, dict) else {}


def _list(obj: Any, *keys: str) -> list[Any]:
    *parents, last = keys
    value = _map(obj, *parents).get(last)
    return value if isinstance(value, list) else []


def _str(obj: Any, *keys: str) -> str:
    *parents, last = keys
    value = _map(obj, *parents).get(last)
    return value if isinstance(value, str) else ""


def _int(obj: Any, *keys: str, default: int = 0) -> int:
    *parents, last = keys
    value = _map(obj, *parents).get(last)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _name(obj: Obj) -> str:
    return _str(obj, "metadata", "name")


def _created(obj: Obj, now: datetime) -> str:
    return age(_map(obj, "metadata").get("creationTimestamp"), now=now)


def _or(value: str, fallback: str) -> str:
    return value or fallback


def format_labels(labels: Mapping[str, Any]) -> str:
    """`labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty."""
    return ",".join(sorted(f"{key}={value}" for key, value in labels.items())) or "<none>"


def label_selector_string(selector: Any) -> str | None:
    """`metav1.LabelSelectorAsSelector(s).String()`; None when the selector is invalid."""
    if not isinstance(selector, dict):
        return ""
    requirements = [(key, f"{key}={value}") for key, value in _map(selector, "matchLabels").items()]
    for expression in _list(selector, "matchExpressions"):
        requirement = _requirement(expression)
        if requirement is None:
            return None
        requirements.append((str(expression.get("key", "")), requirement))
    return ",".join(text for _, text in sorted(requirements, key=lambda pair: pair[0]))


def _requirement(expression: Any) -> str | None:
    if not isinstance(expression, dict):
        return None
    key, operator = str(expression.get("key", "")), expression.get("operator")
    values = sorted(str(value) for value in _list(expression, "values"))
    if operator == "Exists":
        return key
    if operator == "DoesNotExist":
        return f"!{key}"
    if operator in ("In", "NotIn") and values:
        return f"{key} {operator.lower()} ({','.join(values)})"
    return None


def format_label_selector(selector: Any) -> str:
    """`metav1.FormatLabelSelector`: `<none>` for an empty selector, `<error>` for a bad one."""
    text = label_selector_string(selector)
    if text is None:
        return "<error>"
    return text or "<none>"


def _containers(pod_spec: Obj) -> tuple[str, str]:
    containers = [c for c in _list(pod_spec, "containers") if isinstance(c, dict)]
    return ",".join(_str(c, "name") for c in containers), ",".join(_str(c, "image") for c in containers)


def _with_more(items: list[str], total: int, *, limit: int = 3, empty: str = "<unset>") -> str:
    text = ",".join(items[:limit])
    if total > limit:
        return f"{text} + {total - limit} more..."
    return text or empty


def _load_balancer(status: Obj) -> str:
    addresses = {_str(ing, "ip") or _str(ing, "hostname") for ing in _list(status, "loadBalancer", "ingress")}
    return ",".join(sorted(address for address in addresses if address))


def _has_condition(conditions: Iterable[Any], kind: str) -> bool:
    return any(_str(c, "type") == kind and _str(c, "status") == "True" for c in conditions)


# --- columns and printers -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One `TableColumnDefinition`."""

    name: str
    description: str
    type: str = "string"
    priority: int = 0
    format: str = ""

    def definition(self) -> Obj:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


NAME = Column("Name", _NAME_DOC, format="name")
AGE = Column("Age", _CREATED_DOC)
_CONTAINERS = Column("Containers", "Names of each container in the template.", priority=1)
_IMAGES = Column("Images", "Images referenced by each container in the template.", priority=1)


def _no_conditions(obj: Obj) -> list[Obj]:
    return []


@dataclass(frozen=True)
class Printer:
    """The columns of a kind and how to fill a row's cells (and row conditions) from one object."""

    columns: tuple[Column, ...]
    cells: Callable[[Obj, datetime], list[Cell]]
    conditions: Callable[[Obj], list[Obj]] = _no_conditions


# --- pods ---------------------------------------------------------------------------------------------


@dataclass
class _PodState:
    reason: str
    ready: int = 0
    restarts: int = 0
    last_restart: datetime | None = None


def _latest(current: datetime | None, candidate: datetime | None) -> datetime | None:
    if candidate is None or (current is not None and candidate <= current):
        return current
    return candidate


def _finished_at(status: Obj) -> datetime | None:
    return parse_timestamp(_map(status, "lastState", "terminated").get("finishedAt"))


def _exit_reason(terminated: Obj, prefix: str) -> str:
    if reason := _str(terminated, "reason"):
        return prefix + reason
    if signal := _int(terminated, "signal"):
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{_int(terminated, 'exitCode')}"


def _scan_init_containers(pod: Obj, state: _PodState) -> tuple[bool, _PodState]:
    """Walk init container statuses like printPod; returns (initializing, sidecar-only counts)."""
    specs = _list(pod, "spec", "initContainers")
    sidecars = {_str(c, "name") for c in specs if _str(c, "restartPolicy") == "Always"}
    sidecar = _PodState(reason="")
    for index, status in enumerate(_list(pod, "status", "initContainerStatuses")):
        restarts, finished = _int(status, "restartCount"), _finished_at(status)
        state.restarts += restarts
        state.last_restart = _latest(state.last_restart, finished)
        is_sidecar = _str(status, "name") in sidecars
        if is_sidecar:
            sidecar.restarts += restarts
            sidecar.last_restart = _latest(sidecar.last_restart, finished)
        terminated, waiting = _map(status, "state").get("terminated"), _map(status, "state", "waiting")
        if isinstance(terminated, dict) and _int(terminated, "exitCode") == 0:
            continue
        if is_sidecar and status.get("started") is True:
            state.ready += 1 if status.get("ready") is True else 0
            continue
        if isinstance(terminated, dict):
            state.reason = _exit_reason(terminated, "Init:")
        elif _str(waiting, "reason") not in ("", "PodInitializing"):
            state.reason = "Init:" + _str(waiting, "reason")
        else:
            state.reason = f"Init:{index}/{len(specs)}"
        return True, sidecar
    return False, sidecar


def _scan_containers(pod: Obj, state: _PodState) -> None:
    """The app containers, last to first so the first container's state wins, as in printPod."""
    has_running = False
    for status in reversed(_list(pod, "status", "containerStatuses")):
        state.restarts += _int(status, "restartCount")
        state.last_restart = _latest(state.last_restart, _finished_at(status))
        current = _map(status, "state")
        terminated = current.get("terminated")
        if reason := _str(current, "waiting", "reason"):
            state.reason = reason
        elif isinstance(terminated, dict):
            state.reason = _exit_reason(terminated, "")
        elif status.get("ready") is True and isinstance(current.get("running"), dict):
            has_running = True
            state.ready += 1
    if state.reason == "Completed" and has_running:
        ready = _has_condition(_list(pod, "status", "conditions"), "Ready")
        state.reason = "Running" if ready else "NotReady"


def _pod_state(pod: Obj) -> _PodState:
    status = _map(pod, "status")
    phase = _str(status, "phase")
    state = _PodState(reason=_str(status, "reason") or phase)
    conditions = _list(status, "conditions")
    if any(_str(c, "type") == "PodScheduled" and _str(c, "reason") == "SchedulingGated" for c in conditions):
        state.reason = "SchedulingGated"
    initializing, sidecar = _scan_init_containers(pod, state)
    initialized = next(
        (_str(c, "status") == "True" for c in conditions if _str(c, "type") == "Initialized"), False
    )
    if not initializing or initialized:
        state.restarts, state.last_restart = sidecar.restarts, sidecar.last_restart
        _scan_containers(pod, state)
    if _map(pod, "metadata").get("deletionTimestamp"):
        if _str(status, "reason") == "NodeLost":
            state.reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            state.reason = "Terminating"
    return state


def _pod_total_containers(pod: Obj) -> int:
    sidecars = [c for c in _list(pod, "spec", "initContainers") if _str(c, "restartPolicy") == "Always"]
    return len(_list(pod, "spec", "containers")) + len(sidecars)


def _readiness_gates(pod: Obj) -> str:
    gates = _list(pod, "spec", "readinessGates")
    if not gates:
        return "<none>"
    statuses: dict[str, str] = {}
    for condition in _list(pod, "status", "conditions"):
        statuses.setdefault(_str(condition, "type"), _str(condition, "status"))
    passed = sum(1 for gate in gates if statuses.get(_str(gate, "conditionType")) == "True")
    return f"{passed}/{len(gates)}"


def _pod_ip(status: Obj) -> str:
    ips = _list(status, "podIPs")
    return _or(_str(ips[0], "ip") if ips else _str(status, "podIP"), "<none>")


def _pod_cells(pod: Obj, now: datetime) -> list[Cell]:
    state = _pod_state(pod)
    restarts = str(state.restarts)
    if state.restarts and state.last_restart is not None:
        restarts = f"{state.restarts} ({human_duration(_aware(now) - state.last_restart)} ago)"
    status = _map(pod, "status")
    return [
        _name(pod),
        f"{state.ready}/{_pod_total_containers(pod)}",
        state.reason,
        restarts,
        _created(pod, now),
        _pod_ip(status),
        _or(_str(pod, "spec", "nodeName"), "<none>"),
        _or(_str(status, "nominatedNodeName"), "<none>"),
        _readiness_gates(pod),
    ]


def _pod_conditions(pod: Obj) -> list[Obj]:
    phase = _str(pod, "status", "phase")
    message = {"Succeeded": "The pod has completed successfully.", "Failed": "The pod failed."}.get(phase)
    if message is None:
        return []
    return [{"type": "Completed", "status": "True", "reason": phase, "message": message}]


_POD = Printer(
    columns=(
        NAME,
        Column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        Column("Status", "The aggregate status of the containers in this pod."),
        Column("Restarts", "The number of times the containers in this pod have been restarted."),
        AGE,
        Column("IP", "podIP address allocated to the pod.", priority=1),
        Column("Node", "NodeName indicates in which node this pod is scheduled.", priority=1),
        Column("Nominated Node", "Set only when this pod preempts other pods on the node.", priority=1),
        Column("Readiness Gates", "Readiness gates evaluated for pod readiness.", priority=1),
    ),
    cells=_pod_cells,
    conditions=_pod_conditions,
)


# --- nodes --------------------------------------------------------------------------------------------


def _node_status(node: Obj) -> str:
    ready = next((c for c in _list(node, "status", "conditions") if _str(c, "type") == "Ready"), None)
    status = ["Unknown" if ready is None else "Ready" if _str(ready, "status") == "True" else "NotReady"]
    if _map(node, "spec").get("unschedulable") is True:
        status.append("SchedulingDisabled")
    return ",".join(status)


def node_roles(labels: Mapping[str, Any]) -> list[str]:
    """Roles from `node-role.kubernetes.io/<role>` keys and the `kubernetes.io/role` value, sorted."""
    roles = {key.removeprefix(_NODE_ROLE_PREFIX) for key in labels if key.startswith(_NODE_ROLE_PREFIX)}
    if isinstance(role := labels.get(_NODE_ROLE_LABEL), str):
        roles.add(role)
    return sorted(role for role in roles if role)


def _node_address(node: Obj, kind: str) -> str:
    addresses = (_str(a, "address") for a in _list(node, "status", "addresses") if _str(a, "type") == kind)
    return next(addresses, "<none>")


def _node_cells(node: Obj, now: datetime) -> list[Cell]:
    info = _map(node, "status", "nodeInfo")
    return [
        _name(node),
        _node_status(node),
        _or(",".join(node_roles(_map(node, "metadata", "labels"))), "<none>"),
        _created(node, now),
        _str(info, "kubeletVersion"),
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        _or(_str(info, "osImage"), "<unknown>"),
        _or(_str(info, "kernelVersion"), "<unknown>"),
        _or(_str(info, "containerRuntimeVersion"), "<unknown>"),
    ]


_NODE = Printer(
    columns=(
        NAME,
        Column("Status", "The status of the node"),
        Column("Roles", "The roles of the node"),
        AGE,
        Column("Version", "Kubelet Version reported by the node."),
        Column("Internal-IP", "List of addresses reachable to the node.", priority=1),
        Column("External-IP", "List of addresses reachable to the node.", priority=1),
        Column("OS-Image", "OS Image reported by the node from /etc/os-release.", priority=1),
        Column("Kernel-Version", "Kernel Version reported by the node.", priority=1),
        Column("Container-Runtime", "ContainerRuntime Version reported by the node.", priority=1),
    ),
    cells=_node_cells,
)


# --- core: namespaces, services, endpoints, config, accounts, events --------------------------------


def _namespace_cells(ns: Obj, now: datetime) -> list[Cell]:
    return [_name(ns), _str(ns, "status", "phase"), _created(ns, now)]


def _service_external_ip(spec: Obj, status: Obj) -> str:
    kind = _str(spec, "type") or "ClusterIP"
    external = [ip for ip in _list(spec, "externalIPs") if isinstance(ip, str)]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        balancers = _load_balancer(status)
        if external:
            return ",".join([*(balancers.split(",") if balancers else []), *external])
        return balancers or "<pending>"
    if kind == "ExternalName":
        return _str(spec, "externalName")
    return "<unknown>"


def _service_ports(ports: list[Any]) -> str:
    pieces = []
    for port in ports:
        protocol, node_port = _str(port, "protocol") or "TCP", _int(port, "nodePort")
        middle = f":{node_port}" if node_port > 0 else ""
        pieces.append(f"{_int(port, 'port')}{middle}/{protocol}")
    return ",".join(pieces) or "<none>"


def _service_cells(svc: Obj, now: datetime) -> list[Cell]:
    spec = _map(svc, "spec")
    cluster_ips = _list(spec, "clusterIPs")
    cluster_ip = (
        cluster_ips[0] if cluster_ips and isinstance(cluster_ips[0], str) else _str(spec, "clusterIP")
    )
    return [
        _name(svc),
        _str(spec, "type") or "ClusterIP",
        _or(cluster_ip, "<none>"),
        _service_external_ip(spec, _map(svc, "status")),
        _service_ports(_list(spec, "ports")),
        _created(svc, now),
        format_labels(_map(spec, "selector")),
    ]


def _host_port(ip: str, port: int) -> str:
    try:
        bracket = isinstance(ipaddress.ip_address(ip), ipaddress.IPv6Address)
    except ValueError:
        bracket = ":" in ip
    return f"[{ip}]:{port}" if bracket else f"{ip}:{port}"


def _endpoints_list(endpoints: Obj) -> str:
    subsets = _list(endpoints, "subsets")
    if not subsets:
        return "<none>"
    items: list[str] = []
    total = 0
    for subset in subsets:
        addresses = [_str(a, "ip") for a in _list(subset, "addresses")]
        ports = _list(subset, "ports") or [None]
        for port in ports:
            total += len(addresses)
            items.extend(ip if port is None else _host_port(ip, _int(port, "port")) for ip in addresses)
    return _with_more(items, total, empty="")


def _endpoints_cells(endpoints: Obj, now: datetime) -> list[Cell]:
    return [_name(endpoints), _endpoints_list(endpoints), _created(endpoints, now)]


def _slice_port(port: Any) -> str:
    number = _int(port, "port", default=-1)
    return str(number) if number >= 0 else _str(port, "name") or "*"


def _endpoint_slice_cells(eps: Obj, now: datetime) -> list[Cell]:
    ports = [_slice_port(port) for port in _list(eps, "ports")]
    addresses = [a for endpoint in _list(eps, "endpoints") for a in _list(endpoint, "addresses")]
    return [
        _name(eps),
        _str(eps, "addressType"),
        _with_more(ports, len(ports)),
        _with_more([str(a) for a in addresses], len(addresses)),
        _created(eps, now),
    ]


def _configmap_cells(cm: Obj, now: datetime) -> list[Cell]:
    return [_name(cm), len(_map(cm, "data")) + len(_map(cm, "binaryData")), _created(cm, now)]


def _secret_cells(secret: Obj, now: datetime) -> list[Cell]:
    return [_name(secret), _str(secret, "type") or "Opaque", len(_map(secret, "data")), _created(secret, now)]


def _service_account_cells(sa: Obj, now: datetime) -> list[Cell]:
    return [_name(sa), len(_list(sa, "secrets")), _created(sa, now)]


def _core_event(event: Obj) -> Obj:
    """An `events.k8s.io/v1` Event in the core shape the event printer reads."""
    return {
        "metadata": _map(event, "metadata"),
        "involvedObject": _map(event, "regarding"),
        "type": _str(event, "type"),
        "reason": _str(event, "reason"),
        "message": _str(event, "note"),
        "source": _map(event, "deprecatedSource"),
        "firstTimestamp": event.get("deprecatedFirstTimestamp"),
        "lastTimestamp": event.get("deprecatedLastTimestamp"),
        "count": _int(event, "deprecatedCount"),
        "eventTime": event.get("eventTime"),
        "series": event.get("series"),
        "reportingComponent": _str(event, "reportingController"),
        "reportingInstance": _str(event, "reportingInstance"),
    }


def _event_source(event: Obj) -> str:
    component = _str(event, "source", "component") or _str(event, "reportingComponent")
    host = _str(event, "source", "host") or _str(event, "reportingInstance")
    return f"{component}, {host}" if host else component


def _event_cells(event: Obj, now: datetime) -> list[Cell]:
    first = age(event.get("firstTimestamp") or event.get("eventTime"), now=now)
    last = age(event["lastTimestamp"], now=now) if event.get("lastTimestamp") else first
    count = _int(event, "count")
    if isinstance(event.get("series"), dict):
        last = age(_map(event, "series").get("lastObservedTime"), now=now)
        count = _int(event, "series", "count")
    elif count == 0:
        count = 1
    involved = _map(event, "involvedObject")
    target = _str(involved, "kind").lower()
    if name := _str(involved, "name"):
        target = f"{target}/{name}"
    return [
        last,
        _str(event, "type"),
        _str(event, "reason"),
        target,
        _str(involved, "fieldPath"),
        _event_source(event),
        _str(event, "message").strip(),
        first,
        count,
        _name(event),
    ]


_NAMESPACE = Printer(
    columns=(NAME, Column("Status", "The status of the namespace"), AGE), cells=_namespace_cells
)
_SERVICE = Printer(
    columns=(
        NAME,
        Column("Type", "type determines how the Service is exposed."),
        Column("Cluster-IP", "clusterIP is the IP address of the service."),
        Column("External-IP", "IP addresses for which nodes also accept traffic for this service."),
        Column("Port(s)", "The list of ports that are exposed by this service."),
        AGE,
        Column("Selector", "Route service traffic to pods with labels matching this selector.", priority=1),
    ),
    cells=_service_cells,
)
_ENDPOINTS = Printer(
    columns=(NAME, Column("Endpoints", "The set of all endpoints is the union of all subsets."), AGE),
    cells=_endpoints_cells,
)
_ENDPOINT_SLICE = Printer(
    columns=(
        NAME,
        Column("AddressType", "The type of address carried by this EndpointSlice."),
        Column("Ports", "The list of network ports exposed by each endpoint."),
        Column("Endpoints", "A list of unique endpoints in this slice."),
        AGE,
    ),
    cells=_endpoint_slice_cells,
)
_CONFIGMAP = Printer(
    columns=(NAME, Column("Data", "Data contains the configuration data."), AGE), cells=_configmap_cells
)
_SECRET = Printer(
    columns=(
        NAME,
        Column("Type", "Used to facilitate programmatic handling of secret data."),
        Column("Data", "Data contains the secret data."),
        AGE,
    ),
    cells=_secret_cells,
)
_SERVICE_ACCOUNT = Printer(
    columns=(NAME, Column("Secrets", "Secrets is a list of the secrets in the same namespace."), AGE),
    cells=_service_account_cells,
)
_EVENT_COLUMNS = (
    Column("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    Column("Type", "Type of this event (Normal, Warning)."),
    Column("Reason", "A short, machine understandable reason for the transition."),
    Column("Object", "The object that this event is about."),
    Column("Subobject", "The piece of the object this event is about, if not all of it.", priority=1),
    Column("Source", "The component reporting this event.", priority=1),
    Column("Message", "A human-readable description of the status of this operation."),
    Column("First Seen", "The time at which the event was first recorded.", priority=1),
    Column("Count", "The number of times this event has occurred.", priority=1),
    Column("Name", _NAME_DOC, priority=1, format="name"),
)
_EVENT = Printer(columns=_EVENT_COLUMNS, cells=_event_cells)
_NEW_EVENT = Printer(columns=_EVENT_COLUMNS, cells=lambda event, now: _event_cells(_core_event(event), now))


# --- apps ---------------------------------------------------------------------------------------------


def _template_spec(obj: Obj) -> Obj:
    return _map(obj, "spec", "template", "spec")


def _deployment_cells(deploy: Obj, now: datetime) -> list[Cell]:
    spec, status = _map(deploy, "spec"), _map(deploy, "status")
    names, images = _containers(_template_spec(deploy))
    selector = label_selector_string(spec.get("selector"))
    return [
        _name(deploy),
        f"{_int(status, 'readyReplicas')}/{_int(spec, 'replicas', default=1)}",
        _int(status, "updatedReplicas"),
        _int(status, "availableReplicas"),
        _created(deploy, now),
        names,
        images,
        "<invalid>" if selector is None else selector,
    ]


def _replica_set_cells(rs: Obj, now: datetime) -> list[Cell]:
    spec, status = _map(rs, "spec"), _map(rs, "status")
    names, images = _containers(_template_spec(rs))
    return [
        _name(rs),
        _int(spec, "replicas", default=1),
        _int(status, "replicas"),
        _int(status, "readyReplicas"),
        _created(rs, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _daemon_set_cells(ds: Obj, now: datetime) -> list[Cell]:
    status = _map(ds, "status")
    names, images = _containers(_template_spec(ds))
    counts: list[Cell] = [
        _int(status, key)
        for key in (
            "desiredNumberScheduled",
            "currentNumberScheduled",
            "numberReady",
            "updatedNumberScheduled",
            "numberAvailable",
        )
    ]
    node_selector = format_labels(_map(_template_spec(ds), "nodeSelector"))
    selector = format_label_selector(_map(ds, "spec").get("selector"))
    return [_name(ds), *counts, node_selector, _created(ds, now), names, images, selector]


def _stateful_set_cells(sts: Obj, now: datetime) -> list[Cell]:
    names, images = _containers(_template_spec(sts))
    ready = f"{_int(sts, 'status', 'readyReplicas')}/{_int(sts, 'spec', 'replicas', default=1)}"
    return [_name(sts), ready, _created(sts, now), names, images]


_DEPLOYMENT = Printer(
    columns=(
        NAME,
        Column("Ready", "Number of the pod with ready state"),
        Column("Up-to-date", "Total number of non-terminated pods that have the desired template spec."),
        Column("Available", "Total number of available pods targeted by this deployment."),
        AGE,
        _CONTAINERS,
        _IMAGES,
        Column("Selector", "Label selector for pods.", priority=1),
    ),
    cells=_deployment_cells,
)
_REPLICA_SET = Printer(
    columns=(
        NAME,
        Column("Desired", "Replicas is the number of desired replicas.", type="integer"),
        Column("Current", "Replicas is the most recently observed number of replicas.", type="integer"),
        Column("Ready", "The number of ready replicas for this replica set.", type="integer"),
        AGE,
        _CONTAINERS,
        _IMAGES,
        Column("Selector", "A label query over pods that should match the replica count.", priority=1),
    ),
    cells=_replica_set_cells,
)
_DAEMON_SET = Printer(
    columns=(
        NAME,
        Column("Desired", "The total number of nodes that should be running the daemon pod.", type="integer"),
        Column("Current", "The number of nodes running at least 1 daemon pod.", type="integer"),
        Column("Ready", "The number of nodes running the daemon pod ready.", type="integer"),
        Column("Up-to-date", "The number of nodes running the updated daemon pod.", type="integer"),
        Column("Available", "The number of nodes running the daemon pod available.", type="integer"),
        Column("Node Selector", "A selector which must be true for the pod to fit on a node."),
        AGE,
        _CONTAINERS,
        _IMAGES,
        Column("Selector", "A label query over pods that are managed by the daemon set.", priority=1),
    ),
    cells=_daemon_set_cells,
)
_STATEFUL_SET = Printer(
    columns=(NAME, Column("Ready", "Number of the pod with ready state"), AGE, _CONTAINERS, _IMAGES),
    cells=_stateful_set_cells,
)


# --- storage, networking, node, certificates, coordination ------------------------------------------


def access_modes(modes: Iterable[Any]) -> str:
    """`helper.GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order."""
    present = set(modes)
    short = (
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    )
    return ",".join(abbreviation for mode, abbreviation in short if mode in present)


def _storage_class_of(obj: Obj) -> str:
    annotations = _map(obj, "metadata", "annotations")
    if _BETA_STORAGE_CLASS in annotations:
        return str(annotations[_BETA_STORAGE_CLASS])
    return _str(obj, "spec", "storageClassName")


def _persistent_volume_cells(pv: Obj, now: datetime) -> list[Cell]:
    spec = _map(pv, "spec")
    claim = _map(spec, "claimRef")
    phase = "Terminating" if _map(pv, "metadata").get("deletionTimestamp") else _str(pv, "status", "phase")
    return [
        _name(pv),
        str(_map(spec, "capacity").get("storage", "0")),
        access_modes(_list(spec, "accessModes")),
        _str(spec, "persistentVolumeReclaimPolicy"),
        phase,
        f"{_str(claim, 'namespace')}/{_str(claim, 'name')}" if claim else "",
        _storage_class_of(pv),
        _str(spec, "volumeAttributesClassName") or "<unset>",
        _str(pv, "status", "reason"),
        _created(pv, now),
        _str(spec, "volumeMode") or "<unset>",
    ]


def _persistent_volume_claim_cells(pvc: Obj, now: datetime) -> list[Cell]:
    spec, status = _map(pvc, "spec"), _map(pvc, "status")
    phase = "Terminating" if _map(pvc, "metadata").get("deletionTimestamp") else _str(status, "phase")
    bound = bool(_str(spec, "volumeName"))
    return [
        _name(pvc),
        phase,
        _str(spec, "volumeName"),
        str(_map(status, "capacity").get("storage", "0")) if bound else "",
        access_modes(_list(status, "accessModes")) if bound else "",
        _storage_class_of(pvc),
        _str(spec, "volumeAttributesClassName") or "<unset>",
        _created(pvc, now),
        _str(spec, "volumeMode") or "<unset>",
    ]


def _storage_class_cells(sc: Obj, now: datetime) -> list[Cell]:
    annotations = _map(sc, "metadata", "annotations")
    is_default = any(annotations.get(key) == "true" for key in _DEFAULT_CLASS_ANNOTATIONS)
    return [
        _name(sc) + (" (default)" if is_default else ""),
        _str(sc, "provisioner"),
        _str(sc, "reclaimPolicy") or "Delete",
        _str(sc, "volumeBindingMode") or "Immediate",
        sc.get("allowVolumeExpansion") is True,
        _created(sc, now),
    ]


def _ingress_hosts(rules: list[Any]) -> str:
    """Up to three hosts; once three are found, any further rule adds "+ N more" (N counts rules)."""
    hosts: list[str] = []
    for rule in rules:
        if len(hosts) == 3:
            return f"{','.join(hosts)} + {len(rules) - 3} more..."
        if host := _str(rule, "host"):
            hosts.append(host)
    return ",".join(hosts) or "*"


def _ingress_cells(ing: Obj, now: datetime) -> list[Cell]:
    spec = _map(ing, "spec")
    return [
        _name(ing),
        _str(spec, "ingressClassName") or "<none>",
        _ingress_hosts(_list(spec, "rules")),
        _load_balancer(_map(ing, "status")),
        "80, 443" if _list(spec, "tls") else "80",
        _created(ing, now),
    ]


def _runtime_class_cells(rc: Obj, now: datetime) -> list[Cell]:
    return [_name(rc), _str(rc, "handler"), _created(rc, now)]


def _csr_condition(csr: Obj) -> str:
    kinds = {_str(c, "type") for c in _list(csr, "status", "conditions")}
    status = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        status += ",Failed"
    if _str(csr, "status", "certificate"):
        status += ",Issued"
    return status


def _csr_cells(csr: Obj, now: datetime) -> list[Cell]:
    spec = _map(csr, "spec")
    seconds = spec.get("expirationSeconds")
    duration = human_duration(timedelta(seconds=seconds)) if isinstance(seconds, int) else "<none>"
    return [
        _name(csr),
        _created(csr, now),
        _str(spec, "signerName") or "<none>",
        _str(spec, "username"),
        duration,
        _csr_condition(csr),
    ]


def _lease_cells(lease: Obj, now: datetime) -> list[Cell]:
    return [_name(lease), _str(lease, "spec", "holderIdentity"), _created(lease, now)]


_PERSISTENT_VOLUME = Printer(
    columns=(
        NAME,
        Column("Capacity", "The description of the persistent volume's resources and capacity."),
        Column("Access Modes", "All ways the volume can be mounted."),
        Column("Reclaim Policy", "What happens to a persistent volume when released from its claim."),
        Column("Status", "Whether the volume is available, bound to a claim, or released by a claim."),
        Column("Claim", "The claim this volume is bound to."),
        Column("StorageClass", "StorageClass of the pv"),
        Column("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
        Column("Reason", "A brief CamelCase string that describes any failure."),
        AGE,
        Column("VolumeMode", "Whether the volume is a formatted filesystem or a raw block.", priority=1),
    ),
    cells=_persistent_volume_cells,
)
_PERSISTENT_VOLUME_CLAIM = Printer(
    columns=(
        NAME,
        Column("Status", "The current phase of PersistentVolumeClaim."),
        Column("Volume", "The binding reference to the PersistentVolume backing this claim."),
        Column("Capacity", "The actual resources of the underlying volume."),
        Column("Access Modes", "The actual access modes the volume backing the PVC has."),
        Column("StorageClass", "StorageClass of the pvc"),
        Column("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
        AGE,
        Column("VolumeMode", "What type of volume is required by the claim.", priority=1),
    ),
    cells=_persistent_volume_claim_cells,
)
_STORAGE_CLASS = Printer(
    columns=(
        NAME,
        Column("Provisioner", "Provisioner indicates the type of the provisioner."),
        Column("ReclaimPolicy", "The reclaimPolicy of dynamically provisioned PersistentVolumes."),
        Column("VolumeBindingMode", "How PersistentVolumeClaims should be provisioned and bound."),
        Column("AllowVolumeExpansion", "Whether the storage class allows volume expansion."),
        AGE,
    ),
    cells=_storage_class_cells,
)
_INGRESS = Printer(
    columns=(
        NAME,
        Column("Class", "The name of the IngressClass resource used for additional configuration"),
        Column("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
        Column("Address", "Address is a list containing ingress points for the load-balancer"),
        Column("Ports", "Ports of TLS configurations that open"),
        AGE,
    ),
    cells=_ingress_cells,
)
_RUNTIME_CLASS = Printer(
    columns=(
        NAME,
        Column("Handler", "The underlying runtime and configuration the CRI uses for this class."),
        AGE,
    ),
    cells=_runtime_class_cells,
)
_CSR = Printer(
    columns=(
        NAME,
        AGE,
        Column("SignerName", "The requested signer, a qualified name."),
        Column("Requestor", "The name of the user that created the CertificateSigningRequest."),
        Column("RequestedDuration", "The requested duration of validity of the issued certificate."),
        Column("Condition", "Conditions applied to the request."),
    ),
    cells=_csr_cells,
)
_LEASE = Printer(
    columns=(NAME, Column("Holder", "The identity of the holder of a current lease."), AGE),
    cells=_lease_cells,
)


# --- rbac and admission -------------------------------------------------------------------------------


def _subjects(binding: Obj) -> tuple[str, str, str]:
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in _list(binding, "subjects"):
        kind, name = _str(subject, "kind"), _str(subject, "name")
        if kind == "ServiceAccount":
            accounts.append(f"{_str(subject, 'namespace')}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return ", ".join(users), ", ".join(groups), ", ".join(accounts)


def _binding_cells(binding: Obj, now: datetime) -> list[Cell]:
    role = f"{_str(binding, 'roleRef', 'kind')}/{_str(binding, 'roleRef', 'name')}"
    return [_name(binding), role, _created(binding, now), *_subjects(binding)]


def _webhook_cells(config: Obj, now: datetime) -> list[Cell]:
    return [_name(config), len(_list(config, "webhooks")), _created(config, now)]


def _binding_printer(noun: str) -> Printer:
    return Printer(
        columns=(
            NAME,
            Column("Role", "RoleRef can reference a Role in the namespace or a ClusterRole."),
            AGE,
            Column("Users", f"Users in the {noun}", priority=1),
            Column("Groups", f"Groups in the {noun}", priority=1),
            Column("ServiceAccounts", f"ServiceAccounts in the {noun}", priority=1),
        ),
        cells=_binding_cells,
    )


_WEBHOOK = Printer(
    columns=(
        NAME,
        Column("Webhooks", "The number of webhooks registered in this configuration", type="integer"),
        AGE,
    ),
    cells=_webhook_cells,
)

BUILTIN_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "pods"): _POD,
    ("", "nodes"): _NODE,
    ("", "namespaces"): _NAMESPACE,
    ("", "services"): _SERVICE,
    ("", "endpoints"): _ENDPOINTS,
    ("discovery.k8s.io", "endpointslices"): _ENDPOINT_SLICE,
    ("", "configmaps"): _CONFIGMAP,
    ("", "secrets"): _SECRET,
    ("", "serviceaccounts"): _SERVICE_ACCOUNT,
    ("", "events"): _EVENT,
    ("events.k8s.io", "events"): _NEW_EVENT,
    ("coordination.k8s.io", "leases"): _LEASE,
    ("apps", "deployments"): _DEPLOYMENT,
    ("apps", "replicasets"): _REPLICA_SET,
    ("apps", "daemonsets"): _DAEMON_SET,
    ("apps", "statefulsets"): _STATEFUL_SET,
    ("", "persistentvolumes"): _PERSISTENT_VOLUME,
    ("", "persistentvolumeclaims"): _PERSISTENT_VOLUME_CLAIM,
    ("storage.k8s.io", "storageclasses"): _STORAGE_CLASS,
    ("networking.k8s.io", "ingresses"): _INGRESS,
    ("node.k8s.io", "runtimeclasses"): _RUNTIME_CLASS,
    ("certificates.k8s.io", "certificatesigningrequests"): _CSR,
    ("rbac.authorization.k8s.io", "rolebindings"): _binding_printer("roleBinding"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _binding_printer("clusterRoleBinding"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _WEBHOOK,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _WEBHOOK,
}


# --- the generic convertor and custom resources -------------------------------------------------------


def _created_at(obj: Obj, now: datetime) -> list[Cell]:
    when = parse_timestamp(_map(obj, "metadata").get("creationTimestamp"))
    stamp = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if when is not None else _ZERO_TIME
    return [_name(obj), stamp]


DEFAULT_PRINTER = Printer(
    columns=(NAME, Column("Created At", type="date", description=_CREATED_DOC)),
    cells=_created_at,
)
DEFAULT_CRD_COLUMNS = (
    PrinterColumn(name="Age", type="date", json_path=".metadata.creationTimestamp", description=_CREATED_DOC),
)


def _go_float(value: float) -> str:
    """A float as Go's `fmt.Print` writes it (`%v`: shortest digits, exponent form below 1e-4 or from 1e6)."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)
    prefix = "-" if sign else ""
    if text == "0":
        return "0"
    if point - 1 < -4 or point - 1 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{point - 1:+03d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{prefix}{text}{'0' * (point - len(text))}"
    return f"{prefix}{text[:point]}.{text[point:]}"


def _go_json(value: Any) -> str:
    """`json.Marshal` output: compact, sorted keys, HTML characters escaped."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def jsonpath_text(value: Any) -> str:
    """How client-go's JSONPath prints one result: JSON for maps and lists, Go formatting for scalars."""
    if value is None:
        return "<no value>"
    if isinstance(value, dict | list):
        return _go_json(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _typed_cell(kind: str, value: Any, now: datetime) -> Cell:
    """The apiextensions convertor's `cellForJSONValue` for non-string columns."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "integer" and number:
        return int(value)
    if kind == "number" and number:
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        return _date_cell(value, now)
    return None


def _date_cell(value: str, now: datetime) -> str:
    if value in ("", "null"):
        return "<unknown>"
    when = parse_timestamp(value)
    return "<invalid>" if when is None else human_duration(_aware(now) - when)


def _custom_cell(column: PrinterColumn, obj: Obj, now: datetime) -> Cell:
    try:
        results = evaluate(obj, column.json_path)
    except ValueError:
        return None
    if not results:
        return None
    if column.type == "string":
        return jsonpath_text(results[0])
    return _typed_cell(column.type, results[0], now)


def custom_printer(columns: tuple[PrinterColumn, ...]) -> Printer:
    """NAME plus the CRD's printer columns (or `Age` when it declares none), like the CRD convertor."""
    declared = columns or DEFAULT_CRD_COLUMNS
    definitions = tuple(
        Column(
            c.name,
            type=c.type,
            format=c.format,
            priority=c.priority,
            description=c.description
            or f"Custom resource definition column (in JSONPath format): {c.json_path}",
        )
        for c in declared
    )

    def cells(obj: Obj, now: datetime) -> list[Cell]:
        return [_name(obj), *(_custom_cell(column, obj, now) for column in declared)]

    return Printer(columns=(NAME, *definitions), cells=cells)


def printer_for(rt: ResourceType) -> Printer:
    """Custom resources by their columns, built-in kinds by (group, plural), anything else generically."""
    if rt.crd:
        return custom_printer(rt.printer_columns)
    builtin = BUILTIN_PRINTERS.get((rt.group, rt.plural))
    if builtin is not None:
        return builtin
    if rt.printer_columns:
        return custom_printer(rt.printer_columns)
    return DEFAULT_PRINTER


# --- the Table ----------------------------------------------------------------------------------------


def _row_object(rt: ResourceType, obj: Obj, include_object: str) -> Obj | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        if "apiVersion" in obj and "kind" in obj:
            return obj
        return {"apiVersion": rt.api_version, "kind": rt.kind, **obj}
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": TABLE_API_VERSION,
        "metadata": _map(obj, "metadata"),
    }


def _table_metadata(list_meta: Mapping[str, Any] | None) -> Obj:
    keep = ("resourceVersion", "continue", "remainingItemCount")
    return {key: list_meta[key] for key in keep if list_meta and list_meta.get(key) not in (None, "")}


def table(
    rt: ResourceType,
    objects: list[Obj],
    *,
    include_object: str = "Metadata",
    now: datetime,
    list_meta: Mapping[str, Any] | None = None,
    no_headers: bool = False,
) -> Obj:
    """The `meta.k8s.io/v1` Table for `objects` of kind `rt`.

    `include_object` is the request's `includeObject` (`None`, `Metadata` (default, also for ""),
    `Object`); anything else is a 400 like kube-apiserver's. `list_meta` supplies
    resourceVersion/continue/remainingItemCount (for a single GET pass the object's
    resourceVersion). `no_headers` drops the column definitions (watch events after the first).
    """
    include = include_object or "Metadata"
    if include not in INCLUDE_OBJECT_VALUES:
        raise bad_request(f'unrecognized includeObject value: "{include_object}"')
    printer = printer_for(rt)
    rows = []
    for obj in objects:
        row: Obj = {"cells": printer.cells(obj, now)}
        if conditions := printer.conditions(obj):
            row["conditions"] = conditions
        row["object"] = _row_object(rt, obj, include)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": _table_metadata(list_meta),
        "columnDefinitions": [] if no_headers else [column.definition() for column in printer.columns],
        "rows": rows,
    }
