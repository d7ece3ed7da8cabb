"""ShadowPod admission on a provider, as a hostile consumer meets it: every escape refused, the quota held."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.core import Store
from runtime.forge import podsecurity
from runtime.webhook.shadowpods import ASSUMED_FOR, Assumed, ShadowPodAdmission

TENANT = "liqo-tenant-rome"
TWIN = "shop-rome"


def twin(name: str = TWIN, *, level: str = "baseline", tenant: str = TENANT) -> JSON:
    return {
        "metadata": {
            "name": name,
            "labels": {c.LABEL_ORIGIN_CLUSTER_ID: "rome-id", **podsecurity.namespace_labels(level)},  # type: ignore[arg-type]
            "annotations": {c.ANNOTATION_NAMESPACE_MAP: f"{tenant}/milan"},
        }
    }


def quota(name: str = "rome", *, enforcement: str = "None", cordoned: bool = False, **limits: str) -> JSON:
    return {
        "metadata": {"name": name, "namespace": TENANT},
        "spec": {
            "limits": limits or {"cpu": "1", "memory": "1Gi", "pods": "10"},
            "limitsEnforcement": enforcement,
            "cordoned": cordoned,
        },
    }


def shadow(name: str = "web", *, namespace: str = TWIN, cpu: str = "", **pod: Any) -> JSON:
    container: JSON = {"name": "c", "image": "nginx"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    return {
        "apiVersion": "offloading.liqo.io/v1beta1",
        "kind": "ShadowPod",
        "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4())},
        "spec": {"pod": {"containers": [container], **pod}},
    }


def review(obj: JSON, *, operation: str = "CREATE", old: JSON | None = None, dry_run: bool = False) -> JSON:
    return {
        "uid": str(uuid.uuid4()),
        "kind": {"group": "offloading.liqo.io", "version": "v1beta1", "kind": "ShadowPod"},
        "operation": operation,
        "namespace": obj["metadata"]["namespace"],
        "name": obj["metadata"]["name"],
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
    }


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Provider:
    """The webhook's caches on a provider where consumer rome has one twin namespace and a Quota."""

    def __init__(self, *namespaces: JSON, quotas: tuple[JSON, ...] = (quota(),)) -> None:
        self.namespaces, self.quotas, self.shadow_pods = Store(), Store(), Store()
        for namespace in namespaces or (twin(),):
            self.namespaces.upsert(namespace)
        for item in quotas:
            self.quotas.upsert(item)
        self.clock = Clock()
        self.assumed = Assumed(clock=self.clock)
        self.admit = ShadowPodAdmission(namespaces=self.namespaces, quotas=self.quotas, assumed=self.assumed)

    def cached(self, obj: JSON) -> None:
        """The informer saw `obj` (created or changed)."""
        previous = self.shadow_pods.upsert(obj)
        self.admit.observe("MODIFIED" if previous else "ADDED", obj, previous)


#: spec fields of a pod that break out of baseline (the ShadowPod's `spec.pod`)
ESCAPES = [
    pytest.param({"hostNetwork": True}, "host namespaces", id="hostNetwork"),
    pytest.param({"hostPID": True}, "host namespaces", id="hostPID"),
    pytest.param({"hostIPC": True}, "host namespaces", id="hostIPC"),
    pytest.param(
        {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, "hostPath volumes", id="hostPath"
    ),
    pytest.param(
        {"securityContext": {"sysctls": [{"name": "kernel.core_pattern", "value": "|/x"}]}},
        "forbidden sysctls",
        id="unsafe-sysctl",
    ),
    pytest.param(
        {"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
        "seccompProfile",
        id="seccomp-unconfined",
    ),
    pytest.param(
        {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}, "AppArmor", id="apparmor-unconfined"
    ),
    pytest.param(
        {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}, "seLinuxOptions", id="selinux-spc_t"
    ),
    pytest.param(
        {"securityContext": {"windowsOptions": {"hostProcess": True}}},
        "hostProcess",
        id="windows-host-process",
    ),
]
#: container fields that break out of baseline
CONTAINER_ESCAPES = [
    pytest.param({"securityContext": {"privileged": True}}, "privileged", id="privileged"),
    pytest.param(
        {"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}},
        "non-default capabilities",
        id="cap-sys-admin",
    ),
    pytest.param(
        {"securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}},
        "non-default capabilities",
        id="cap-net-admin",
    ),
    pytest.param({"securityContext": {"procMount": "Unmasked"}}, "procMount", id="procMount-unmasked"),
    pytest.param({"ports": [{"containerPort": 80, "hostPort": 80}]}, "hostPort", id="hostPort"),
    pytest.param(
        {"readinessProbe": {"tcpSocket": {"host": "10.0.0.1", "port": 2379}}},
        "probe or lifecycle host",
        id="probe-host",
    ),
]


@pytest.mark.parametrize(("pod", "reason"), ESCAPES)
def test_shadow_pods_reaching_for_the_providers_host_are_refused(pod: JSON, reason: str) -> None:
    problems = Provider().admit(review(shadow(**pod)))
    assert len(problems) == 1 and problems[0].startswith("spec.pod: Forbidden: violates PodSecurity")
    assert reason in problems[0]


@pytest.mark.parametrize(("container", "reason"), CONTAINER_ESCAPES)
def test_containers_reaching_for_the_providers_host_are_refused(container: JSON, reason: str) -> None:
    obj = shadow()
    obj["spec"]["pod"]["containers"][0].update(container)
    problems = Provider().admit(review(obj))
    assert len(problems) == 1 and reason in problems[0]


def test_a_restricted_twin_namespace_refuses_what_baseline_admits() -> None:
    assert Provider(twin()).admit(review(shadow())) == []
    problems = Provider(twin(level="restricted")).admit(review(shadow()))
    assert (
        'violates PodSecurity "restricted:v1.36"' in problems[0] and "allowPrivilegeEscalation" in problems[0]
    )


def test_shadow_pods_outside_twin_namespaces_or_without_a_quota_are_refused() -> None:
    problems = Provider().admit(review(shadow(namespace="kube-system")))
    assert "namespace kube-system is not a twin namespace of any consumer" in problems[0]
    problems = Provider(quotas=()).admit(review(shadow()))
    assert f"holds no Quota in {TENANT}" in problems[0]


def test_a_cordoned_consumer_gets_no_new_pod_but_keeps_updating_its_own() -> None:
    provider = Provider(quotas=(quota(cordoned=True),))
    assert "is cordoned" in provider.admit(review(shadow()))[0]
    current = shadow(cpu="100m")
    changed = shadow(cpu="100m")
    changed["spec"]["pod"]["containers"][0]["image"] = "nginx:2"
    assert provider.admit(review(changed, operation="UPDATE", old=current)) == []


def test_pods_past_the_quota_are_refused_naming_it_and_admitted_ones_count_at_once() -> None:
    provider = Provider(quotas=(quota(cpu="1", pods="10"),))
    first = shadow("a", cpu="600m")
    assert provider.admit(review(first)) == []
    # the cache does not show "a" yet: what was admitted counts anyway
    problems = provider.admit(review(shadow("b", cpu="600m")))
    assert problems == [
        "spec.pod: Forbidden: exceeded quota: liqo-tenant-rome/rome, requested: cpu=600m, used: cpu=600m, "
        "limited: cpu=1"
    ]
    provider.cached(first)
    assert provider.admit(review(shadow("b", cpu="600m")))
    provider.cached({**first, "status": {"phase": "Succeeded"}})
    assert provider.admit(review(shadow("b", cpu="600m"))) == []


def test_the_pod_count_and_resources_never_granted_are_quota_too() -> None:
    provider = Provider(quotas=(quota(cpu="10", pods="1"),))
    provider.cached(shadow("a"))
    assert "requested: pods=1, used: pods=1, limited: pods=1" in provider.admit(review(shadow("b")))[0]
    gpu = shadow("gpu", cpu="")
    gpu["spec"]["pod"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    assert "limited: nvidia.com/gpu=0 (not granted)" in Provider().admit(review(gpu))[0]


def test_quotas_of_several_slices_add_up_and_the_strictest_enforcement_holds() -> None:
    provider = Provider(
        quotas=(quota("a", cpu="1", pods="5"), quota("b", enforcement="Soft", cpu="1", pods="5"))
    )
    assert "requests no cpu or memory" in provider.admit(review(shadow()))[0]
    declared = shadow(cpu="1500m")
    declared["spec"]["pod"]["containers"][0]["resources"]["requests"]["memory"] = "64Mi"
    provider.quotas.upsert(quota("a", cpu="1", memory="1Gi", pods="5"))
    assert provider.admit(review(declared)) == []


def test_an_update_asking_for_more_is_checked_and_one_changing_nothing_always_passes() -> None:
    provider = Provider(quotas=(quota(cpu="1", pods="10"),))
    current = shadow("a", cpu="500m")
    provider.cached(current)
    grown = shadow("a", cpu="2")
    assert "exceeded quota" in provider.admit(review(grown, operation="UPDATE", old=current))[0]
    privileged = shadow("a", cpu="500m")
    privileged["spec"]["pod"]["containers"][0]["securityContext"] = {"privileged": True}
    assert "privileged" in provider.admit(review(privileged, operation="UPDATE", old=current))[0]
    provider.quotas.upsert(quota(cpu="100m", pods="10"))
    finalized = {**current, "metadata": {**current["metadata"], "finalizers": []}}
    assert provider.admit(review(finalized, operation="UPDATE", old=current)) == []


def test_a_dry_run_remembers_nothing_and_what_is_remembered_is_forgotten_in_time() -> None:
    provider = Provider(quotas=(quota(cpu="1", pods="10"),))
    assert provider.admit(review(shadow("a", cpu="1"), dry_run=True)) == []
    assert provider.admit(review(shadow("b", cpu="1"))) == []
    assert provider.admit(review(shadow("c", cpu="1")))
    provider.clock.now += ASSUMED_FOR + 1
    assert provider.admit(review(shadow("c", cpu="1"))) == []


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(
            {"metadata": {"name": "x", "namespace": TWIN}, "spec": {"pod": "nope"}}, id="pod-not-an-object"
        ),
        pytest.param(
            {"metadata": {"name": "x", "namespace": TWIN}, "spec": {"pod": {"containers": "c"}}},
            id="containers-not-a-list",
        ),
        pytest.param(
            {
                "metadata": {"name": "x", "namespace": TWIN},
                "spec": {"pod": {"containers": [{"resources": "all"}]}},
            },
            id="resources-not-an-object",
        ),
        pytest.param(
            {
                "metadata": {"name": "x", "namespace": TWIN},
                "spec": {"pod": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}},
            },
            id="quantity-that-does-not-parse",
        ),
    ],
)
def test_a_shadow_pod_the_checks_cannot_read_is_refused_not_a_crash(obj: JSON) -> None:
    problems = Provider().admit(review(obj))
    assert problems and problems[0].startswith("spec.pod: Forbidden:")
