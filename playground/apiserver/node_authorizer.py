"""The Node authorizer: what a kubelet (`system:node:<name>` in `system:nodes`) may do.

kube-apiserver runs it before RBAC (`--authorization-mode=Node,RBAC`, as kubeadm and
kind do), following plugin/pkg/auth/authorizer/node: a node reads only what the pods
bound to it need, and the NodeRestriction admission plugin then limits its writes to
its own objects.

- Secrets and ConfigMaps: get, and list/watch narrowed to one name, of those a pod bound
  to the node references (volumes, projected sources, env, envFrom, image pull secrets);
- PersistentVolumeClaims (get; update/patch of `status`), and the PersistentVolumes
  they are bound to (get); ServiceAccounts (get) and their `token` (create) for the
  pods' ServiceAccounts; VolumeAttachments for the node (get);
- its own Node (get, list/watch narrowed to its name; create/update/patch and the
  `status` subresource are left to NodeRestriction), its Lease in `kube-node-lease` and
  its CSINode;
- pods: get of one bound to the node, list/watch with `spec.nodeName=<node>`, create
  and delete (mirror pods), `status` update/patch, `eviction`;
- everything else by the static rules of the `system:node` ClusterRole
  (bootstrappolicy.NodeRules, the compiled-in copy, not the stored object).

kube-apiserver keeps a graph of these relations, fed by informers; the emulator walks
the stored objects instead, so it answers from the current state rather than a cache
that may lag. Not followed: Secrets that only a PersistentVolume references (a
CSI/storage driver's secret), which the real graph reaches through pod -> PVC -> PV, and
the resource.k8s.io kinds (ResourceClaims, ResourceSlices), which the emulator does not
serve.
Answers are "allow" or "no opinion" with kube's reason, as kube-apiserver's are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from .identity import NODES_GROUP, RequestAttributes
from .rbac import Decision, rule_allows
from .resources.base import Obj

NODE_USER_PREFIX = "system:node:"
NODE_LEASE_NAMESPACE = "kube-node-lease"
#: the store's keys of what the graph reads
PODS = "pods"
VOLUME_ATTACHMENTS = "volumeattachments.storage.k8s.io"

#: the stored object of (store key, namespace, name), or None
Lookup = Callable[[str, str, str], Obj | None]
#: the pods of a namespace (every namespace for None)
PodLister = Callable[[str | None], Iterable[Obj]]


def node_name(user_name: str, groups: Iterable[str]) -> str | None:
    """nodeidentifier.NodeIdentity: the node a `system:node:<name>` user in `system:nodes` acts for."""
    if not user_name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in groups:
        return None
    return user_name[len(NODE_USER_PREFIX) :]


def _names(values: Iterable[Obj | None], key: str) -> Iterator[str]:
    for value in values:
        if isinstance(value, dict) and value.get(key):
            yield str(value[key])


def _containers(spec: Obj) -> Iterator[Obj]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


#: volume sources that name a Secret in `secretRef` (podutil.VisitPodSecretNames)
_SECRET_REF_VOLUMES = ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos")


def pod_secret_names(pod: Obj) -> set[str]:
    """podutil.VisitPodSecretNames: every Secret a pod references."""
    spec = pod.get("spec") or {}
    names = set(_names(spec.get("imagePullSecrets") or [], "name"))
    for container in _containers(spec):
        names.update(
            _names(
                ((e.get("valueFrom") or {}).get("secretKeyRef") for e in container.get("env") or []), "name"
            )
        )
        names.update(_names((e.get("secretRef") for e in container.get("envFrom") or []), "name"))
    for volume in spec.get("volumes") or []:
        names.update(_names([volume.get("secret")], "secretName"))
        names.update(_names([volume.get("azureFile")], "secretName"))
        names.update(
            _names(((volume.get(kind) or {}).get("secretRef") for kind in _SECRET_REF_VOLUMES), "name")
        )
        names.update(_names([(volume.get("csi") or {}).get("nodePublishSecretRef")], "name"))
        sources = (volume.get("projected") or {}).get("sources") or []
        names.update(_names((source.get("secret") for source in sources), "name"))
    return names


def pod_configmap_names(pod: Obj) -> set[str]:
    """podutil.VisitPodConfigmapNames: every ConfigMap a pod references."""
    spec = pod.get("spec") or {}
    names: set[str] = set()
    for container in _containers(spec):
        names.update(
            _names(
                ((e.get("valueFrom") or {}).get("configMapKeyRef") for e in container.get("env") or []),
                "name",
            )
        )
        names.update(_names((e.get("configMapRef") for e in container.get("envFrom") or []), "name"))
    for volume in spec.get("volumes") or []:
        names.update(_names([volume.get("configMap")], "name"))
        sources = (volume.get("projected") or {}).get("sources") or []
        names.update(_names((source.get("configMap") for source in sources), "name"))
    return names


def pod_claim_names(pod: Obj) -> set[str]:
    """The PersistentVolumeClaims a pod mounts (an ephemeral volume's claim is `<pod>-<volume>`)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    names: set[str] = set()
    for volume in spec.get("volumes") or []:
        names.update(_names([volume.get("persistentVolumeClaim")], "claimName"))
        if volume.get("ephemeral") is not None:
            names.add(f"{meta.get('name', '')}-{volume.get('name', '')}")
    return names


def pod_service_account(pod: Obj) -> str:
    spec = pod.get("spec") or {}
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "")


#: what a pod must reference for the node to reach an object of each kind through it
_POD_EDGES: dict[str, Callable[[Obj], set[str]]] = {
    "secrets": pod_secret_names,
    "configmaps": pod_configmap_names,
    "persistentvolumeclaims": pod_claim_names,
    "serviceaccounts": lambda pod: {pod_service_account(pod)},
}


#: how many pods' references the graph remembers before it starts afresh
REFERENCE_CACHE = 50_000


class NodeGraph:
    """The relations the Node authorizer follows, read from the store.

    What a pod references is worked out once per stored version of the pod (stored
    objects are never changed in place, so uid and resourceVersion name one content).
    """

    def __init__(self, *, get: Lookup, pods: PodLister) -> None:
        self.get = get
        self.pods = pods
        self._references: dict[tuple[str, str, str, str], set[str]] = {}

    def _references_of(self, resource: str, pod: Obj) -> set[str]:
        meta = pod.get("metadata") or {}
        key = (resource, str(meta.get("uid")), str(meta.get("resourceVersion")), str(meta.get("name")))
        found = self._references.get(key)
        if found is None:
            if len(self._references) >= REFERENCE_CACHE:
                self._references.clear()
            found = self._references[key] = _POD_EDGES[resource](pod)
        return found

    def _pods_on(self, node: str, namespace: str | None) -> Iterator[Obj]:
        return (pod for pod in self.pods(namespace) if (pod.get("spec") or {}).get("nodeName") == node)

    def related(self, node: str, resource: str, namespace: str, name: str) -> bool:
        """Whether a path leads from the object to the node (hasPathFrom)."""
        if resource == "pods":
            pod = self.get(PODS, namespace, name)
            return pod is not None and (pod.get("spec") or {}).get("nodeName") == node
        if resource in _POD_EDGES:
            return any(name in self._references_of(resource, pod) for pod in self._pods_on(node, namespace))
        if resource == "persistentvolumes":
            return any(
                ((self.get("persistentvolumeclaims", pod_namespace, claim) or {}).get("spec") or {}).get(
                    "volumeName"
                )
                == name
                for pod in self._pods_on(node, None)
                for pod_namespace in [str((pod.get("metadata") or {}).get("namespace") or "")]
                for claim in self._references_of("persistentvolumeclaims", pod)
            )
        if resource == "volumeattachments":
            attachment = self.get(VOLUME_ATTACHMENTS, "", name)
            return attachment is not None and (attachment.get("spec") or {}).get("nodeName") == node
        return False


_NO_RELATIONSHIP = "no relationship found between node '{node}' and this object"


class NodeAuthorizer:
    """`authorize(attrs)` for requests of nodes; everyone else gets no opinion."""

    def __init__(self, graph: NodeGraph, *, node_rules: Iterable[Obj]) -> None:
        self._graph = graph
        self._rules = tuple(node_rules)

    def authorize(self, attrs: RequestAttributes) -> Decision | None:
        """Allow, or deny with kube's reason; None when the user is not a node (no opinion at all)."""
        node = node_name(attrs.user.name, attrs.user.groups)
        if node is None:
            return None
        if not node:
            return Decision(False, f"unknown node for user {_quote(attrs.user.name)}")
        if attrs.resource_request:
            decided = self._subdivided(node, attrs)
            if decided is not None:
                return decided
        if any(rule_allows(attrs, rule) for rule in self._rules):
            return Decision(True)
        return Decision(False)

    def _subdivided(self, node: str, attrs: RequestAttributes) -> Decision | None:
        group, resource = attrs.api_group, attrs.resource
        if group == "":
            if resource in ("secrets", "configmaps"):
                return self._read_namespaced(node, attrs)
            if resource == "persistentvolumeclaims":
                if attrs.subresource == "status":
                    return self._status_update(node, attrs)
                return self._get(node, attrs)
            if resource == "persistentvolumes":
                return self._get(node, attrs)
            if resource == "serviceaccounts":
                if attrs.verb == "get" and not attrs.subresource:
                    return self._get(node, attrs)
                return self._create_token(node, attrs)
            if resource == "nodes":
                return _node(node, attrs)
            if resource == "pods":
                return self._pod(node, attrs)
        if group == "storage.k8s.io" and resource == "volumeattachments":
            return self._get(node, attrs)
        if group == "coordination.k8s.io" and resource == "leases":
            return _lease(node, attrs)
        if group == "storage.k8s.io" and resource == "csinodes":
            return _csinode(node, attrs)
        return None

    def _related(self, node: str, attrs: RequestAttributes) -> Decision:
        if not attrs.name:
            return Decision(False, "No Object name found")
        if self._graph.related(node, attrs.resource, attrs.namespace, attrs.name):
            return Decision(True)
        return Decision(False, _NO_RELATIONSHIP.format(node=node))

    def _get(self, node: str, attrs: RequestAttributes) -> Decision:
        if attrs.verb != "get":
            return Decision(False, "can only get individual resources of this type")
        if attrs.subresource:
            return Decision(False, "cannot get subresource")
        return self._related(node, attrs)

    def _status_update(self, node: str, attrs: RequestAttributes) -> Decision:
        if attrs.verb not in ("update", "patch"):
            return Decision(False, "can only get/update/patch this type")
        return self._related(node, attrs)

    def _read_namespaced(self, node: str, attrs: RequestAttributes) -> Decision:
        if attrs.verb not in ("get", "list", "watch"):
            return Decision(False, "can only read resources of this type")
        if attrs.subresource:
            return Decision(False, "cannot read subresource")
        if not attrs.namespace:
            return Decision(False, "can only read namespaced object of this type")
        return self._related(node, attrs)

    def _create_token(self, node: str, attrs: RequestAttributes) -> Decision:
        if attrs.verb != "create" or not attrs.name:
            return Decision(False, "can only create tokens for individual service accounts")
        if attrs.subresource != "token":
            return Decision(False, "can only create token subresource of serviceaccount")
        if self._graph.related(node, "serviceaccounts", attrs.namespace, attrs.name):
            return Decision(True)
        return Decision(False, _NO_RELATIONSHIP.format(node=node))

    def _pod(self, node: str, attrs: RequestAttributes) -> Decision:
        verb, sub = attrs.verb, attrs.subresource
        if not sub:
            if verb == "get":
                return self._get(node, attrs)
            if verb in ("list", "watch"):
                if ("spec.nodeName", node) in attrs.fields:
                    return Decision(True)
                if attrs.name:
                    return self._related(node, attrs)
                return Decision(False, "can only list/watch pods with spec.nodeName field selector")
            if verb in ("create", "delete"):
                return Decision(True)  # mirror pods; NodeRestriction limits them to the node
        if sub == "status" and verb in ("update", "patch"):
            return Decision(True)  # NodeRestriction limits it to the node's pods
        if sub == "eviction" and verb == "create":
            return Decision(True)
        return Decision(False)


def _node(node: str, attrs: RequestAttributes) -> Decision:
    verb, sub = attrs.verb, attrs.subresource
    if not sub:
        if verb in ("create", "update", "patch"):
            return Decision(True)  # NodeRestriction limits a node to its own Node object
        if verb in ("get", "list", "watch"):
            if attrs.name == node:
                return Decision(True)
            if not attrs.name:
                return Decision(False, f"node '{node}' cannot read all nodes, only its own Node object")
            return Decision(False, f"node '{node}' cannot read '{attrs.name}', only its own Node object")
    if sub == "status" and verb in ("update", "patch"):
        return Decision(True)
    return Decision(False)


def _lease(node: str, attrs: RequestAttributes) -> Decision:
    if attrs.verb not in ("get", "create", "update", "patch", "delete"):
        return Decision(False, "can only get, create, update, patch, or delete a node lease")
    if attrs.namespace != NODE_LEASE_NAMESPACE:
        return Decision(False, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
    if attrs.verb != "create" and attrs.name != node:
        return Decision(False, "can only access node lease with the same name as the requesting node")
    return Decision(True)


def _csinode(node: str, attrs: RequestAttributes) -> Decision:
    if attrs.verb not in ("get", "create", "update", "patch", "delete"):
        return Decision(False, "can only get, create, update, patch, or delete a CSINode")
    if attrs.subresource:
        return Decision(False, "cannot authorize CSINode subresources")
    if attrs.verb != "create" and attrs.name != node:
        return Decision(False, "can only access CSINode with the same name as the requesting node")
    return Decision(True)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
