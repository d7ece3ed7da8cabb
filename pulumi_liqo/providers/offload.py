"""The dynamic resource of `Offload`: a namespace offloaded from the consumer (`runtime.operations.offload`).

Create refuses a cluster without the runtime, a namespace that does not exist and one
offloaded already, writes the NamespaceOffloading and waits, bounded, until every
selected cluster has its twin namespace (NoClusterSelected ends the wait with a warning;
when every selected cluster reports a failure waiting will not fix, it ends early). A
create that fails unoffloads what it wrote before it reports why: Pulumi keeps no state
for a failed create, so the next `pulumi up` starts over instead of finding the namespace
offloaded already. The namespace, the mapping strategy and a selected name replace the
offloading (the runtime never renames twin namespaces); the pod offloading strategy and
the cluster selector change in place. Read returns the live spec and status, so a refresh
shows drift made by hand. Delete unoffloads, bounded, with the forced path; a cluster
that cannot be reached fails it (the Offload stays), unless `force` lets it go.
"""

from __future__ import annotations

import logging
from typing import Any

import pulumi
import pulumi.dynamic

from runtime.api import constants as c
from runtime.api.selectors import selector_string
from runtime.core import APIError, Client
from runtime.operations import offload, offloadset
from runtime.operations.unreachable import UnreachableError
from runtime.operations.waits import StopRequested, WaitTimeoutError

from .. import _cluster
from .base import LiqoError, SpecProvider, api_error, connection, kept_unreachable

logger = logging.getLogger(__name__)


class OffloadingProvider(SpecProvider):
    contract = offload.CONTRACT
    this = "the Offload"

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        if props.get("namespace_selector"):
            return self._create_set(props)
        namespace = str(props["namespace"])
        bound = self.bound(props, "create")
        try:
            _cluster.run(
                props, lambda client: offload.check_new(client, namespace, seconds=bound / 2), seconds=bound
            )
        except self.contract.refused as exc:
            raise self.refused(exc, props, namespace=namespace) from None
        except (WaitTimeoutError, StopRequested) as exc:
            raise LiqoError(f"Namespace {namespace} is still being unoffloaded: {exc}.") from None
        except APIError as exc:
            raise api_error(
                exc, what=f"prepare the offloading of namespace {namespace}", props=props
            ) from None
        bound = self.bound(props, "delete")
        return self._created_or_rolled_back(
            namespace,
            props,
            lambda client: offload.unoffload(
                client,
                namespace,
                seconds=bound,
                field_manager=c.FIELD_MANAGER_PULUMI,
                force=True,  # nothing is in the stack yet: an unreachable cluster is said, not kept
            ),
            seconds=bound + offload.ORPHAN_SECONDS + 10,
            what=f"The NamespaceOffloading of {namespace}",
            by_hand=f"delete it (kubectl delete namespaceoffloadings -n {namespace} offloading)",
        )

    def _create_set(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        selector = str(props["namespace_selector"])
        name = offloadset.set_name(selector)
        bound = self.bound(props, "create")
        try:
            _cluster.run(
                props,
                lambda client: offloadset.check_new_set(
                    client, selector, runtime_namespace=c.DEFAULT_NAMESPACE, seconds=bound / 2
                ),
                seconds=bound,
            )
        except self.contract.refused as exc:
            listing = str(getattr(exc, "listing", ""))
            raise self.refused(exc, props, selector=selector, name=name, namespaces=listing) from None
        except (WaitTimeoutError, StopRequested) as exc:
            raise LiqoError(f"NamespaceOffloadingSet {name} is still being deleted: {exc}.") from None
        except APIError as exc:
            raise api_error(
                exc, what=f"prepare the offloading of namespaces {selector}", props=props
            ) from None
        bound = self.bound(props, "delete")
        return self._created_or_rolled_back(
            name,
            props,
            lambda client: offloadset.unoffload_set(
                client, name, seconds=bound, field_manager=c.FIELD_MANAGER_PULUMI, force=True
            ),
            seconds=bound + offload.ORPHAN_SECONDS + 10,
            what=f"NamespaceOffloadingSet {name}",
            by_hand=f"delete it (kubectl delete namespaceoffloadingsets {name})",
        )

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        if id_.startswith(offloadset.SET_NAME_PREFIX):
            return self._read_set(id_, props)
        try:
            found = _cluster.run(
                props, lambda client: offload.observe(client, id_), seconds=self.contract.read_seconds
            )
        except APIError as exc:
            raise api_error(exc, what=f"read the offloading of namespace {id_}", props=props) from None
        if found is None:
            logger.info("Offload %s: the NamespaceOffloading is gone", id_)
            return pulumi.dynamic.ReadResult("", {})
        spec = found.spec
        mapping = str(spec.get("namespaceMappingStrategy") or c.MAPPING_DEFAULT_NAME)
        observed = {
            **props,
            "namespace": found.namespace,
            "pod_offloading_strategy": str(
                spec.get("podOffloadingStrategy") or c.POD_OFFLOADING_LOCAL_AND_REMOTE
            ),
            "namespace_mapping_strategy": mapping,
            "remote_namespace_name": str(spec.get("remoteNamespaceName") or "")
            if mapping == c.MAPPING_SELECTED_NAME
            else "",
            "cluster_selector_terms": list(
                (spec.get("clusterSelector") or {}).get("nodeSelectorTerms") or []
            ),
            **_status(found, props),
        }
        return pulumi.dynamic.ReadResult(id_, observed)

    def _read_set(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        try:
            found = _cluster.run(
                props, lambda client: offloadset.observe_set(client, id_), seconds=self.contract.read_seconds
            )
        except APIError as exc:
            raise api_error(exc, what=f"read NamespaceOffloadingSet {id_}", props=props) from None
        if found is None:
            logger.info("Offload %s: the NamespaceOffloadingSet is gone", id_)
            return pulumi.dynamic.ReadResult("", {})
        template = found.spec.get("template") or {}
        known = str(props.get("namespace_selector") or "")
        selector = selector_string(found.spec.get("namespaceSelector") or {})
        observed = {
            **props,
            "namespace_selector": known if known and offloadset.set_name(known) == id_ else selector,
            "pod_offloading_strategy": str(
                template.get("podOffloadingStrategy") or c.POD_OFFLOADING_LOCAL_AND_REMOTE
            ),
            "namespace_mapping_strategy": str(
                template.get("namespaceMappingStrategy") or c.MAPPING_DEFAULT_NAME
            ),
            "cluster_selector_terms": list(
                (template.get("clusterSelector") or {}).get("nodeSelectorTerms") or []
            ),
            **_set_status(found),
        }
        return pulumi.dynamic.ReadResult(id_, observed)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        bound = self.bound(props, "delete")
        unoffload = (
            offloadset.unoffload_set if id_.startswith(offloadset.SET_NAME_PREFIX) else offload.unoffload
        )
        try:
            outcome = _cluster.run(
                props,
                lambda client: unoffload(
                    client,
                    id_,
                    seconds=bound,
                    field_manager=c.FIELD_MANAGER_PULUMI,
                    force=props.get("force") is True,
                ),
                seconds=bound + offload.ORPHAN_SECONDS + 10,
            )
        except UnreachableError as exc:
            raise kept_unreachable(f"Offload {id_}", exc) from None
        except APIError as exc:
            raise api_error(exc, what=f"unoffload namespace {id_}", props=props) from None
        if outcome.orphaned:
            logger.warning(
                "Offload %s: the runtime did not report the twin namespaces gone within %gs (last seen: %s), so "
                "the NamespaceOffloading's finalizer was removed. Twin namespaces may be left on the providers; "
                "check that the runtime's controller manager runs here and there.",
                id_,
                bound,
                outcome.orphaned,
            )
        if outcome.unreachable:
            logger.warning(
                "Offload %s: the cluster cannot be reached (%s); the NamespaceOffloading was not deleted. If the "
                "cluster comes back, delete it there.",
                id_,
                outcome.unreachable,
            )

    def _write_set(self, props: dict[str, Any], operation: str) -> dict[str, Any]:
        """Apply the NamespaceOffloadingSet, then wait for every namespace it offloads."""
        selector = str(props["namespace_selector"])
        name = offloadset.set_name(selector)
        bound = self.bound(props, operation)

        async def write_and_wait(client: Client) -> offloadset.OffloadingSet:
            await offloadset.apply_set(
                client,
                selector,
                pod_offloading_strategy=str(props["pod_offloading_strategy"]),
                namespace_mapping_strategy=str(props["namespace_mapping_strategy"]),
                cluster_selector_terms=list(props.get("cluster_selector_terms") or []),
                field_manager=c.FIELD_MANAGER_PULUMI,
            )
            return await offloadset.wait_set_offloaded(client, name, seconds=bound)

        try:
            done = _cluster.run(props, write_and_wait, seconds=bound + 10)
        except (WaitTimeoutError, StopRequested) as exc:
            raise LiqoError(f"The namespaces {selector} picks are not all offloaded: {exc}.") from None
        except APIError as exc:
            raise api_error(exc, what=f"write NamespaceOffloadingSet {name}", props=props) from None
        for message in done.conflicts.values():
            logger.warning("Offload %s: left alone: %s", name, message)
        return {**connection(props), **self.inputs(props), **_set_status(done)}

    def _write(self, props: dict[str, Any], operation: str) -> dict[str, Any]:
        """Apply the NamespaceOffloading, then wait for the twin namespaces."""
        if props.get("namespace_selector"):
            return self._write_set(props, operation)
        namespace = str(props["namespace"])
        bound = self.bound(props, operation)

        async def write_and_wait(client: Client) -> offload.Offloading:
            await offload.apply_offloading(
                client,
                namespace,
                pod_offloading_strategy=str(props["pod_offloading_strategy"]),
                namespace_mapping_strategy=str(props["namespace_mapping_strategy"]),
                remote_namespace_name=str(props.get("remote_namespace_name") or ""),
                cluster_selector_terms=list(props.get("cluster_selector_terms") or []),
                field_manager=c.FIELD_MANAGER_PULUMI,
            )
            try:
                return await offload.wait_offloaded(client, namespace, seconds=bound)
            except WaitTimeoutError as exc:
                found = await offload.get(client, namespace)
                raise _NotOffloadedError(str(exc), found) from None

        try:
            done = _cluster.run(props, write_and_wait, seconds=bound + 10)
        except offload.OffloadingFailedError as exc:
            raise LiqoError(
                f"Offloading of namespace {namespace} failed: no selected cluster could create its twin namespace, "
                "and waiting will not fix it: "
                + "; ".join(exc.offloading.problems())
                + ". Fix the cause (a namespace of that name exists on the provider: use the DefaultName or "
                "SelectedName strategy; a cordoned or drained tenant: ask the provider) and run `pulumi up` again."
            ) from None
        except _NotOffloadedError as exc:
            detail = (
                f" The NamespaceOffloading reports {exc.found.summary()}." if exc.found is not None else ""
            )
            raise LiqoError(f"The offloading of namespace {namespace} is not Ready: {exc}.{detail}") from None
        except (WaitTimeoutError, StopRequested) as exc:
            raise LiqoError(f"The offloading of namespace {namespace} is not Ready: {exc}.") from None
        except APIError as exc:
            raise api_error(exc, what=f"write the NamespaceOffloading of {namespace}", props=props) from None
        if done.phase == c.PHASE_NO_CLUSTER_SELECTED:
            logger.warning(
                "Offload %s: no peered cluster is selected: no virtual node matches cluster_selector_terms yet, so "
                "no twin namespace exists and no pod is offloaded. Clusters that match get the namespace when they "
                "peer.",
                namespace,
            )
        return {
            **connection(props),
            **self.inputs(props),
            **_status(done, props),
        }


class _NotOffloadedError(Exception):
    """The wait ran out; `found` is the NamespaceOffloading as it was then, for the error."""

    def __init__(self, message: str, found: offload.Offloading | None) -> None:
        super().__init__(message)
        self.found = found


def _set_status(found: offloadset.OffloadingSet) -> dict[str, Any]:
    return {
        "twin_namespace_name": "",
        "offloading_phase": "InProgress" if found.unsettled() else c.PHASE_READY,
        "cluster_status": {},
        "namespaces": found.namespaces,
        "conflicts": found.conflicts,
    }


def _status(found: offload.Offloading, props: dict[str, Any]) -> dict[str, Any]:
    return {
        "namespaces": [],
        "conflicts": {},
        "twin_namespace_name": found.remote_namespace_name or str(props.get("remote_namespace_name") or ""),
        "offloading_phase": found.phase,
        "cluster_status": {
            cluster.cluster: {
                "selected": cluster.selected,
                "ready": cluster.ready,
                "reason": cluster.reason,
                "message": cluster.message,
            }
            for cluster in found.clusters
        },
    }


class Offloading(pulumi.dynamic.Resource, module="liqo", name="Offloading"):
    """A namespace offloaded from the consumer (see `OffloadingProvider`)."""

    twin_namespace_name: pulumi.Output[str]
    offloading_phase: pulumi.Output[str]
    cluster_status: pulumi.Output[dict[str, dict[str, Any]]]
    namespaces: pulumi.Output[list[str]]
    conflicts: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        outputs = dict.fromkeys(
            ("twin_namespace_name", "offloading_phase", "cluster_status", "namespaces", "conflicts")
        )
        super().__init__(
            OffloadingProvider(),
            name,
            {**outputs, **props},
            pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
            ),
        )
