"""Installing the Liqo runtime in a cluster: discover its CIDRs, apply the runtime's manifests, wait until it
runs, read it back (drift), and uninstall it, with the peerings that hold it refused or removed by force.

The objects are always `runtime.forge.install.install_manifests()`: the Terraform
provider applies them here, server-side, under its field manager, in the builder's order
(uninstall deletes them in reverse); the Pulumi components wrap the same objects in
`pulumi_kubernetes` resources and use the rest (discovery, the readiness wait, reading,
the blockers). What the runtime writes into those objects itself (the webhook's address
and CA bundle, the auth service's `authURL` in the identity ConfigMap) is owned by the
runtime's own field managers, and a re-apply carries the webhook's values over, so an
upgrade never undoes them. Outcomes are values and typed errors (`InUseError`,
`ImagePullError`, `runtime.core` API errors, `waits.WaitTimeoutError`); each front end
words them.

A component whose image its node cannot get never becomes ready, whatever the wait's
bound: the readiness wait ends at once with `ImagePullError` (the image, the pod, its
node and cluster, and the kubelet's reason and message) as soon as a pod of the
installation shows one of the kubelet's image failures, instead of waiting out the
timeout. Apply again once the image can be pulled.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final

from runtime.api import constants as c
from runtime.api import crds, kinds
from runtime.api.objects import JSON, nested
from runtime.api.resource import Resource
from runtime.auth.endpoint import Endpoint, auth_endpoint
from runtime.core import APIStatusError, Client, InvalidError, NotFoundError
from runtime.forge.install import (
    DEPLOYED_COMPONENTS,
    MUTATING_WEBHOOK,
    VALIDATING_WEBHOOK,
    InstallOptions,
    install_manifests,
    placeholder_options,
)
from runtime.forge.nodes import api_server_url, names_loopback
from runtime.forge.reflection import ReflectionOptions, ReflectionOptionsError
from runtime.forge.reflection import from_command_line as reflection_from_command_line

from .contract import Change, Contract, Input
from .identity import IdentityError, cluster_identity, legacy_cluster_id
from .waits import NEVER, POLL_INTERVAL, POLL_MAX_INTERVAL, Stop, wait_until

logger = logging.getLogger(__name__)


#: InstallOptions' defaults (`runtime.forge.install`): the one place they are written
_OPTION_DEFAULTS: Final[dict[str, str | int]] = {
    option.name: option.default for option in fields(InstallOptions) if isinstance(option.default, str | int)
}


def _option(name: str) -> Input:
    """An install option changed in place, with InstallOptions' default."""
    return Input(name, Change.UPDATE, default=_OPTION_DEFAULTS[name])


#: `liqo_install` and `Install`: the namespace reinstalls the runtime elsewhere; every other option is applied
#: in place. What has no default here is discovered (the CIDRs, the API server URL), published (the auth URL),
#: or defaulted by its own builder (the image: `runtime_image()`; the reflectors: `ReflectionOptions`).
CONTRACT: Final = Contract(
    "install",
    (
        Input("cluster_name", Change.UPDATE, required=True),
        Input("cluster_labels", Change.UPDATE),
        Input("namespace", Change.REPLACE, default=_OPTION_DEFAULTS["namespace"]),
        Input("pod_cidr", Change.UPDATE),
        Input("service_cidr", Change.UPDATE),
        _option("sharing_percentage"),
        Input("image", Change.UPDATE),
        _option("webhook_mode"),
        Input("api_server_url", Change.UPDATE),
        Input("auth_url", Change.UPDATE),
        _option("gateway_service_type"),
        _option("gateway_mtu"),
        _option("wireguard_implementation"),
        _option("quota_enforcement"),
        _option("max_twin_namespaces"),
        _option("max_consumer_service_type"),
        _option("auth_service_type"),
        Input("reflection", Change.UPDATE),
        #: a destroy's choices: remove the peerings that hold the runtime; remove the namespace, CRDs and identity
        Input("force", Change.UPDATE, default=False),
        Input("purge", Change.UPDATE, default=False),
    ),
    timeouts={"create": 600.0, "update": 600.0, "delete": 300.0},
)


#: every kind the install manifests hold, by (apiVersion, kind)
RESOURCES: Final[dict[tuple[str, str], Resource]] = {
    (resource.api_version, resource.kind): resource
    for resource in (
        *(value for value in vars(kinds).values() if isinstance(value, Resource)),
        *(kind.resource for kind in crds.KINDS),
    )
}
#: the address of a Service no cluster can allocate: a dry-run create with it answers with the valid range
_PROBE_IP: Final = "0.0.0.0"
_VALID_RANGE: Final = re.compile(r"The range of valid IPs is ([0-9a-fA-F.:/]+)")
_CLUSTER_CIDR_FLAG: Final = "--cluster-cidr="
#: what peers know this cluster by, kept by an uninstall without purge: the identity (the cluster id). The
#: auth service's serving key (consumers pin its public key) is created by the controller manager, not by the
#: install manifests, so it stays with the namespace an uninstall without purge keeps
KEPT_WITHOUT_PURGE: Final = frozenset({(kinds.CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP)})
#: the waiting reasons the kubelet gives a container whose image it cannot get (kubelet's pkg/kubelet/images:
#: the pull failed, it backs off before the next, the reference does not parse, the pull policy forbids it,
#: the runtime cannot inspect it)
IMAGE_FAILURES: Final = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "ErrImageInspect"}
)


@dataclass(frozen=True)
class Ref:
    """One object of the installation, as `kind namespace/name` in messages."""

    resource: Resource
    name: str
    namespace: str | None = None

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.resource.kind} {where}"


def ref(obj: Mapping[str, Any]) -> Ref:
    metadata = obj["metadata"]
    return Ref(RESOURCES[(obj["apiVersion"], obj["kind"])], metadata["name"], metadata.get("namespace"))


def object_refs(namespace: str) -> list[Ref]:
    """The objects of an installation in `namespace`, in apply order."""
    return [ref(obj) for obj in install_manifests(placeholder_options(namespace))]


# discovery


@dataclass(frozen=True)
class Cidrs:
    pod_cidr: str | None
    service_cidr: str | None


async def discover_api_server_url(client: Client, host: str) -> str:
    """The API server URL consumers get when none is configured (`runtime.forge.nodes.api_server_url`):
    the kubeconfig's server, or for a kind-like local cluster a control-plane node's address and 6443."""
    if not names_loopback(host):
        return host
    nodes = (await client.list(kinds.NODES)).items
    return api_server_url(host, nodes)


async def discover_cidrs(client: Client) -> Cidrs:
    """The cluster's pod and Service CIDRs where the cluster tells them (None: it does not).

    In order: kubeadm's `kube-system/kubeadm-config` (kind and kubeadm clusters), the
    kube-controller-manager pod's `--cluster-cidr` (as liqoctl does), else the smallest
    network covering the nodes' `spec.podCIDRs` (clusters whose node IPAM is not
    visible, like the playground's); for Services, the API server's answer to a dry-run
    Service with an address outside every range (as liqoctl does).
    """
    pod_cidr, service_cidr = await _kubeadm_networking(client)
    if pod_cidr is None:
        pod_cidr = await _controller_manager_cluster_cidr(client)
    if pod_cidr is None:
        pod_cidr = await _nodes_pod_cidr(client)
    if service_cidr is None:
        service_cidr = await _service_range(client)
    return Cidrs(pod_cidr, service_cidr)


async def _kubeadm_networking(client: Client) -> tuple[str | None, str | None]:
    import yaml

    try:
        configmap = await client.get(kinds.CONFIGMAPS, "kubeadm-config", namespace="kube-system")
    except NotFoundError:
        return None, None
    try:
        configuration = yaml.safe_load(nested(configmap, "data", "ClusterConfiguration") or "")
    except yaml.YAMLError:
        logger.warning("kube-system/kubeadm-config: ClusterConfiguration is not YAML; ignoring it")
        return None, None
    networking = configuration.get("networking") if isinstance(configuration, dict) else None
    if not isinstance(networking, dict):
        return None, None
    return _cidr(networking.get("podSubnet")), _cidr(networking.get("serviceSubnet"))


async def _controller_manager_cluster_cidr(client: Client) -> str | None:
    pods = await client.list(
        kinds.PODS, namespace="kube-system", label_selector="component=kube-controller-manager"
    )
    for pod in pods.items:
        for container in nested(pod, "spec", "containers") or []:
            for argument in [*(container.get("command") or []), *(container.get("args") or [])]:
                if isinstance(argument, str) and argument.startswith(_CLUSTER_CIDR_FLAG):
                    return _cidr(argument.removeprefix(_CLUSTER_CIDR_FLAG))
    return None


async def _nodes_pod_cidr(client: Client) -> str | None:
    nodes = await client.list(kinds.NODES)
    cidrs: list[str] = []
    for node in nodes.items:
        if nested(node, "metadata", "labels", c.LABEL_TYPE) == c.TYPE_VIRTUAL_NODE:
            continue  # its pods run in another cluster
        spec = node.get("spec") or {}
        cidrs += spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])
    return covering_network(cidrs)


def covering_network(cidrs: Iterable[Any]) -> str | None:
    """The smallest network holding every CIDR of `cidrs` of the first one's IP family (None: there is none).

    Invalid values are skipped; a dual-stack node's second family is left out, as
    Liqo's pod CIDR is one network.
    """
    networks = [ipaddress.ip_network(cidr) for cidr in map(_cidr, cidrs) if cidr is not None]
    if not networks:
        return None
    family = [network for network in networks if network.version == networks[0].version]
    covering = family[0]
    while not all(network.subnet_of(covering) for network in family):  # type: ignore[arg-type]
        covering = covering.supernet()
    return str(covering)


async def _service_range(client: Client) -> str | None:
    probe = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "liqo-service-cidr-probe", "namespace": "default"},
        "spec": {"clusterIP": _PROBE_IP, "ports": [{"port": 443}]},
    }
    try:
        await client.create(kinds.SERVICES, probe, namespace="default", dry_run=True)
    except InvalidError as exc:
        match = _VALID_RANGE.search(exc.message)
        return _cidr(match.group(1)) if match else None
    except APIStatusError as exc:
        logger.info("default/liqo-service-cidr-probe: no Service range from the API server: %s", exc)
    return None


def _cidr(value: Any) -> str | None:
    """The first network of a (comma-separated) CIDR value, normalised; None when it is not one."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return str(ipaddress.ip_network(value.split(",")[0].strip(), strict=False))
    except ValueError:
        return None


# options


async def existing_cluster_id(client: Client, *, namespace: str) -> str | None:
    """The cluster id an earlier installation left in `namespace` (None: there is none, or it is unreadable).

    An installation from before the identity took Liqo's names left it in the legacy ConfigMap:
    an upgrade keeps that id, so the cluster's peerings survive it.
    """
    try:
        identity = await cluster_identity(client, namespace=namespace)
    except IdentityError:
        return None  # unreadable: the install writes a whole new identity
    if identity is not None:
        return identity.cluster_id
    return await legacy_cluster_id(client, namespace=namespace)


async def complete_options(client: Client, options: InstallOptions) -> InstallOptions:
    """`options` with what the cluster tells filled in where they are empty.

    The cluster id becomes the one an earlier installation left (so reinstalling keeps
    it), else a new one; the CIDRs become the discovered ones, and stay empty when the
    cluster tells none (the caller asks the user for them).
    """
    cluster_id = options.cluster_id or await existing_cluster_id(client, namespace=options.namespace)
    options = replace(options, cluster_id=cluster_id or str(uuid.uuid4()))
    if not options.pod_cidr or not options.service_cidr:
        cidrs = await discover_cidrs(client)
        options = replace(
            options,
            pod_cidr=options.pod_cidr or cidrs.pod_cidr or "",
            service_cidr=options.service_cidr or cidrs.service_cidr or "",
        )
    return options


# apply and wait


@dataclass
class Progress:
    """How far an apply got (so a failed create knows whether anything exists to record)."""

    applied: int = 0


async def apply(client: Client, options: InstallOptions, *, field_manager: str, progress: Progress) -> None:
    """Server-side apply every object of the installation, in order, as `field_manager`."""
    objects = install_manifests(options)
    await _prepare_webhooks(client, objects)
    for obj in objects:
        target = ref(obj)
        await client.apply(
            target.resource,
            obj,
            namespace=target.namespace,
            field_manager=field_manager,
            force=True,
        )
        progress.applied += 1


async def _prepare_webhooks(client: Client, objects: list[JSON]) -> None:
    """Carry what the webhook patched into its configuration over into our intent (an upgrade keeps it).

    When the webhook mode changes (service <-> url), the old configuration is deleted instead:
    the webhook owns the address it patched, which would stay beside the new one.
    """
    for obj in objects:
        target = ref(obj)
        if target.resource != kinds.VALIDATINGWEBHOOKS:
            continue
        try:
            live = await client.get(target.resource, target.name)
        except NotFoundError:
            continue
        patched = {hook.get("name"): hook.get("clientConfig") or {} for hook in live.get("webhooks") or []}
        for hook in obj["webhooks"]:
            config = hook["clientConfig"]
            current = patched.get(hook["name"])
            if current is None:
                continue
            if ("url" in current) != ("url" in config):
                logger.info("%s: the webhook mode changes; replacing it", target)
                await client.delete(target.resource, target.name)
                break
            if current.get("url"):
                config["url"] = current["url"]
            if current.get("caBundle"):
                config["caBundle"] = current["caBundle"]


@dataclass(frozen=True)
class Ready:
    """The installation as it runs: its identity's values (the auth service's URL among them)."""

    identity: dict[str, str]


async def wait_ready(client: Client, options: InstallOptions, *, seconds: float, stop: Stop = NEVER) -> Ready:
    """Until the components' Deployments are rolled out, the webhook is patched and `authURL` is published;
    then the legacy identity ConfigMap an older installation left goes (the new one holds its cluster id).

    Raises `ImagePullError` as soon as a component's pod cannot get its image.
    """

    async def check() -> tuple[Ready | None, str]:
        pending = await _pending(client, options)
        if pending:
            return None, "; ".join(pending)
        identity = await client.get(
            kinds.CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=options.namespace
        )
        with contextlib.suppress(NotFoundError):
            await client.delete(
                kinds.CONFIGMAPS, c.LEGACY_CLUSTER_IDENTITY_CONFIGMAP, namespace=options.namespace
            )
        return Ready(dict(identity.get("data") or {})), "ready"

    return await wait_until(
        check,
        what=f"the Liqo runtime in namespace {options.namespace} to become ready",
        seconds=seconds,
        stop=stop,
        interval=POLL_INTERVAL,
        max_interval=POLL_MAX_INTERVAL,
    )


async def _pending(client: Client, options: InstallOptions) -> list[str]:
    """What the installation still waits for, one phrase each (empty: ready)."""
    ns = options.namespace
    pending: list[str] = []
    for component in DEPLOYED_COMPONENTS:
        name = f"liqo-{component}"
        try:
            deployment = await client.get(kinds.DEPLOYMENTS, name, namespace=ns)
        except NotFoundError:
            pending.append(f"Deployment {ns}/{name} is missing")
            continue
        if not rolled_out(deployment):
            status = deployment.get("status") or {}
            wanted = nested(deployment, "spec", "replicas", default=1)
            pods = await _pod_summary(client, ns, name)
            pending.append(
                f"Deployment {ns}/{name}: {status.get('availableReplicas') or 0}/{wanted} available{pods}"
            )
    for resource, name in (
        (kinds.VALIDATINGWEBHOOKS, VALIDATING_WEBHOOK),
        (kinds.MUTATINGWEBHOOKS, MUTATING_WEBHOOK),
    ):
        try:
            webhook = await client.get(resource, name)
        except NotFoundError:
            pending.append(f"{resource.kind} {name} is missing")
            continue
        if not all(nested(hook, "clientConfig", "caBundle") for hook in webhook.get("webhooks") or []):
            pending.append(
                f"{resource.kind} {name} has no CA bundle yet (the webhook sets it when it starts)"
            )
    try:
        identity = await client.get(kinds.CONFIGMAPS, c.CLUSTER_IDENTITY_CONFIGMAP, namespace=ns)
    except NotFoundError:
        pending.append(f"ConfigMap {ns}/{c.CLUSTER_IDENTITY_CONFIGMAP} is missing")
    else:
        auth_url = nested(identity, "data", c.IDENTITY_AUTH_URL) or ""
        if not auth_url:
            pending.append("the auth service has not published its URL yet")
        elif options.auth_url and auth_url != options.auth_url:
            pending.append(f"the auth service publishes {auth_url}, not {options.auth_url} yet")
        elif not options.auth_url:
            pending += await _auth_url_moving(client, ns, auth_url)
    return pending


async def _auth_url_moving(client: Client, namespace: str, published: str) -> list[str]:
    """What the auth service is about to publish instead of `published`, as its Service now says (one
    phrase, or none). The same derivation as the service's (`runtime.auth.endpoint`): it keeps the node
    it published, so once it caught up with a changed Service type or nodePort the two agree. A ClusterIP
    Service publishes the pod's address, which only the service knows: nothing to compare."""
    service = await _get(client, Ref(kinds.SERVICES, c.AUTH_SERVICE, namespace))
    if service is None or nested(service, "spec", "type") == "ClusterIP":
        return []
    nodes = await client.list(kinds.NODES)
    derived = auth_endpoint(service, nodes.items, pod_url=published, published=published)
    if isinstance(derived, Endpoint) and derived.url != published:
        return [f"the auth service publishes {published}, not yet {derived.url} (from {derived.source})"]
    return []


class ImagePullError(Exception):
    """A pod of the installation cannot get its image: waiting longer does not help."""

    def __init__(
        self, *, image: str, pod: str, container: str, node: str, cluster: str, reason: str, message: str
    ) -> None:
        where = f"pod {pod} (container {container}" + (f", node {node}" if node else "") + ")"
        on = f" on {cluster}" if cluster else ""
        super().__init__(
            f'{where}{on} cannot pull image "{image}": {reason}' + (f": {message}" if message else "")
        )
        self.image, self.pod, self.container, self.node = image, pod, container, node
        self.cluster, self.reason, self.message = cluster, reason, message


def image_failure(pod: Mapping[str, Any], *, cluster: str = "") -> ImagePullError | None:
    """The first container (init containers first) of `pod` the kubelet cannot get the image of, as the error
    to raise; None when there is none."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    for entry in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        waiting = nested(entry, "state", "waiting") or {}
        if waiting.get("reason") in IMAGE_FAILURES:
            return ImagePullError(
                image=str(entry.get("image") or _spec_image(spec, str(entry.get("name") or ""))),
                pod=f"{metadata.get('namespace')}/{metadata.get('name')}",
                container=str(entry.get("name") or ""),
                node=str(spec.get("nodeName") or ""),
                cluster=cluster,
                reason=str(waiting["reason"]),
                message=str(waiting.get("message") or ""),
            )
    return None


def _spec_image(spec: Mapping[str, Any], container: str) -> str:
    for entry in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        if entry.get("name") == container:
            return str(entry.get("image") or "")
    return ""


def rolled_out(deployment: Mapping[str, Any]) -> bool:
    """Whether a Deployment's latest generation is fully rolled out and available (`kubectl rollout status`)."""
    wanted = int(nested(deployment, "spec", "replicas", default=1))
    status = deployment.get("status") or {}
    generation = int(nested(deployment, "metadata", "generation") or 0)
    return (
        int(status.get("observedGeneration") or 0) >= generation
        and int(status.get("updatedReplicas") or 0) == wanted
        and int(status.get("replicas") or 0) == wanted
        and int(status.get("availableReplicas") or 0) == wanted
    )


async def _pod_summary(client: Client, namespace: str, name: str) -> str:
    """` (pod x: Pending, CrashLoopBackOff)` for the Deployment's pods, to say why it is not available.

    Raises `ImagePullError` for a pod whose image cannot be pulled: that pod never becomes available.
    """
    pods = await client.list(kinds.PODS, namespace=namespace, label_selector=f"{c.LABEL_NAME}={name}")
    notes = []
    for pod in pods.items:
        failure = image_failure(pod, cluster=client.config.cluster_label)
        if failure is not None:
            raise failure
        status = pod.get("status") or {}
        reasons = [
            str((state.get("waiting") or state.get("terminated") or {}).get("reason") or "")
            for state in (entry.get("state") or {} for entry in status.get("containerStatuses") or [])
        ]
        detail = ", ".join(filter(None, [str(status.get("phase") or "Pending"), *reasons]))
        notes.append(f"pod {pod['metadata']['name']}: {detail}")
    return f" ({'; '.join(notes)})" if notes else " (no pods yet)"


# read


@dataclass(frozen=True)
class Observed:
    """An installation as the cluster shows it; empty strings for what is missing."""

    identity: dict[str, str]
    image: str
    webhook_mode: str
    api_server_url: str
    #: the type of the auth service's Service ("" when it is missing)
    auth_service_type: str = ""
    #: what the virtual kubelets reflect (the controller manager's flags; the defaults when it is missing)
    reflection: ReflectionOptions = field(default_factory=ReflectionOptions)
    #: the network fabric's options, from the controller manager's flags ("" when it is missing)
    gateway_service_type: str = ""
    gateway_mtu: str = ""
    wireguard_implementation: str = ""
    #: what a consumer may make this cluster run (the controller manager's and the webhook's flags)
    quota_enforcement: str = ""
    max_twin_namespaces: str = ""
    max_consumer_service_type: str = ""
    missing: list[str] = field(default_factory=list)


async def observe(client: Client, namespace: str) -> Observed | None:
    """The installation in `namespace`, or None when there is none (namespace or identity gone)."""
    refs = object_refs(namespace)
    found = await asyncio.gather(*(_get(client, target) for target in refs))
    live = dict(zip(refs, found, strict=True))
    namespace_object = live[refs[0]]
    identity = next(
        (obj for target, obj in live.items() if target.name == c.CLUSTER_IDENTITY_CONFIGMAP and obj), None
    )
    if namespace_object is None or nested(namespace_object, "metadata", "deletionTimestamp"):
        return None
    if identity is None:
        return None
    deployments = {
        target.name: obj for target, obj in live.items() if target.resource == kinds.DEPLOYMENTS and obj
    }
    auth_service = next(
        (
            obj
            for target, obj in live.items()
            if target.resource == kinds.SERVICES and target.name == c.AUTH_SERVICE
        ),
        None,
    )
    return Observed(
        identity=dict(identity.get("data") or {}),
        image=_container(deployments.get("liqo-controller-manager")).get("image") or "",
        webhook_mode=_flag(deployments.get("liqo-webhook"), "--mode="),
        api_server_url=_flag(deployments.get("liqo-auth"), "--api-server-url="),
        auth_service_type=str(nested(auth_service, "spec", "type") or ""),
        reflection=_reflection(deployments.get("liqo-controller-manager")),
        gateway_service_type=_flag(deployments.get("liqo-controller-manager"), "--gateway-service-type="),
        gateway_mtu=_flag(deployments.get("liqo-controller-manager"), "--gateway-mtu="),
        wireguard_implementation=_flag(
            deployments.get("liqo-controller-manager"), "--wireguard-implementation="
        ),
        quota_enforcement=_flag(deployments.get("liqo-controller-manager"), "--quota-enforcement="),
        max_twin_namespaces=_flag(deployments.get("liqo-controller-manager"), "--max-twin-namespaces="),
        max_consumer_service_type=_flag(deployments.get("liqo-webhook"), "--max-consumer-service-type="),
        missing=[str(target) for target, obj in live.items() if obj is None],
    )


async def _get(client: Client, target: Ref) -> JSON | None:
    try:
        return await client.get(target.resource, target.name, namespace=target.namespace)
    except NotFoundError:
        return None


def _container(deployment: JSON | None) -> JSON:
    containers = nested(deployment, "spec", "template", "spec", default={}).get("containers")
    return dict(containers[0]) if containers else {}


def _reflection(deployment: JSON | None) -> ReflectionOptions:
    """The reflection options of the controller manager's flags (an edited, invalid one reads as the default)."""
    container = _container(deployment)
    arguments = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    try:
        return reflection_from_command_line(arguments)
    except ReflectionOptionsError:
        return ReflectionOptions()


def _flag(deployment: JSON | None, prefix: str) -> str:
    container = _container(deployment)
    for argument in [*(container.get("command") or []), *(container.get("args") or [])]:
        if isinstance(argument, str) and argument.startswith(prefix):
            return argument.removeprefix(prefix)
    return ""


def identity_labels(identity: Mapping[str, str]) -> dict[str, str]:
    """The cluster labels the identity ConfigMap holds (a JSON object; anything else reads as none)."""
    try:
        labels = json.loads(identity.get(c.IDENTITY_CLUSTER_LABELS) or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


# uninstall


async def blockers(client: Client) -> list[str]:
    """The peerings and offloaded namespaces that hold the runtime (empty: it may go)."""
    found: list[str] = []
    for resource in (crds.FOREIGNCLUSTERS, crds.NAMESPACEOFFLOADINGS):
        try:
            listed = await client.list(resource)
        except NotFoundError:
            continue
        for obj in listed.items:
            meta = obj["metadata"]
            where = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
            found.append(f"{resource.kind} {where}")
    return found


class InUseError(Exception):
    """Peerings or offloaded namespaces hold the runtime, and the uninstall is not forced."""

    def __init__(self, found: list[str]) -> None:
        super().__init__("the Liqo runtime is still in use by " + ", ".join(found))
        self.found = found


async def release(
    client: Client, *, force: bool, seconds: float, field_manager: str, stop: Stop = NEVER
) -> list[str]:
    """Free the runtime of what holds it before an uninstall; the warnings worth showing (what was forced).

    Without `force`, raises InUseError while peerings or offloaded namespaces exist. With it,
    they are deleted while the runtime still runs to clean up after them, and their
    finalizers are removed once half of `seconds` pass. Then the runtime finishes the
    deletions under way (`settle_deletions`) within what is left.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    warnings: list[str] = []
    if not force:
        found = await blockers(client)
        if found:
            raise InUseError(found)
    else:
        warnings += await _remove_blockers(
            client, seconds=seconds / 2, stop=stop, field_manager=field_manager
        )
    return warnings + await settle_deletions(
        client, seconds=max(deadline - loop.time(), 1.0), field_manager=field_manager, stop=stop
    )


async def uninstall(
    client: Client,
    namespace: str,
    *,
    force: bool,
    purge: bool,
    seconds: float,
    field_manager: str,
    stop: Stop = NEVER,
) -> list[str]:
    """Delete the installation in reverse order; the warnings worth showing (what was forced).

    What holds the runtime is released first (`release`: refused unless `force`, which gets
    half of the time). Without `purge`, the namespace, the CRDs and what peers know the
    cluster by (`KEPT_WITHOUT_PURGE`) stay, so a reinstall keeps the cluster id and the
    serving key consumers pinned; `purge` deletes the namespace and all in it.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    warnings = await release(client, force=force, seconds=seconds / 2, field_manager=field_manager, stop=stop)
    kept = {kinds.NAMESPACES, kinds.CRDS} if not purge else set()
    for target in reversed(object_refs(namespace)):
        if target.resource in kept or (not purge and (target.resource, target.name) in KEPT_WITHOUT_PURGE):
            continue
        if target.resource == kinds.CRDS:
            await _strip_finalizers(client, target.name, field_manager=field_manager)
        with contextlib.suppress(NotFoundError):
            await client.delete(
                target.resource, target.name, namespace=target.namespace, propagation_policy="Background"
            )
    if purge:
        await _wait_gone(
            client,
            [
                target
                for target in object_refs(namespace)
                if target.resource in (kinds.NAMESPACES, kinds.CRDS)
            ],
            what=f"namespace {namespace} and the runtime's CRDs to be deleted",
            seconds=max(deadline - loop.time(), 1.0),
            stop=stop,
        )
    return warnings


async def _deleting(client: Client) -> list[Ref]:
    """What the runtime must still finish deleting: its objects held by one of its finalizers, and
    tenant namespaces being deleted (their NamespaceMaps wait for the twin namespaces to go)."""
    found: list[Ref] = []
    for kind in crds.KINDS:
        try:
            listed = await client.list(kind.resource)
        except NotFoundError:
            continue
        found += [
            Ref(kind.resource, obj["metadata"]["name"], obj["metadata"].get("namespace"))
            for obj in listed.items
            if obj["metadata"].get("deletionTimestamp") and obj["metadata"].get("finalizers")
        ]
    tenants = await client.list(kinds.NAMESPACES, label_selector=c.LABEL_TENANT_NAMESPACE)
    found += [
        Ref(kinds.NAMESPACES, obj["metadata"]["name"], None)
        for obj in tenants.items
        if obj["metadata"].get("deletionTimestamp")
    ]
    return found


async def settle_deletions(
    client: Client, *, seconds: float, field_manager: str, stop: Stop = NEVER
) -> list[str]:
    """Let the runtime finish the deletions under way (an unpeer's tenant namespace, say) before it goes;
    the warnings worth showing.

    Once the controller manager is deleted, nothing would remove its finalizers and those objects
    (and the namespaces holding them) would stay Terminating for good. What is still held after
    `seconds` has its runtime finalizers removed, as an uninstall of the CRDs does.
    """
    pending = await _deleting(client)
    if not pending:
        return []
    try:
        await _wait_gone(
            client, pending, what="the runtime's deletions under way to finish", seconds=seconds, stop=stop
        )
        return []
    except TimeoutError:
        held = [target for target in await _deleting(client) if target.resource != kinds.NAMESPACES]
        for target in held:
            await _clear_finalizers(client, target, field_manager=field_manager)
        return [
            f"{target} was still being deleted by the runtime; its finalizers were removed so that it goes "
            "(objects it created on the remote cluster may be left there)"
            for target in held
        ]


async def _remove_blockers(client: Client, *, seconds: float, stop: Stop, field_manager: str) -> list[str]:
    """Delete peerings and offloadings while the runtime still runs to clean up after them; force what lingers."""
    targets: list[Ref] = []
    for resource in (crds.NAMESPACEOFFLOADINGS, crds.FOREIGNCLUSTERS):
        try:
            listed = await client.list(resource)
        except NotFoundError:
            continue
        targets += [
            Ref(resource, obj["metadata"]["name"], obj["metadata"].get("namespace")) for obj in listed.items
        ]
    for target in targets:
        with contextlib.suppress(NotFoundError):
            await client.delete(target.resource, target.name, namespace=target.namespace)
    try:
        await _wait_gone(
            client, targets, what="peerings and offloadings to be removed", seconds=seconds, stop=stop
        )
        return []
    except TimeoutError:
        lingering = [target for target in targets if await _get(client, target) is not None]
        for target in lingering:
            await _clear_finalizers(client, target, field_manager=field_manager)
        return [
            f"{target} did not finish its clean-up in time; its finalizers were removed "
            "(objects it created on the remote cluster may be left there)"
            for target in lingering
        ]


async def _strip_finalizers(client: Client, crd_name: str, *, field_manager: str) -> None:
    """Remove finalizers from every object of a runtime kind about to lose its CRD (its controller is gone)."""
    kind = next((kind for kind in crds.KINDS if kind.name == crd_name), None)
    if kind is None:
        return
    try:
        listed = await client.list(kind.resource)
    except NotFoundError:
        return
    for obj in listed.items:
        meta = obj["metadata"]
        if meta.get("finalizers"):
            await _clear_finalizers(
                client, Ref(kind.resource, meta["name"], meta.get("namespace")), field_manager=field_manager
            )


async def _clear_finalizers(client: Client, target: Ref, *, field_manager: str) -> None:
    with contextlib.suppress(NotFoundError):
        await client.patch(
            target.resource,
            target.name,
            {"metadata": {"finalizers": None}},
            namespace=target.namespace,
            field_manager=field_manager,
        )


async def _wait_gone(
    client: Client, targets: Iterable[Ref], *, what: str, seconds: float, stop: Stop
) -> None:
    remaining = list(targets)

    async def check() -> tuple[bool | None, str]:
        nonlocal remaining
        remaining = [target for target in remaining if await _get(client, target) is not None]
        return (True if not remaining else None), ", ".join(map(str, remaining)) + " still there"

    if remaining:
        await wait_until(
            check,
            what=what,
            seconds=seconds,
            stop=stop,
            interval=POLL_INTERVAL,
            max_interval=POLL_MAX_INTERVAL,
        )
