"""The admission chain: built-in plugins first, then the admission webhooks.

Order as kube-apiserver's default with kubeadm's NodeRestriction: NamespaceLifecycle,
ServiceAccount, NodeRestriction, DefaultTolerationSeconds, Priority,
MutatingAdmissionWebhook; then (after the registry's own validation) RBAC escalation
checks and ValidatingAdmissionWebhook. Deletes see NamespaceLifecycle and
NodeRestriction, then the validating webhooks. TokenRequests and evictions, which
the emulator serves outside the generic store, get NodeRestriction's checks through
`admit_token_request` and `admit_eviction`.
"""

from __future__ import annotations

from dataclasses import replace

from . import rbac
from .admission import AdmissionRequest, WebhookDispatcher
from .authorizer import Authorizer
from .identity import UserInfo
from .node_restriction import NodeRestriction
from .plugins import NamespaceLifecycle, PriorityAdmission, ServiceAccountAdmission, default_tolerations
from .registry import AdmissionAttributes
from .resources.base import Obj
from .storage import Storage

RBAC_GROUP = "rbac.authorization.k8s.io"


def _request(attrs: AdmissionAttributes, obj: Obj | None) -> AdmissionRequest:
    rt = attrs.rt
    return AdmissionRequest(
        operation=attrs.operation,
        group=rt.group,
        version=rt.version,
        resource=rt.plural,
        kind=rt.kind,
        namespaced=rt.namespaced,
        user=attrs.user,
        subresource=attrs.subresource,
        name=attrs.name,
        namespace=attrs.namespace,
        object=obj,
        old_object=attrs.old,
        dry_run=attrs.dry_run,
        options=attrs.options or None,
    )


class AdmissionChain:
    def __init__(
        self, storage: Storage, policy: rbac.PolicySource, authorizer: Authorizer, webhooks: WebhookDispatcher
    ) -> None:
        self._policy = policy
        self._lifecycle = NamespaceLifecycle(namespace=lambda name: storage.get("namespaces", "", name))
        self._service_accounts = ServiceAccountAdmission(
            service_account=lambda ns, name: storage.get("serviceaccounts", ns, name)
        )
        self._priority = PriorityAdmission(
            priority_classes=lambda: storage.objects("priorityclasses.scheduling.k8s.io")
        )
        self._node_restriction = NodeRestriction(
            pod=lambda ns, name: storage.get("pods", ns, name),
            node=lambda name: storage.get("nodes", "", name),
            authorize=authorizer.authorize,
        )
        self._webhooks = webhooks

    async def mutate(self, attrs: AdmissionAttributes) -> Obj | None:
        self._lifecycle.validate(attrs)
        obj = attrs.obj
        if obj is not None:
            obj = self._service_accounts.mutate(attrs, obj)
            self._node_restriction.admit(replace(attrs, obj=obj))
            obj = default_tolerations(attrs, obj)
            obj = self._priority.mutate(attrs, obj)
        return await self._webhooks.mutate(_request(attrs, obj), warnings=attrs.warnings)

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if attrs.operation == "DELETE":
            self._lifecycle.validate(attrs)
            self._node_restriction.admit(attrs)
        self._check_rbac_escalation(attrs)
        await self._webhooks.validate(_request(attrs, attrs.obj), warnings=attrs.warnings)

    def admit_token_request(self, user: UserInfo, namespace: str, service_account: str, request: Obj) -> None:
        self._node_restriction.admit_token_request(user, namespace, service_account, request)

    def admit_eviction(self, user: UserInfo, namespace: str, pod: str) -> None:
        self._node_restriction.admit_eviction(user, namespace, pod)

    def _check_rbac_escalation(self, attrs: AdmissionAttributes) -> None:
        """Nobody grants, through a Role or a binding, permissions they do not hold themselves."""
        if attrs.rt.group != RBAC_GROUP or attrs.obj is None or attrs.operation not in ("CREATE", "UPDATE"):
            return
        error = rbac.admission_escalation_error(
            attrs.user, attrs.rt.kind, attrs.obj, policy=self._policy, old=attrs.old
        )
        if error is not None:
            raise error
