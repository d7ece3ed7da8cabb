"""The dynamic resources of `Install`: the cluster's discovered values (`Discovery`) and the running runtime
(`Runtime`: the readiness wait, drift, and what holds the runtime when it goes)."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any, Final

import pulumi
import pulumi.dynamic

from runtime.api import constants as c
from runtime.core import APIConnectionError, APIError
from runtime.forge.install import InstallOptions
from runtime.operations import install
from runtime.operations.waits import StopRequested, WaitTimeoutError

from .. import _cluster
from .base import LiqoError, api_error, connection, diff, seconds

logger = logging.getLogger(__name__)

#: default bounds, in seconds (`liqo_install`'s)
TIMEOUTS: Final = {"create": 600.0, "update": 600.0, "delete": 300.0}
#: the bound of discovery and of reads
READ_SECONDS: Final = 60.0


class DiscoveryProvider(pulumi.dynamic.ResourceProvider):
    """The values the install needs from the cluster: the cluster id an earlier install left (else a new one)
    and the CIDRs not given, found once at create and kept (the identity ConfigMap, a Kubernetes resource of
    the component, carries them into the cluster)."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        namespace = str(props["namespace"])

        async def discover(client: Any) -> tuple[str | None, install.Cidrs, str]:
            return (
                await install.existing_cluster_id(client, namespace=namespace),
                await install.discover_cidrs(client),
                props.get("api_server_url")
                or await install.discover_api_server_url(client, _cluster.host(props)),
            )

        try:
            cluster_id, cidrs, api_server_url = _cluster.run(props, discover, seconds=READ_SECONDS)
        except APIError as exc:
            raise api_error(
                exc, what=f"read the CIDRs and Liqo identity (namespace {namespace})", props=props
            ) from None
        import uuid

        outs = _discovered(
            props, cluster_id=cluster_id or str(uuid.uuid4()), cidrs=cidrs, api_server_url=api_server_url
        )
        return pulumi.dynamic.CreateResult(namespace, outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        return diff(olds, news, replace=("namespace",), update=("pod_cidr", "service_cidr", "api_server_url"))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        cidrs = install.Cidrs(
            pod_cidr=news.get("pod_cidr") or olds.get("discovered_pod_cidr"),
            service_cidr=news.get("service_cidr") or olds.get("discovered_service_cidr"),
        )
        url = news.get("api_server_url") or str(olds.get("api_server_url") or "") or _cluster.host(news)
        return pulumi.dynamic.UpdateResult(
            _discovered(news, cluster_id=str(olds["cluster_id"]), cidrs=cidrs, api_server_url=url)
        )

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        return pulumi.dynamic.ReadResult(id_, props)


def _discovered(
    props: dict[str, Any], *, cluster_id: str, cidrs: install.Cidrs, api_server_url: str
) -> dict[str, Any]:
    """The Discovery's outputs; `api_server_url` as given, else as `liqo_install` discovers it (a kind-like
    cluster's loopback server becomes a control-plane node's address: other clusters cannot reach loopback)."""
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
        "pod_cidr": props.get("pod_cidr") or "",
        "service_cidr": props.get("service_cidr") or "",
        "cluster_id": cluster_id,
        "discovered_pod_cidr": pod_cidr,
        "discovered_service_cidr": service_cidr,
        "api_server_url": api_server_url,
    }


class RuntimeProvider(pulumi.dynamic.ResourceProvider):
    """The runtime as it runs: created once its objects (the component's Kubernetes resources, which it
    depends on) are rolled out and the auth service published its URL; read back for drift (objects gone
    missing, the identity); on delete, what holds the runtime is refused, or removed when `force`."""

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(str(props["options"]["namespace"]), self._ready(props, "create"))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        old_ns = (olds.get("options") or {}).get("namespace")
        new_ns = (news.get("options") or {}).get("namespace")
        result = diff(olds, news, replace=(), update=("options", "force"))
        if old_ns != new_ns:
            result.replaces = ["options"]
            result.delete_before_replace = True
        if olds.get("missing_objects"):
            result.changes = True
        return result

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(self._ready(news, "update"))

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        namespace = str((props.get("options") or {}).get("namespace") or id_)
        try:
            observed = _cluster.run(
                props, lambda client: install.observe(client, namespace), seconds=READ_SECONDS
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
        bound = seconds(props, "delete", default=TIMEOUTS["delete"])
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
            logger.warning(
                "Install %s: the cluster cannot be reached (%s); dropping it from the state", id_, exc
            )
            return
        except APIError as exc:
            raise api_error(
                exc, what=f"uninstall the Liqo runtime from namespace {id_}", props=props
            ) from None
        for warning in forced:
            logger.warning("Install %s: %s", id_, warning)

    def _ready(self, props: dict[str, Any], operation: str) -> dict[str, Any]:
        options = InstallOptions(**props["options"])
        bound = seconds(props, operation, default=TIMEOUTS[operation])
        try:
            ready = _cluster.run(
                props, lambda client: install.wait_ready(client, options, seconds=bound), seconds=bound + 10
            )
        except (WaitTimeoutError, StopRequested) as exc:
            raise LiqoError(
                f"Timed out waiting for the Liqo runtime in namespace {options.namespace}: {exc}. Raise the "
                "Install's customTimeouts if the cluster is slow, or look at the runtime's pods and events."
            ) from None
        except APIError as exc:
            raise api_error(
                exc, what=f"wait for the Liqo runtime in namespace {options.namespace}", props=props
            ) from None
        return {
            **connection(props),
            "options": asdict(options),
            "force": bool(props.get("force")),
            **_identity(ready.identity),
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
    api_server_url: pulumi.Output[str]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        outputs = {
            "cluster_id": None,
            "discovered_pod_cidr": None,
            "discovered_service_cidr": None,
            "api_server_url": None,
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
