"""The Pod Security Standards, as a pure check of a pod: what a provider lets a consumer's pod do.

A provider runs a consumer's pods in the consumer's twin namespaces, which carry the Pod
Security Admission labels of the level the peering has (`baseline` by default, see
`namespace_labels`), so the API server refuses a Pod that breaks it. The runtime checks the
same policy itself, before anything reaches the API server: at admission of a ShadowPod
(the webhook), before the provider's Pod is created (the ShadowPod controller), and on
the consumer before a pod is sent at all (the virtual kubelet, against baseline).

`violations()` mirrors k8s.io/pod-security-admission's checks at version `VERSION`, each
as an allowlist of the values the level permits (every field the policy names, anything
else refused), with PSA's wording (`forbidden reason (detail)`):

- baseline: Windows HostProcess, host namespaces, privileged containers, added
  capabilities beyond the default set, hostPath volumes, host ports, AppArmor profiles
  (fields and the beta annotations), SELinux type/user/role, `/proc` mount type (Unmasked
  allowed in a user namespace, `hostUsers: false`, since 1.35), seccomp profile types,
  sysctls outside the safe set, and probe or lifecycle handler hosts (1.34);
- restricted, on top: volume types, `allowPrivilegeEscalation: false`, `runAsNonRoot`,
  `runAsUser` not 0 (both relaxed in a user namespace), a RuntimeDefault or Localhost
  seccomp profile, dropping ALL capabilities and adding only NET_BIND_SERVICE (the last
  three not for Windows pods, as PSA);
- privileged is never offered: a consumer's pods are held to baseline at least.

Every container list is visited (init, regular, ephemeral). Input is whatever JSON a
client sent: a field of the wrong type is read as absent by the API's own rules (the
schema refuses it before any Pod exists), never as an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal, get_args

from runtime.api import constants as c

Level = Literal["baseline", "restricted"]
#: the levels a peering may ask for, loosest first (baseline is the floor: privileged is never offered)
LEVELS: Final[tuple[Level, ...]] = get_args(Level)
DEFAULT_LEVEL: Final[Level] = "baseline"
#: the Pod Security Standards version the checks mirror (and the twin namespaces' `enforce-version`)
VERSION: Final = "v1.36"

#: capabilities a baseline container may add (the container runtimes' default set)
BASELINE_CAPABILITIES: Final = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
RESTRICTED_CAPABILITIES: Final = frozenset({"NET_BIND_SERVICE"})
#: sysctls namespaced per pod and isolated from other pods (PSA's safe set, 1.32)
SAFE_SYSCTLS: Final = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
SELINUX_TYPES: Final = frozenset(
    {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)
SECCOMP_TYPES: Final = frozenset({"RuntimeDefault", "Localhost"})
APPARMOR_TYPES: Final = frozenset({"RuntimeDefault", "Localhost"})
APPARMOR_ANNOTATION_PREFIX: Final = "container.apparmor.security.beta.kubernetes.io/"
#: the inline volume sources a restricted pod may use
RESTRICTED_VOLUMES: Final = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
CONTAINER_LISTS: Final = ("initContainers", "containers", "ephemeralContainers")


class InvalidLevelError(ValueError):
    """Not a level a peering may ask for."""


def level(value: Any) -> Level:
    """`value` as a level (empty: the default); InvalidLevelError naming the levels otherwise."""
    if value in (None, ""):
        return DEFAULT_LEVEL
    for known in LEVELS:
        if value == known:
            return known
    raise InvalidLevelError(
        f"{value!r} is not a Pod Security Standards level a provider enforces: {' or '.join(LEVELS)} "
        "(privileged is never offered to a consumer)"
    )


def namespace_labels(enforced: Level) -> dict[str, str]:
    """The Pod Security Admission labels of a twin namespace enforcing `enforced` at `VERSION`."""
    return {c.LABEL_POD_SECURITY_ENFORCE: enforced, c.LABEL_POD_SECURITY_ENFORCE_VERSION: VERSION}


def enforced_level(namespace: Any) -> Level:
    """The level a twin namespace enforces: restricted when labelled so, baseline otherwise (the floor)."""
    labels = _dict(_dict(_dict(namespace).get("metadata")).get("labels"))
    return "restricted" if labels.get(c.LABEL_POD_SECURITY_ENFORCE) == "restricted" else DEFAULT_LEVEL


# -- reading arbitrary JSON as the API would --------------------------------------------------------


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _containers(spec: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    for key in CONTAINER_LISTS:
        for container in _list(spec.get(key)):
            if isinstance(container, Mapping):
                yield container


def _name(obj: Mapping[str, Any]) -> str:
    return f'"{obj.get("name")}"'


def _security(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _dict(obj.get("securityContext"))


def _joined(names: Iterable[Any]) -> str:
    return ", ".join(str(name) for name in names)


def _containers_where(spec: Mapping[str, Any], bad: Callable[[Mapping[str, Any]], bool]) -> list[str]:
    return [_name(container) for container in _containers(spec) if bad(container)]


def _these(noun: str, names: list[str]) -> str:
    return f"{noun}{'s' if len(names) > 1 else ''} {_joined(names)}"


def _verb(names: list[str], singular: str, plural: str) -> str:
    return plural if len(names) > 1 else singular


def _user_namespace(spec: Mapping[str, Any]) -> bool:
    return spec.get("hostUsers") is False


def _windows(spec: Mapping[str, Any]) -> bool:
    return _dict(spec.get("os")).get("name") == "windows"


# -- baseline ------------------------------------------------------------------------------------------


def _host_process(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    def sets(obj: Mapping[str, Any]) -> bool:
        return _dict(_security(obj).get("windowsOptions")).get("hostProcess") is True

    bad = (["pod"] if sets(spec) else []) + _containers_where(spec, sets)
    if not bad:
        return ""
    return f"hostProcess ({_joined(bad)} must not set securityContext.windowsOptions.hostProcess=true)"


def _host_namespaces(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    used = [field for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field) is True]
    return f"host namespaces ({', '.join(f'{field}=true' for field in used)})" if used else ""


def _privileged(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    bad = _containers_where(spec, lambda container: _security(container).get("privileged") is True)
    if not bad:
        return ""
    return f"privileged ({_these('container', bad)} must not set securityContext.privileged=true)"


def _added(container: Mapping[str, Any]) -> list[str]:
    return [str(cap) for cap in _list(_dict(_security(container).get("capabilities")).get("add"))]


def _capabilities_baseline(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    bad: list[str] = []
    added: set[str] = set()
    for container in _containers(spec):
        extra = [cap for cap in _added(container) if cap not in BASELINE_CAPABILITIES]
        if extra:
            bad.append(_name(container))
            added.update(extra)
    if not bad:
        return ""
    return (
        f"non-default capabilities ({_these('container', bad)} must not include {_joined(sorted(added))} "
        "in securityContext.capabilities.add)"
    )


def _host_path(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    bad = [
        _name(volume)
        for volume in _list(spec.get("volumes"))
        if isinstance(volume, Mapping) and volume.get("hostPath") is not None
    ]
    return f"hostPath volumes ({_these('volume', bad)})" if bad else ""


def _host_ports(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    bad: list[str] = []
    ports: list[str] = []
    for container in _containers(spec):
        used = [
            str(port.get("hostPort"))
            for port in _list(container.get("ports"))
            if isinstance(port, Mapping) and port.get("hostPort") not in (None, 0)
        ]
        if used:
            bad.append(_name(container))
            ports += used
    if not bad:
        return ""
    return f"hostPort ({_these('container', bad)} {_verb(bad, 'uses', 'use')} hostPort {_joined(ports)})"


def _app_armor(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> str:
    bad: list[str] = []

    def profile(obj: Mapping[str, Any]) -> Any:
        return _dict(_security(obj).get("appArmorProfile")).get("type")

    pod_profile = profile(spec)
    if pod_profile is not None and pod_profile not in APPARMOR_TYPES:
        bad.append(f'pod must not set securityContext.appArmorProfile.type to "{pod_profile}"')
    for container in _containers(spec):
        value = profile(container)
        if value is not None and value not in APPARMOR_TYPES:
            bad.append(
                f'container {_name(container)} must not set securityContext.appArmorProfile.type to "{value}"'
            )
    for key, value in sorted(annotations.items(), key=lambda item: str(item[0])):
        if str(key).startswith(APPARMOR_ANNOTATION_PREFIX):
            text = str(value)
            if text != "runtime/default" and not text.startswith("localhost/"):
                bad.append(f'{key}="{text}"')
    return f"forbidden AppArmor profiles ({'; '.join(bad)})" if bad else ""


def _se_linux(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    bad: list[str] = []
    details: set[str] = set()

    def check(who: str, obj: Mapping[str, Any]) -> None:
        options = _security(obj).get("seLinuxOptions")
        if not isinstance(options, Mapping):
            return
        found = []
        if str(options.get("type") or "") not in SELINUX_TYPES:
            found.append(f'type "{options.get("type")}"')
        found += [f"{field} may not be set" for field in ("user", "role") if options.get(field)]
        if found:
            bad.append(who)
            details.update(found)

    check("pod", spec)
    for container in _containers(spec):
        check(f"container {_name(container)}", container)
    if not bad:
        return ""
    return (
        f"seLinuxOptions ({' and '.join(bad)} set forbidden securityContext.seLinuxOptions: "
        f"{'; '.join(sorted(details))})"
    )


def _unmasked(spec: Mapping[str, Any]) -> str:
    bad = _containers_where(
        spec, lambda container: _security(container).get("procMount") not in (None, "Default")
    )
    if not bad:
        return ""
    return f"procMount ({_these('container', bad)} must not set securityContext.procMount to a value other than Default)"


def _proc_mount_baseline(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    return "" if _user_namespace(spec) else _unmasked(spec)


def _seccomp_baseline(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    def other(obj: Mapping[str, Any]) -> bool:
        kind = _dict(_security(obj).get("seccompProfile")).get("type")
        return kind is not None and kind not in SECCOMP_TYPES

    bad = (["pod"] if other(spec) else []) + _containers_where(spec, other)
    if not bad:
        return ""
    return (
        f"seccompProfile ({_joined(bad)} must not set securityContext.seccompProfile.type to a value other "
        "than RuntimeDefault or Localhost)"
    )


def _sysctls(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    names = [
        str(entry.get("name"))
        for entry in _list(_security(spec).get("sysctls"))
        if isinstance(entry, Mapping) and entry.get("name") not in SAFE_SYSCTLS
    ]
    return f"forbidden sysctls ({_joined(names)})" if names else ""


def _handler_hosts(handler: Any) -> list[str]:
    found = (_dict(_dict(handler).get(kind)).get("host") for kind in ("httpGet", "tcpSocket"))
    return [str(host) for host in found if host]


def _probe_hosts(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    bad: list[str] = []
    hosts: list[str] = []
    for container in _containers(spec):
        lifecycle = _dict(container.get("lifecycle"))
        handlers = [container.get(probe) for probe in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += [lifecycle.get("postStart"), lifecycle.get("preStop")]
        found = [host for handler in handlers for host in _handler_hosts(handler)]
        if found:
            bad.append(_name(container))
            hosts += found
    if not bad:
        return ""
    return (
        f"probe or lifecycle host ({_these('container', bad)} {_verb(bad, 'uses', 'use')} probe or lifecycle "
        f"hosts {_joined(hosts)})"
    )


# -- restricted ----------------------------------------------------------------------------------------


def _volume_types(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    bad: list[str] = []
    kinds: set[str] = set()
    for volume in _list(spec.get("volumes")):
        if not isinstance(volume, Mapping):
            continue
        sources = [str(key) for key, value in volume.items() if key != "name" and value is not None]
        if any(source in RESTRICTED_VOLUMES for source in sources):
            continue
        bad.append(_name(volume))
        kinds.update(sources or ["unknown"])
    if not bad:
        return ""
    return (
        f"restricted volume types ({_these('volume', bad)} {_verb(bad, 'uses', 'use')} restricted volume "
        f"types {_joined(sorted(kinds))})"
    )


def _privilege_escalation(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    if _windows(spec):
        return ""
    bad = _containers_where(
        spec, lambda container: _security(container).get("allowPrivilegeEscalation") is not False
    )
    if not bad:
        return ""
    return (
        f"allowPrivilegeEscalation != false ({_these('container', bad)} must set "
        "securityContext.allowPrivilegeEscalation=false)"
    )


def _run_as_non_root(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    if _user_namespace(spec):
        return ""
    pod = _security(spec).get("runAsNonRoot")
    explicit = (["pod"] if pod is False else []) + [
        f"container {name}"
        for name in _containers_where(
            spec, lambda container: _security(container).get("runAsNonRoot") is False
        )
    ]
    if explicit:
        return (
            f"runAsNonRoot != true ({' and '.join(explicit)} must not set securityContext.runAsNonRoot=false)"
        )
    implicit = (
        []
        if pod is True
        else _containers_where(spec, lambda container: _security(container).get("runAsNonRoot") is not True)
    )
    if not implicit:
        return ""
    return f"runAsNonRoot != true (pod or {_these('container', implicit)} must set securityContext.runAsNonRoot=true)"


def _run_as_user(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    if _user_namespace(spec):
        return ""

    def root(obj: Mapping[str, Any]) -> bool:
        value = _security(obj).get("runAsUser")
        return isinstance(value, int) and not isinstance(value, bool) and value == 0

    bad = (["pod"] if root(spec) else []) + [f"container {name}" for name in _containers_where(spec, root)]
    return f"runAsUser=0 ({' and '.join(bad)} must not set runAsUser=0)" if bad else ""


def _seccomp_restricted(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    if _windows(spec):
        return ""

    def kind(obj: Mapping[str, Any]) -> Any:
        return _dict(_security(obj).get("seccompProfile")).get("type")

    pod_set = kind(spec) in SECCOMP_TYPES
    bad = _containers_where(
        spec,
        lambda container: (
            kind(container) not in SECCOMP_TYPES and (kind(container) is not None or not pod_set)
        ),
    )
    if not bad:
        return ""
    return (
        f"seccompProfile (pod or {_these('container', bad)} must set securityContext.seccompProfile.type to "
        '"RuntimeDefault" or "Localhost")'
    )


def _capabilities_restricted(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    if _windows(spec):
        return ""
    keeping: list[str] = []
    adding: list[str] = []
    for container in _containers(spec):
        capabilities = _dict(_security(container).get("capabilities"))
        if "ALL" not in [str(cap) for cap in _list(capabilities.get("drop"))]:
            keeping.append(_name(container))
        if any(cap not in RESTRICTED_CAPABILITIES for cap in _added(container)):
            adding.append(_name(container))
    details = []
    if keeping:
        details.append(f'{_these("container", keeping)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(
            f'{_these("container", adding)} must not include capabilities other than "NET_BIND_SERVICE" in '
            "securityContext.capabilities.add"
        )
    return f"unrestricted capabilities ({'; '.join(details)})" if details else ""


def _proc_mount_restricted(spec: Mapping[str, Any], _: Mapping[str, Any]) -> str:
    return _unmasked(spec)


Check = Callable[[Mapping[str, Any], Mapping[str, Any]], str]

BASELINE_CHECKS: Final[tuple[Check, ...]] = (
    _host_process,
    _host_namespaces,
    _privileged,
    _capabilities_baseline,
    _host_path,
    _host_ports,
    _app_armor,
    _se_linux,
    _proc_mount_baseline,
    _seccomp_baseline,
    _sysctls,
    _probe_hosts,
)
#: restricted's own checks; its procMount check replaces baseline's (no user namespace relaxation)
RESTRICTED_CHECKS: Final[tuple[Check, ...]] = (
    _volume_types,
    _privilege_escalation,
    _run_as_non_root,
    _run_as_user,
    _seccomp_restricted,
    _capabilities_restricted,
    _proc_mount_restricted,
)


def violations(spec: Any, *, enforced: Level, annotations: Any = None) -> list[str]:
    """What of a pod's spec (and annotations) the level `enforced` forbids, in PSA's words (empty: allowed)."""
    pod_spec, notes = _dict(spec), _dict(annotations)
    checks = BASELINE_CHECKS
    if enforced == "restricted":
        checks = (
            tuple(check for check in BASELINE_CHECKS if check is not _proc_mount_baseline) + RESTRICTED_CHECKS
        )
    return [problem for problem in (check(pod_spec, notes) for check in checks) if problem]


def refusal(found: Iterable[str], *, enforced: Level) -> str:
    """The `violations` of a pod as one sentence, as PSA words it ("" when there are none)."""
    listed = list(found)
    return f'violates PodSecurity "{enforced}:{VERSION}": {", ".join(listed)}' if listed else ""
