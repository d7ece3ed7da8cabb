"""The one way the components hand a Kubernetes object to Pulumi: a dict from `runtime.forge` wrapped in the
`pulumi_kubernetes` resource of its kind.

Built-in kinds get their typed class (`pulumi_kubernetes.core.v1.ConfigMap`, ...), so
Pulumi shows and diffs them as it does any Kubernetes resource; kinds of other API groups
(the runtime's CRDs) get `apiextensions.CustomResource`. The object's top-level fields
become the class's arguments unchanged (nested keys stay camelCase, as the API has
them), so what Pulumi applies is exactly what the builder returned. The object may be an
Output (it depends on values known only once the cluster was asked, such as the
discovered CIDRs); `shape`, the same object built from placeholders, tells its class and
fields at construction.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import pulumi

from runtime.api.objects import JSON

#: API groups whose kinds pulumi_kubernetes has typed classes for, by the group's module name there
_BUILTIN_GROUPS: Final = {
    "": "core",
    "apps": "apps",
    "rbac.authorization.k8s.io": "rbac",
    "admissionregistration.k8s.io": "admissionregistration",
    "apiextensions.k8s.io": "apiextensions",
    "coordination.k8s.io": "coordination",
    "networking.k8s.io": "networking",
    "discovery.k8s.io": "discovery",
    "policy": "policy",
    "scheduling.k8s.io": "scheduling",
}
_CAMEL: Final = re.compile(r"(?<!^)(?=[A-Z])")


def kubernetes_object(
    name: str,
    obj: pulumi.Input[JSON],
    *,
    shape: Mapping[str, Any],
    opts: pulumi.ResourceOptions,
    known: Mapping[str, Any] | None = None,
) -> pulumi.CustomResource:
    """The `pulumi_kubernetes` resource `name` for `obj` (a builder's dict, or an Output of one shaped like
    `shape`); the fields in `known` are given as they are (known in a preview), the others taken from `obj`."""
    api_version, kind = str(shape["apiVersion"]), str(shape["kind"])
    body = pulumi.Output.from_input(obj)
    given = known or {}
    fields = {
        _snake(key): given[key] if key in given else body.apply(_field(key))
        for key in shape
        if key not in ("apiVersion", "kind")
    }
    group, _, version = api_version.rpartition("/")
    module = _BUILTIN_GROUPS.get(group)
    if module is None:
        import pulumi_kubernetes as k8s

        return k8s.apiextensions.CustomResource(name, api_version=api_version, kind=kind, opts=opts, **fields)
    cls = getattr(importlib.import_module(f"pulumi_kubernetes.{module}.{version}"), kind)
    resource: pulumi.CustomResource = cls(name, opts=opts, **fields)
    return resource


def resource_name(component: str, obj: Mapping[str, Any]) -> str:
    """A child's name: the component's, the kind and the object's name (`liqo-deployment-liqo-auth`)."""
    return f"{component}-{str(obj['kind']).lower()}-{obj['metadata']['name']}"


def _field(key: str) -> Callable[[JSON], Any]:
    return lambda value: value.get(key)


def _snake(key: str) -> str:
    return _CAMEL.sub("_", key).lower()
