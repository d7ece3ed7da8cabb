"""Cluster kinds: PriorityClasses, PDBs, RuntimeClasses, CSRs, Leases, webhook configurations."""

from __future__ import annotations

from typing import Any

import pytest

from .support import META, Obj, row, rt


@pytest.mark.parametrize(
    ("group", "plural", "obj", "expected"),
    [
        (
            "scheduling.k8s.io",
            "priorityclasses",
            {"value": 1000, "globalDefault": True, "preemptionPolicy": "Never"},
            ["x", 1000, True, "3m20s", "Never"],
        ),
        ("scheduling.k8s.io", "priorityclasses", {"value": -5}, ["x", -5, False, "3m20s", ""]),
        (
            "policy",
            "poddisruptionbudgets",
            {"spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 1}},
            ["x", "2", "N/A", 1, "3m20s"],
        ),
        (
            "policy",
            "poddisruptionbudgets",
            {"spec": {"maxUnavailable": "25%"}},
            ["x", "N/A", "25%", 0, "3m20s"],
        ),
        ("node.k8s.io", "runtimeclasses", {"handler": "runc"}, ["x", "runc", "3m20s"]),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            {
                "spec": {
                    "signerName": "kubernetes.io/kube-apiserver-client",
                    "username": "alice",
                    "expirationSeconds": 86400,
                },
                "status": {"conditions": [{"type": "Approved"}], "certificate": "LS0tLS1CRUdJTg=="},
            },
            ["x", "3m20s", "kubernetes.io/kube-apiserver-client", "alice", "24h", "Approved,Issued"],
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            {
                "spec": {"username": "bob"},
                "status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}, {"type": "Failed"}]},
            },
            ["x", "3m20s", "<none>", "bob", "<none>", "Denied,Failed"],
        ),
        ("coordination.k8s.io", "leases", {"spec": {"holderIdentity": "node-a"}}, ["x", "node-a", "3m20s"]),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            {"webhooks": [{"name": "a"}, {"name": "b"}]},
            ["x", 2, "3m20s"],
        ),
    ],
    ids=[
        "priorityclass",
        "priorityclass-minimal",
        "pdb-min-available",
        "pdb-max-unavailable-percent",
        "runtimeclass",
        "csr-issued",
        "csr-denied-and-failed",
        "lease",
        "webhooks",
    ],
)
def test_cluster_cells(group: str, plural: str, obj: Obj, expected: list[Any]) -> None:
    """One row per case: every cell of a cluster kind's printer."""
    assert row(rt(group, plural), {"metadata": META, **obj}) == expected
