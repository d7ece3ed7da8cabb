"""Storage kinds: PersistentVolumes and claims, StorageClasses and the CSI kinds."""

from __future__ import annotations

from typing import Any

import pytest

from .support import META, Obj, ago, row, rt


@pytest.mark.parametrize(
    ("group", "plural", "obj", "expected"),
    [
        (
            "",
            "persistentvolumes",
            {
                "spec": {
                    "capacity": {"storage": "10Gi"},
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "claimRef": {"namespace": "ns", "name": "data"},
                    "storageClassName": "standard",
                },
                "status": {"phase": "Bound"},
            },
            [
                "x",
                "10Gi",
                "RWO,RWX",
                "Retain",
                "Bound",
                "ns/data",
                "standard",
                "<unset>",
                "",
                "3m20s",
                "<unset>",
            ],
        ),
        (
            "",
            "persistentvolumeclaims",
            {
                "spec": {"volumeName": "pv-1", "storageClassName": "standard", "volumeMode": "Filesystem"},
                "status": {
                    "phase": "Bound",
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                },
            },
            ["x", "Bound", "pv-1", "1Gi", "RWO", "standard", "<unset>", "3m20s", "Filesystem"],
        ),
        (
            "",
            "persistentvolumeclaims",
            {
                "metadata": {
                    **META,
                    "annotations": {"volume.beta.kubernetes.io/storage-class": "old"},
                    "deletionTimestamp": ago(seconds=1),
                },
                "spec": {"resources": {"requests": {"storage": "1Gi"}}},
                "status": {"phase": "Pending"},
            },
            ["x", "Terminating", "", "", "", "old", "<unset>", "3m20s", "<unset>"],
        ),
        (
            "storage.k8s.io",
            "storageclasses",
            {
                "metadata": {**META, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "rancher.io/local-path",
                "volumeBindingMode": "WaitForFirstConsumer",
            },
            ["x (default)", "rancher.io/local-path", "Delete", "WaitForFirstConsumer", False, "3m20s"],
        ),
        (
            "storage.k8s.io",
            "csinodes",
            {"spec": {"drivers": [{"name": "a", "nodeID": "n"}, {"name": "b", "nodeID": "n"}]}},
            ["x", 2, "3m20s"],
        ),
        (
            "storage.k8s.io",
            "csidrivers",
            {"spec": {}},
            ["x", True, False, False, "<unset>", False, "<none>", "3m20s"],
        ),
        (
            "storage.k8s.io",
            "csidrivers",
            {
                "spec": {
                    "attachRequired": False,
                    "podInfoOnMount": True,
                    "storageCapacity": True,
                    "tokenRequests": [{"audience": "vault"}, {"audience": "gcp", "expirationSeconds": 3600}],
                    "requiresRepublish": True,
                    "volumeLifecycleModes": ["Persistent", "Ephemeral"],
                }
            },
            ["x", False, True, True, "vault,gcp", True, "Persistent,Ephemeral", "3m20s"],
        ),
        (
            "storage.k8s.io",
            "csidrivers",
            {"spec": {"tokenRequests": []}},
            ["x", True, False, False, "", False, "<none>", "3m20s"],
        ),
        (
            "storage.k8s.io",
            "volumeattachments",
            {
                "spec": {
                    "attacher": "csi.example.com",
                    "source": {"persistentVolumeName": "pv-1"},
                    "nodeName": "n1",
                },
                "status": {"attached": True},
            },
            ["x", "csi.example.com", "pv-1", "n1", True, "3m20s"],
        ),
        (
            "storage.k8s.io",
            "volumeattachments",
            {"spec": {"attacher": "csi.example.com", "source": {"inlineVolumeSpec": {}}, "nodeName": "n1"}},
            ["x", "csi.example.com", "", "n1", False, "3m20s"],
        ),
    ],
    ids=[
        "persistentvolume",
        "persistentvolumeclaim-bound",
        "persistentvolumeclaim-terminating",
        "storageclass-default",
        "csinode",
        "csidriver-defaults",
        "csidriver",
        "csidriver-no-token-audiences",
        "volumeattachment",
        "volumeattachment-inline",
    ],
)
def test_storage_cells(group: str, plural: str, obj: Obj, expected: list[Any]) -> None:
    """One row per case: every cell of a storage kind's printer."""
    assert row(rt(group, plural), {"metadata": META, **obj}) == expected
