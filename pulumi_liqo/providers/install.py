"""The dynamic resources of `Install`: the cluster's discovered values (`Discovery`) and the running runtime
(`Runtime`: the readiness wait, drift, and what holds the runtime when it goes)."""

from __future__ import annotations

import logging
import uuid
from typing import Any, Final

import pulumi
import pulumi.dynamic

from runtime.api import constants as c
from runtime.core import APIConnectionError, APIError
from runtime.forge import install as forge_install
from runtime.forge.install import InstallOptions
from runtime.operations import install
from runtime.operations.unreachable import UnreachableError, unreachable
from runtime.operations.waits import StopRequested, WaitTimeoutError

from .. import _cluster
from .base import (
    LiqoError,
    api_error,
    connection,
    diff,
    interrupted,
    kept_unreachable,
    seconds,
    unreachable_on_delete,
)

logger = logging.getLogger(__name__)

#: the Discovery's inputs that, when given, replace what it would find (they change in place)
GIVEN: Final = ("pod_cidr", "service_cidr", "api_server_url")


class DiscoveryProvider(pulumi.dynamic.ResourceProvider):
    """The values the install needs from the cluster: the cluster id an earlier install left (else a new one),
    the CIDRs and the API server URL not given (for a kind-like cluster whose kubeconfig names a loopback
    address, a control-plane node's address, as `liqo_install` does), found once at create and kept (the
    identity ConfigMap, a Kubernetes resource of the component, carries them into the cluster)."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        namespace = str(props["namespace"])
        host = _cluster.host(props)

        async def discover(client: Any) -> tuple[str | None, install.Cidrs, str]:
            return (
                await install.existing_cluster_id(client, namespace=namespace),
                await install.discover_cidrs(client),
                props.get("api_server_url") or await install.discover_api_server_url(client, host),
            )

        try:
            cluster_id, cidrs, url = _cluster.run(props, discover, seconds=install.CONTRACT.read_seconds)
        except APIError as exc:
            raise api_error(
                exc,
                what=f"read the CIDRs, control-plane nodes and Liqo identity (namespace {namespace})",
                props=props,
            ) from None
        outs = _discovered(props, cluster_id=cluster_id or str(uuid.uuid4()), cidrs=cidrs, api_server_url=url)
        return pulumi.dynamic.CreateResult(namespace, outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        return diff(olds, news, replace=("namespace",), update=GIVEN)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        # a value no longer given keeps the one in use (the cluster's CIDRs do not move)
        cidrs = install.Cidrs(
            pod_cidr=olds.get("discovered_pod_cidr"), service_cidr=olds.get("discovered_service_cidr")
        )
        url = str(olds.get("discovered_api_server_url") or _cluster.host(news))
        return pulumi.dynamic.UpdateResult(
            _discovered(news, cluster_id=str(olds["cluster_id"]), cidrs=cidrs, api_server_url=url)
        )

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        return pulumi.dynamic.ReadResult(id_, props)


def _discovered(
    props: dict[str, Any], *, cluster_id: str, cidrs: install.Cidrs, api_server_url: str
) -> dict[str, Any]:
    """The Discovery's outputs: the inputs as given, and the values the install uses (a given one, else the
    one found)."""
    pod_cidr = props.get("pod_cidr") or cidrs.pod_cidr
    service_cidr = props.get("service_cidr") or cidrs.service_cidr
    for name, value, source in (
        (
            "pod_cidr",
            pod_cidr,
            "kube-system/kubeadm-config, a kube-controller-manager's --cluster-cidr, nor the nodes' spec.podCIDR",
        ),
        ("service_cidr", service_cidr, "kube-system/kubeadm-config, nor the API server's Service range"),
    ):
        if not value:
            raise LiqoError(
                f"Cannot discover {name}: the cluster at {_cluster.host(props)} does not tell it (neither {source}); "
                f"set {name} in the Install's arguments."
            )
    return {
        **connection(props),
        "namespace": props["namespace"],
        # the inputs as given (a diff compares the next inputs with them), then what the install uses
        **{key: props.get(key) for key in GIVEN},
        "cluster_id": cluster_id,
        "discovered_pod_cidr": pod_cidr,
        "discovered_service_cidr": service_cidr,
        "discovered_api_server_url": props.get("api_server_url") or api_server_url,
    }


class RuntimeProvider(pulumi.dynamic.ResourceProvider):
    """The runtime as it runs: created once its objects (the component's Kubernetes resources, which it
    depends on) are rolled out and the auth service published its URL; read back for drift (objects gone
    missing, the identity); on delete, what holds the runtime is refused, or removed when `force`."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(str(props["namespace"]), self._ready(props, "create"))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        # the namespace is an input of its own, known in a preview while the options wait for discovery
        result = diff(olds, news, replace=("namespace",), update=("options", "force"))
        if olds.get("missing_objects"):
            result.changes = True
        return result

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        if olds.get("options") == news.get("options") and not olds.get("missing_objects"):
            # only the connection (or force) changed: nothing to wait for on the cluster, which may be gone
            return pulumi.dynamic.UpdateResult({**olds, **connection(news)})
        return pulumi.dynamic.UpdateResult(self._ready(news, "update"))

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        namespace = str(props.get("namespace") or id_)
        try:
            observed = _cluster.run(
                props,
                lambda client: install.observe(client, namespace),
                seconds=install.CONTRACT.read_seconds,
            )
        except APIError as exc:
            raise api_error(
                exc, what=f"read the Liqo installation in namespace {namespace}", props=props
            ) from None
        if observed is None:
            logger.info("Install %s: gone from the cluster", namespace)
            return pulumi.dynamic.ReadResult("", {})
        return pulumi.dynamic.ReadResult(
            id_, {**props, **_identity(observed.identity), "missing_objects": observed.missing}
        )

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        force = bool(props.get("force"))
        bound = seconds(props, "delete", default=install.CONTRACT.timeouts["delete"])
        try:
            forced = _cluster.run(
                props,
                lambda client: install.release(
                    client, force=force, seconds=bound / 2, field_manager=c.FIELD_MANAGER_PULUMI
                ),
                seconds=bound,
            )
        except install.InUseError as exc:
            raise LiqoError(
                "Liqo is still in use: the runtime cannot be uninstalled while these exist: "
                + ", ".join(exc.found)
                + ". Delete the Peer components (and offloaded namespaces) first, or set force=True on the "
                "Install and run `pulumi up`, then destroy: forcing deletes them."
            ) from None
        except APIConnectionError as exc:
            try:
                error = unreachable(exc, force=force)
            except UnreachableError as kept:
                raise kept_unreachable(f"Install {id_}", kept) from None
            logger.warning(
                "%s",
                unreachable_on_delete(
                    f"Install {id_}",
                    error,
                    kept=f"the Liqo runtime in namespace {id_}",
                    comes_back="uninstall it there by hand",
                ),
            )
            return
        except APIError as exc:
            raise api_error(
                exc, what=f"uninstall the Liqo runtime from namespace {id_}", props=props
            ) from None
        for warning in forced:
            logger.warning("Install %s: %s", id_, warning)

    def _ready(self, props: dict[str, Any], operation: str) -> dict[str, Any]:
        options = install_options(props)
        bound = seconds(props, operation, default=install.CONTRACT.timeouts[operation])
        try:
            ready = _cluster.run(
                props, lambda client: install.wait_ready(client, options, seconds=bound), seconds=bound + 10
            )
        except (WaitTimeoutError, StopRequested) as exc:
            raise interrupted(
                exc, what=f"the {operation} of the Liqo runtime in namespace {options.namespace}"
            ) from None
        except install.ImagePullError as exc:
            raise LiqoError(
                f"Cannot pull the Liqo runtime image: {exc}. The runtime does not start until its nodes can pull "
                'this image: build it and push it to a registry they reach (docs/installation.md, "The runtime '
                "image\"), set the Install's image to where it is, then run `pulumi up` again."
            ) from None
        except APIError as exc:
            raise api_error(
                exc, what=f"wait for the Liqo runtime in namespace {options.namespace}", props=props
            ) from None
        return runtime_state(props, ready.identity)


def install_options(props: dict[str, Any]) -> InstallOptions:
    """The options of a Runtime's properties (numbers come back from the engine as floats; `reflection` as a
    mapping of its fields)."""
    options = dict(props["options"])
    for whole in ("sharing_percentage", "gateway_mtu", "max_twin_namespaces"):
        if whole in options:
            options[whole] = int(options[whole])
    return forge_install.install_options(options)


def runtime_state(props: dict[str, Any], identity: dict[str, str]) -> dict[str, Any]:
    """A Runtime's outputs: its inputs as given (the next diff compares with them) and the identity."""
    return {
        **connection(props),
        "namespace": props["namespace"],
        "options": props["options"],
        "force": bool(props.get("force")),
        **_identity(identity),
        "missing_objects": [],
    }


def _identity(identity: dict[str, str]) -> dict[str, str]:
    return {
        "cluster_id": identity.get(c.IDENTITY_CLUSTER_ID) or "",
        "cluster_name": identity.get(c.IDENTITY_CLUSTER_NAME) or "",
        "auth_url": identity.get(c.IDENTITY_AUTH_URL) or "",
        "version": identity.get(c.IDENTITY_VERSION) or "",
    }


class Discovery(pulumi.dynamic.Resource, module="liqo", name="Discovery"):
    """The cluster id and CIDRs an Install uses (see `DiscoveryProvider`)."""

    cluster_id: pulumi.Output[str]
    discovered_pod_cidr: pulumi.Output[str]
    discovered_service_cidr: pulumi.Output[str]
    discovered_api_server_url: pulumi.Output[str]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        outputs = {
            "cluster_id": None,
            "discovered_pod_cidr": None,
            "discovered_service_cidr": None,
            "discovered_api_server_url": None,
        }
        super().__init__(
            DiscoveryProvider(),
            name,
            {**outputs, **props},
            pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
            ),
        )


class Runtime(pulumi.dynamic.Resource, module="liqo", name="Runtime"):
    """The running runtime of an Install (see `RuntimeProvider`)."""

    cluster_id: pulumi.Output[str]
    cluster_name: pulumi.Output[str]
    auth_url: pulumi.Output[str]
    version: pulumi.Output[str]
    missing_objects: pulumi.Output[list[str]]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        outputs = {
            "cluster_id": None,
            "cluster_name": None,
            "auth_url": None,
            "version": None,
            "missing_objects": None,
        }
        super().__init__(
            RuntimeProvider(),
            name,
            {**outputs, **props},
            pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
            ),
        )
