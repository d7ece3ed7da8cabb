"""Object semantics every client relies on: identity, versions, concurrency, status."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from .conftest import Cluster


def test_create_sets_uid_timestamp_and_resource_version(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    assert cm.metadata.uid
    assert cm.metadata.creation_timestamp is not None
    assert int(cm.metadata.resource_version) > 0
    assert cm.data == {"k": "v"}


def test_resource_versions_increase_across_kinds(core: client.CoreV1Api, namespace: str) -> None:
    a = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    b = core.create_namespaced_secret(namespace, {"metadata": {"name": "b"}})
    c = core.patch_namespaced_config_map("a", namespace, {"data": {"x": "y"}})
    assert (
        int(a.metadata.resource_version) < int(b.metadata.resource_version) < int(c.metadata.resource_version)
    )


def test_create_existing_name_is_already_exists(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "dup"}})
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "dup"}})
    assert err.value.status == 409
    assert '"reason":"AlreadyExists"' in err.value.body.replace(" ", "")
    assert 'configmaps \\"dup\\" already exists' in str(err.value.body)


def test_generate_name_appends_five_characters(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"generateName": "gen-"}})
    assert cm.metadata.name.startswith("gen-")
    assert len(cm.metadata.name) == len("gen-") + 5


def test_update_with_stale_resource_version_is_conflict(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}, "data": {"n": "1"}})
    cm.data = {"n": "2"}
    core.replace_namespaced_config_map("c", namespace, cm)
    cm.data = {"n": "3"}
    with pytest.raises(client.ApiException) as err:
        core.replace_namespaced_config_map("c", namespace, cm)
    assert err.value.status == 409
    assert "the object has been modified" in str(err.value.body)


def test_update_without_resource_version_is_unconditional(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "u"}, "data": {"n": "1"}})
    updated = core.replace_namespaced_config_map(
        "u", namespace, {"metadata": {"name": "u"}, "data": {"n": "2"}}
    )
    assert updated.data == {"n": "2"}


def test_noop_update_keeps_resource_version(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "same"}, "data": {"k": "v"}})
    again = core.replace_namespaced_config_map("same", namespace, cm)
    assert again.metadata.resource_version == cm.metadata.resource_version


def test_generation_bumps_on_spec_change_only(cluster: Cluster, namespace: str) -> None:
    apps = client.AppsV1Api(cluster.api)
    body = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    dep = apps.create_namespaced_deployment(namespace, body)
    assert dep.metadata.generation == 1
    dep = apps.patch_namespaced_deployment("web", namespace, {"metadata": {"labels": {"x": "y"}}})
    assert dep.metadata.generation == 1
    dep = apps.patch_namespaced_deployment("web", namespace, {"spec": {"replicas": 3}})
    assert dep.metadata.generation == 2


def test_deployment_defaults_are_filled(cluster: Cluster, namespace: str) -> None:
    apps = client.AppsV1Api(cluster.api)
    body = {
        "metadata": {"name": "defaults"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    dep = apps.create_namespaced_deployment(namespace, body)
    assert dep.spec.replicas == 1
    assert dep.spec.strategy.type == "RollingUpdate"
    assert dep.spec.revision_history_limit == 10
    assert dep.spec.template.spec.restart_policy == "Always"
    assert dep.spec.template.spec.containers[0].image_pull_policy == "Always"


def test_status_is_ignored_by_main_resource_and_spec_by_status(cluster: Cluster, namespace: str) -> None:
    apps = client.AppsV1Api(cluster.api)
    body = {
        "metadata": {"name": "st"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "st"}},
            "template": {
                "metadata": {"labels": {"app": "st"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
        "status": {"replicas": 7},
    }
    dep = apps.create_namespaced_deployment(namespace, body)
    assert not dep.status.replicas
    dep = apps.patch_namespaced_deployment("st", namespace, {"status": {"replicas": 5}})
    assert not dep.status.replicas
    dep = apps.patch_namespaced_deployment_status(
        "st", namespace, {"status": {"replicas": 5}, "spec": {"replicas": 9}}
    )
    assert dep.status.replicas == 5
    assert dep.spec.replicas == 1


def test_unknown_fields_are_kept_on_configmaps(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}},
    )
    assert status == 201
    assert body["data"] == {"a": "b"}


def test_dry_run_create_stores_nothing(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "dry"}}, dry_run="All")
    assert cm.metadata.name == "dry"
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_config_map("dry", namespace)
    assert err.value.status == 404


def test_dry_run_update_patch_and_delete_change_nothing(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "keep"}, "data": {"k": "1"}})
    cm.data = {"k": "2"}
    assert core.replace_namespaced_config_map("keep", namespace, cm, dry_run="All").data == {"k": "2"}
    assert core.patch_namespaced_config_map("keep", namespace, {"data": {"k": "3"}}, dry_run="All").data == {
        "k": "3"
    }
    core.delete_namespaced_config_map("keep", namespace, dry_run="All")
    assert core.read_namespaced_config_map("keep", namespace).data == {"k": "1"}


def test_secret_string_data_is_encoded(core: client.CoreV1Api, namespace: str) -> None:
    secret = core.create_namespaced_secret(
        namespace, {"metadata": {"name": "s"}, "stringData": {"token": "abc"}}
    )
    assert secret.data == {"token": "YWJj"}
    assert secret.type == "Opaque"


def test_service_gets_cluster_ip_from_service_cidr(core: client.CoreV1Api, namespace: str) -> None:
    svc = core.create_namespaced_service(
        namespace, {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}
    )
    kubernetes = core.read_namespaced_service("kubernetes", "default")
    assert svc.spec.cluster_ip and svc.spec.cluster_ip != kubernetes.spec.cluster_ip
    assert svc.spec.cluster_ips == [svc.spec.cluster_ip]
    assert svc.spec.ports is not None and svc.spec.ports[0].target_port == 80
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_service(
            "svc", namespace, {"spec": {"clusterIP": "10.96.0.250", "clusterIPs": ["10.96.0.250"]}}
        )
    assert err.value.status == 422


def test_invalid_name_is_unprocessable_with_cause(cluster: Cluster, namespace: str) -> None:
    status, body = cluster.json(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "Bad_Name"}}
    )
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"
    assert "RFC 1123 subdomain" in body["message"]


def test_object_in_missing_namespace_is_not_found(cluster: Cluster) -> None:
    status, body = cluster.json(
        "POST", "/api/v1/namespaces/no-such-ns/configmaps", {"metadata": {"name": "x"}}
    )
    assert status == 404
    assert body["message"] == 'namespaces "no-such-ns" not found'


def test_pods_get_default_service_account_and_token_volume(core: client.CoreV1Api, namespace: str) -> None:
    pod = core.create_namespaced_pod(
        namespace,
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}},
    )
    assert pod.spec.service_account_name == "default"
    assert pod.status.phase == "Pending"
    mounts = pod.spec.containers[0].volume_mounts
    assert any(m.mount_path == "/var/run/secrets/kubernetes.io/serviceaccount" for m in mounts)
    assert any(t.key == "node.kubernetes.io/not-ready" for t in pod.spec.tolerations)


def test_pod_requests_default_to_limits_per_resource(cluster: Cluster, namespace: str) -> None:
    limits = {"cpu": "200m", "memory": "128Mi"}
    body = {
        "metadata": {"name": "limited"},
        "spec": {
            "initContainers": [{"name": "init", "image": "busybox:1.36", "resources": {"limits": limits}}],
            "containers": [
                {"name": "only-limits", "image": "busybox:1.36", "resources": {"limits": limits}},
                {
                    "name": "some-requests",
                    "image": "busybox:1.36",
                    "resources": {"limits": limits, "requests": {"cpu": "50m"}},
                },
                {"name": "none", "image": "busybox:1.36"},
            ],
        },
    }
    status, pod = cluster.json("POST", f"/api/v1/namespaces/{namespace}/pods", body)
    assert status == 201, pod
    init, only_limits, some_requests, none = [
        c["resources"] for c in pod["spec"]["initContainers"] + pod["spec"]["containers"]
    ]
    assert init == {"limits": limits, "requests": limits}
    assert only_limits == {"limits": limits, "requests": limits}
    assert some_requests == {"limits": limits, "requests": {"cpu": "50m", "memory": "128Mi"}}
    assert none == {}
    assert pod["status"]["qosClass"] == "Burstable"


def test_pod_template_requests_are_not_defaulted_from_limits(cluster: Cluster, namespace: str) -> None:
    """Only a Pod gets requests from its limits: a Deployment's template keeps what was sent."""
    limits = {"cpu": "200m", "memory": "128Mi"}
    body = {
        "metadata": {"name": "template-limits"},
        "spec": {
            "selector": {"matchLabels": {"app": "t"}},
            "template": {
                "metadata": {"labels": {"app": "t"}},
                "spec": {
                    "containers": [{"name": "c", "image": "nginx:1.27", "resources": {"limits": limits}}]
                },
            },
        },
    }
    status, dep = cluster.json("POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body)
    assert status == 201, dep
    assert dep["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": limits}


def test_pod_spec_is_immutable_except_image(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(
        namespace,
        {"metadata": {"name": "im"}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}},
    )
    patched = core.patch_namespaced_pod(
        "im", namespace, {"spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]}}
    )
    assert patched.spec.containers[0].image == "busybox:1.37"
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_pod("im", namespace, {"spec": {"restartPolicy": "Never"}})
    assert err.value.status == 422
    assert "pod updates may not change fields" in str(err.value.body)


def test_binding_assigns_a_node_once(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(
        namespace, {"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
    )
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }
    core.create_namespaced_pod_binding("b", namespace, body, _preload_content=False)
    assert core.read_namespaced_pod("b", namespace).spec.node_name == "n1"
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod_binding("b", namespace, body, _preload_content=False)
    assert err.value.status == 409


def test_pod_priority_comes_from_its_priority_class(core: client.CoreV1Api, namespace: str) -> None:
    spec = {"priorityClassName": "system-node-critical", "containers": [{"name": "c", "image": "x:1"}]}
    pod = core.create_namespaced_pod(namespace, {"metadata": {"name": "crit"}, "spec": spec})
    assert pod.spec.priority == 2000001000
    plain = core.create_namespaced_pod(
        namespace, {"metadata": {"name": "plain"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
    )
    assert plain.spec.priority == 0


def test_pod_with_unknown_priority_class_is_forbidden(core: client.CoreV1Api, namespace: str) -> None:
    spec = {"priorityClassName": "no-such-class", "containers": [{"name": "c", "image": "x:1"}]}
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod(namespace, {"metadata": {"name": "nope"}, "spec": spec})
    assert err.value.status == 403
    assert "no PriorityClass with name no-such-class was found" in str(err.value.body)


def _job(name: str, **spec: object) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "image": "busybox:1.36"}], "restartPolicy": "Never"}
    return {"metadata": {"name": name}, "spec": {"template": {"spec": pod}, **spec}}


def test_job_defaults_completions_only_when_parallelism_is_unset(cluster: Cluster, namespace: str) -> None:
    batch = client.BatchV1Api(cluster.api)
    plain = batch.create_namespaced_job(namespace, _job("plain"))
    assert (plain.spec.completions, plain.spec.parallelism, plain.spec.backoff_limit) == (1, 1, 6)
    parallel = batch.create_namespaced_job(namespace, _job("parallel", parallelism=3))
    assert (parallel.spec.completions, parallel.spec.parallelism) == (None, 3)


def test_job_pods_may_not_restart_always(cluster: Cluster, namespace: str) -> None:
    body = _job("always")
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(client.ApiException) as err:
        client.BatchV1Api(cluster.api).create_namespaced_job(namespace, body)
    assert err.value.status == 422
    assert "spec.template.spec.restartPolicy" in str(err.value.body)


def test_cronjob_defaults(cluster: Cluster, namespace: str) -> None:
    body: dict[str, Any] = {
        "metadata": {"name": "cj"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": _job("t")},
    }
    del body["spec"]["jobTemplate"]["metadata"]
    cj = client.BatchV1Api(cluster.api).create_namespaced_cron_job(namespace, body)
    assert cj.spec.suspend is False
    assert cj.spec.concurrency_policy == "Allow"
    assert (cj.spec.successful_jobs_history_limit, cj.spec.failed_jobs_history_limit) == (3, 1)
    job = cj.spec.job_template.spec
    # the Job's own fields are defaulted when the Job is created, not in its template
    assert (job.backoff_limit, job.completions, job.parallelism, job.completion_mode) == (
        None,
        None,
        None,
        None,
    )
    container = job.template.spec.containers[0]
    assert (container.termination_message_path, container.image_pull_policy) == (
        "/dev/termination-log",
        "IfNotPresent",
    )
    assert job.template.spec.dns_policy == "ClusterFirst"


MIRROR = {"kubernetes.io/config.mirror": "x"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"serviceAccountName": "default"}, "a mirror pod may not reference service accounts"),
        (
            {"volumes": [{"name": "s", "secret": {"secretName": "x"}}]},
            "a mirror pod may not reference secrets",
        ),
    ],
    ids=["service-account", "secret"],
)
def test_mirror_pods_may_not_reference_service_accounts_or_secrets(
    cluster: Cluster, namespace: str, spec: dict[str, Any], message: str
) -> None:
    pod = {
        "metadata": {"name": "mirror", "annotations": MIRROR},
        "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "x:1"}], **spec},
    }
    status, body = cluster.json("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    assert (status, body["message"]) == (403, f'pods "mirror" is forbidden: {message}')


def test_a_mirror_pod_is_left_as_it_is_and_needs_a_node(cluster: Cluster, namespace: str) -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "mirror", "annotations": MIRROR},
        "spec": {"containers": [{"name": "c", "image": "x:1"}]},
    }
    status, body = cluster.json("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    assert (status, body["message"]) == (
        422,
        'Pod "mirror" is invalid: metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "x": '
        "must set spec.nodeName if mirror pod annotation is set",
    )
    pod["spec"]["nodeName"] = "n"
    status, body = cluster.json("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    assert status == 201
    assert (body["spec"].get("serviceAccountName"), body["spec"].get("volumes")) == (None, None)


def test_pod_status_updates_keep_metadata_changes_but_not_the_spec(cluster: Cluster, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    pod = {"metadata": {"name": "st"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
    assert cluster.json("POST", base, pod)[0] == 201
    patch = {
        "metadata": {"labels": {"via": "status"}, "annotations": {"a": "b"}, "finalizers": ["example.com/x"]},
        "spec": {"activeDeadlineSeconds": 5},
    }
    status, body = cluster.json(
        "PATCH", f"{base}/st/status", patch, headers={"Content-Type": "application/merge-patch+json"}
    )
    assert status == 200
    meta = body["metadata"]
    assert (meta["labels"], meta["annotations"], meta["finalizers"]) == (
        {"via": "status"},
        {"a": "b"},
        ["example.com/x"],
    )
    assert "activeDeadlineSeconds" not in body["spec"]
    cluster.json(
        "PATCH",
        f"{base}/st",
        {"metadata": {"finalizers": None}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
