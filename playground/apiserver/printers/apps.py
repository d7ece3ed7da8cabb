"""Printers for workload controllers and what they scale.

The apps/v1 kinds (Deployments, ReplicaSets, DaemonSets, StatefulSets,
ControllerRevisions), the core ReplicationController and PodTemplate, and the
autoscaling/v1 Scale that the `scale` subresource of any of them returns.
"""

from __future__ import annotations

from datetime import datetime

from .columns import AGE, CONTAINERS, IMAGES, NAME, NAME_DOC, Cell, Column, Obj, Printer
from .fields import get_int, get_list, get_map, get_str, name_of
from .format import created, format_label_selector, format_labels, label_selector_string, layout_containers


def _template_spec(obj: Obj) -> Obj:
    return get_map(obj, "spec", "template", "spec")


def _deployment_cells(deploy: Obj, now: datetime) -> list[Cell]:
    spec, status = get_map(deploy, "spec"), get_map(deploy, "status")
    names, images = layout_containers(_template_spec(deploy))
    selector = label_selector_string(spec.get("selector"))
    return [
        name_of(deploy),
        f"{get_int(status, 'readyReplicas')}/{get_int(spec, 'replicas', default=1)}",
        get_int(status, "updatedReplicas"),
        get_int(status, "availableReplicas"),
        created(deploy, now),
        names,
        images,
        "<invalid>" if selector is None else selector,
    ]


def _replica_set_cells(rs: Obj, now: datetime) -> list[Cell]:
    spec, status = get_map(rs, "spec"), get_map(rs, "status")
    names, images = layout_containers(_template_spec(rs))
    return [
        name_of(rs),
        get_int(spec, "replicas", default=1),
        get_int(status, "replicas"),
        get_int(status, "readyReplicas"),
        created(rs, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _replication_controller_cells(rc: Obj, now: datetime) -> list[Cell]:
    spec, status = get_map(rc, "spec"), get_map(rc, "status")
    names, images = layout_containers(_template_spec(rc))
    return [
        name_of(rc),
        get_int(spec, "replicas", default=1),
        get_int(status, "replicas"),
        get_int(status, "readyReplicas"),
        created(rc, now),
        names,
        images,
        format_labels(get_map(spec, "selector")),
    ]


def _daemon_set_cells(ds: Obj, now: datetime) -> list[Cell]:
    status = get_map(ds, "status")
    names, images = layout_containers(_template_spec(ds))
    counts: list[Cell] = [
        get_int(status, key)
        for key in (
            "desiredNumberScheduled",
            "currentNumberScheduled",
            "numberReady",
            "updatedNumberScheduled",
            "numberAvailable",
        )
    ]
    node_selector = format_labels(get_map(_template_spec(ds), "nodeSelector"))
    selector = format_label_selector(get_map(ds, "spec").get("selector"))
    return [name_of(ds), *counts, node_selector, created(ds, now), names, images, selector]


def _stateful_set_cells(sts: Obj, now: datetime) -> list[Cell]:
    names, images = layout_containers(_template_spec(sts))
    ready = f"{get_int(sts, 'status', 'readyReplicas')}/{get_int(sts, 'spec', 'replicas', default=1)}"
    return [name_of(sts), ready, created(sts, now), names, images]


def _controller_of(obj: Obj) -> str:
    """`kind.group/name` (lower-cased kind and group) of the owner marked controller, else `<none>`."""
    references = get_list(obj, "metadata", "ownerReferences")
    owner = next((ref for ref in references if isinstance(ref, dict) and ref.get("controller") is True), None)
    if owner is None:
        return "<none>"
    api_version, kind = get_str(owner, "apiVersion"), get_str(owner, "kind")
    group = api_version.rpartition("/")[0]
    group_kind = f"{kind}.{group}" if group else kind
    name = get_str(owner, "name")
    return f"{group_kind.lower()}/{name}" if group_kind else name


def _controller_revision_cells(revision: Obj, now: datetime) -> list[Cell]:
    return [
        name_of(revision),
        _controller_of(revision),
        get_int(revision, "revision"),
        created(revision, now),
    ]


def _pod_template_cells(template: Obj, now: datetime) -> list[Cell]:
    names, images = layout_containers(get_map(template, "template", "spec"))
    return [
        name_of(template),
        names,
        images,
        format_labels(get_map(template, "template", "metadata", "labels")),
    ]


def _scale_cells(scale: Obj, now: datetime) -> list[Cell]:
    return [
        name_of(scale),
        get_int(scale, "spec", "replicas"),
        get_int(scale, "status", "replicas"),
        created(scale, now),
    ]


DEPLOYMENT = Printer(
    columns=(
        NAME,
        Column("Ready", "Number of the pod with ready state"),
        Column("Up-to-date", "Total number of non-terminated pods that have the desired template spec."),
        Column("Available", "Total number of available pods targeted by this deployment."),
        AGE,
        CONTAINERS,
        IMAGES,
        Column("Selector", "Label selector for pods.", priority=1),
    ),
    cells=_deployment_cells,
)
REPLICA_SET = Printer(
    columns=(
        NAME,
        Column("Desired", "Replicas is the number of desired replicas.", type="integer"),
        Column("Current", "Replicas is the most recently observed number of replicas.", type="integer"),
        Column("Ready", "The number of ready replicas for this replica set.", type="integer"),
        AGE,
        CONTAINERS,
        IMAGES,
        Column("Selector", "A label query over pods that should match the replica count.", priority=1),
    ),
    cells=_replica_set_cells,
)
REPLICATION_CONTROLLER = Printer(
    columns=(
        NAME,
        Column("Desired", "Replicas is the number of desired replicas.", type="integer"),
        Column("Current", "Replicas is the most recently observed number of replicas.", type="integer"),
        Column("Ready", "The number of ready replicas for this replication controller.", type="integer"),
        AGE,
        CONTAINERS,
        IMAGES,
        Column(
            "Selector",
            "Selector is a label query over pods that should match the Replicas count.",
            priority=1,
        ),
    ),
    cells=_replication_controller_cells,
)
DAEMON_SET = Printer(
    columns=(
        NAME,
        Column("Desired", "The total number of nodes that should be running the daemon pod.", type="integer"),
        Column("Current", "The number of nodes running at least 1 daemon pod.", type="integer"),
        Column("Ready", "The number of nodes running the daemon pod ready.", type="integer"),
        Column("Up-to-date", "The number of nodes running the updated daemon pod.", type="integer"),
        Column("Available", "The number of nodes running the daemon pod available.", type="integer"),
        Column("Node Selector", "A selector which must be true for the pod to fit on a node."),
        AGE,
        CONTAINERS,
        IMAGES,
        Column("Selector", "A label query over pods that are managed by the daemon set.", priority=1),
    ),
    cells=_daemon_set_cells,
)
STATEFUL_SET = Printer(
    columns=(NAME, Column("Ready", "Number of the pod with ready state"), AGE, CONTAINERS, IMAGES),
    cells=_stateful_set_cells,
)
CONTROLLER_REVISION = Printer(
    columns=(
        NAME,
        Column("Controller", "Controller of the object"),
        Column("Revision", "Revision indicates the revision of the state represented by Data."),
        AGE,
    ),
    cells=_controller_revision_cells,
)
POD_TEMPLATE = Printer(
    columns=(
        NAME,
        Column("Containers", "Names of each container in the template."),
        Column("Images", "Images referenced by each container in the template."),
        Column("Pod Labels", "The labels for the pod template."),
    ),
    cells=_pod_template_cells,
)
#: the autoscaling/v1 Scale of a `scale` subresource (its Name column carries no `name` format)
SCALE = Printer(
    columns=(
        Column("Name", NAME_DOC),
        Column("Desired", "desired number of instances for the scaled object.", type="integer"),
        Column("Available", "actual number of observed instances of the scaled object.", type="integer"),
        AGE,
    ),
    cells=_scale_cells,
)

PRINTERS: dict[tuple[str, str], Printer] = {
    ("apps", "deployments"): DEPLOYMENT,
    ("apps", "replicasets"): REPLICA_SET,
    ("apps", "daemonsets"): DAEMON_SET,
    ("apps", "statefulsets"): STATEFUL_SET,
    ("apps", "controllerrevisions"): CONTROLLER_REVISION,
    ("", "replicationcontrollers"): REPLICATION_CONTROLLER,
    ("", "podtemplates"): POD_TEMPLATE,
}
