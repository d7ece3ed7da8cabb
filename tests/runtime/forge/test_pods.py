"""Offloaded pods as pure functions: the ShadowPod out, the provider's Pod, the status back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from runtime.api import constants as c
from runtime.forge import pods
from runtime.forge import serviceaccounts as tokens

JSON = dict[str, Any]
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
    ("spec", "problem"),
    [
        ({"hostNetwork": True}, "host's Network namespace"),
        ({"hostPID": True}, "host's PID namespace"),
        ({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, "'root' is a hostPath volume"),
        (
            {"containers": [{"name": "c", "securityContext": {"privileged": True}}]},
            "container 'c' is privileged",
        ),
        ({"containers": [{"name": "c"}]}, ""),
    ],
    ids=["network", "pid", "hostpath", "privileged", "fine"],
)
def test_pods_asking_for_the_providers_host_are_refused(spec: JSON, problem: str) -> None:
    problems = pods.offloading_problems(spec)
    assert (problem in "; ".join(problems)) if problem else problems == []


def test_the_providers_pod_is_the_shadows_spec_owned_by_it() -> None:
    shadow = pods.shadow_pod(local_pod(), remote_namespace="demo-rome", options=OPTIONS)
    shadow["metadata"]["uid"] = "s1"
    shadow["spec"]["pod"]["serviceAccountName"] = "sneaky"
    pod = pods.provider_pod(shadow)
    assert pod["metadata"]["labels"][c.LABEL_REFLECTION_MANAGED_BY] == c.MANAGED_BY_SHADOWPOD
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "s1" and pods.is_pod_of(pod, shadow)
    assert "serviceAccountName" not in pod["spec"] and pod["spec"]["automountServiceAccountToken"] is False
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
