"""Offloaded pods as pure functions: the ShadowPod out, the provider's Pod, the status back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge import pods, podsecurity
from runtime.forge import serviceaccounts as tokens
from runtime.forge.meta import reflection_labels

OPTIONS = pods.PodOptions(origin_cluster_id="rome-id", home_api_server="https://rome.example:6443")


def local_pod(**spec: Any) -> JSON:
    return {
        "metadata": {"name": "web", "namespace": "demo", "uid": "u1", "labels": {"app": "web"}},
        "spec": {
            "nodeName": "liqo-milan",
            "serviceAccountName": "api",
            "schedulerName": "default-scheduler",
            "priority": 0,
            "tolerations": [{"key": c.TAINT_VIRTUAL_NODE, "operator": "Exists"}],
            "affinity": {"nodeAffinity": {}},
            "containers": [
                {"name": "web", "image": "nginx", "env": [{"name": "KUBERNETES_SERVICE_HOST", "value": "x"}]}
            ],
            "volumes": [
                {
                    "name": "kube-api-access-abcde",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                                    ]
                                }
                            },
                        ]
                    },
                },
                {"name": "data", "emptyDir": {}},
            ],
            **spec,
        },
    }


def test_the_shadow_pod_drops_scheduling_and_rewires_the_service_account_token() -> None:
    pod = local_pod()
    shadow = pods.shadow_pod(pod, remote_namespace="demo-rome", options=OPTIONS)
    spec = shadow["spec"]["pod"]
    for field in ("nodeName", "schedulerName", "priority", "tolerations", "affinity", "serviceAccountName"):
        assert field not in spec
    assert spec["automountServiceAccountToken"] is False
    secret = tokens.token_secret_name("web")
    sources = spec["volumes"][0]["projected"]["sources"]
    assert sources == [
        {"secret": {"name": secret, "items": [{"key": "token", "path": "token"}]}},
        {"secret": {"name": secret, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"secret": {"name": secret, "items": [{"key": "namespace", "path": "namespace"}]}},
    ]
    assert spec["volumes"][1] == {"name": "data", "emptyDir": {}}
    env = spec["containers"][0]["env"]
    assert env == [
        {"name": "KUBERNETES_SERVICE_HOST", "value": "rome.example"},
        {"name": "KUBERNETES_SERVICE_PORT", "value": "6443"},
        {"name": "KUBERNETES_SERVICE_PORT_HTTPS", "value": "6443"},
    ]
    meta = shadow["metadata"]
    assert (meta["name"], meta["namespace"]) == ("web", "demo-rome")
    assert meta["labels"] == {
        "app": "web",
        c.LABEL_REFLECTION_MANAGED_BY: "reflection",
        c.LABEL_ORIGIN_CLUSTER_ID: "rome-id",
    }
    assert pods.origin_uid(shadow) == "u1"
    assert pod == local_pod(), "the local pod is not changed"


def annotated_pod(**annotations: str) -> JSON:
    pod = local_pod()
    pod["metadata"]["annotations"] = annotations
    return pod


@pytest.mark.parametrize(
    ("annotations", "installed", "expected"),
    [
        ({}, "TokenAPI", "TokenAPI"),
        ({}, "Disabled", "Disabled"),
        ({c.ANNOTATION_API_SERVER_SUPPORT: "remote"}, "TokenAPI", "Remote"),
        ({c.ANNOTATION_API_SERVER_SUPPORT: "remote"}, "Disabled", "Remote"),
        ({c.ANNOTATION_API_SERVER_SUPPORT: "disabled"}, "TokenAPI", "Disabled"),
        ({c.ANNOTATION_API_SERVER_SUPPORT: "anything"}, "TokenAPI", "TokenAPI"),
    ],
    ids=["default", "installed-disabled", "remote", "remote-over-disabled", "pod-disabled", "unknown-value"],
)
def test_a_pods_api_server_support_is_its_annotation_else_the_installations(
    annotations: dict[str, str], installed: str, expected: str
) -> None:
    assert pods.api_server_support(annotated_pod(**annotations), default=installed) == expected


def test_a_pod_with_api_server_support_disabled_gets_no_token_on_the_provider() -> None:
    pod = annotated_pod(**{c.ANNOTATION_API_SERVER_SUPPORT: "disabled"})
    spec = pods.shadow_pod(pod, remote_namespace="demo-rome", options=OPTIONS)["spec"]["pod"]
    sources = spec["volumes"][0]["projected"]["sources"]
    assert all("serviceAccountToken" not in s for s in sources)
    # no token Secret to read from: the CA is the home cluster's reflected copy, the namespace the provider's
    assert sources[0]["configMap"]["name"] != "kube-root-ca.crt"
    assert "downwardAPI" in sources[1]
    assert "serviceAccountName" not in spec and spec["automountServiceAccountToken"] is False
    assert spec["containers"][0]["env"] == [{"name": "KUBERNETES_SERVICE_HOST", "value": "x"}]


def test_the_installations_disabled_support_keeps_every_token_home() -> None:
    options = pods.PodOptions(origin_cluster_id="rome-id", api_server_support="Disabled")
    spec = pods.shadow_pod(local_pod(), remote_namespace="demo-rome", options=options)["spec"]["pod"]
    assert all("serviceAccountToken" not in s for s in spec["volumes"][0]["projected"]["sources"])


@pytest.mark.parametrize(
    ("annotations", "account"),
    [({}, "api"), ({c.ANNOTATION_REMOTE_SERVICE_ACCOUNT_NAME: "reader"}, "reader")],
    ids=["own-name", "named"],
)
def test_a_pod_in_remote_mode_runs_as_a_service_account_of_the_provider(
    annotations: dict[str, str], account: str
) -> None:
    pod = annotated_pod(**{c.ANNOTATION_API_SERVER_SUPPORT: "remote", **annotations})
    shadow = pods.shadow_pod(pod, remote_namespace="demo-rome", options=OPTIONS)
    spec = shadow["spec"]["pod"]
    assert spec["serviceAccountName"] == account and spec["automountServiceAccountToken"] is False
    # the token, CA and namespace the provider's kubelet projects: its own, for its own API server
    assert spec["volumes"] == local_pod()["spec"]["volumes"]
    assert spec["containers"][0]["env"] == [{"name": "KUBERNETES_SERVICE_HOST", "value": "x"}]
    shadow["metadata"]["uid"] = "s1"
    provider = pods.provider_pod(shadow, origin_cluster_id="rome-id")
    assert provider["spec"]["serviceAccountName"] == account
    assert provider["spec"]["automountServiceAccountToken"] is False


def test_tokens_are_requested_per_audience_and_bound_to_the_pod() -> None:
    pod = local_pod()
    pod["spec"]["volumes"].append(
        {
            "name": "vault",
            "projected": {"sources": [{"serviceAccountToken": {"audience": "vault", "path": "t"}}]},
        }
    )
    projections = tokens.token_projections(pod)
    assert [(p.key.startswith("token"), p.audiences) for p in projections] == [(True, ()), (True, ("vault",))]
    assert projections[0].key == "token" and projections[1].key != "token"
    request = tokens.token_request(projections[1], pod)
    assert request["spec"]["audiences"] == ["vault"]
    assert request["spec"]["boundObjectRef"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "web",
        "uid": "u1",
    }
    assert tokens.service_account_name(pod) == "api"
    assert (
        tokens.token_secret_name("p" * 250).endswith("-liqo-token")
        and len(tokens.token_secret_name("p" * 250)) <= 253
    )


@pytest.mark.parametrize(
    ("spec", "level", "problem"),
    [
        ({"hostNetwork": True}, "baseline", "host namespaces (hostNetwork=true)"),
        (
            {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]},
            "baseline",
            'hostPath volumes (volume "root")',
        ),
        (
            {"containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]},
            "baseline",
            "non-default capabilities",
        ),
        ({"containers": [{"name": "c"}]}, "restricted", "allowPrivilegeEscalation != false"),
        ({"containers": [{"name": "c"}]}, "baseline", ""),
    ],
    ids=["host-network", "host-path", "capability", "restricted", "fine"],
)
def test_pods_the_providers_pod_security_level_forbids_are_not_offloaded(
    spec: JSON, level: podsecurity.Level, problem: str
) -> None:
    problems = pods.offloading_problems({"metadata": {"name": "p"}, "spec": spec}, level=level)
    assert (problem in "; ".join(problems)) if problem else problems == []


HOSTILE_METADATA = {
    "app": "web",
    "app.kubernetes.io/name": "web",
    "kubectl.kubernetes.io/default-container": "web",
    "container.apparmor.security.beta.kubernetes.io/web": "unconfined",
    "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
    "kubernetes.io/egress-bandwidth": "10G",
    "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
    "pod-security.kubernetes.io/enforce": "privileged",
    "example.k8s.io/x": "y",
    c.LABEL_REFLECTION_MANAGED_BY: c.MANAGED_BY_SHADOWENDPOINTSLICE,
    c.LABEL_ORIGIN_CLUSTER_ID: "someone-else",
    c.ANNOTATION_ORIGIN_POD_UID: "forged",
    "k8s.v1.cni.cncf.io/networks": "host-network",
    "io.kubernetes.cri-o.Devices": "/dev/sda",
    "io.containerd.runc.v2.x": "y",
    "run.oci.keep_original_groups": "1",
}
#: what of it reaches the provider: the consumer's own keys and the allowlisted Kubernetes ones
CARRIED = {
    "app": "web",
    "app.kubernetes.io/name": "web",
    "kubectl.kubernetes.io/default-container": "web",
}


def test_consumer_labels_and_annotations_reach_the_provider_filtered() -> None:
    pod = local_pod()
    pod["metadata"]["labels"] = dict(HOSTILE_METADATA)
    pod["metadata"]["annotations"] = dict(HOSTILE_METADATA)
    shadow = pods.shadow_pod(pod, remote_namespace="demo-rome", options=OPTIONS)
    assert shadow["metadata"]["labels"] == {**CARRIED, **reflection_labels(origin_cluster_id="rome-id")}
    assert shadow["metadata"]["annotations"] == {**CARRIED, c.ANNOTATION_ORIGIN_POD_UID: "u1"}
    # a hostile consumer writes its ShadowPod itself: the provider filters again
    shadow["metadata"]["labels"] = dict(HOSTILE_METADATA)
    shadow["metadata"]["annotations"] = dict(HOSTILE_METADATA)
    shadow["metadata"]["uid"] = "s1"
    provider = pods.provider_pod(shadow, origin_cluster_id="rome-id")
    assert provider["metadata"]["labels"] == {
        **CARRIED,
        c.LABEL_REFLECTION_MANAGED_BY: c.MANAGED_BY_SHADOWPOD,
        c.LABEL_ORIGIN_CLUSTER_ID: "rome-id",
    }
    assert provider["metadata"]["annotations"] == CARRIED


def test_the_providers_pod_is_the_shadows_spec_owned_by_it() -> None:
    shadow = pods.shadow_pod(local_pod(), remote_namespace="demo-rome", options=OPTIONS)
    shadow["metadata"]["uid"] = "s1"
    shadow["spec"]["pod"]["serviceAccount"] = "sneaky"
    shadow["spec"]["pod"]["automountServiceAccountToken"] = True
    shadow["spec"]["pod"]["priorityClassName"] = "system-node-critical"
    shadow["spec"]["pod"]["nodeName"] = "milan-control-plane"
    pod = pods.provider_pod(shadow, origin_cluster_id="rome-id")
    assert pod["metadata"]["labels"][c.LABEL_REFLECTION_MANAGED_BY] == c.MANAGED_BY_SHADOWPOD
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "s1" and pods.is_pod_of(pod, shadow)
    assert "serviceAccount" not in pod["spec"] and pod["spec"]["automountServiceAccountToken"] is False
    assert "priorityClassName" not in pod["spec"] and "nodeName" not in pod["spec"]
    changed = copy.deepcopy(shadow)
    changed["spec"]["pod"]["containers"][0]["image"] = "nginx:2"
    assert pods.image_updates(pod, changed) == [{"name": "web", "image": "nginx:2"}]


def test_the_status_comes_back_translated_with_recreations_added() -> None:
    remote = {
        "status": {
            "phase": "Running",
            "podIP": "10.244.0.7",
            "podIPs": [{"ip": "10.244.0.7"}],
            "startTime": "2024-05-01T10:00:00Z",
            "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None}],
            "containerStatuses": [{"name": "web", "restartCount": 2}],
        }
    }
    status = pods.local_pod_status(
        remote, recreations=1, host_ip="10.0.0.5", translate=lambda ip: "10.99." + ip.split(".", 2)[2]
    )
    assert (status["podIP"], status["podIPs"], status["hostIP"]) == (
        "10.99.0.7",
        [{"ip": "10.99.0.7"}],
        "10.0.0.5",
    )
    assert status["containerStatuses"] == [{"name": "web", "restartCount": 3}]
    assert status["reason"] is None and status["initContainerStatuses"] is None
    # what the API server gives back (nulls dropped) is no change
    written = {key: value for key, value in status.items() if value is not None}
    written["conditions"] = [{"type": "Ready", "status": "True", "lastProbeTime": None}]
    assert pods.status_changes(written, status) == {}


def test_a_backoff_status_is_stable_across_reconciles() -> None:
    pod = local_pod()
    first = pods.backoff_status(pod, message="why", now="T1")
    assert (first["phase"], first["reason"]) == ("Pending", c.REASON_OFFLOADING_BACKOFF)
    pod["status"] = first
    again = pods.backoff_status(pod, message="why", now="T2")
    assert pods.status_changes(pod["status"], again) == {}


def test_other_uses_of_the_root_ca_read_the_home_clusters_copy() -> None:
    pod = local_pod()
    spec = pod["spec"]
    spec["volumes"].append({"name": "ca", "configMap": {"name": "kube-root-ca.crt"}})
    spec["volumes"].append(
        {"name": "both", "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}}]}}
    )
    spec["containers"][0]["env"].append(
        {"name": "CA", "valueFrom": {"configMapKeyRef": {"name": "kube-root-ca.crt", "key": "ca.crt"}}}
    )
    spec["containers"][0]["envFrom"] = [
        {"configMapRef": {"name": "kube-root-ca.crt"}},
        {"configMapRef": {"name": "x"}},
    ]
    remote = pods.remote_pod_spec(pod, options=OPTIONS)
    copy_name = "kube-root-ca.crt.rome-a"  # the first five characters of "rome-id", then a letter
    volumes = {v["name"]: v for v in remote["volumes"]}
    assert volumes["ca"]["configMap"]["name"] == copy_name
    # projected volumes (the token's, and any other) read the CA that travels with the tokens
    assert all("secret" in s for s in volumes["kube-api-access-abcde"]["projected"]["sources"])
    assert volumes["both"]["projected"]["sources"][0]["secret"]["items"][0]["key"] == "ca.crt"
    container = remote["containers"][0]
    assert {e["name"]: e for e in container["env"]}["CA"]["valueFrom"]["configMapKeyRef"]["name"] == copy_name
    assert [e["configMapRef"]["name"] for e in container["envFrom"]] == [copy_name, "x"]
