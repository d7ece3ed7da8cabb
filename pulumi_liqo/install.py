"""`liqo:index:Install`: the Liqo runtime in one cluster, as Pulumi resources.

The runtime's objects are `runtime.forge.install.install_manifests()`, each wrapped in
the `pulumi_kubernetes` resource of its kind (`_objects.kubernetes_object`), the
Namespace and the CRDs first and every other object depending on them. Two dynamic
resources do what Kubernetes resources cannot: `Discovery` finds the values the
manifests need from the cluster (the cluster id an earlier install left, the CIDRs not
given), and `Runtime`, created after every object, waits until the runtime runs and
publishes its identity (the component's outputs), reads it back for drift, and on
destroy refuses while peerings hold the runtime unless `force`. Without `purge`, a
destroy leaves the Namespace, the CRDs and the identity ConfigMap (`retain_on_delete`),
so a reinstall keeps the cluster id its peers know, as `liqo_install` does.
"""

import functools
import operator
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from runtime.api import constants as c
from runtime.api.image import runtime_image
from runtime.forge.install import (
    USER_OPTIONS,
    WEBHOOK_MODES,
    install_manifests,
    install_options,
    option_problem,
    placeholder_options,
)
from runtime.forge.reflection import ReflectionOptionsError
from runtime.forge.reflection import from_values as reflection_from_values
from runtime.operations.install import CONTRACT

from . import _args
from ._objects import kubernetes_object, resource_name
from .providers.install import Discovery, Runtime

TYPE = "liqo:index:Install"
#: a type of the kubernetes package, to find the Provider the component was given for it
KUBERNETES_TYPE = "kubernetes:core/v1:Namespace"


class ReflectionArgs(TypedDict):
    """What the virtual kubelets of the cluster (as a consumer) reflect into the namespaces offloaded to its
    providers: how many workers per kind (Liqo's `--<kind>-reflection-workers`; 0 workers turn a kind off),
    the policy of each kind that takes one (DenyList or AllowList) and the label and annotation keys never
    copied. The `reflection` options of `liqo_install`; changes roll every virtual kubelet out."""

    pod_workers: NotRequired[pulumi.Input[int]]
    """Pods offloaded at once (ShadowPods, token Secrets, status back); 0: no pod is offloaded (default 20)."""
    configmap_workers: NotRequired[pulumi.Input[int]]
    """ConfigMaps reflected at once (`kube-root-ca.crt` under a name of its own); 0: none (default 20)."""
    secret_workers: NotRequired[pulumi.Input[int]]
    """Secrets reflected at once (offloaded pods' own token Secrets go with their pods anyway); 0: none
    (default 20)."""
    service_workers: NotRequired[pulumi.Input[int]]
    """Services reflected at once (the provider allocates their ClusterIP and node ports); 0: none (default
    10)."""
    endpointslice_workers: NotRequired[pulumi.Input[int]]
    """EndpointSlices reflected at once, as ShadowEndpointSlices; 0: none (default 20)."""
    ingress_workers: NotRequired[pulumi.Input[int]]
    """Ingresses reflected at once; 0: none (default 5)."""
    event_workers: NotRequired[pulumi.Input[int]]
    """Provider Events brought back at once onto the objects they speak of; 0: none (default 10)."""
    ingress_classes: NotRequired[pulumi.Input[dict[str, str]]]
    """Ingress class of this cluster -> the provider's: a reflected Ingress of a class listed here gets the
    provider's class; any other is reflected without a class (the provider's default serves it)."""
    configmap_type: NotRequired[pulumi.Input[str]]
    """Reflection policy of ConfigMaps (Liqo's `reflection.configmap.type`): `"DenyList"` (default) reflects
    every one but those annotated `liqo.io/skip-reflection`; `"AllowList"` only those annotated
    `liqo.io/allow-reflection`."""
    secret_type: NotRequired[pulumi.Input[str]]
    """Reflection policy of Secrets: `"DenyList"` (default) or `"AllowList"`, as `configmap_type`."""
    service_type: NotRequired[pulumi.Input[str]]
    """Reflection policy of Services: `"DenyList"` (default) or `"AllowList"`, as `configmap_type`.
    EndpointSlices follow their Service, unless a slice carries one of the annotations itself."""
    ingress_type: NotRequired[pulumi.Input[str]]
    """Reflection policy of Ingresses: `"DenyList"` (default) or `"AllowList"`, as `configmap_type`."""
    labels_not_reflected: NotRequired[pulumi.Input[list[str]]]
    """Label keys never copied to the provider, from any reflected object (ShadowPods included; Liqo's
    `reflection.skip.labels`)."""
    annotations_not_reflected: NotRequired[pulumi.Input[list[str]]]
    """Annotation keys never copied to the provider, from any reflected object (Liqo's
    `reflection.skip.annotations`)."""
    api_server_support: NotRequired[pulumi.Input[str]]
    """What offloaded pods' ServiceAccount tokens are for (Liqo's `--api-server-support`): `"TokenAPI"`
    (default) gives each pod tokens of its own ServiceAccount issued by this cluster, so it talks to this API
    server from the provider as at home; `"Disabled"` keeps every token in this cluster. A pod may ask for the
    provider's API server (`liqo.io/api-server-support: remote`) or for none (`disabled`) itself."""


class InstallArgs(TypedDict):
    """The arguments of an Install (the options of `liqo_install`)."""

    kubeconfig: pulumi.Input[str]
    """A kubeconfig for the cluster (its content, YAML or JSON), with rights to install cluster-wide objects.
    Kept secret."""
    cluster_name: pulumi.Input[str]
    """Name of this cluster, as its peers know it: a DNS label of at most 58 characters (the virtual node
    standing for it in a consumer is `liqo-<cluster_name>`)."""
    context: NotRequired[pulumi.Input[str]]
    """The kubeconfig context to use (default: its current context)."""
    cluster_labels: NotRequired[pulumi.Input[dict[str, str]]]
    """Labels this cluster suggests for the virtual nodes that stand for it in its consumers."""
    namespace: NotRequired[pulumi.Input[str]]
    """Namespace of the runtime (default `liqo`). Changing it reinstalls."""
    pod_cidr: NotRequired[pulumi.Input[str]]
    """The cluster's pod CIDR. Default: what the cluster tells (kubeadm's `kubeadm-config`, the
    kube-controller-manager's `--cluster-cidr`, else the smallest network covering the nodes' `spec.podCIDR`)."""
    service_cidr: NotRequired[pulumi.Input[str]]
    """The cluster's Service CIDR. Default: what the cluster tells (kubeadm's `kubeadm-config`, or the API
    server's valid Service range)."""
    sharing_percentage: NotRequired[pulumi.Input[int]]
    """Percentage (1-100) of this cluster's free resources a consumer gets when it asks for no specific amount
    (default 90)."""
    image: NotRequired[pulumi.Input[str]]
    """Image of the runtime's components (default: the runtime image of this package's version)."""
    webhook_mode: NotRequired[pulumi.Input[str]]
    """How the API server reaches the runtime's webhook: `service` (its Service, default) or `url` (its pod
    address, for an API server that cannot reach Services, such as one run outside its cluster's network)."""
    api_server_url: NotRequired[pulumi.Input[str]]
    """URL other clusters reach this cluster's API server at (consumers' credentials point there). Default:
    the server of the kubeconfig, unless it is a loopback address (a kind or playground cluster reached
    through a port of this host): then a control-plane node's address and port 6443, as liqoctl does."""
    auth_url: NotRequired[pulumi.Input[str]]
    """URL other clusters reach the authentication service at (an Ingress in front of it, say). Default: the
    URL the service derives from its Service (see `auth_service_type`)."""
    auth_service_type: NotRequired[pulumi.Input[str]]
    """Type of the authentication service's Service: `NodePort` (default), `LoadBalancer` or `ClusterIP`; it
    decides the URL the service publishes. Changes in place."""
    reflection: NotRequired[pulumi.Input[ReflectionArgs]]
    """What the virtual kubelets of this cluster reflect to its providers, and with how many workers per kind
    (defaults: see `ReflectionArgs`). Changes in place."""
    gateway_service_type: NotRequired[pulumi.Input[str]]
    """Type of the Service in front of each peering's gateway server (this cluster as a provider): `NodePort`
    (default: consumers dial a Ready node's address and the nodePort, UDP) or `LoadBalancer`."""
    gateway_mtu: NotRequired[pulumi.Input[int]]
    """MTU of the WireGuard tunnel interfaces (1280..9000; default 1340)."""
    wireguard_implementation: NotRequired[pulumi.Input[str]]
    """Which WireGuard the gateways run: `auto` (default: the kernel's when the node has it, else
    `wireguard-go`), `kernel` or `wireguard-go`."""
    quota_enforcement: NotRequired[pulumi.Input[str]]
    """How much a consumer's offloaded pods must declare of what they take from this cluster (as a provider),
    checked at admission against the Quotas of its granted ResourceSlices: `None` (default: what a pod requests
    counts, and the number of pods), `Soft` (every container also requests cpu and memory) or `Hard` (and its
    limits equal its requests)."""
    max_twin_namespaces: NotRequired[pulumi.Input[int]]
    """The most twin namespaces one consumer may hold in this cluster (as a provider), 1..10000 (default 50)."""
    max_consumer_service_type: NotRequired[pulumi.Input[str]]
    """The widest type a consumer's Services keep when reflected into this cluster (as a provider):
    `ClusterIP` (default: NodePort and LoadBalancer Services become ClusterIP), `NodePort` (LoadBalancer ones
    become NodePort) or `LoadBalancer` (kept as they are, as Liqo does)."""
    force: NotRequired[pulumi.Input[bool]]
    """Let destroy proceed while peerings (ForeignClusters) or offloaded namespaces exist: they are deleted
    first; and let it drop the component when its cluster cannot be reached, leaving the runtime there
    (without it, such a destroy fails and the component stays). Run `pulumi up` with it before the destroy."""
    purge: NotRequired[bool]
    """On destroy, also delete the namespace, the CRDs and the cluster identity (the next install gets a new
    cluster ID, which consumers that peered before refuse). A plain value: it decides which objects Pulumi
    keeps on delete."""


class Install(pulumi.ComponentResource):
    """Installs the Liqo runtime (CRDs, controller manager, authentication service, webhook) in a cluster,
    upgrades it in place and uninstalls it."""

    cluster_id: pulumi.Output[str]
    """The cluster ID, kept across reinstalls unless purged."""
    cluster_name: pulumi.Output[str]
    """The cluster name peers know this cluster by."""
    namespace: pulumi.Output[str]
    """The namespace of the runtime."""
    auth_url: pulumi.Output[str]
    """URL of the authentication service, as the running service publishes it."""
    version: pulumi.Output[str]
    """Version of the installed runtime."""
    pod_cidr: pulumi.Output[str]
    """The pod CIDR the runtime was installed with."""
    service_cidr: pulumi.Output[str]
    """The Service CIDR the runtime was installed with."""

    def __init__(self, name: str, args: InstallArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # checked before anything is registered: a bad argument leaves no half-made component
        values = _args.defaulted(CONTRACT, _check(args))
        bounds = _args.timeouts("Install", opts, CONTRACT.timeouts)
        super().__init__(TYPE, name, {}, opts)
        kubeconfig = pulumi.Output.secret(values["kubeconfig"])
        context = values.get("context")
        namespace = values["namespace"]
        purge = bool(values.get("purge"))

        self.kubernetes: pulumi.ProviderResource = self.get_provider(KUBERNETES_TYPE) or k8s.Provider(
            f"{name}-kubernetes",
            kubeconfig=kubeconfig,
            context=context,
            # the identity ConfigMap changes in place when the identity arguments do
            enable_config_map_mutable=True,
            # a destroy without purge leaves the namespace, the CRDs and the identity: the next install adopts them
            upsert_existing_objects=True,
            # `force`: a destroy that cannot reach the cluster drops the runtime's objects from the stack too
            delete_unreachable=values.get("force") or False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        discovery = Discovery(
            f"{name}-discovery",
            {
                "kubeconfig": kubeconfig,
                "context": context,
                "timeouts": bounds,
                "namespace": namespace,
                "pod_cidr": values.get("pod_cidr"),
                "service_cidr": values.get("service_cidr"),
                "api_server_url": values.get("api_server_url"),
            },
            _args.child_options(self, opts),
        )
        given: dict[str, Any] = {
            "cluster_name": values["cluster_name"],
            "cluster_labels": values.get("cluster_labels") or {},
            "namespace": namespace,
            "sharing_percentage": values["sharing_percentage"],
            "image": values.get("image") or runtime_image(),
            "webhook_mode": values["webhook_mode"],
            "auth_service_type": values["auth_service_type"],
            "auth_url": values.get("auth_url") or "",
            "reflection": values.get("reflection") or {},
            "gateway_service_type": values["gateway_service_type"],
            "gateway_mtu": values["gateway_mtu"],
            "wireguard_implementation": values["wireguard_implementation"],
            "quota_enforcement": values["quota_enforcement"],
            "max_twin_namespaces": values["max_twin_namespaces"],
            "max_consumer_service_type": values["max_consumer_service_type"],
        }
        options = pulumi.Output.all(
            cluster_id=discovery.cluster_id,
            api_server_url=discovery.discovered_api_server_url,
            pod_cidr=discovery.discovered_pod_cidr,
            service_cidr=discovery.discovered_service_cidr,
            **given,
        ).apply(
            lambda values: {
                **values,
                "sharing_percentage": int(values["sharing_percentage"]),
                "gateway_mtu": int(values["gateway_mtu"]),
                "max_twin_namespaces": int(values["max_twin_namespaces"]),
            }
        )
        manifests = options.apply(lambda values: install_manifests(install_options(values)))
        known = _known_fields(given)

        shapes = install_manifests(
            placeholder_options(namespace if isinstance(namespace, str) else c.DEFAULT_NAMESPACE)
        )
        first: list[pulumi.Resource] = []
        children: list[pulumi.Resource] = []
        for index, shape in enumerate(shapes):
            kind = shape["kind"]
            leading = kind in ("Namespace", "CustomResourceDefinition")
            kept = leading or (
                kind == "ConfigMap" and shape["metadata"]["name"] == c.CLUSTER_IDENTITY_CONFIGMAP
            )
            child = kubernetes_object(
                resource_name(name, shape),
                manifests.apply(operator.itemgetter(index)),
                shape=shape,
                known=known[index],
                opts=_args.child_options(
                    self,
                    opts,
                    provider=self.kubernetes,
                    depends_on=[] if leading else list(first),
                    retain_on_delete=kept and not purge,
                ),
            )
            (first if leading else children).append(child)
        self.objects = [*first, *children]

        runtime = Runtime(
            f"{name}-runtime",
            {
                "kubeconfig": kubeconfig,
                "context": context,
                "timeouts": bounds,
                "namespace": namespace,
                "options": options,
                "force": values.get("force") or False,
            },
            _args.child_options(self, opts, depends_on=self.objects),
        )
        self.cluster_id = runtime.cluster_id
        self.cluster_name = runtime.cluster_name
        self.namespace = pulumi.Output.from_input(namespace)
        self.auth_url = runtime.auth_url
        self.version = runtime.version
        self.pod_cidr = discovery.discovered_pod_cidr
        self.service_cidr = discovery.discovered_service_cidr
        self.register_outputs(
            {
                "cluster_id": self.cluster_id,
                "cluster_name": self.cluster_name,
                "namespace": self.namespace,
                "auth_url": self.auth_url,
                "version": self.version,
                "pod_cidr": self.pod_cidr,
                "service_cidr": self.service_cidr,
            }
        )


def _known_fields(given: dict[str, Any]) -> list[dict[str, Any]]:
    """Per object, its top-level fields that depend on no discovered value (whole CRDs and RBAC objects, the
    Deployments' metadata, ...), known now when every argument is a plain value: a preview shows them, and
    pulumi_kubernetes plans a change of the others as an update of a known object, not a replacement of
    an unknown one. None are known when an argument is an Output."""
    if any(_holds_output(value) for value in given.values()):
        return [{} for _ in install_manifests(placeholder_options())]
    plain = {
        **given,
        "sharing_percentage": int(given["sharing_percentage"]),
        "max_twin_namespaces": int(given["max_twin_namespaces"]),
    }
    one = install_manifests(install_options({**asdict(placeholder_options()), **plain}))
    other = install_manifests(
        install_options(
            {
                **asdict(placeholder_options()),
                **plain,
                "cluster_id": "11111111-1111-1111-1111-111111111111",
                "api_server_url": "https://other.invalid",
                "pod_cidr": "10.2.0.0/16",
                "service_cidr": "10.3.0.0/16",
            }
        )
    )
    return [
        {key: value for key, value in first.items() if second.get(key) == value}
        for first, second in zip(one, other, strict=True)
    ]


def _holds_output(value: Any) -> bool:
    """Whether `value` is an Output or a dict or list with one inside."""
    if isinstance(value, pulumi.Output):
        return True
    if isinstance(value, dict):
        return any(_holds_output(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_output(item) for item in value)
    return False


def _check(args: InstallArgs) -> dict[str, Any]:
    rules: dict[str, Callable[[Any], str]] = {
        argument: functools.partial(option_problem, argument)
        for argument in (*USER_OPTIONS, "auth_service_type")
    }
    rules["webhook_mode"] = _webhook_mode_problem
    rules["image"] = _image_problem
    rules["reflection"] = _reflection_problem
    return _args.checked("Install", args, required=("kubeconfig", *CONTRACT.required), rules=rules)


def _webhook_mode_problem(mode: Any) -> str:
    return "" if mode in WEBHOOK_MODES else f'"{mode}" is not a webhook mode: use "service" or "url".'


def _image_problem(image: Any) -> str:
    return "" if str(image).strip() else "it cannot be empty."


def _reflection_problem(reflection: Any) -> str:
    if not isinstance(reflection, dict):
        return f"{reflection!r} is not a map of reflection options (ReflectionArgs)."
    if _holds_output(reflection):
        return ""  # checked as a whole when the install options are known (install_options)
    try:
        reflection_from_values(reflection)
    except ReflectionOptionsError as exc:
        return f"{exc.option}: {str(exc).partition(': ')[2]}."
    return ""
