"""The VirtualNode a consumer creates, and the objects of its virtual kubelet."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.api import constants as c
from runtime.api.image import runtime_image
from runtime.api.objects import JSON
from runtime.forge import virtualnode as vn
from runtime.forge.reflection import ReflectionOptions

HOME = "c-id"


def virtual_node(**spec: Any) -> JSON:
    body = vn.virtual_node(
        "milan",
        namespace="liqo-tenant-milan",
        cluster_id="p-id",
        resource_slice_name="rome",
        resources={"cpu": "2", "memory": "4Gi"},
        credential_secret="liqo-credential-milan",
        cluster_labels={"topology.liqo.io/region": "north", c.LABEL_TYPE: "overridden"},
        node_labels={"team": "a"},
    )
    body["metadata"]["uid"] = "vn-uid"
    body["spec"].update(spec)
    return body


def test_the_virtual_node_stands_for_the_provider() -> None:
    body = virtual_node()
    assert body["metadata"]["name"] == "milan"
    spec = body["spec"]
    assert spec["nodeName"] == "liqo-milan"
    assert spec["credentialSecretRef"] == {"name": "liqo-credential-milan", "namespace": "liqo-tenant-milan"}
    assert spec["labels"] == {
        "topology.liqo.io/region": "north",
        "team": "a",
        c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE,
        c.LABEL_REMOTE_CLUSTER_ID: "p-id",
        c.LABEL_ROLE_AGENT: "",
    }
    assert "image" not in spec


def test_a_providers_first_unverified_answer_cannot_put_its_own_marks_on_the_consumers_node() -> None:
    """Cluster labels come from the provider's unauthenticated `GET /v1/cluster`: only labels that describe
    it pass, never ones the consumer's scheduler, controllers or runtime act on."""
    hostile = {
        "node-role.kubernetes.io/control-plane": "",
        "node.kubernetes.io/exclude-from-external-load-balancers": "true",
        "kubernetes.io/hostname": "rome-control-plane",
        "node-restriction.kubernetes.io/trusted": "yes",
        "example.k8s.io/anything": "x",
        "liqo.io/remote-cluster-id": "someone-else",
        "offloading.liqo.io/managed-labels": "x",
        "bad key": "x",
        "fine": "a value with spaces",
    }
    described = {
        "topology.liqo.io/region": "north",
        "topology.kubernetes.io/zone": "north-1",
        "provider.example.com/tier": "gold",
        "plain": "yes",
    }
    many = {f"example.com/label-{n:03}": "x" for n in range(100)}
    assert vn.provider_labels({**hostile, **described}) == described
    assert len(vn.provider_labels(many)) == vn.MAX_PROVIDER_LABELS
    body = vn.virtual_node(
        "milan",
        namespace="liqo-tenant-milan",
        cluster_id="p-id",
        resource_slice_name="rome",
        resources={"cpu": "2"},
        credential_secret="liqo-credential-milan",
        cluster_labels={**hostile, **described},
    )
    assert body["spec"]["labels"] == {
        **described,
        c.LABEL_TYPE: c.TYPE_VIRTUAL_NODE,
        c.LABEL_REMOTE_CLUSTER_ID: "p-id",
        c.LABEL_ROLE_AGENT: "",
    }


def test_the_virtual_kubelet_objects_are_named_after_the_provider_and_owned_by_the_virtual_node() -> None:
    objects = vn.virtual_kubelet(virtual_node(), home_cluster_id=HOME)
    assert [o["kind"] for o in objects] == [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
    ]
    assert {o["metadata"]["name"] for o in objects} == {"liqo-vk-milan"}
    for obj in objects:
        owners = obj["metadata"].get("ownerReferences")
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            assert owners is None and "namespace" not in obj["metadata"]
        else:
            assert obj["metadata"]["namespace"] == "liqo-tenant-milan"
            assert owners == [
                {
                    "apiVersion": "offloading.liqo.io/v1beta1",
                    "kind": "VirtualNode",
                    "name": "milan",
                    "uid": "vn-uid",
                    "controller": True,
                }
            ]
        assert obj["metadata"]["labels"][c.LABEL_VIRTUAL_NODE_NAME] == "milan"


def test_the_virtual_kubelet_may_read_exactly_its_credential_virtual_node_map_and_configuration() -> None:
    role = vn.credential_role(virtual_node())
    read = ["get", "list", "watch"]
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "verbs": read,
            "resourceNames": ["liqo-credential-milan"],
        },
        {
            "apiGroups": [c.OFFLOADING_GROUP],
            "resources": ["virtualnodes", "namespacemaps"],
            "verbs": read,
            "resourceNames": ["milan"],
        },
        {
            "apiGroups": [c.NETWORKING_GROUP],
            "resources": ["configurations"],
            "verbs": read,
            "resourceNames": ["milan"],
        },
    ]
    binding = vn.credential_role_binding(virtual_node())
    assert binding["roleRef"]["name"] == "liqo-vk-milan"


def test_the_virtual_kubelet_writes_only_its_own_node_and_lease() -> None:
    role = vn.cluster_role(virtual_node())
    assert role["metadata"]["name"] == "liqo-vk-milan"
    writes = [
        rule
        for rule in role["rules"]
        if rule["resources"][0] in ("nodes", "nodes/status", "leases")
        and set(rule["verbs"]) - {"get", "list", "watch"}
    ]
    assert all(rule.get("resourceNames") == ["liqo-milan"] or rule["verbs"] == ["create"] for rule in writes)
    cluster_binding = vn.cluster_role_binding(virtual_node())
    assert cluster_binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "liqo-vk-milan",
    }
    assert cluster_binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "liqo-vk-milan", "namespace": "liqo-tenant-milan"}
    ]


def test_the_deployment_runs_the_virtual_kubelet_from_the_runtime_image() -> None:
    deployment = vn.deployment(virtual_node(), home_cluster_id=HOME)
    pod = deployment["spec"]["template"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert pod["spec"]["serviceAccountName"] == "liqo-vk-milan"
    container = pod["spec"]["containers"][0]
    assert container["image"] == runtime_image()
    assert container["command"] == ["python3", "-m", "runtime", "virtual-kubelet"]
    assert container["args"] == [
        "--virtual-node=liqo-tenant-milan/milan",
        "--health-address=$(POD_IP):8080",
        "--kubelet-address=$(POD_IP):10250",
        f"--home-cluster-id={HOME}",
        *ReflectionOptions().args(),
    ]
    assert {"name": "kubelet", "containerPort": 10250, "protocol": "TCP"} in container["ports"]
    reflection = ReflectionOptions(secret_workers=0, ingress_classes={"nginx": "haproxy"})
    with_options = vn.deployment(
        virtual_node(),
        home_cluster_id=HOME,
        home_api_server="https://rome.example:6443",
        reflection=reflection,
    )
    args = with_options["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--home-api-server-url=https://rome.example:6443" in args
    assert "--secret-reflection-workers=0" in args and "--ingress-class=nginx=haproxy" in args
    assert args[-len(reflection.args()) :] == reflection.args()
    assert {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]} == {
        "POD_IP": "status.podIP",
        "POD_NAME": "metadata.name",
        "POD_NAMESPACE": "metadata.namespace",
    }
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


@pytest.mark.parametrize(
    ("spec", "default", "image"),
    [
        ({}, "registry.local/runtime:1", "registry.local/runtime:1"),
        ({"image": "mine:2"}, "registry.local/runtime:1", "mine:2"),
    ],
    ids=["default", "from-spec"],
)
def test_the_image_comes_from_the_spec_else_the_default(spec: JSON, default: str, image: str) -> None:
    container = vn.deployment(virtual_node(**spec), home_cluster_id=HOME, default_image=default)["spec"][
        "template"
    ]["spec"]["containers"][0]
    assert container["image"] == image


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ({}, "credentialSecretRef.name is required"),
        ({"name": "s", "namespace": "elsewhere"}, "own namespace"),
    ],
    ids=["missing", "other-namespace"],
)
def test_a_virtual_node_without_a_usable_credential_has_no_virtual_kubelet(ref: JSON, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        vn.virtual_kubelet(virtual_node(credentialSecretRef=ref), home_cluster_id=HOME)


def test_names_fall_back_to_the_virtual_node() -> None:
    body = {"metadata": {"name": "turin", "namespace": "ns", "uid": "u"}, "spec": {}}
    assert (vn.provider_name(body), vn.node_name(body), vn.virtual_kubelet_name(body)) == (
        "turin",
        "liqo-turin",
        "liqo-vk-turin",
    )
    assert vn.node_name({**body, "spec": {"nodeName": "custom"}}) == "custom"
