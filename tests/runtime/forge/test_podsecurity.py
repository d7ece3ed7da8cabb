"""The Pod Security Standards check: every field baseline and restricted name, each way out of a container."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.api import constants as c
from runtime.api.objects import JSON
from runtime.forge import podsecurity


def spec(*, container: JSON | None = None, **pod: Any) -> JSON:
    """A pod spec with one container `c` (with `container`'s fields) and the pod-level fields `pod`."""
    return {"containers": [{"name": "c", "image": "nginx", **(container or {})}], **pod}


def security(**fields: Any) -> JSON:
    return {"securityContext": fields}


#: pods baseline refuses, one per field the policy names: (spec, annotations, the reason PSA gives)
BASELINE_ESCAPES = [
    pytest.param(spec(hostNetwork=True), {}, "host namespaces (hostNetwork=true)", id="hostNetwork"),
    pytest.param(spec(hostPID=True), {}, "host namespaces (hostPID=true)", id="hostPID"),
    pytest.param(spec(hostIPC=True), {}, "host namespaces (hostIPC=true)", id="hostIPC"),
    pytest.param(spec(container=security(privileged=True)), {}, "privileged (", id="privileged"),
    pytest.param(
        {"containers": [{"name": "c"}], "initContainers": [{"name": "i", **security(privileged=True)}]},
        {},
        'container "i" must not set securityContext.privileged=true',
        id="privileged-init-container",
    ),
    pytest.param(
        {"containers": [{"name": "c"}], "ephemeralContainers": [{"name": "e", **security(privileged=True)}]},
        {},
        'container "e" must not set securityContext.privileged=true',
        id="privileged-ephemeral-container",
    ),
    pytest.param(
        spec(container=security(capabilities={"add": ["NET_ADMIN"]})),
        {},
        'non-default capabilities (container "c" must not include NET_ADMIN',
        id="capability-net-admin",
    ),
    pytest.param(
        spec(container=security(capabilities={"add": ["SYS_ADMIN", "CHOWN"]})),
        {},
        "must not include SYS_ADMIN in",
        id="capability-sys-admin",
    ),
    pytest.param(
        spec(volumes=[{"name": "root", "hostPath": {"path": "/"}}]),
        {},
        'hostPath volumes (volume "root")',
        id="hostPath",
    ),
    pytest.param(
        spec(container={"ports": [{"containerPort": 80, "hostPort": 8080}]}),
        {},
        'hostPort (container "c" uses hostPort 8080)',
        id="hostPort",
    ),
    pytest.param(
        spec(container=security(appArmorProfile={"type": "Unconfined"})),
        {},
        'forbidden AppArmor profiles (container "c" must not set securityContext.appArmorProfile.type to "Unconfined")',
        id="apparmor-unconfined-container",
    ),
    pytest.param(
        spec(securityContext={"appArmorProfile": {"type": "Unconfined"}}),
        {},
        "pod must not set securityContext.appArmorProfile.type",
        id="apparmor-unconfined-pod",
    ),
    pytest.param(
        spec(),
        {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"},
        'container.apparmor.security.beta.kubernetes.io/c="unconfined"',
        id="apparmor-annotation",
    ),
    pytest.param(
        spec(container=security(seLinuxOptions={"type": "spc_t"})),
        {},
        'type "spc_t"',
        id="selinux-type",
    ),
    pytest.param(
        spec(securityContext={"seLinuxOptions": {"user": "system_u"}}),
        {},
        "user may not be set",
        id="selinux-user",
    ),
    pytest.param(
        spec(container=security(seLinuxOptions={"role": "sysadm_r"})),
        {},
        "role may not be set",
        id="selinux-role",
    ),
    pytest.param(
        spec(container=security(procMount="Unmasked")),
        {},
        'procMount (container "c" must not set securityContext.procMount',
        id="procMount-unmasked",
    ),
    pytest.param(
        spec(securityContext={"seccompProfile": {"type": "Unconfined"}}),
        {},
        "seccompProfile (pod must not set",
        id="seccomp-unconfined-pod",
    ),
    pytest.param(
        spec(container=security(seccompProfile={"type": "Unconfined"})),
        {},
        'seccompProfile ("c" must not set',
        id="seccomp-unconfined-container",
    ),
    pytest.param(
        spec(securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}),
        {},
        "forbidden sysctls (kernel.msgmax)",
        id="sysctl-unsafe",
    ),
    pytest.param(
        spec(securityContext={"windowsOptions": {"hostProcess": True}}),
        {},
        "hostProcess (pod must not set",
        id="windows-host-process",
    ),
    pytest.param(
        spec(container={"livenessProbe": {"httpGet": {"host": "169.254.169.254", "path": "/", "port": 80}}}),
        {},
        'probe or lifecycle host (container "c" uses probe or lifecycle hosts 169.254.169.254)',
        id="probe-host",
    ),
    pytest.param(
        spec(container={"lifecycle": {"preStop": {"tcpSocket": {"host": "10.0.0.1", "port": 22}}}}),
        {},
        "probe or lifecycle hosts 10.0.0.1",
        id="lifecycle-host",
    ),
]


@pytest.mark.parametrize(("pod_spec", "annotations", "reason"), BASELINE_ESCAPES)
@pytest.mark.parametrize("level", podsecurity.LEVELS)
def test_every_way_out_of_baseline_is_refused_at_either_level(
    pod_spec: JSON, annotations: JSON, reason: str, level: podsecurity.Level
) -> None:
    found = podsecurity.violations(pod_spec, enforced=level, annotations=annotations)
    assert any(reason in problem for problem in found), found


#: pods restricted refuses and baseline admits
RESTRICTED_ESCAPES = [
    pytest.param(
        spec(volumes=[{"name": "n", "nfs": {"server": "x", "path": "/"}}]),
        'restricted volume types (volume "n" uses restricted volume types nfs)',
        id="volume-nfs",
    ),
    pytest.param(
        spec(container=security(allowPrivilegeEscalation=True)),
        "allowPrivilegeEscalation != false",
        id="allowPrivilegeEscalation-true",
    ),
    pytest.param(spec(), "allowPrivilegeEscalation != false", id="allowPrivilegeEscalation-unset"),
    pytest.param(spec(), 'runAsNonRoot != true (pod or container "c" must set', id="runAsNonRoot-unset"),
    pytest.param(
        spec(securityContext={"runAsNonRoot": False}),
        "pod must not set securityContext.runAsNonRoot=false",
        id="runAsNonRoot-false",
    ),
    pytest.param(
        spec(container=security(runAsUser=0)),
        'runAsUser=0 (container "c" must not set runAsUser=0)',
        id="runAsUser-root",
    ),
    pytest.param(spec(), 'seccompProfile (pod or container "c" must set', id="seccomp-unset"),
    pytest.param(
        spec(container=security(capabilities={"add": ["CHOWN"]})),
        'must not include capabilities other than "NET_BIND_SERVICE"',
        id="capability-default-set",
    ),
    pytest.param(spec(), 'must set securityContext.capabilities.drop=["ALL"]', id="capabilities-not-dropped"),
]


@pytest.mark.parametrize(("pod_spec", "reason"), RESTRICTED_ESCAPES)
def test_restricted_refuses_what_baseline_lets_through(pod_spec: JSON, reason: str) -> None:
    found = podsecurity.violations(pod_spec, enforced="restricted")
    assert any(reason in problem for problem in found), found


HARDENED = spec(
    container=security(
        allowPrivilegeEscalation=False,
        capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
        runAsUser=1000,
    ),
    securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    volumes=[{"name": "data", "emptyDir": {}}, {"name": "token", "projected": {"sources": []}}],
)


@pytest.mark.parametrize(
    "pod_spec",
    [
        pytest.param(spec(), id="plain"),
        pytest.param(
            spec(container=security(capabilities={"add": ["CHOWN", "NET_BIND_SERVICE"]})), id="default-caps"
        ),
        pytest.param(
            spec(container=security(procMount="Unmasked")) | {"hostUsers": False},
            id="unmasked-in-user-namespace",
        ),
        pytest.param(
            spec(securityContext={"sysctls": [{"name": "net.ipv4.tcp_keepalive_time", "value": "60"}]}),
            id="safe-sysctl",
        ),
        pytest.param(
            spec(container=security(seccompProfile={"type": "Localhost", "localhostProfile": "p.json"})),
            id="seccomp-localhost",
        ),
        pytest.param(
            spec(container=security(seLinuxOptions={"type": "container_t", "level": "s0:c1"})),
            id="selinux-container_t",
        ),
        pytest.param(spec(container={"ports": [{"containerPort": 80, "hostPort": 0}]}), id="hostPort-zero"),
        pytest.param(HARDENED, id="hardened"),
    ],
)
def test_baseline_admits_ordinary_pods(pod_spec: JSON) -> None:
    assert podsecurity.violations(pod_spec, enforced="baseline") == []


def test_restricted_admits_a_hardened_pod_and_relaxes_root_in_a_user_namespace() -> None:
    assert podsecurity.violations(HARDENED, enforced="restricted") == []
    rootful = HARDENED | {
        "hostUsers": False,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    }
    assert podsecurity.violations(rootful, enforced="restricted") == []
    unmasked = HARDENED | {
        "hostUsers": False,
        "containers": [
            HARDENED["containers"][0]
            | security(procMount="Unmasked", allowPrivilegeEscalation=False, capabilities={"drop": ["ALL"]})
        ],
    }
    assert any("procMount" in problem for problem in podsecurity.violations(unmasked, enforced="restricted"))


def test_windows_pods_skip_the_linux_only_restricted_checks() -> None:
    windows = spec(os={"name": "windows"}, securityContext={"runAsNonRoot": True})
    assert podsecurity.violations(windows, enforced="restricted") == []


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(None, id="none"),
        pytest.param("pod", id="string"),
        pytest.param({"containers": "c", "volumes": 3}, id="wrong-list-types"),
        pytest.param({"containers": [None, 1, {"securityContext": "x"}]}, id="wrong-container-types"),
        pytest.param({"securityContext": {"sysctls": [None, {"name": None}]}}, id="wrong-sysctl-types"),
    ],
)
def test_any_json_is_read_as_the_api_would_never_raising(garbage: Any) -> None:
    for level in podsecurity.LEVELS:
        podsecurity.violations(garbage, enforced=level, annotations=garbage)


def test_the_refusal_is_worded_as_pod_security_admissions() -> None:
    found = podsecurity.violations(spec(hostNetwork=True), enforced="baseline")
    assert podsecurity.refusal(found, enforced="baseline") == (
        f'violates PodSecurity "baseline:{podsecurity.VERSION}": host namespaces (hostNetwork=true)'
    )
    assert podsecurity.refusal([], enforced="baseline") == ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "baseline"), ("", "baseline"), ("baseline", "baseline"), ("restricted", "restricted")],
)
def test_levels(value: Any, expected: str) -> None:
    assert podsecurity.level(value) == expected


@pytest.mark.parametrize("value", ["privileged", "Baseline", 3])
def test_privileged_and_other_values_are_no_level(value: Any) -> None:
    with pytest.raises(podsecurity.InvalidLevelError, match="baseline or restricted"):
        podsecurity.level(value)


def test_a_twin_namespace_enforces_its_label_and_never_less_than_baseline() -> None:
    labels = podsecurity.namespace_labels("restricted")
    assert labels == {
        c.LABEL_POD_SECURITY_ENFORCE: "restricted",
        c.LABEL_POD_SECURITY_ENFORCE_VERSION: podsecurity.VERSION,
    }
    assert podsecurity.enforced_level({"metadata": {"labels": labels}}) == "restricted"
    for other in ({c.LABEL_POD_SECURITY_ENFORCE: "privileged"}, {}, None):
        assert podsecurity.enforced_level({"metadata": {"labels": other}}) == "baseline"
