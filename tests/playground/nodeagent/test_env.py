"""A container's environment and command line as kubelet builds them (pure: objects come from a dict)."""

from __future__ import annotations

import base64

import pytest

from playground.nodeagent.downward import (
    DownwardAPIError,
    PodContext,
    field_value,
    parse_quantity,
    resource_value,
)
from playground.nodeagent.env import (
    ContainerConfigError,
    command_line,
    container_env,
    expand,
    references,
    service_env,
)
from runtime.api.objects import JSON

CONTEXT = PodContext(pod_ip="10.0.0.7", host_ip="192.168.1.2", allocatable={"cpu": "4", "memory": "8Gi"})
POD: JSON = {
    "metadata": {
        "name": "web",
        "namespace": "shop",
        "uid": "u-1",
        "labels": {"app": "web", "tier": "front"},
        "annotations": {"note": 'say "hi"'},
    },
    "spec": {"nodeName": "node-1", "serviceAccountName": "robot"},
}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


OBJECTS: dict[tuple[str, str], JSON] = {
    ("Secret", "creds"): {
        "metadata": {"name": "creds"},
        "data": {"user": _b64("alice"), "pass": _b64("s3cret")},
    },
    ("ConfigMap", "settings"): {"metadata": {"name": "settings"}, "data": {"level": "debug", "port": "8080"}},
}


def env_of(container: JSON, objects: dict[tuple[str, str], JSON] | None = None) -> dict[str, str]:
    known = OBJECTS if objects is None else objects
    return container_env(
        POD,
        container,
        objects=lambda kind, name: known.get((kind, name)),
        context=CONTEXT,
        base=service_env("127.0.0.1", 6443),
    )


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("$(A)", {"A": "1"}, "1"),
        ("x-$(A)-y", {"A": "1"}, "x-1-y"),
        ("$(MISSING)", {}, "$(MISSING)"),
        ("$$(A)", {"A": "1"}, "$(A)"),
        ("$$", {}, "$"),
        ("cost $5", {}, "cost $5"),
        ("$(A", {"A": "1"}, "$(A"),
        ("end$", {}, "end$"),
        ("$(A)$(B)", {"A": "1", "B": "2"}, "12"),
    ],
    ids=[
        "whole",
        "inside",
        "unknown-kept",
        "escaped-reference",
        "escaped-dollar",
        "lone-dollar",
        "unclosed",
        "trailing",
        "adjacent",
    ],
)
def test_expand_follows_kubernetes_rules(text: str, env: dict[str, str], expected: str) -> None:
    assert expand(text, env) == expected


def test_service_variables_point_at_the_api_server() -> None:
    assert env_of({"name": "c"}) == {
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": "6443",
        "KUBERNETES_SERVICE_PORT_HTTPS": "6443",
    }


def test_values_expand_against_earlier_definitions_only() -> None:
    env = env_of(
        {
            "name": "c",
            "env": [
                {"name": "A", "value": "a"},
                {"name": "B", "value": "$(A)-$(C)-$(KUBERNETES_SERVICE_PORT)"},
                {"name": "C", "value": "c"},
            ],
        }
    )
    assert env["B"] == "a-$(C)-6443"


def test_value_from_every_source() -> None:
    env = env_of(
        {
            "name": "c",
            "resources": {"limits": {"memory": "256Mi"}, "requests": {"cpu": "250m"}},
            "env": [
                {"name": "USER", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "user"}}},
                {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "level"}}},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                {"name": "NOTE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['note']"}}},
                {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
                {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                {
                    "name": "MEM",
                    "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
                },
                {
                    "name": "CPU_REQ",
                    "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}},
                },
                {"name": "CPU_LIM", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            ],
        }
    )
    assert {k: v for k, v in env.items() if not k.startswith("KUBERNETES_")} == {
        "USER": "alice",
        "LEVEL": "debug",
        "POD": "web",
        "NS": "shop",
        "UID": "u-1",
        "APP": "web",
        "NOTE": 'say "hi"',
        "NODE": "node-1",
        "SA": "robot",
        "IP": "10.0.0.7",
        "HOST": "192.168.1.2",
        "MEM": "256",
        "CPU_REQ": "250",
        "CPU_LIM": "4",
    }


def test_env_from_with_prefix_and_env_overrides() -> None:
    env = env_of(
        {
            "name": "c",
            "envFrom": [
                {"configMapRef": {"name": "settings"}},
                {"prefix": "DB_", "secretRef": {"name": "creds"}},
            ],
            "env": [{"name": "port", "value": "9090"}],
        }
    )
    assert env["level"] == "debug"
    assert env["port"] == "9090"
    assert env["DB_user"] == "alice"
    assert env["DB_pass"] == "s3cret"


@pytest.mark.parametrize(
    ("container", "message"),
    [
        (
            {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k"}}}]},
            'secret "nope" not found',
        ),
        (
            {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}}]},
            'configmap "nope" not found',
        ),
        (
            {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}]},
            "couldn't find key token in Secret shop/creds",
        ),
        (
            {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "k"}}}]},
            "couldn't find key k in ConfigMap shop/settings",
        ),
        ({"envFrom": [{"secretRef": {"name": "nope"}}]}, 'secret "nope" not found'),
        ({"envFrom": [{"configMapRef": {"name": "nope"}}]}, 'configmap "nope" not found'),
        (
            {"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]},
            "unsupported fieldPath: spec.bogus",
        ),
    ],
    ids=[
        "secret",
        "configmap",
        "secret-key",
        "configmap-key",
        "env-from-secret",
        "env-from-configmap",
        "field",
    ],
)
def test_missing_required_reference_is_a_config_error(container: JSON, message: str) -> None:
    with pytest.raises(ContainerConfigError) as err:
        env_of({"name": "c", **container})
    assert str(err.value) == message


def test_optional_references_may_be_missing() -> None:
    env = env_of(
        {
            "name": "c",
            "envFrom": [{"secretRef": {"name": "nope", "optional": True}}],
            "env": [
                {"name": "A", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k", "optional": True}}},
                {
                    "name": "B",
                    "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "k", "optional": True}},
                },
            ],
        }
    )
    assert "A" not in env
    assert "B" not in env


def test_references_name_every_secret_and_configmap() -> None:
    container = {
        "envFrom": [{"secretRef": {"name": "s1"}}, {"configMapRef": {"name": "c1"}}],
        "env": [
            {"name": "A", "valueFrom": {"secretKeyRef": {"name": "s2", "key": "k"}}},
            {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "c2", "key": "k"}}},
            {"name": "C", "value": "plain"},
        ],
    }
    assert references(container) == {
        ("Secret", "s1"),
        ("Secret", "s2"),
        ("ConfigMap", "c1"),
        ("ConfigMap", "c2"),
    }


def test_command_and_args_expand_against_the_whole_environment() -> None:
    container = {"command": ["python", "-c", "$(CODE)"], "args": ["$(MISSING)", "$$(LITERAL)"]}
    assert command_line(container, {"CODE": "print(1)"}) == [
        "python",
        "-c",
        "print(1)",
        "$(MISSING)",
        "$(LITERAL)",
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100m", "1/10"),
        ("1.5Gi", str(3 * 2**29)),
        ("2e3", "2000"),
        ("1k", "1000"),
        ("512Ki", str(512 * 1024)),
        (".5", "1/2"),
    ],
)
def test_quantities_parse_exactly(text: str, value: str) -> None:
    assert str(parse_quantity(text)) == value


@pytest.mark.parametrize(
    ("resources", "resource", "divisor", "expected"),
    [
        ({"limits": {"cpu": "1500m"}}, "limits.cpu", None, "2"),
        ({"limits": {"cpu": "1500m"}}, "limits.cpu", "1m", "1500"),
        ({"limits": {"memory": "1Gi"}}, "limits.memory", "1Mi", "1024"),
        ({"limits": {"memory": "1000"}}, "limits.memory", "1k", "1"),
        ({}, "limits.memory", "1Gi", "8"),
        ({}, "requests.cpu", None, "0"),
    ],
    ids=[
        "cpu-rounds-up",
        "cpu-millis",
        "memory-mebibytes",
        "memory-kilo",
        "unset-limit-is-allocatable",
        "unset-request",
    ],
)
def test_resource_values(resources: JSON, resource: str, divisor: str | None, expected: str) -> None:
    assert resource_value({"resources": resources}, resource, divisor, CONTEXT) == expected


def test_whole_label_map_is_formatted_like_the_downward_api_file() -> None:
    assert field_value(POD, "metadata.labels", CONTEXT) == 'app="web"\ntier="front"'
    with pytest.raises(DownwardAPIError):
        field_value(POD, "metadata.generation", CONTEXT)
