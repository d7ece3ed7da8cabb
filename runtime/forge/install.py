"""The runtime's install manifests, as pure functions of `InstallOptions`.

`install_manifests()` is the whole installation in apply order (namespace and CRDs
first, workloads last); `liqo_install` (Terraform) and the Pulumi component apply
exactly these objects, and uninstall deletes them in reverse. Nothing here does I/O:
the cluster id is an input (the caller keeps the existing one, so it is stable across
reinstalls unless purged), and so is everything only the caller can know (the API
server URL that other clusters reach, the image tag).
"""

from __future__ import annotations

import ipaddress
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from runtime.api import constants as c
from runtime.api.crds import crds
from runtime.api.image import component_command, package_version, runtime_image
from runtime.api.objects import JSON

from .meta import labels, liqo_labels, metadata
from .quota import ENFORCEMENTS, Enforcement
from .rbac import cluster_roles, component_bindings
from .reflection import TOKEN_API, ReflectionOptions, ReflectionOptionsError
from .reflection import from_values as reflection_from_values
from .services import EXPOSURES, ServiceType

WebhookMode = Literal["service", "url"]
SERVICE_TYPES: Final[tuple[ServiceType, ...]] = EXPOSURES
WEBHOOK_MODES: Final[tuple[WebhookMode, ...]] = get_args(WebhookMode)

CONTROLLER_MANAGER = "controller-manager"
AUTH = "auth"
WEBHOOK = "webhook"
FABRIC = "fabric"
#: every component's ServiceAccount and bindings; the first three run as Deployments, the fabric as a DaemonSet
COMPONENTS = (CONTROLLER_MANAGER, AUTH, WEBHOOK, FABRIC)
DEPLOYED_COMPONENTS = (CONTROLLER_MANAGER, AUTH, WEBHOOK)
FABRIC_HEALTH_PORT = 8088
GatewayServiceType = Literal["NodePort", "LoadBalancer"]
WireGuardImplementation = Literal["auto", "kernel", "wireguard-go"]
GATEWAY_SERVICE_TYPES: Final[tuple[GatewayServiceType, ...]] = get_args(GatewayServiceType)
WIREGUARD_IMPLEMENTATIONS: Final[tuple[WireGuardImplementation, ...]] = get_args(WireGuardImplementation)

#: the most twin namespaces an install lets one consumer hold
MAX_TWIN_NAMESPACES = 10000
HEALTH_PORT = 8080
AUTH_PORT = 8443
WEBHOOK_PORT = 9443
VALIDATING_WEBHOOK = "liqo-validating"
MUTATING_WEBHOOK = "liqo-mutating"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class InstallOptionsError(ValueError):
    """An install option is invalid; `attribute` names it (the Terraform attribute of the same name)."""

    def __init__(self, attribute: str, message: str) -> None:
        super().__init__(f"{attribute}: {message}")
        self.attribute = attribute


@dataclass(frozen=True)
class InstallOptions:
    cluster_id: str
    cluster_name: str
    #: the URL other clusters use to reach this cluster's API server (a consumer's credential points here)
    api_server_url: str
    pod_cidr: str
    service_cidr: str
    cluster_labels: dict[str, str] = field(default_factory=dict)
    namespace: str = c.DEFAULT_NAMESPACE
    #: percentage of the free allocatable resources a consumer gets when it asks for no specific amount
    sharing_percentage: int = 90
    image: str = field(default_factory=runtime_image)
    #: `service`: the API server calls the webhook through its Service (in-cluster); `url`: by URL (the playground)
    webhook_mode: WebhookMode = "service"
    #: how other clusters reach the authentication service, which publishes its URL from this Service (a
    #: node's address and the nodePort, a load balancer's ingress, or for ClusterIP its pod address, reachable
    #: only where pod IPs are); see `runtime.auth.endpoint`
    auth_service_type: ServiceType = "NodePort"
    #: the authentication service's URL as other clusters reach it (empty: derived from its Service)
    auth_url: str = ""
    #: what the virtual kubelets of this cluster (as a consumer) reflect to providers, with how many workers
    reflection: ReflectionOptions = field(default_factory=ReflectionOptions)
    #: the network fabric: how gateway servers are exposed, the tunnels' MTU, which WireGuard runs them
    gateway_service_type: GatewayServiceType = "NodePort"
    gateway_mtu: int = 1340
    wireguard_implementation: WireGuardImplementation = "auto"
    #: what this cluster (as a provider) lets a consumer make it run: how much of its ShadowPods' resources a
    #: pod must declare (None, Soft, Hard), how many twin namespaces it may hold, and the widest type its
    #: Services keep here (wider ones are converted)
    quota_enforcement: Enforcement = "None"
    max_twin_namespaces: int = 50
    max_consumer_service_type: ServiceType = "ClusterIP"

    def validate(self) -> None:
        """Raise InstallOptionsError naming the first invalid option."""
        try:
            uuid.UUID(self.cluster_id)
        except ValueError:
            raise InstallOptionsError("cluster_id", f"{self.cluster_id!r} is not a UUID") from None
        if not _DNS_LABEL.match(self.cluster_name) or len(self.cluster_name) > 58:
            raise InstallOptionsError(
                "cluster_name",
                f"{self.cluster_name!r} must be a DNS label of at most 58 characters (lower case letters, digits, '-'),"
                " because the virtual node on consumers is called liqo-<cluster_name>",
            )
        if not _DNS_LABEL.match(self.namespace) or len(self.namespace) > 63:
            raise InstallOptionsError("namespace", f"{self.namespace!r} is not a valid namespace name")
        for attribute, cidr in (("pod_cidr", self.pod_cidr), ("service_cidr", self.service_cidr)):
            try:
                ipaddress.ip_network(cidr)
            except ValueError as error:
                raise InstallOptionsError(attribute, f"{cidr!r} is not a CIDR: {error}") from None
        if not 0 < self.sharing_percentage <= 100:
            raise InstallOptionsError("sharing_percentage", f"{self.sharing_percentage} is not in 1..100")
        if not self.api_server_url.startswith("https://"):
            raise InstallOptionsError("api_server_url", f"{self.api_server_url!r} must be an https:// URL")
        if self.auth_service_type not in SERVICE_TYPES:
            raise InstallOptionsError(
                "auth_service_type",
                f"{self.auth_service_type!r} is not one of {', '.join(SERVICE_TYPES)}",
            )
        if self.gateway_service_type not in GATEWAY_SERVICE_TYPES:
            raise InstallOptionsError(
                "gateway_service_type",
                f"{self.gateway_service_type!r} is not one of {', '.join(GATEWAY_SERVICE_TYPES)}",
            )
        if not 1280 <= self.gateway_mtu <= 9000:
            raise InstallOptionsError("gateway_mtu", f"{self.gateway_mtu} is not in 1280..9000")
        if self.wireguard_implementation not in WIREGUARD_IMPLEMENTATIONS:
            raise InstallOptionsError(
                "wireguard_implementation",
                f"{self.wireguard_implementation!r} is not one of {', '.join(WIREGUARD_IMPLEMENTATIONS)}",
            )
        if self.quota_enforcement not in ENFORCEMENTS:
            raise InstallOptionsError(
                "quota_enforcement", f"{self.quota_enforcement!r} is not one of {', '.join(ENFORCEMENTS)}"
            )
        if not 1 <= self.max_twin_namespaces <= MAX_TWIN_NAMESPACES:
            raise InstallOptionsError(
                "max_twin_namespaces", f"{self.max_twin_namespaces} is not in 1..{MAX_TWIN_NAMESPACES}"
            )
        if self.max_consumer_service_type not in EXPOSURES:
            raise InstallOptionsError(
                "max_consumer_service_type",
                f"{self.max_consumer_service_type!r} is not one of {', '.join(EXPOSURES)}",
            )
        if self.auth_url and not self.auth_url.startswith("https://"):
            raise InstallOptionsError("auth_url", f"{self.auth_url!r} must be an https:// URL")
        for key, value in self.cluster_labels.items():
            if not _LABEL_VALUE.match(value) or len(value) > 63:
                raise InstallOptionsError(
                    "cluster_labels", f"value {value!r} of {key!r} is not a valid label value"
                )
        try:
            self.reflection.validate()
        except ReflectionOptionsError as error:
            raise InstallOptionsError(f"reflection.{error.option}", str(error).partition(": ")[2]) from None


#: a valid value of each required option, to check one given value at a time
_PLACEHOLDERS: Final[dict[str, Any]] = {
    "cluster_id": str(uuid.UUID(int=0)),
    "api_server_url": "https://valid.invalid",
    "pod_cidr": "10.0.0.0/16",
    "service_cidr": "10.1.0.0/16",
}


#: the options a user sets (the front ends' arguments of the same names), each checked alone by `option_problem`
USER_OPTIONS: Final = (
    "cluster_name",
    "namespace",
    "pod_cidr",
    "service_cidr",
    "sharing_percentage",
    "api_server_url",
    "auth_url",
    "cluster_labels",
    "gateway_service_type",
    "gateway_mtu",
    "wireguard_implementation",
    "quota_enforcement",
    "max_twin_namespaces",
    "max_consumer_service_type",
)


def install_options(values: Mapping[str, Any]) -> InstallOptions:
    """`InstallOptions` from plain values (a front end's state, `dataclasses.asdict` of options): `reflection`
    as a mapping of its fields (missing: the defaults). InstallOptionsError when `reflection` holds an invalid
    value (the other options are checked by `validate`)."""
    reflection = values.get("reflection")
    if not isinstance(reflection, ReflectionOptions):
        try:
            reflection = reflection_from_values(reflection or {})
        except ReflectionOptionsError as error:
            raise InstallOptionsError(f"reflection.{error.option}", str(error).partition(": ")[2]) from None
    return InstallOptions(**{**values, "reflection": reflection})


def placeholder_options(namespace: str = c.DEFAULT_NAMESPACE) -> InstallOptions:
    """Options for an installation of the same shape as any in `namespace`: which objects an installation
    holds, and which fields they have, depend only on its namespace."""
    return InstallOptions(**_PLACEHOLDERS, cluster_name="placeholder", namespace=namespace)


def option_problem(attribute: str, value: Any) -> str:
    """What is wrong with one option's value, the others being valid ("" when nothing is), as a sentence."""
    whole = {
        "sharing_percentage": "percentage (1-100)",
        "max_twin_namespaces": f"number (1-{MAX_TWIN_NAMESPACES})",
    }
    if attribute in whole and (
        isinstance(value, bool) or not isinstance(value, int | float) or value != int(value)
    ):
        return f"{value} is not a whole {whole[attribute]}."
    if attribute in whole:
        value = int(value)
    try:
        InstallOptions(**{**_PLACEHOLDERS, "cluster_name": "valid", attribute: value}).validate()
    except InstallOptionsError as exc:
        message = str(exc).removeprefix(f"{exc.attribute}: ")
        return message[:1].upper() + message[1:] + "."
    return ""


def install_manifests(options: InstallOptions) -> list[JSON]:
    """Every object of the installation, in apply order."""
    options.validate()
    ns = options.namespace
    objects: list[JSON] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata(ns, component="runtime")},
        *crds(),
        identity_configmap(options),
        *cluster_roles(pod_tokens=options.reflection.api_server_support == TOKEN_API),
    ]
    for component in COMPONENTS:
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": metadata(f"liqo-{component}", namespace=ns, component=component),
            }
        )
        objects.extend(component_bindings(component, namespace=ns))
    objects += [
        _deployment(options, CONTROLLER_MANAGER, _controller_manager_args(options), ports={}),
        _deployment(options, AUTH, _auth_args(options), ports={"https": AUTH_PORT}, node_name=True),
        _service(options, AUTH, AUTH_PORT, service_type=options.auth_service_type),
        _deployment(options, WEBHOOK, _webhook_args(options), ports={"https": WEBHOOK_PORT}),
        _service(options, WEBHOOK, WEBHOOK_PORT, service_type="ClusterIP"),
        validating_webhook_configuration(options),
        mutating_webhook_configuration(options),
        fabric_daemonset(options),
    ]
    return objects


def fabric_daemonset(options: InstallOptions) -> JSON:
    """The fabric agent on every node (host network, NET_ADMIN): routes to remote pod networks via gateways.

    It runs `ip` and `nft` on the host's network namespace, so as root (the image's user is not) with
    NET_ADMIN and NET_RAW only; it writes no file, so its root file system is read-only. (Liqo's fabric
    runs privileged; nothing this one does needs that.)
    """
    name = f"liqo-{FABRIC}"
    container: JSON = {
        "name": FABRIC,
        "image": options.image,
        "imagePullPolicy": "IfNotPresent",
        "command": component_command(FABRIC),
        "args": [f"--namespace={options.namespace}", f"--health-address=$(POD_IP):{FABRIC_HEALTH_PORT}"],
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        ],
        "resources": {"requests": {"cpu": "10m", "memory": "48Mi"}, "limits": {"memory": "192Mi"}},
        "securityContext": {
            "runAsUser": 0,
            "runAsNonRoot": False,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"add": ["NET_ADMIN", "NET_RAW"], "drop": ["ALL"]},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(name, namespace=options.namespace, component=FABRIC),
        "spec": {
            "selector": {"matchLabels": {c.LABEL_NAME: name}},
            "template": {
                "metadata": {"labels": labels(FABRIC)},
                "spec": {
                    "serviceAccountName": name,
                    "hostNetwork": True,
                    "tolerations": [{"operator": "Exists"}],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {
                                                "key": c.LABEL_TYPE,
                                                "operator": "NotIn",
                                                "values": [c.TYPE_VIRTUAL_NODE],
                                            }
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                    "containers": [container],
                },
            },
        },
    }


def identity_configmap(options: InstallOptions) -> JSON:
    """The cluster identity every peer and the front ends read (`liqo_generate`, `liqo_cluster`)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": c.CLUSTER_IDENTITY_CONFIGMAP,
            "namespace": options.namespace,
            "labels": liqo_labels(c.CLUSTER_ID_CONFIGMAP_MODULE),
        },
        "data": {
            c.IDENTITY_CLUSTER_ID: options.cluster_id,
            c.IDENTITY_CLUSTER_NAME: options.cluster_name,
            c.IDENTITY_CLUSTER_LABELS: json.dumps(options.cluster_labels, sort_keys=True),
            c.IDENTITY_POD_CIDR: options.pod_cidr,
            c.IDENTITY_SERVICE_CIDR: options.service_cidr,
            c.IDENTITY_VERSION: package_version(),
            c.IDENTITY_SHARING_PERCENTAGE: str(options.sharing_percentage),
        },
    }


def _client_config(options: InstallOptions, path: str) -> JSON:
    if options.webhook_mode == "service":
        return {
            "service": {"namespace": options.namespace, "name": "liqo-webhook", "path": path, "port": 443}
        }
    return {"url": f"https://liqo-webhook.invalid{path}"}


def _webhook(options: InstallOptions, name: str, path: str, rule: JSON, **extra: Any) -> JSON:
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "clientConfig": _client_config(options, path),
        "rules": [rule],
        **extra,
    }


def validating_webhook_configuration(options: InstallOptions) -> JSON:
    """Validation of the runtime's own kinds (the CRDs' immutability rules, for API servers without CEL), and
    what a consumer may make this cluster run: ShadowPods (its quota, its Pod Security level) and
    GatewayServers (one per peering).

    In `url` mode the URL is a placeholder until the webhook starts and patches its own address and CA
    bundle in (it does the CA bundle in `service` mode too); install waits for that before it returns.
    """
    webhooks = [
        _webhook(
            options,
            f"{plural}.validate.liqo.io",
            f"/validate/{plural}",
            {
                "apiGroups": [group],
                "apiVersions": [c.VERSION],
                "operations": operations,
                "resources": [plural],
                "scope": "*",
            },
        )
        for plural, group, operations in (
            ("foreignclusters", c.CORE_GROUP, ["CREATE", "UPDATE"]),
            ("resourceslices", c.AUTHENTICATION_GROUP, ["CREATE", "UPDATE"]),
            ("namespaceoffloadings", c.OFFLOADING_GROUP, ["CREATE", "UPDATE"]),
            ("namespaceoffloadingsets", c.OFFLOADING_GROUP, ["CREATE", "UPDATE"]),
            ("shadowpods", c.OFFLOADING_GROUP, ["CREATE", "UPDATE"]),
            ("gatewayservers", c.NETWORKING_GROUP, ["CREATE"]),
        )
    ]
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": metadata(VALIDATING_WEBHOOK, component=WEBHOOK),
        "webhooks": webhooks,
    }


def mutating_webhook_configuration(options: InstallOptions) -> JSON:
    """Admission of pods created in offloaded namespaces (labelled `liqo.io/scheduling-enabled=true`), and of
    Services in twin namespaces (labelled with their consumer's cluster id): narrowed to
    `max_consumer_service_type`.

    Failing closed as Liqo's does: while the webhook is down, such pods are refused (their controllers retry)
    rather than admitted without the constraints of their namespace's offloading.
    """
    rule = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE"],
        "resources": ["pods"],
        "scope": "Namespaced",
    }
    webhook = _webhook(
        options,
        "pods.mutate.liqo.io",
        "/mutate/pods",
        rule,
        namespaceSelector={"matchLabels": {c.LABEL_SCHEDULING_ENABLED: "true"}},
        reinvocationPolicy="Never",
    )
    services = _webhook(
        options,
        "services.mutate.liqo.io",
        "/mutate/services",
        {**rule, "operations": ["CREATE", "UPDATE"], "resources": ["services"]},
        namespaceSelector={
            "matchExpressions": [{"key": c.LABEL_ORIGIN_CLUSTER_ID, "operator": "Exists"}],
        },
        reinvocationPolicy="Never",
    )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": metadata(MUTATING_WEBHOOK, component=WEBHOOK),
        "webhooks": [webhook, services],
    }


def _controller_manager_args(options: InstallOptions) -> list[str]:
    return [
        f"--namespace={options.namespace}",
        f"--api-server-url={options.api_server_url}",
        "--leader-elect",
        f"--image={options.image}",
        *options.reflection.args(),
        f"--gateway-service-type={options.gateway_service_type}",
        f"--gateway-mtu={options.gateway_mtu}",
        f"--wireguard-implementation={options.wireguard_implementation}",
        f"--quota-enforcement={options.quota_enforcement}",
        f"--max-twin-namespaces={options.max_twin_namespaces}",
    ]


def _auth_args(options: InstallOptions) -> list[str]:
    args = [
        f"--namespace={options.namespace}",
        f"--listen=$(POD_IP):{AUTH_PORT}",
        f"--api-server-url={options.api_server_url}",
    ]
    if options.auth_url:
        args.append(f"--advertise-url={options.auth_url}")
    return args


def _webhook_args(options: InstallOptions) -> list[str]:
    return [
        f"--namespace={options.namespace}",
        f"--listen=$(POD_IP):{WEBHOOK_PORT}",
        f"--mode={options.webhook_mode}",
        f"--configuration={VALIDATING_WEBHOOK}",
        f"--mutating-configuration={MUTATING_WEBHOOK}",
        f"--max-consumer-service-type={options.max_consumer_service_type}",
    ]


def _deployment(
    options: InstallOptions,
    component: str,
    args: list[str],
    *,
    ports: dict[str, int],
    node_name: bool = False,
) -> JSON:
    """The component's Deployment; `node_name` gives it `NODE_NAME` (its pod's `spec.nodeName`)."""
    name = f"liqo-{component}"
    node_env = (
        [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
        if node_name
        else []
    )
    selector = {c.LABEL_NAME: name}
    probe = {"httpGet": {"path": "/readyz", "port": "health"}, "periodSeconds": 5, "failureThreshold": 3}
    container: JSON = {
        "name": component,
        "image": options.image,
        "imagePullPolicy": "IfNotPresent",
        "command": component_command(component),
        "args": [*args, f"--health-address=$(POD_IP):{HEALTH_PORT}"],
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            *node_env,
        ],
        "ports": [{"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"}]
        + [
            {"name": port_name, "containerPort": port, "protocol": "TCP"} for port_name, port in ports.items()
        ],
        "readinessProbe": probe,
        "livenessProbe": {**probe, "httpGet": {"path": "/healthz", "port": "health"}, "failureThreshold": 6},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        # the Deployment's own labels are Liqo's (liqoctl finds the controller manager by them); its selector
        # and its pods' labels, immutable for the one and kept for the other, are the runtime's
        "metadata": {"name": name, "namespace": options.namespace, "labels": liqo_labels(component)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": labels(component)},
                "spec": {
                    "serviceAccountName": name,
                    "containers": [container],
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                },
            },
        },
    }


def _service(options: InstallOptions, component: str, target_port: int, *, service_type: ServiceType) -> JSON:
    name = f"liqo-{component}"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name, namespace=options.namespace, component=component),
        "spec": {
            "type": service_type,
            "selector": {c.LABEL_NAME: name},
            "ports": [{"name": "https", "port": 443, "targetPort": target_port, "protocol": "TCP"}],
        },
    }
