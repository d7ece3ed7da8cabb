"""Reflected ConfigMaps and Secrets as pure functions: the copies, the root CA's name, what counts as a change."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge import configmaps, secrets
from runtime.forge.meta import is_skipped

ORIGIN = "3f2a9c1e-0000-4000-8000-000000000001"
REFLECTION = {c.LABEL_REFLECTION_MANAGED_BY: "reflection", c.LABEL_ORIGIN_CLUSTER_ID: ORIGIN}


def configmap(name: str = "settings", **fields: Any) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "demo",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {"app": "web"},
            "annotations": {"team": "a"},
        },
        **fields,
    }


def test_a_configmap_is_copied_verbatim_and_marked_as_reflected() -> None:
    local = configmap(data={"mode": "fast"}, binaryData={"blob": "AAE="}, immutable=True)
    reflected = configmaps.remote_configmap(local, namespace="demo-rome", origin_cluster_id=ORIGIN)
    assert reflected == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "settings",
            "namespace": "demo-rome",
            "labels": {"app": "web", **REFLECTION},
            "annotations": {"team": "a"},
        },
        "data": {"mode": "fast"},
        "binaryData": {"blob": "AAE="},
        "immutable": True,
    }


@pytest.mark.parametrize(
    ("local", "remote"),
    [("settings", "settings"), ("kube-root-ca.crt", "kube-root-ca.crt.3f2a9")],
    ids=["plain", "root-ca"],
)
def test_only_the_root_ca_is_renamed_and_the_names_map_back(local: str, remote: str) -> None:
    assert configmaps.remote_configmap_name(local, origin_cluster_id=ORIGIN) == remote
    assert configmaps.local_configmap_name(remote, origin_cluster_id=ORIGIN) == local


def test_the_providers_own_root_ca_stands_for_nothing_here() -> None:
    assert configmaps.local_configmap_name("kube-root-ca.crt", origin_cluster_id=ORIGIN) is None


def test_a_root_ca_name_never_ends_in_a_dash() -> None:
    assert (
        configmaps.remote_configmap_name("kube-root-ca.crt", origin_cluster_id="ab-c-ef")
        == "kube-root-ca.crt.ab-c-a"
    )


@pytest.mark.parametrize(
    ("edit", "differs", "recreate"),
    [
        (lambda cm: None, False, False),
        (lambda cm: cm["data"].update(mode="slow"), True, True),
        (lambda cm: cm["metadata"]["labels"].update(extra="x"), True, False),
        (lambda cm: cm["metadata"]["annotations"].clear(), True, False),
        (lambda cm: cm["metadata"].update(resourceVersion="99", uid="other"), False, False),
    ],
    ids=["same", "data", "label-added", "annotations-removed", "server-fields"],
)
def test_what_counts_as_a_change_of_the_copy(edit: Any, differs: bool, recreate: bool) -> None:
    desired = configmaps.remote_configmap(
        configmap(data={"mode": "fast"}, immutable=True), namespace="demo-rome", origin_cluster_id=ORIGIN
    )
    current = copy.deepcopy(
        {**desired, "metadata": {**desired["metadata"], "uid": "r1", "resourceVersion": "3"}}
    )
    edit(current)
    assert configmaps.payload_differs(current, desired) is differs
    assert configmaps.must_recreate(current, desired) is recreate


def secret(**fields: Any) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "demo"},
        **fields,
    }


def test_a_secret_is_copied_with_its_type_and_data() -> None:
    copy = secrets.remote_secret(
        secret(type="kubernetes.io/basic-auth", data={"username": "YQ=="}),
        namespace="demo-rome",
        origin_cluster_id=ORIGIN,
    )
    assert (copy["type"], copy["data"], copy["metadata"]["labels"]) == (
        "kubernetes.io/basic-auth",
        {"username": "YQ=="},
        REFLECTION,
    )


def test_a_service_account_token_secret_becomes_opaque_and_names_its_service_account() -> None:
    local = secret(type="kubernetes.io/service-account-token", data={"token": "dA=="})
    local["metadata"]["annotations"] = {"kubernetes.io/service-account.name": "api"}
    reflected = secrets.remote_secret(local, namespace="demo-rome", origin_cluster_id=ORIGIN)
    assert reflected["type"] == "Opaque"
    assert reflected["metadata"]["labels"]["kubernetes.io/service-account.name"] == "api"


@pytest.mark.parametrize(
    ("current", "recreate"),
    [
        ({"type": "Opaque"}, False),
        ({"type": "kubernetes.io/tls"}, True),
        ({"type": "Opaque", "immutable": True}, True),
    ],
    ids=["same-type", "type-changed", "immutable"],
)
def test_a_secret_copy_of_another_type_or_immutable_is_made_again(current: JSON, recreate: bool) -> None:
    desired = secrets.remote_secret(
        secret(type="Opaque", data={"k": "dg=="}), namespace="n", origin_cluster_id=ORIGIN
    )
    body = {**desired, **current, "data": {"k": "b3RoZXI="}}
    assert secrets.secret_must_recreate(body, desired) is recreate


def test_a_pod_token_secret_is_told_apart() -> None:
    assert secrets.is_pod_token_secret({"metadata": {"labels": {c.LABEL_REFLECTED_POD: "web"}}})
    assert not secrets.is_pod_token_secret(secret())


@pytest.mark.parametrize(
    ("annotations", "skipped"),
    [
        ({}, False),
        ({c.ANNOTATION_SKIP_REFLECTION: ""}, True),
        ({c.ANNOTATION_SKIP_REFLECTION: "true"}, True),
        ({c.ANNOTATION_SKIP_REFLECTION: "false"}, False),
    ],
    ids=["none", "empty", "true", "false"],
)
def test_skip_reflection_is_the_annotations_presence_unless_false(annotations: JSON, skipped: bool) -> None:
    assert is_skipped({"metadata": {"annotations": annotations}}) is skipped
