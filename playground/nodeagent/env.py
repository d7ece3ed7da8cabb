"""A container's environment and command line, built the way kubelet builds them.

Order and precedence follow `kubelet_pods.go` (makeEnvironmentVariables): the API
server's service variables first, then `envFrom` sources in order (a prefix before each
key), then `env` entries, each later definition replacing an earlier one. `$(VAR)`
references in `env` values expand against what is defined so far, in `command` and
`args` against the whole environment; `$$` escapes, an unknown reference stays as
written (k8s.io/kubernetes third_party/forked/golang/expansion).

A missing required Secret, ConfigMap or key is a `ContainerConfigError` with kubelet's
message; the container then waits with reason `CreateContainerConfigError` and the
runner retries. Objects come from a synchronous `Lookup` over what the caller fetched
(see `references`), so everything here is pure.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping

from runtime.api.objects import JSON

from .downward import DownwardAPIError, PodContext, field_value, resource_value

SECRET = "Secret"
CONFIGMAP = "ConfigMap"

#: (kind, name) -> the object, or None when it does not exist
Lookup = Callable[[str, str], JSON | None]


class ContainerConfigError(Exception):
    """The container cannot be configured yet (kube's `CreateContainerConfigError`); the message is kubelet's."""


def service_env(host: str, port: int) -> dict[str, str]:
    """The variables that point a pod at the API server (what in-cluster clients read)."""
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": str(port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
    }


def references(container: JSON) -> set[tuple[str, str]]:
    """The Secrets and ConfigMaps `container`'s environment reads, as (kind, name)."""
    found: set[tuple[str, str]] = set()
    for source in container.get("envFrom") or []:
        if (source.get("secretRef") or {}).get("name"):
            found.add((SECRET, source["secretRef"]["name"]))
        if (source.get("configMapRef") or {}).get("name"):
            found.add((CONFIGMAP, source["configMapRef"]["name"]))
    for var in container.get("env") or []:
        value_from = var.get("valueFrom") or {}
        if (value_from.get("secretKeyRef") or {}).get("name"):
            found.add((SECRET, value_from["secretKeyRef"]["name"]))
        if (value_from.get("configMapKeyRef") or {}).get("name"):
            found.add((CONFIGMAP, value_from["configMapKeyRef"]["name"]))
    return found


def container_env(
    pod: JSON,
    container: JSON,
    *,
    objects: Lookup,
    context: PodContext,
    base: Mapping[str, str],
) -> dict[str, str]:
    """The container's environment: `base` (the service variables), then `envFrom`, then `env`."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    env = dict(base)
    for source in container.get("envFrom") or []:
        env.update(_env_from(source, namespace=namespace, objects=objects))
    for var in container.get("env") or []:
        name = str(var.get("name") or "")
        if "valueFrom" not in var:
            env[name] = expand(str(var.get("value") or ""), env)
            continue
        value = _value_from(
            pod, container, var["valueFrom"], namespace=namespace, objects=objects, context=context
        )
        if value is not None:
            env[name] = value
    return env


def command_line(container: JSON, env: Mapping[str, str]) -> list[str]:
    """`command` + `args` with `$(VAR)` expanded against the container's environment."""
    return [
        expand(str(part), env) for part in [*(container.get("command") or []), *(container.get("args") or [])]
    ]


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: defined names are replaced, `$$` is a literal `$`, the rest stays."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "$" or i + 1 >= len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
            else:
                name = text[i + 2 : close]
                out.append(env.get(name, f"$({name})"))
                i = close + 1
        else:
            out.append("$" + following)
            i += 2
    return "".join(out)


def _env_from(source: JSON, *, namespace: str, objects: Lookup) -> dict[str, str]:
    prefix = str(source.get("prefix") or "")
    if "configMapRef" in source:
        ref, kind = source["configMapRef"], CONFIGMAP
    else:
        ref, kind = source.get("secretRef") or {}, SECRET
    obj = _get(objects, kind, str(ref.get("name") or ""), optional=bool(ref.get("optional")))
    if obj is None:
        return {}
    return {prefix + key: value for key, value in _string_data(kind, obj, namespace).items()}


def _value_from(
    pod: JSON, container: JSON, value_from: JSON, *, namespace: str, objects: Lookup, context: PodContext
) -> str | None:
    try:
        if "fieldRef" in value_from:
            return field_value(pod, str(value_from["fieldRef"].get("fieldPath") or ""), context)
        if "resourceFieldRef" in value_from:
            ref = value_from["resourceFieldRef"]
            return resource_value(container, str(ref.get("resource") or ""), ref.get("divisor"), context)
    except DownwardAPIError as exc:
        raise ContainerConfigError(str(exc)) from None
    if "configMapKeyRef" in value_from:
        ref, kind = value_from["configMapKeyRef"], CONFIGMAP
    elif "secretKeyRef" in value_from:
        ref, kind = value_from["secretKeyRef"], SECRET
    else:
        raise ContainerConfigError(f"unsupported valueFrom: {sorted(value_from)}")
    name, key, optional = str(ref.get("name") or ""), str(ref.get("key") or ""), bool(ref.get("optional"))
    obj = _get(objects, kind, name, optional=optional)
    if obj is None:
        return None
    data = _string_data(kind, obj, namespace)
    if key not in data:
        if optional:
            return None
        raise ContainerConfigError(f"couldn't find key {key} in {kind} {namespace}/{name}")
    return data[key]


def _get(objects: Lookup, kind: str, name: str, *, optional: bool) -> JSON | None:
    obj = objects(kind, name)
    if obj is None and not optional:
        raise ContainerConfigError(f'{kind.lower()} "{name}" not found')
    return obj


def _string_data(kind: str, obj: JSON, namespace: str) -> dict[str, str]:
    """A ConfigMap's `data`, or a Secret's `data` decoded (bytes that are not UTF-8 are replaced)."""
    if kind == CONFIGMAP:
        return {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
    try:
        decoded = secret_data(obj)
    except ValueError as exc:
        name = (obj.get("metadata") or {}).get("name", "")
        raise ContainerConfigError(f"secret {namespace}/{name}: {exc}") from None
    return {key: value.decode(errors="replace") for key, value in decoded.items()}


def secret_data(obj: JSON) -> dict[str, bytes]:
    """A Secret's `data` decoded from base64; ValueError names a key whose value is not base64."""
    decoded: dict[str, bytes] = {}
    for key, value in (obj.get("data") or {}).items():
        try:
            decoded[str(key)] = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"the value of key {key} is not base64") from None
    return decoded
