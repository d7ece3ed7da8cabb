"""The Table envelope, includeObject, column sets per kind and the generic convertor."""

from __future__ import annotations

from typing import Any

import pytest

from playground.apiserver.errors import APIError
from playground.apiserver.printers.table import table

from .support import NOW, Obj, ago, headers, row, rt

# --- the Table envelope -------------------------------------------------------------------------------


def test_table_carries_list_metadata_and_column_definitions() -> None:
    cm = {"metadata": {"name": "cfg", "creationTimestamp": ago(minutes=5)}, "data": {"a": "1"}}
    result = table(
        rt("", "configmaps", "ConfigMap"),
        [cm],
        now=NOW,
        list_meta={"resourceVersion": "42", "continue": "", "remainingItemCount": 7},
    )
    assert result["kind"] == "Table"
    assert result["apiVersion"] == "meta.k8s.io/v1"
    assert result["metadata"] == {"resourceVersion": "42", "remainingItemCount": 7}
    assert result["columnDefinitions"][0] == {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": result["columnDefinitions"][0]["description"],
        "priority": 0,
    }
    assert result["columnDefinitions"][0]["description"].startswith("Name must be unique within a namespace.")
    assert result["rows"] == [
        {
            "cells": ["cfg", 1, "5m"],
            "object": {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": cm["metadata"],
            },
        }
    ]


@pytest.mark.parametrize(
    ("include_object", "expected"),
    [
        ("None", None),
        ("", {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "x"}}),
        (
            "Metadata",
            {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "x"}},
        ),
        ("Object", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
    ],
    ids=["none", "empty-means-metadata", "metadata", "object"],
)
def test_include_object_controls_the_row_object(include_object: str, expected: Obj | None) -> None:
    result = table(
        rt("", "configmaps", "ConfigMap"),
        [{"metadata": {"name": "x"}}],
        include_object=include_object,
        now=NOW,
    )
    assert result["rows"][0]["object"] == expected


def test_unknown_include_object_is_a_bad_request() -> None:
    with pytest.raises(APIError) as excinfo:
        table(rt("", "configmaps"), [], include_object="Everything", now=NOW)
    assert (excinfo.value.code, excinfo.value.message) == (
        400,
        'unrecognized includeObject value: "Everything"',
    )


def test_no_headers_leaves_out_column_definitions_for_later_watch_events() -> None:
    result = table(rt("", "configmaps"), [{"metadata": {"name": "x"}}], now=NOW, no_headers=True)
    assert result["columnDefinitions"] == []
    assert result["rows"][0]["cells"][0] == "x"


# --- column sets --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "plural", "expected"),
    [
        ("", "pods", "NAME,READY,STATUS,RESTARTS,AGE,IP*,NODE*,NOMINATED NODE*,READINESS GATES*"),
        (
            "",
            "nodes",
            "NAME,STATUS,ROLES,AGE,VERSION,INTERNAL-IP*,EXTERNAL-IP*,OS-IMAGE*,KERNEL-VERSION*,CONTAINER-RUNTIME*",
        ),
        ("", "namespaces", "NAME,STATUS,AGE"),
        ("", "services", "NAME,TYPE,CLUSTER-IP,EXTERNAL-IP,PORT(S),AGE,SELECTOR*"),
        ("", "endpoints", "NAME,ENDPOINTS,AGE"),
        ("discovery.k8s.io", "endpointslices", "NAME,ADDRESSTYPE,PORTS,ENDPOINTS,AGE"),
        ("", "configmaps", "NAME,DATA,AGE"),
        ("", "secrets", "NAME,TYPE,DATA,AGE"),
        ("", "serviceaccounts", "NAME,SECRETS,AGE"),
        ("", "events", "LAST SEEN,TYPE,REASON,OBJECT,SUBOBJECT*,SOURCE*,MESSAGE,FIRST SEEN*,COUNT*,NAME*"),
        (
            "events.k8s.io",
            "events",
            "LAST SEEN,TYPE,REASON,OBJECT,SUBOBJECT*,SOURCE*,MESSAGE,FIRST SEEN*,COUNT*,NAME*",
        ),
        ("coordination.k8s.io", "leases", "NAME,HOLDER,AGE"),
        ("apps", "deployments", "NAME,READY,UP-TO-DATE,AVAILABLE,AGE,CONTAINERS*,IMAGES*,SELECTOR*"),
        (
            "apps",
            "replicasets",
            "NAME,DESIRED:integer,CURRENT:integer,READY:integer,AGE,CONTAINERS*,IMAGES*,SELECTOR*",
        ),
        (
            "apps",
            "daemonsets",
            "NAME,DESIRED:integer,CURRENT:integer,READY:integer,UP-TO-DATE:integer,AVAILABLE:integer,"
            "NODE SELECTOR,AGE,CONTAINERS*,IMAGES*,SELECTOR*",
        ),
        ("apps", "statefulsets", "NAME,READY,AGE,CONTAINERS*,IMAGES*"),
        (
            "",
            "persistentvolumes",
            "NAME,CAPACITY,ACCESS MODES,RECLAIM POLICY,STATUS,CLAIM,STORAGECLASS,VOLUMEATTRIBUTESCLASS,"
            "REASON,AGE,VOLUMEMODE*",
        ),
        (
            "",
            "persistentvolumeclaims",
            "NAME,STATUS,VOLUME,CAPACITY,ACCESS MODES,STORAGECLASS,VOLUMEATTRIBUTESCLASS,AGE,VOLUMEMODE*",
        ),
        (
            "storage.k8s.io",
            "storageclasses",
            "NAME,PROVISIONER,RECLAIMPOLICY,VOLUMEBINDINGMODE,ALLOWVOLUMEEXPANSION,AGE",
        ),
        ("networking.k8s.io", "ingresses", "NAME,CLASS,HOSTS,ADDRESS,PORTS,AGE"),
        ("node.k8s.io", "runtimeclasses", "NAME,HANDLER,AGE"),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            "NAME,AGE,SIGNERNAME,REQUESTOR,REQUESTEDDURATION,CONDITION",
        ),
        ("rbac.authorization.k8s.io", "rolebindings", "NAME,ROLE,AGE,USERS*,GROUPS*,SERVICEACCOUNTS*"),
        ("rbac.authorization.k8s.io", "clusterrolebindings", "NAME,ROLE,AGE,USERS*,GROUPS*,SERVICEACCOUNTS*"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "NAME,WEBHOOKS:integer,AGE"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "NAME,WEBHOOKS:integer,AGE"),
        ("batch", "jobs", "NAME,STATUS,COMPLETIONS,DURATION,AGE,CONTAINERS*,IMAGES*,SELECTOR*"),
        (
            "batch",
            "cronjobs",
            "NAME,SCHEDULE,TIMEZONE,SUSPEND:boolean,ACTIVE:integer,LAST SCHEDULE,AGE,CONTAINERS*,IMAGES*,SELECTOR*",
        ),
        ("", "resourcequotas", "NAME,REQUEST,LIMIT,AGE"),
        ("", "limitranges", "NAME,CREATED AT:date"),
        (
            "scheduling.k8s.io",
            "priorityclasses",
            "NAME,VALUE:integer,GLOBAL-DEFAULT:boolean,AGE,PREEMPTIONPOLICY",
        ),
        (
            "",
            "replicationcontrollers",
            "NAME,DESIRED:integer,CURRENT:integer,READY:integer,AGE,CONTAINERS*,IMAGES*,SELECTOR*",
        ),
        ("", "podtemplates", "NAME,CONTAINERS,IMAGES,POD LABELS"),
        (
            "policy",
            "poddisruptionbudgets",
            "NAME,MIN AVAILABLE,MAX UNAVAILABLE,ALLOWED DISRUPTIONS:integer,AGE",
        ),
        ("apps", "controllerrevisions", "NAME,CONTROLLER,REVISION,AGE"),
        ("networking.k8s.io", "ingressclasses", "NAME,CONTROLLER,PARAMETERS,AGE"),
        ("networking.k8s.io", "networkpolicies", "NAME,POD-SELECTOR,AGE"),
        ("storage.k8s.io", "csinodes", "NAME,DRIVERS:integer,AGE"),
        (
            "storage.k8s.io",
            "csidrivers",
            "NAME,ATTACHREQUIRED:boolean,PODINFOONMOUNT:boolean,STORAGECAPACITY:boolean,TOKENREQUESTS,"
            "REQUIRESREPUBLISH:boolean,MODES,AGE",
        ),
        ("storage.k8s.io", "volumeattachments", "NAME,ATTACHER,PV,NODE,ATTACHED:boolean,AGE"),
        ("rbac.authorization.k8s.io", "roles", "NAME,CREATED AT:date"),
        ("rbac.authorization.k8s.io", "clusterroles", "NAME,CREATED AT:date"),
        ("apiextensions.k8s.io", "customresourcedefinitions", "NAME,CREATED AT:date"),
    ],
    ids=lambda value: value if isinstance(value, str) and value.islower() and "." not in value else None,
)
def test_columns_match_the_kube_apiserver_printers(group: str, plural: str, expected: str) -> None:
    assert headers(rt(group, plural)) == expected


@pytest.mark.parametrize(
    ("group", "plural", "obj", "expected"),
    [
        (
            "rbac.authorization.k8s.io",
            "roles",
            {"metadata": {"name": "x", "creationTimestamp": "2024-04-30T10:00:00.5+02:00"}},
            ["x", "2024-04-30T08:00:00Z"],
        ),
        ("example.com", "widgets", {"metadata": {"name": "x"}}, ["x", "0001-01-01T00:00:00Z"]),
    ],
    ids=["role-created-at", "unknown-kind-created-at"],
)
def test_kinds_without_a_printer_get_name_and_created_at(
    group: str, plural: str, obj: Obj, expected: list[Any]
) -> None:
    assert row(rt(group, plural), obj) == expected
