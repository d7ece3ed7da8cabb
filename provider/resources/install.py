"""`resource "liqo_install"`: installs, upgrades in place and uninstalls the Liqo runtime in the cluster the
provider points at.

The objects are `runtime.forge.install.install_manifests()` (the cluster work is
`runtime.operations.install`, shared with the Pulumi components); this module maps
Terraform's lifecycle onto it:

- plan: defaults (`reflection` filled in field by field, so the plan shows every worker
  count), the provider's host as `api_server_url`, the package version, and on
  create the CIDRs the cluster tells (so a plan shows them) and the cluster id it
  already has (an identity ConfigMap left by an earlier install is reused, so the id
  stays stable); values `InstallOptions.validate` rejects are errors on their attribute;
- create/update: server-side apply, then a wait bounded by `timeouts` until the three
  Deployments are rolled out, the webhook is patched and the auth service published its
  URL. An interrupted or timed-out create is recorded (tainted): what exists is in state;
  a component whose image its node cannot pull ends the wait at once, an error on `image`
  naming the image, the pod and the kubelet's reason;
- read: namespace or identity gone means the installation is gone; the attributes are
  read back from the identity ConfigMap and the Deployments (`reflection` from the
  controller manager's flags), and objects found missing
  are listed in `missing_objects`, which plans an update that re-creates them;
- destroy: refused while ForeignClusters or NamespaceOffloadings exist, unless `force`
  (checked when the destroy runs, not in its plan: the same destroy may remove the
  `liqo_peer` first); the namespace, the CRDs, the cluster identity and the auth service's
  serving key stay (a reinstall keeps the cluster id and the key consumers pinned) unless
  `purge`;
- import: by namespace name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from tf.schema import Schema
from tf.types import Bool, List, Map, Number, String, Unknown
from tf.utils import Diagnostics

from runtime.api import constants as c
from runtime.api.image import package_version, runtime_image
from runtime.forge.install import (
    GATEWAY_SERVICE_TYPES,
    SERVICE_TYPES,
    USER_OPTIONS,
    WEBHOOK_MODES,
    WIREGUARD_IMPLEMENTATIONS,
    InstallOptions,
    InstallOptionsError,
    option_problem,
)
from runtime.forge.quota import ENFORCEMENTS
from runtime.forge.reflection import (
    KINDS,
    TYPED_KINDS,
    ReflectionOptions,
    ReflectionOptionsError,
    from_values,
)
from runtime.operations.install import CONTRACT

from ..framework.contract import flags
from ..framework.diagnostics import dropped
from ..framework.plan import is_known
from ..framework.resource import ApplyContext, ImportContext, PlanContext, ReadContext, Resource, State, call
from ..framework.schema import Attribute, NestedAttribute
from ..framework.timeouts import block as timeouts_block
from . import checks, force

if TYPE_CHECKING:
    from runtime.core import Client
    from runtime.operations.install import Cidrs, ImagePullError, Observed, Ready

logger = logging.getLogger(__name__)

#: the bound of the cluster reads done while planning
PLAN_SECONDS: Final = 60.0
#: attributes whose change restarts the auth service or moves its Service (so its published URL may change)
#: the attributes only destroy reads (and the bounds): changing them alone changes nothing in the cluster
_DESTROY_ONLY: Final = ("force", "purge", "timeouts")
_AUTH_INPUTS: Final = ("namespace", "image", "api_server_url", "auth_url", "auth_service_type")


def _defaults() -> dict[str, Any]:
    """The inputs' defaults: the contract's, and the image of this provider's version."""
    return {**CONTRACT.defaults, "image": runtime_image()}


def _version() -> str:
    """The runtime version this provider installs (its own: runtime/version.py, through `runtime.api.image`)."""
    return package_version()


def _reflection_attributes() -> list[Attribute]:
    defaults = ReflectionOptions()
    what = {
        "pod": "pods offloaded at once (ShadowPods, token Secrets, status back); 0: no pod is offloaded",
        "configmap": "ConfigMaps reflected at once (`kube-root-ca.crt` under a name of its own)",
        "secret": "Secrets reflected at once (offloaded pods' own token Secrets go with their pods anyway)",
        "service": "Services reflected at once (the provider allocates their ClusterIP and node ports)",
        "endpointslice": "EndpointSlices reflected at once, as ShadowEndpointSlices",
        "ingress": "Ingresses reflected at once",
        "event": "provider Events brought back at once onto the objects they speak of",
    }
    attributes = [
        Attribute(
            f"{kind}_workers",
            Number(),
            optional=True,
            computed=True,
            default=defaults.workers(kind),
            description=f"Workers of the {kind} reflector: {what[kind]}; 0 turns it off (default "
            f"{defaults.workers(kind)}).",
        )
        for kind in KINDS
    ]
    attributes.append(
        Attribute(
            "ingress_classes",
            Map(String()),
            optional=True,
            computed=True,
            default={},
            description=(
                "Ingress class of this cluster -> the provider's: a reflected Ingress of a class listed here gets "
                "the provider's class; any other is reflected without a class (the provider's default serves it)."
            ),
        )
    )
    plural = {"configmap": "ConfigMaps", "secret": "Secrets", "service": "Services", "ingress": "Ingresses"}
    attributes += [
        Attribute(
            f"{kind}_type",
            String(),
            optional=True,
            computed=True,
            default=defaults.type_of(kind),
            description=(
                f'Reflection policy of {plural[kind]} (Liqo\'s `reflection.{kind}.type`): `"DenyList"` (default) '
                f"reflects every one of an offloaded namespace but those annotated `{c.ANNOTATION_SKIP_REFLECTION}`"
                f'; `"AllowList"` only those annotated `{c.ANNOTATION_ALLOW_REFLECTION}`.'
                + (
                    " EndpointSlices follow their Service, unless a slice carries one of the annotations itself."
                    if kind == "service"
                    else ""
                )
            ),
        )
        for kind in TYPED_KINDS
    ]
    attributes += [
        Attribute(
            f"{what}s_not_reflected",
            List(String()),
            optional=True,
            computed=True,
            default=[],
            description=(
                f"{what.capitalize()} keys never copied to the provider, from any reflected object (ShadowPods "
                f"included; Liqo's `reflection.skip.{what}s`)."
            ),
        )
        for what in ("label", "annotation")
    ]
    attributes.append(
        Attribute(
            "api_server_support",
            String(),
            optional=True,
            computed=True,
            default=defaults.api_server_support,
            description=(
                "What offloaded pods' ServiceAccount tokens are for (Liqo's `--api-server-support`): "
                '`"TokenAPI"` (default) gives each pod tokens of its own ServiceAccount issued by this cluster, so '
                'it talks to this API server from the provider as at home; `"Disabled"` keeps every token in this '
                f"cluster. A pod may ask for the provider's API server (`{c.ANNOTATION_API_SERVER_SUPPORT}: "
                f"{c.API_SERVER_SUPPORT_REMOTE}`) or for none (`{c.API_SERVER_SUPPORT_DISABLED}`) itself."
            ),
        )
    )
    return attributes


class InstallResource(Resource):
    name: ClassVar[str] = "install"
    timeouts: ClassVar[Mapping[str, float]] = CONTRACT.timeouts
    read_seconds: ClassVar[float] = CONTRACT.read_seconds
    schema: ClassVar[Schema] = Schema(
        description=(
            "Installs the Liqo runtime (CRDs, controller manager, authentication service, webhook) in the "
            "cluster the provider points at, upgrades it in place and uninstalls it."
        ),
        attributes=[
            Attribute(
                "id",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description="The namespace of the installation (the import ID).",
            ),
            Attribute(
                "cluster_name",
                String(),
                **flags(CONTRACT, "cluster_name"),
                description=(
                    "Name of this cluster, as its peers know it: a DNS label of at most 58 characters (the "
                    "virtual node standing for it in a consumer is `liqo-<cluster_name>`)."
                ),
            ),
            Attribute(
                "cluster_labels",
                Map(String()),
                **flags(CONTRACT, "cluster_labels"),
                description="Labels this cluster suggests for the virtual nodes that stand for it in its consumers.",
            ),
            Attribute(
                "namespace",
                String(),
                **flags(CONTRACT, "namespace"),
                description=f"Namespace of the runtime (default `{c.DEFAULT_NAMESPACE}`). Changing it reinstalls.",
            ),
            Attribute(
                "pod_cidr",
                String(),
                **flags(CONTRACT, "pod_cidr"),
                computed=True,
                use_state_for_unknown=True,
                description=(
                    "The cluster's pod CIDR. Default: what the cluster tells (kubeadm's `kubeadm-config`, the "
                    "kube-controller-manager's `--cluster-cidr`, else the smallest network covering the nodes' "
                    "`spec.podCIDR`); set it when the cluster tells none of them, or when nodes added later will "
                    "get pod CIDRs outside what the nodes have now."
                ),
            ),
            Attribute(
                "service_cidr",
                String(),
                **flags(CONTRACT, "service_cidr"),
                computed=True,
                use_state_for_unknown=True,
                description=(
                    "The cluster's Service CIDR. Default: what the cluster tells (kubeadm's `kubeadm-config`, "
                    "or the API server's valid Service range)."
                ),
            ),
            Attribute(
                "sharing_percentage",
                Number(),
                **flags(CONTRACT, "sharing_percentage"),
                description=(
                    "Percentage (1-100) of this cluster's free resources a consumer gets when it asks for no "
                    "specific amount (default 90)."
                ),
            ),
            Attribute(
                "image",
                String(),
                **flags(CONTRACT, "image"),
                computed=True,
                description="Image of the runtime's components (default: the runtime image of this provider's version).",
            ),
            Attribute(
                "webhook_mode",
                String(),
                **flags(CONTRACT, "webhook_mode"),
                description=(
                    'How the API server reaches the runtime\'s webhook: `"service"` (its Service, default) or '
                    '`"url"` (its pod address, for an API server that cannot reach Services, such as one run outside '
                    "its cluster's network)."
                ),
            ),
            Attribute(
                "api_server_url",
                String(),
                **flags(CONTRACT, "api_server_url"),
                computed=True,
                description=(
                    "URL other clusters reach this cluster's API server at (consumers' credentials point "
                    "there). Default: the host the provider is configured with, unless it is a loopback address "
                    "(a kind or playground cluster reached through a port of this host): then a control-plane "
                    "node's address and port 6443, as liqoctl does."
                ),
            ),
            Attribute(
                "auth_url",
                String(),
                **flags(CONTRACT, "auth_url"),
                computed=True,
                description=(
                    "URL other clusters reach the authentication service at (an Ingress in front of it, say). "
                    "Default: the URL the service derives from its Service (see `auth_service_type`), read back "
                    "once it runs."
                ),
            ),
            Attribute(
                "gateway_service_type",
                String(),
                **flags(CONTRACT, "gateway_service_type"),
                description=(
                    "Type of the Service in front of each peering's gateway server (this cluster as a provider): "
                    '`"NodePort"` (default: consumers dial a Ready node\'s address and the nodePort, UDP) or '
                    '`"LoadBalancer"`. Changes apply to gateways made afterwards and to existing ones in place.'
                ),
            ),
            Attribute(
                "gateway_mtu",
                Number(),
                **flags(CONTRACT, "gateway_mtu"),
                description=(
                    "MTU of the WireGuard tunnel interfaces (1280..9000; default 1340: WireGuard's 60 bytes of "
                    "IPv4 overhead under a 1500-byte path with room for an outer encapsulation). Changes in place."
                ),
            ),
            Attribute(
                "wireguard_implementation",
                String(),
                **flags(CONTRACT, "wireguard_implementation"),
                description=(
                    'Which WireGuard the gateways run: `"auto"` (default: the kernel\'s when the node has it, else '
                    '`wireguard-go`), `"kernel"` or `"wireguard-go"`. Changes in place.'
                ),
            ),
            Attribute(
                "quota_enforcement",
                String(),
                **flags(CONTRACT, "quota_enforcement"),
                description=(
                    "How much a consumer's offloaded pods must declare of what they take from this cluster (as a "
                    "provider), checked at admission against the Quotas of its granted ResourceSlices: "
                    '`"None"` (default: what a pod requests counts, and the number of pods), `"Soft"` (every '
                    'container also requests cpu and memory) or `"Hard"` (and its limits equal its requests). '
                    "Changes in place."
                ),
            ),
            Attribute(
                "max_twin_namespaces",
                Number(),
                **flags(CONTRACT, "max_twin_namespaces"),
                description=(
                    "The most twin namespaces one consumer may hold in this cluster (as a provider), 1..10000 "
                    "(default 50); a namespace offloaded beyond it is refused in the consumer's NamespaceOffloading "
                    "status. Changes in place."
                ),
            ),
            Attribute(
                "max_consumer_service_type",
                String(),
                **flags(CONTRACT, "max_consumer_service_type"),
                description=(
                    "The widest type a consumer's Services keep when reflected into this cluster (as a provider): "
                    '`"ClusterIP"` (default: NodePort and LoadBalancer Services become ClusterIP, so consumers '
                    'open no port on this cluster\'s nodes), `"NodePort"` (LoadBalancer ones become NodePort) or '
                    '`"LoadBalancer"` (kept as they are, as Liqo does). Changes in place.'
                ),
            ),
            Attribute(
                "auth_service_type",
                String(),
                **flags(CONTRACT, "auth_service_type"),
                description=(
                    'Type of the authentication service\'s Service, which decides the URL it publishes: `"NodePort"` '
                    "(default: a Ready node's address, ExternalIP before InternalIP, and the nodePort; works on "
                    'kind, the playground and clusters without a cloud load balancer), `"LoadBalancer"` (the load '
                    "balancer's hostname or IP and the Service port, a node and the nodePort until it has one) or "
                    '`"ClusterIP"` (the pod\'s own address, reachable only where pod IPs are, such as from the '
                    "same cluster). The URL follows the Service and the nodes as they change; `auth_url` overrides "
                    "it. Changes in place."
                ),
            ),
            NestedAttribute(
                "reflection",
                _reflection_attributes(),
                **flags(CONTRACT, "reflection"),
                computed=True,
                description=(
                    "What the virtual kubelets of this cluster (as a consumer) reflect into the namespaces "
                    "offloaded to its providers: how many workers per kind (0 workers turn a kind off, Liqo's "
                    "`--<kind>-reflection-workers`), the policy of each kind that takes one (DenyList or "
                    "AllowList) and the label and annotation keys never copied. Changes in place: the "
                    "controller manager restarts and rolls every virtual kubelet out with the new options."
                ),
            ),
            force.attribute(
                CONTRACT,
                "the runtime",
                also=(
                    "Let destroy proceed while peerings (ForeignClusters) or offloaded namespaces exist: they "
                    "are deleted first. "
                ),
            ),
            Attribute(
                "purge",
                Bool(),
                **flags(CONTRACT, "purge"),
                description=(
                    "On destroy, also delete the namespace, the CRDs, the cluster identity and the auth service's "
                    "serving key (the next install gets a new cluster ID and a new key, which consumers that "
                    "peered before refuse). Apply it before the destroy."
                ),
            ),
            Attribute(
                "cluster_id",
                String(),
                computed=True,
                use_state_for_unknown=True,
                description="The cluster ID, kept across reinstalls unless purged.",
            ),
            Attribute(
                "version",
                String(),
                computed=True,
                description="Version of the installed runtime (this provider's version: applying upgrades it).",
            ),
            Attribute(
                "missing_objects",
                List(String()),
                computed=True,
                description=(
                    "Objects of the installation found missing at the last refresh; a non-empty list plans an "
                    "update that re-creates them."
                ),
            ),
        ],
        block_types=[timeouts_block(CONTRACT.timeouts)],
    )

    # validate and plan

    def check(self, diags: Diagnostics, config: State) -> None:
        for attribute in USER_OPTIONS:
            _check_option(diags, attribute, config.get(attribute))
        mode = config.get("webhook_mode")

        if checks.known(mode) and mode not in WEBHOOK_MODES:
            diags.add_error(
                "Invalid webhook_mode",
                f'"{mode}" is not a webhook mode: use "service" (the API server calls the webhook through its '
                'Service) or "url" (by pod address).',
                path=["webhook_mode"],
            )

        service_type = config.get("auth_service_type")
        if checks.known(service_type) and service_type not in SERVICE_TYPES:
            diags.add_error(
                "Invalid auth_service_type",
                f'"{service_type}" is not a Service type for the authentication service: use "NodePort" (a '
                'node\'s address and the nodePort), "LoadBalancer" (the load balancer\'s address) or "ClusterIP" '
                "(the pod's address, reachable only where pod IPs are).",
                path=["auth_service_type"],
            )
        _check_reflection(diags, config.get("reflection"))
        image = config.get("image")
        if checks.known(image) and not str(image).strip():
            diags.add_error(
                "Invalid image", "The image cannot be empty; omit it for the default.", path=["image"]
            )

    def plan(self, ctx: PlanContext, current: State | None, planned: State) -> State:
        config = ctx.config
        planned = dict(planned)
        for name, default in _defaults().items():
            if config.get(name) is None:
                planned[name] = default
        planned["reflection"] = _planned_reflection(config.get("reflection"))
        planned["id"] = planned["namespace"]
        planned["version"] = _version()
        planned["missing_objects"] = []
        kube = self.provider.kube
        if config.get("api_server_url") is None:
            prior_url = (current or {}).get("api_server_url")
            # on create, _plan_create asks the cluster (a kind-like cluster's kubeconfig names 127.0.0.1)
            planned["api_server_url"] = (
                prior_url
                if is_known(prior_url) and prior_url
                else kube.host
                if kube.config is not None
                else Unknown
            )
        if current is not None:
            if config.get("auth_url") is None:
                # the published URL changes only when the auth service restarts or its Service changes
                moves = any(
                    not _same(current.get(name), planned.get(name))
                    for name in _AUTH_INPUTS
                    if name != "auth_url"
                )
                planned["auth_url"] = Unknown if moves else current.get("auth_url")
            return planned
        if kube.config is None or not is_known(planned["namespace"]):
            return planned
        self._plan_create(ctx.diagnostics, planned, config)
        return planned

    def _plan_create(self, diags: Diagnostics, planned: State, config: State) -> None:
        """Fill in what the cluster tells on create: the CIDRs and API server URL not configured, an existing
        cluster id."""
        from runtime.operations.install import discover_api_server_url, discover_cidrs, existing_cluster_id

        namespace = planned["namespace"]
        host = self.provider.kube.host

        async def look(client: Client) -> tuple[Cidrs | None, str | None, str | None]:
            wants_cidrs = config.get("pod_cidr") is None or config.get("service_cidr") is None
            cidrs = await discover_cidrs(client) if wants_cidrs else None
            url = (
                await discover_api_server_url(client, host) if config.get("api_server_url") is None else None
            )
            return cidrs, await existing_cluster_id(client, namespace=namespace), url

        found = call(
            diags,
            self.provider.kube,
            look,
            what=f"read the cluster's CIDRs, control-plane nodes and Liqo identity (namespace {namespace})",
            seconds=PLAN_SECONDS,
        )
        if found is None:
            return
        cidrs, cluster_id, url = found
        if url is not None:
            planned["api_server_url"] = url
        if cluster_id is not None:
            planned["cluster_id"] = cluster_id
        if cidrs is not None:
            _plan_cidrs(diags, planned, config, cidrs)

    # apply

    def create(self, ctx: ApplyContext, planned: State) -> State | None:
        return self._apply(ctx, planned, prior=None)

    def update(self, ctx: ApplyContext, current: State, planned: State) -> State | None:
        if all(current.get(key) == value for key, value in planned.items() if key not in _DESTROY_ONLY):
            # what only destroy reads changed: nothing to do in the cluster (which may be gone)
            return {**current, **{key: planned.get(key) for key in _DESTROY_ONLY}}
        return self._apply(ctx, planned, prior=current)

    def _apply(self, ctx: ApplyContext, planned: State, *, prior: State | None) -> State | None:
        from runtime.operations.install import (
            Cidrs,
            ImagePullError,
            Progress,
            apply,
            complete_options,
            wait_ready,
        )

        operation = "create" if prior is None else "update"
        seconds = self.seconds(ctx.config, operation)
        kube = self.provider.kube
        namespace = planned["namespace"]
        cluster_id = planned.get("cluster_id")
        wanted = _options(
            planned, cluster_id=str(cluster_id) if is_known(cluster_id) and cluster_id else "", host=kube.host
        )

        options = call(
            ctx.diagnostics,
            kube,
            lambda client: complete_options(client, wanted),
            what=f"prepare the installation in {namespace}",
            seconds=seconds,
        )
        if options is None:
            return prior
        if not options.pod_cidr or not options.service_cidr:
            cidrs = Cidrs(options.pod_cidr or None, options.service_cidr or None)
            _plan_cidrs(ctx.diagnostics, {}, {}, cidrs)
            return prior
        try:
            options.validate()
        except InstallOptionsError as exc:
            _option_error(ctx.diagnostics, exc)
            return prior
        progress = Progress()
        started = time.monotonic()
        call(
            ctx.diagnostics,
            kube,
            lambda client: apply(client, options, field_manager=c.FIELD_MANAGER_TERRAFORM, progress=progress),
            what=f"apply the Liqo runtime's objects in namespace {namespace}",
            seconds=seconds,
        )
        state = _state(planned, options, identity={})
        if ctx.diagnostics.has_errors():
            return state if progress.applied or prior is not None else None
        left = max(seconds - (time.monotonic() - started), 0.0)

        async def wait(client: Client) -> Ready | ImagePullError:
            try:
                return await wait_ready(client, options, seconds=left, stop=ctx.stop)
            except ImagePullError as exc:
                return exc

        ready = call(
            ctx.diagnostics,
            kube,
            wait,
            what=f"the {operation} of the Liqo runtime in namespace {namespace}",
            seconds=left + 10,
        )
        if isinstance(ready, ImagePullError):
            _image_unavailable(ctx.diagnostics, ready)
            ready = None
        return _state(planned, options, identity=ready.identity if ready is not None else {})

    # read, delete, import

    def read(self, ctx: ReadContext, current: State) -> State | None:
        from runtime.operations.install import observe

        namespace = current.get("namespace") or current.get("id") or c.DEFAULT_NAMESPACE
        return self.refreshed(
            ctx,
            current,
            lambda client: observe(client, namespace),
            what=f"read the Liqo installation in namespace {namespace}",
            gone=f"the Liqo installation in namespace {namespace} is gone from the cluster",
            state=lambda observed: _observed_state(current, namespace, observed),
        )

    def delete(self, ctx: ApplyContext, current: State) -> None:
        from runtime.core import APIConnectionError
        from runtime.operations.install import InUseError, uninstall
        from runtime.operations.unreachable import unreachable

        namespace = current.get("namespace") or c.DEFAULT_NAMESPACE
        forced, purge = bool(current.get("force")), bool(current.get("purge"))
        seconds = self.seconds(current, "delete")

        async def remove(client: Client) -> list[str] | InUseError | _Unreachable:
            try:
                return await uninstall(
                    client,
                    namespace,
                    force=forced,
                    purge=purge,
                    seconds=seconds,
                    field_manager=c.FIELD_MANAGER_TERRAFORM,
                    stop=ctx.stop,
                )
            except InUseError as exc:
                return exc
            except APIConnectionError as exc:
                return _Unreachable(unreachable(exc, force=forced))

        outcome = call(
            ctx.diagnostics,
            self.provider.kube,
            remove,
            what=f"uninstall the Liqo runtime from namespace {namespace}",
            seconds=seconds + 10,
        )
        if isinstance(outcome, InUseError):
            _refuse(ctx.diagnostics, outcome.found)
        elif isinstance(outcome, _Unreachable):
            dropped(
                ctx.diagnostics,
                summary="Cluster unreachable: installation dropped from the state",
                error=outcome.error,
                kept=f"the Liqo runtime in namespace {namespace}",
                comes_back="uninstall it there by hand or import it again",
            )
        elif outcome is not None:
            for warning in outcome:
                ctx.diagnostics.add_warning("Peering removed by force", warning)

    def import_(self, ctx: ImportContext, id: str) -> State | None:
        from runtime.operations.install import observe

        checks.namespace(ctx.diagnostics, id, path=["namespace"])
        if ctx.diagnostics.has_errors():
            return None
        return self.imported(
            ctx,
            lambda client: observe(client, id),
            what=f"read the Liqo installation in namespace {id}",
            missing=(
                f"There is no Liqo installation in namespace {id} of the cluster at {self.provider.kube.host} "
                "(the namespace or its liqo-clusterid-configmap ConfigMap is missing). The import ID is the "
                "namespace the runtime is installed in, e.g. `terraform import liqo_install.this liqo`."
            ),
            state=lambda observed: _observed_state(self.empty_state(), id, observed),
        )


# state


def _options(planned: State, *, cluster_id: str, host: str) -> InstallOptions:
    mtu = planned.get("gateway_mtu")

    def text(name: str, default: str = "") -> str:
        value = planned.get(name)
        return str(value) if is_known(value) and value is not None else default

    sharing = planned.get("sharing_percentage")
    twins = planned.get("max_twin_namespaces")
    return InstallOptions(
        cluster_id=cluster_id,
        cluster_name=text("cluster_name"),
        api_server_url=text("api_server_url", host),
        pod_cidr=text("pod_cidr"),
        service_cidr=text("service_cidr"),
        cluster_labels=dict(planned.get("cluster_labels") or {}),
        namespace=text("namespace", c.DEFAULT_NAMESPACE),
        sharing_percentage=int(sharing)
        if is_known(sharing) and sharing is not None
        else CONTRACT.defaults["sharing_percentage"],
        image=text("image") or _defaults()["image"],
        webhook_mode="url" if planned.get("webhook_mode") == "url" else "service",
        auth_service_type=next((t for t in SERVICE_TYPES if t == text("auth_service_type")), "NodePort"),
        auth_url=text("auth_url"),
        reflection=_reflection_options(planned.get("reflection")),
        gateway_service_type=next(
            (t for t in GATEWAY_SERVICE_TYPES if t == text("gateway_service_type")), "NodePort"
        ),
        gateway_mtu=int(mtu) if is_known(mtu) and mtu is not None else 1340,
        wireguard_implementation=next(
            (w for w in WIREGUARD_IMPLEMENTATIONS if w == text("wireguard_implementation")), "auto"
        ),
        quota_enforcement=next((e for e in ENFORCEMENTS if e == text("quota_enforcement")), "None"),
        max_twin_namespaces=int(twins) if is_known(twins) and twins is not None else 50,
        max_consumer_service_type=next(
            (t for t in SERVICE_TYPES if t == text("max_consumer_service_type")), "ClusterIP"
        ),
    )


def _state(planned: State, options: InstallOptions, *, identity: Mapping[str, str]) -> State:
    """The state after an apply: the options applied, and what the running runtime published."""
    return {
        **planned,
        "id": options.namespace,
        "namespace": options.namespace,
        "pod_cidr": options.pod_cidr,
        "service_cidr": options.service_cidr,
        "api_server_url": options.api_server_url,
        "image": options.image,
        "auth_service_type": options.auth_service_type,
        "gateway_service_type": options.gateway_service_type,
        "gateway_mtu": options.gateway_mtu,
        "wireguard_implementation": options.wireguard_implementation,
        "quota_enforcement": options.quota_enforcement,
        "max_twin_namespaces": options.max_twin_namespaces,
        "max_consumer_service_type": options.max_consumer_service_type,
        "auth_url": identity.get(c.IDENTITY_AUTH_URL) or _known_text(planned.get("auth_url")),
        "reflection": _reflection_state(options.reflection),
        "cluster_id": options.cluster_id,
        "version": identity.get(c.IDENTITY_VERSION) or _version(),
        "missing_objects": [],
    }


def _known_text(value: Any) -> str:
    return str(value) if is_known(value) and value is not None else ""


def _observed_state(current: State, namespace: str, observed: Observed) -> State:
    from runtime.operations.install import identity_labels

    identity = observed.identity
    labels = identity_labels(identity)
    sharing = identity.get(c.IDENTITY_SHARING_PERCENTAGE) or ""
    return {
        **current,
        "id": namespace,
        "namespace": namespace,
        "cluster_name": identity.get(c.IDENTITY_CLUSTER_NAME) or "",
        # an empty map and no map are the same installation: keep what the configuration says
        "cluster_labels": labels if labels or current.get("cluster_labels") is not None else None,
        "pod_cidr": identity.get(c.IDENTITY_POD_CIDR) or "",
        "service_cidr": identity.get(c.IDENTITY_SERVICE_CIDR) or "",
        "sharing_percentage": int(sharing) if sharing.isdigit() else 0,
        "image": observed.image,
        "webhook_mode": observed.webhook_mode,
        "auth_service_type": observed.auth_service_type,
        "gateway_service_type": observed.gateway_service_type or "NodePort",
        "gateway_mtu": int(observed.gateway_mtu) if observed.gateway_mtu.isdigit() else 1340,
        "wireguard_implementation": observed.wireguard_implementation or "auto",
        "quota_enforcement": observed.quota_enforcement or "None",
        "max_twin_namespaces": int(observed.max_twin_namespaces)
        if observed.max_twin_namespaces.isdigit()
        else 50,
        "max_consumer_service_type": observed.max_consumer_service_type or "ClusterIP",
        "api_server_url": observed.api_server_url,
        "auth_url": identity.get(c.IDENTITY_AUTH_URL) or "",
        "reflection": _reflection_state(observed.reflection),
        "force": bool(current.get("force")),
        "purge": bool(current.get("purge")),
        "cluster_id": identity.get(c.IDENTITY_CLUSTER_ID) or "",
        "version": identity.get(c.IDENTITY_VERSION) or "",
        "missing_objects": observed.missing,
    }


# reflection


def _planned_reflection(configured: Any) -> Any:
    """The reflection options as planned: each field configured, else its default (all known at plan time)."""
    if configured is Unknown:
        return Unknown
    configured = configured or {}
    defaults = ReflectionOptions()
    planned: dict[str, Any] = {
        f"{kind}_workers": configured.get(f"{kind}_workers")
        if configured.get(f"{kind}_workers") is not None
        else defaults.workers(kind)
        for kind in KINDS
    }
    planned |= {
        f"{kind}_type": configured.get(f"{kind}_type")
        if configured.get(f"{kind}_type") is not None
        else defaults.type_of(kind)
        for kind in TYPED_KINDS
    }
    classes = configured.get("ingress_classes")
    planned["ingress_classes"] = classes if classes is not None else {}
    for keys in ("labels_not_reflected", "annotations_not_reflected"):
        planned[keys] = configured.get(keys) if configured.get(keys) is not None else []
    support = configured.get("api_server_support")
    planned["api_server_support"] = support if support is not None else defaults.api_server_support
    return planned


def _reflection_options(value: Any) -> ReflectionOptions:
    """The options planned (values not known yet: their defaults; the plan checked every known one)."""
    if not isinstance(value, Mapping):
        return ReflectionOptions()
    return from_values({name: field for name, field in value.items() if is_known(field)})


def _reflection_state(options: ReflectionOptions) -> dict[str, Any]:
    state: dict[str, Any] = {f"{kind}_workers": options.workers(kind) for kind in KINDS}
    state |= {f"{kind}_type": options.type_of(kind) for kind in TYPED_KINDS}
    state["ingress_classes"] = dict(options.ingress_classes)
    state["labels_not_reflected"] = list(options.labels_not_reflected)
    state["annotations_not_reflected"] = list(options.annotations_not_reflected)
    state["api_server_support"] = options.api_server_support
    return state


def _check_reflection(diags: Diagnostics, configured: Any) -> None:
    """Each configured reflection option, as `runtime.forge.reflection.from_values` sees it, an error on its
    field."""
    if not isinstance(configured, Mapping):
        return
    for name, value in configured.items():
        if value is None or not is_known(value):
            continue
        try:
            from_values({name: value})
        except ReflectionOptionsError as exc:
            diags.add_error(
                f"Invalid reflection.{name}",
                _sentence(str(exc).partition(": ")[2]),
                path=["reflection", name],
            )


def _sentence(message: str) -> str:
    return message[:1].upper() + message[1:] + "."


# diagnostics


def _check_option(diags: Diagnostics, attribute: str, value: Any) -> None:
    """`InstallOptions.validate` on one configured value (the others valid), as an error on its attribute."""
    if value is not None and is_known(value) and (problem := option_problem(attribute, value)):
        diags.add_error(f"Invalid {attribute}", problem, path=[attribute])


def _option_error(diags: Diagnostics, exc: Exception) -> None:
    attribute = getattr(exc, "attribute", "")
    message = str(exc).removeprefix(f"{attribute}: ")
    diags.add_error(f"Invalid {attribute}", message[:1].upper() + message[1:] + ".", path=[attribute])


def _plan_cidrs(diags: Diagnostics, planned: State, config: State, cidrs: Cidrs) -> None:
    for attribute, value, source in (
        (
            "pod_cidr",
            cidrs.pod_cidr,
            "kube-system/kubeadm-config, a kube-controller-manager pod's --cluster-cidr, nor the nodes' "
            "spec.podCIDR",
        ),
        (
            "service_cidr",
            cidrs.service_cidr,
            "kube-system/kubeadm-config, nor the API server's Service range",
        ),
    ):
        if config.get(attribute) is not None:
            continue
        if value is None:
            diags.add_error(
                f"Cannot discover {attribute}",
                f"The cluster does not tell its {attribute.replace('_', ' ').replace('cidr', 'CIDR')} (neither "
                f"{source}): set {attribute} in the liqo_install resource.",
                path=[attribute],
            )
        else:
            planned[attribute] = value


def _refuse(diags: Diagnostics, found: list[str]) -> None:
    diags.add_error(
        "Liqo is still in use",
        "The runtime cannot be uninstalled while these exist:\n  "
        + "\n  ".join(found)
        + "\nDestroy the liqo_peer resources (and offloaded namespaces) first, or set force = true on the "
        "liqo_install resource and apply, then destroy: forcing deletes them.",
        path=["force"],
    )


def _image_unavailable(diags: Diagnostics, exc: ImagePullError) -> None:
    diags.add_error(
        "Cannot pull the Liqo runtime image",
        f"{exc}.\nThe runtime does not start until its nodes can pull this image: build it and push it to a "
        'registry they reach (docs/installation.md, "The runtime image"), set `image` to where it is, then '
        "apply again. What was applied is recorded in the state.",
        path=["image"],
    )


@dataclass(frozen=True)
class _Unreachable:
    error: str


def _same(a: Any, b: Any) -> bool:
    return a is not Unknown and b is not Unknown and a == b
