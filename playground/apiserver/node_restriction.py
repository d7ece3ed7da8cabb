"""The NodeRestriction admission plugin: what a node may write, once the Node authorizer let it try.

kube-apiserver's plugin/pkg/admission/noderestriction (enabled by kubeadm, so on every
kind cluster) limits a `system:node:<name>` user to its own objects:

- its own Node: create (no configSource; labels only from the kubelet's set), update
  and the status subresource (no change of taints or of labels outside that set); the
  kubelet's set is `kubernetes.io/hostname`, `.../os`, `.../arch`, the instance-type
  and topology labels and the `kubelet.kubernetes.io` and `node.kubernetes.io`
  prefixes; `node-role.kubernetes.io/*` and `node-restriction.kubernetes.io/*` are
  never a node's to set (kubeadm sets the role labels with admin rights);
- pods: create only mirror pods bound to itself (the mirror annotation, one controller
  owner reference to its Node, no ServiceAccount, Secret, ConfigMap, PVC or
  ClusterTrustBundle), delete and evict only pods bound to itself, update the status
  of those pods only, without changing labels or resource claim statuses;
- PersistentVolumeClaims: only capacity and conditions of their status;
- ServiceAccount tokens: only bound to a pod on the node (by name and uid), for at most
  one audience, which one of the pod's projected token volumes asks for (or which RBAC
  allows it with the `request-serviceaccounts-token-audience` verb);
- Leases in `kube-node-lease` and CSINodes of its own name.

Refusals are 403s worded as admission.NewForbidden words them. Not checked: audiences a
CSI driver requests for a pod's volumes (the playground runs no CSI driver), and the
diff a refused PVC status update shows is not Go's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from . import errors
from .identity import RequestAttributes, UserInfo
from .node_authorizer import NODE_LEASE_NAMESPACE, node_name, pod_configmap_names, pod_secret_names
from .rbac import Decision
from .registry import AdmissionAttributes
from .resources.base import Obj
from .resources.pods import MIRROR_POD_ANNOTATION

NODE_RESTRICTION_LABEL_DOMAIN = "node-restriction.kubernetes.io"
#: the labels a kubelet may set on its Node (k8s.io/kubelet/pkg/apis kubeletLabels)
KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    }
)
KUBELET_LABEL_DOMAINS = ("kubelet.kubernetes.io", "node.kubernetes.io")
TOKEN_AUDIENCE_VERB = "request-serviceaccounts-token-audience"

#: the stored pod (namespace, name) or Node (name), or None
PodLookup = Callable[[str, str], Obj | None]
NodeLookup = Callable[[str], Obj | None]
Authorize = Callable[[RequestAttributes], Decision]


def _label_domain(key: str) -> str:
    domain, sep, _ = key.partition("/")
    return domain if sep else ""


def _in_domain(domain: str, allowed: str) -> bool:
    return domain == allowed or domain.endswith("." + allowed)


def is_kubelet_label(key: str) -> bool:
    """kubeletapis.IsKubeletLabel: a label a kubelet may put on its own Node."""
    return key in KUBELET_LABELS or any(_in_domain(_label_domain(key), d) for d in KUBELET_LABEL_DOMAINS)


def forbidden_labels(new: dict[str, str], old: dict[str, str]) -> list[str]:
    """The changed labels (added, removed or modified) a node may not touch, sorted."""
    changed = {k for k in new.keys() | old.keys() if new.get(k) != old.get(k) or (k in new) != (k in old)}
    refused = set()
    for key in changed:
        domain = _label_domain(key)
        if _in_domain(domain, NODE_RESTRICTION_LABEL_DOMAIN):
            refused.add(key)
        if (_in_domain(domain, "kubernetes.io") or _in_domain(domain, "k8s.io")) and not is_kubelet_label(
            key
        ):
            refused.add(key)
    return sorted(refused)


def _meta(obj: Obj | None) -> Obj:
    return (obj or {}).get("metadata") or {}


def _spec(obj: Obj | None) -> Obj:
    return (obj or {}).get("spec") or {}


@dataclass(frozen=True)
class _Refusal:
    """The object a refusal names: `<resource>[.<group>] "<name>"`."""

    resource: str
    group: str
    name: str

    def __call__(self, why: str) -> errors.APIError:
        qualified = f"{self.resource}.{self.group}" if self.group else self.resource
        subject = f'{qualified} "{self.name}"' if self.name else qualified
        return errors.forbidden(
            f"{subject} is forbidden: {why}", resource=self.resource, name=self.name or None, group=self.group
        )


class NodeRestriction:
    def __init__(self, *, pod: PodLookup, node: NodeLookup, authorize: Authorize) -> None:
        self._pod = pod
        self._node = node
        self._authorize = authorize

    def admit(self, attrs: AdmissionAttributes) -> None:
        """Refuse (raise) a node's create, update or delete that is not its to make."""
        node = node_name(attrs.user.name, attrs.user.groups)
        if node is None:
            return
        rt = attrs.rt
        name = attrs.name or str(_meta(attrs.obj).get("name") or "")
        refuse = _Refusal(rt.plural, rt.group, name)
        if not node:
            raise refuse(f'could not determine node from user "{attrs.user.name}"')
        resource = (rt.group, rt.plural)
        if resource == ("", "pods"):
            self._admit_pod(node, attrs, refuse)
        elif resource == ("", "nodes"):
            self._admit_node(node, attrs, refuse)
        elif resource == ("", "persistentvolumeclaims"):
            _admit_claim(node, attrs, refuse)
        elif resource == ("coordination.k8s.io", "leases"):
            if attrs.namespace != NODE_LEASE_NAMESPACE:
                raise refuse(f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
            if name != node:
                raise refuse("can only access node lease with the same name as the requesting node")
        elif resource == ("storage.k8s.io", "csinodes") and name != node:
            raise refuse("can only access CSINode with the same name as the requesting node")

    def admit_token_request(self, user: UserInfo, namespace: str, service_account: str, request: Obj) -> None:
        """A node asks for a token of `service_account`: it must be bound to a pod on the node."""
        node = node_name(user.name, user.groups)
        if node is None:
            return
        refuse = _Refusal("serviceaccounts", "", service_account)
        ref = _spec(request).get("boundObjectRef") or {}
        if ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or not ref.get("name"):
            raise refuse("node requested token not bound to a pod")
        if not ref.get("uid"):
            raise refuse("node requested token with a pod binding without a uid")
        pod = self._pod(namespace, str(ref["name"]))
        if pod is None:
            raise errors.not_found("pods", str(ref["name"]))
        if ref["uid"] != _meta(pod).get("uid"):
            raise refuse(
                f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. "
                "The object might have been deleted and then recreated"
            )
        if _spec(pod).get("nodeName") != node:
            raise refuse("node requested token bound to a pod scheduled on a different node")
        audiences = list(_spec(request).get("audiences") or [])
        if len(audiences) > 1:
            raise refuse("node may only request 0 or 1 audiences")
        if not audiences or str(audiences[0]) in _projected_audiences(pod):
            return
        audience = str(audiences[0])
        check = RequestAttributes(
            user=user,
            verb=TOKEN_AUDIENCE_VERB,
            api_group="",
            api_version="v1",
            resource=audience,
            name=service_account,
            namespace=namespace,
        )
        if not self._authorize(check).allowed:
            raise refuse(
                f'audience "{audience}" not found in pod spec volume, {user.name} is not authorized to request '
                "tokens for this audience"
            )

    def admit_eviction(self, user: UserInfo, namespace: str, pod_name: str) -> None:
        node = node_name(user.name, user.groups)
        if node is None:
            return
        refuse = _Refusal("pods", "", pod_name)
        pod = self._pod(namespace, pod_name)
        if pod is None:
            raise errors.not_found("pods", pod_name)
        if _spec(pod).get("nodeName") != node:
            raise refuse(f"node {node} can only evict pods with spec.nodeName set to itself")

    def _admit_pod(self, node: str, attrs: AdmissionAttributes, refuse: _Refusal) -> None:
        if attrs.subresource == "status":
            if attrs.operation != "UPDATE":
                raise refuse(f'unexpected operation "{attrs.operation}"')
            if _spec(attrs.old).get("nodeName") != node:
                raise refuse(
                    f'node "{node}" can only update pod status for pods with spec.nodeName set to itself'
                )
            if (_meta(attrs.obj).get("labels") or {}) != (_meta(attrs.old).get("labels") or {}):
                raise refuse(f'node "{node}" cannot update labels through pod status')
            if _claim_statuses(attrs.obj) != _claim_statuses(attrs.old):
                raise refuse(f'node "{node}" cannot update resource claim statues')
            return
        if attrs.subresource:
            raise refuse(
                f"unexpected pod subresource \"{attrs.subresource}\", only 'status' and 'eviction' are allowed"
            )
        if attrs.operation == "CREATE":
            self._admit_mirror_pod(node, attrs.obj or {}, refuse)
        elif attrs.operation == "DELETE":
            if _spec(attrs.old).get("nodeName") != node:
                raise refuse(f'node "{node}" can only delete pods with spec.nodeName set to itself')
        else:
            raise refuse(
                f'unexpected operation "{attrs.operation}", node "{node}" can only create and delete mirror pods'
            )

    def _admit_mirror_pod(self, node: str, pod: Obj, refuse: _Refusal) -> None:
        if MIRROR_POD_ANNOTATION not in (_meta(pod).get("annotations") or {}):
            raise refuse(
                f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, node "{node}" can only create mirror pods'
            )
        if _spec(pod).get("nodeName") != node:
            raise refuse(f'node "{node}" can only create pods with spec.nodeName set to itself')
        owners = _meta(pod).get("ownerReferences") or []
        if len(owners) > 1:
            raise refuse(f'node "{node}" can only create pods with a single owner reference set to itself')
        if not owners:
            raise refuse(f'node "{node}" can only create pods with an owner reference set to itself')
        owner = owners[0]
        if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
            raise refuse(f'node "{node}" can only create pods with an owner reference set to itself')
        if not owner.get("controller"):
            raise refuse(
                f'node "{node}" can only create pods with a controller owner reference set to itself'
            )
        if owner.get("blockOwnerDeletion"):
            raise refuse(f'node "{node}" must not set blockOwnerDeletion on an owner reference')
        stored = self._node(node)
        if stored is None:
            raise errors.not_found("nodes", node)
        if owner.get("uid") != _meta(stored).get("uid"):
            raise refuse(
                f"node {node} UID mismatch: expected {owner.get('uid')} got {_meta(stored).get('uid')}"
            )
        if _spec(pod).get("serviceAccountName"):
            raise refuse(f'node "{node}" can not create pods that reference a service account')
        if pod_secret_names(pod):
            raise refuse(f'node "{node}" can not create pods that reference secrets')
        if pod_configmap_names(pod):
            raise refuse(f'node "{node}" can not create pods that reference configmaps')
        for volume in _spec(pod).get("volumes") or []:
            if any(s.get("clusterTrustBundle") for s in (volume.get("projected") or {}).get("sources") or []):
                raise refuse(f'node "{node}" can not create pods that reference clustertrustbundles')
        if any(volume.get("persistentVolumeClaim") for volume in _spec(pod).get("volumes") or []):
            raise refuse(f'node "{node}" can not create pods that reference persistentvolumeclaims')

    def _admit_node(self, node: str, attrs: AdmissionAttributes, refuse: _Refusal) -> None:
        requested = attrs.name or str(_meta(attrs.obj).get("name") or "")
        if requested != node:
            raise refuse(f'node "{node}" is not allowed to modify node "{requested}"')
        new = attrs.obj or {}
        if attrs.operation == "CREATE":
            if _spec(new).get("configSource") is not None:
                raise refuse(f'node "{node}" is not allowed to create pods with a non-nil configSource')
            refused = forbidden_labels(_meta(new).get("labels") or {}, {})
            if refused:
                raise refuse(
                    f'node "{node}" is not allowed to set the following labels: {", ".join(refused)}'
                )
        elif attrs.operation == "UPDATE":
            old = attrs.old or {}
            source = _spec(new).get("configSource")
            if source is not None and source != _spec(old).get("configSource"):
                raise refuse(
                    f'node "{node}" is not allowed to update configSource to a new non-nil configSource'
                )
            if (_spec(new).get("taints") or []) != (_spec(old).get("taints") or []):
                raise refuse(f'node "{node}" is not allowed to modify taints')
            refused = forbidden_labels(_meta(new).get("labels") or {}, _meta(old).get("labels") or {})
            if refused:
                raise refuse(f"is not allowed to modify labels: {', '.join(refused)}")


def _projected_audiences(pod: Obj) -> set[str]:
    return {
        str((source.get("serviceAccountToken") or {}).get("audience") or "")
        for volume in _spec(pod).get("volumes") or []
        for source in (volume.get("projected") or {}).get("sources") or []
        if source.get("serviceAccountToken") is not None
    }


def _claim_statuses(pod: Obj | None) -> list[tuple[str, str | None]]:
    statuses: Iterable[Obj] = ((pod or {}).get("status") or {}).get("resourceClaimStatuses") or []
    return [(str(s.get("name")), s.get("resourceClaimName")) for s in statuses]


_CLAIM_STATUS_FIELDS = ("capacity", "conditions", "allocatedResourceStatuses", "allocatedResources")


def _admit_claim(node: str, attrs: AdmissionAttributes, refuse: _Refusal) -> None:
    if attrs.subresource != "status":
        raise refuse("may only update PVC status")
    if attrs.operation != "UPDATE":
        raise refuse(f'unexpected operation "{attrs.operation}"')
    old, new = _claim_view(attrs.old), _claim_view(attrs.obj)
    if old != new:
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        raise refuse(
            f'node "{node}" is not allowed to update fields other than status.capacity and status.conditions: '
            f"{', '.join(changed)} changed"
        )


def _claim_view(claim: Obj | None) -> Obj:
    """A PVC without what a node may change (and what any write changes)."""
    view = copy.deepcopy(claim or {})
    meta = view.setdefault("metadata", {})
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    status = view.setdefault("status", {})
    for key in _CLAIM_STATUS_FIELDS:
        status.pop(key, None)
    return view
