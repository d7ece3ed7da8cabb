"""Printers for storage: PersistentVolumes and claims, StorageClasses and the CSI kinds
(CSIDrivers, CSINodes, VolumeAttachments)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from .columns import AGE, NAME, Cell, Column, Obj, Printer
from .fields import get_bool, get_list, get_map, get_str, name_of
from .format import created

_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
_DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


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
    annotations = get_map(obj, "metadata", "annotations")
    if _BETA_STORAGE_CLASS in annotations:
        return str(annotations[_BETA_STORAGE_CLASS])
    return get_str(obj, "spec", "storageClassName")


def _phase(obj: Obj) -> str:
    return (
        "Terminating"
        if get_map(obj, "metadata").get("deletionTimestamp")
        else get_str(obj, "status", "phase")
    )


def _persistent_volume_cells(pv: Obj, now: datetime) -> list[Cell]:
    spec = get_map(pv, "spec")
    claim = get_map(spec, "claimRef")
    return [
        name_of(pv),
        str(get_map(spec, "capacity").get("storage", "0")),
        access_modes(get_list(spec, "accessModes")),
        get_str(spec, "persistentVolumeReclaimPolicy"),
        _phase(pv),
        f"{get_str(claim, 'namespace')}/{get_str(claim, 'name')}" if claim else "",
        _storage_class_of(pv),
        get_str(spec, "volumeAttributesClassName") or "<unset>",
        get_str(pv, "status", "reason"),
        created(pv, now),
        get_str(spec, "volumeMode") or "<unset>",
    ]


def _persistent_volume_claim_cells(pvc: Obj, now: datetime) -> list[Cell]:
    spec, status = get_map(pvc, "spec"), get_map(pvc, "status")
    bound = bool(get_str(spec, "volumeName"))
    return [
        name_of(pvc),
        _phase(pvc),
        get_str(spec, "volumeName"),
        str(get_map(status, "capacity").get("storage", "0")) if bound else "",
        access_modes(get_list(status, "accessModes")) if bound else "",
        _storage_class_of(pvc),
        get_str(spec, "volumeAttributesClassName") or "<unset>",
        created(pvc, now),
        get_str(spec, "volumeMode") or "<unset>",
    ]


def _storage_class_cells(sc: Obj, now: datetime) -> list[Cell]:
    annotations = get_map(sc, "metadata", "annotations")
    is_default = any(annotations.get(key) == "true" for key in _DEFAULT_CLASS_ANNOTATIONS)
    return [
        name_of(sc) + (" (default)" if is_default else ""),
        get_str(sc, "provisioner"),
        get_str(sc, "reclaimPolicy") or "Delete",
        get_str(sc, "volumeBindingMode") or "Immediate",
        get_bool(sc, "allowVolumeExpansion"),
        created(sc, now),
    ]


def _csi_node_cells(node: Obj, now: datetime) -> list[Cell]:
    return [name_of(node), len(get_list(node, "spec", "drivers")), created(node, now)]


def _token_requests(spec: Obj) -> str:
    """The audiences of spec.tokenRequests, `<unset>` when the field is absent."""
    requests = spec.get("tokenRequests")
    if not isinstance(requests, list):
        return "<unset>"
    return ",".join(get_str(request, "audience") for request in requests)


def _csi_driver_cells(driver: Obj, now: datetime) -> list[Cell]:
    spec = get_map(driver, "spec")
    modes = [mode for mode in get_list(spec, "volumeLifecycleModes") if isinstance(mode, str)]
    return [
        name_of(driver),
        get_bool(spec, "attachRequired", default=True),
        get_bool(spec, "podInfoOnMount"),
        get_bool(spec, "storageCapacity"),
        _token_requests(spec),
        get_bool(spec, "requiresRepublish"),
        ",".join(modes) or "<none>",
        created(driver, now),
    ]


def _volume_attachment_cells(attachment: Obj, now: datetime) -> list[Cell]:
    spec = get_map(attachment, "spec")
    return [
        name_of(attachment),
        get_str(spec, "attacher"),
        get_str(spec, "source", "persistentVolumeName"),
        get_str(spec, "nodeName"),
        get_bool(attachment, "status", "attached"),
        created(attachment, now),
    ]


PERSISTENT_VOLUME = Printer(
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
PERSISTENT_VOLUME_CLAIM = Printer(
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
STORAGE_CLASS = Printer(
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
CSI_NODE = Printer(
    columns=(
        NAME,
        Column(
            "Drivers", "Drivers indicates the number of CSI drivers registered on the node", type="integer"
        ),
        AGE,
    ),
    cells=_csi_node_cells,
)
CSI_DRIVER = Printer(
    columns=(
        NAME,
        Column("AttachRequired", "Whether the driver requires an attach operation.", type="boolean"),
        Column("PodInfoOnMount", "Whether the driver requires pod information on mount.", type="boolean"),
        Column("StorageCapacity", "Whether the driver reports storage capacity.", type="boolean"),
        Column("TokenRequests", "The audiences of the service account tokens the driver receives."),
        Column("RequiresRepublish", "Whether NodePublishVolume is called periodically.", type="boolean"),
        Column("Modes", "The volume lifecycle modes the driver supports."),
        AGE,
    ),
    cells=_csi_driver_cells,
)
VOLUME_ATTACHMENT = Printer(
    columns=(
        NAME,
        Column("Attacher", "The name of the volume driver that must handle this request.", format="name"),
        Column("PV", "Name of the persistent volume to attach."),
        Column("Node", "The node that the volume should be attached to."),
        Column("Attached", "Indicates the volume is successfully attached.", type="boolean"),
        AGE,
    ),
    cells=_volume_attachment_cells,
)

PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "persistentvolumes"): PERSISTENT_VOLUME,
    ("", "persistentvolumeclaims"): PERSISTENT_VOLUME_CLAIM,
    ("storage.k8s.io", "storageclasses"): STORAGE_CLASS,
    ("storage.k8s.io", "csinodes"): CSI_NODE,
    ("storage.k8s.io", "csidrivers"): CSI_DRIVER,
    ("storage.k8s.io", "volumeattachments"): VOLUME_ATTACHMENT,
}
