"""The runtime's CustomResourceDefinitions, built from the shapes of its kinds.

One `Kind` per API kind: where it is served (`resource`), its spec and status schemas,
and the printer columns that make `kubectl get` read like Liqo's documentation. The
install builder and the front ends take the CRD manifests from `crds()`; controllers
take the `Resource` constants from here too, so a kind is described once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import constants as c
from .objects import JSON
from .openapi import (
    Schema,
    array,
    boolean,
    conditions,
    fields,
    immutable,
    integer,
    obj,
    open_object,
    quantity_map,
    string,
    string_map,
)
from .resource import Resource

PEERING_PHASES = ("None", "Pending", "Established", "Disconnecting", "Error")


@dataclass(frozen=True)
class Column:
    name: str
    json_path: str
    type: str = "string"
    priority: int = 0
    description: str = ""


@dataclass(frozen=True)
class Kind:
    resource: Resource
    singular: str
    description: str
    spec: Schema
    #: None: the kind has no status (and no status subresource)
    status: Schema | None
    short_names: tuple[str, ...] = ()
    columns: tuple[Column, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        """The CRD's name: `<plural>.<group>`."""
        return f"{self.resource.plural}.{self.resource.group}"

    def crd(self) -> JSON:
        """The CustomResourceDefinition manifest (apiextensions.k8s.io/v1)."""
        resource = self.resource
        properties = {
            "apiVersion": string(),
            "kind": string(),
            "metadata": {"type": "object"},
            "spec": self.spec,
        }
        if self.status is not None:
            properties["status"] = self.status
        schema = fields(properties, self.description)
        columns = [
            {"name": col.name, "type": col.type, "jsonPath": col.json_path}
            | ({"priority": col.priority} if col.priority else {})
            | ({"description": col.description} if col.description else {})
            for col in (*self.columns, Column("Age", ".metadata.creationTimestamp", "date"))
        ]
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": self.name,
                "labels": {c.LABEL_PART_OF: c.PART_OF, c.LABEL_MANAGED_BY: c.MANAGED_BY},
            },
            "spec": {
                "group": resource.group,
                "scope": "Namespaced" if resource.namespaced else "Cluster",
                "names": {
                    "plural": resource.plural,
                    "singular": self.singular,
                    "kind": resource.kind,
                    "listKind": f"{resource.kind}List",
                    "categories": ["liqo"],
                    **({"shortNames": list(self.short_names)} if self.short_names else {}),
                },
                "versions": [
                    {
                        "name": resource.version,
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": schema},
                        **({"subresources": {"status": {}}} if self.status is not None else {}),
                        "additionalPrinterColumns": columns,
                    }
                ],
            },
        }


def _resource(group: str, plural: str, kind: str, *, namespaced: bool = True) -> Resource:
    return Resource(group, c.VERSION, plural, namespaced=namespaced, kind=kind)


def _object_ref(description: str) -> Schema:
    return obj(description, required=("name",), name=string(), namespace=string())


def _resources(description: str) -> Schema:
    return quantity_map(
        description
        + " Keys are resource names (cpu, memory, pods, ephemeral-storage, or an extended resource)."
    )


def _module(description: str) -> Schema:
    return obj(
        description,
        enabled=boolean("Whether the module runs for this peer."),
        conditions=conditions("The module's conditions, in Liqo's words.", statuses=c.LIQO_STATUSES),
    )


_TAINT = obj(
    required=("key", "effect"),
    key=string(),
    value=string(),
    effect=string(enum=("NoSchedule", "PreferNoSchedule", "NoExecute")),
)


def _pod_security() -> JSON:
    return string(
        "The Pod Security Standards level offloaded pods are held to on the provider (its twin namespaces' "
        "Pod Security Admission labels and its admission webhook): baseline, the floor every provider "
        "enforces, or restricted.",
        enum=c.POD_SECURITY_LEVELS,
        default=c.POD_SECURITY_BASELINE,
    )


FOREIGN_CLUSTER = Kind(
    resource=_resource(c.CORE_GROUP, "foreignclusters", "ForeignCluster", namespaced=False),
    singular="foreigncluster",
    short_names=("fc",),
    description="A remote cluster this one knows: how to reach it and the state of each peering module.",
    spec=obj(
        "How to peer with the remote cluster.",
        required=("clusterID",),
        clusterID=immutable(string("The remote cluster's id (a UUID)."), "clusterID is immutable"),
        clusterName=string("The remote cluster's name; the virtual node is called liqo-<clusterName>."),
        peeringType=string("How the peering was set up.", enum=("OutOfBand", "InBand"), default="OutOfBand"),
        authURL=string("HTTPS URL of the remote cluster's authentication service."),
        tokenSecretRef=_object_ref("The Secret holding the peering token (key `token`)."),
        outgoingPeeringEnabled=boolean(
            "Consume the remote cluster's resources (a virtual node here).", default=True
        ),
        networkingEnabled=boolean(
            "Extend the pod network to the remote cluster (a gateway per side, a WireGuard tunnel between them).",
            default=True,
        ),
        resources=_resources("Resources requested from the remote cluster; empty takes its default share."),
        nodeLabels=string_map("Extra labels for the virtual node standing for the remote cluster."),
        podSecurity=_pod_security(),
    ),
    status=obj(
        "Observed state of the peering.",
        role=string(
            "What the remote cluster is to this one, as Liqo names it: Provider (this cluster consumes its"
            " resources), Consumer (it consumes this cluster's), ConsumerAndProvider, or Unknown.",
            enum=c.PEER_ROLES,
        ),
        outgoingPeering=string("Phase of the peering where this cluster consumes.", enum=PEERING_PHASES),
        incomingPeering=string("Phase of the peering where this cluster provides.", enum=PEERING_PHASES),
        networking=string("Phase of the network fabric towards the remote cluster.", enum=PEERING_PHASES),
        authentication=string("Phase of the authentication with the remote cluster.", enum=PEERING_PHASES),
        modules=obj(
            "Per-module state.",
            authentication=_module("Identity exchange with the remote cluster."),
            offloading=_module("Resource negotiation and the virtual node."),
            networking=_module("The network fabric."),
        ),
        tenantNamespace=obj(
            "The namespaces holding this peering's objects.",
            local=string("Here."),
            remote=string("On the remote cluster."),
        ),
        remoteVersion=string("The remote cluster's runtime version."),
        apiServerUrl=string("The remote cluster's API server, as its authentication service advertised it."),
        authServiceKeyFingerprint=string(
            "sha256:<hex> of the public key of the remote authentication service's certificate, trusted on the"
            " first contact; later contacts refuse another key. Clear it to trust a new key."
        ),
        virtualNodes=array(string(), "Virtual nodes standing for the remote cluster."),
        observedGeneration=integer(),
        conditions=conditions(),
    ),
    columns=(
        Column("Type", ".spec.peeringType"),
        Column("Outgoing peering", ".status.outgoingPeering"),
        Column("Incoming peering", ".status.incomingPeering"),
        Column("Networking", ".status.networking"),
        Column("Authentication", ".status.authentication"),
        Column("Cluster ID", ".spec.clusterID", priority=1),
    ),
)

TENANT = Kind(
    resource=_resource(c.AUTHENTICATION_GROUP, "tenants", "Tenant"),
    singular="tenant",
    description="On a provider: one consumer cluster allowed to use this cluster, and its identity.",
    spec=obj(
        required=("clusterID",),
        clusterID=immutable(string("The consumer's cluster id."), "clusterID is immutable"),
        clusterName=string("The consumer's cluster name."),
        publicKey=string("The consumer's Ed25519 public key (base64), used to sign renewal requests."),
        tenantCondition=string(
            "Active admits new workloads; Cordoned keeps existing ones; Drained evicts them.",
            enum=("Active", "Cordoned", "Drained"),
            default="Active",
        ),
        serviceAccountName=string("The ServiceAccount the consumer's credentials belong to."),
    ),
    status=obj(
        tenantNamespace=string("The namespace of this tenant."),
        credentialExpiresAt=string("Expiry of the last credential issued.", fmt="date-time"),
        observedGeneration=integer(),
        conditions=conditions(),
    ),
    columns=(Column("Cluster ID", ".spec.clusterID"), Column("Condition", ".spec.tenantCondition")),
)

RESOURCE_SLICE = Kind(
    resource=_resource(c.AUTHENTICATION_GROUP, "resourceslices", "ResourceSlice"),
    singular="resourceslice",
    description="A share of a provider's resources requested by a consumer, and what the provider granted.",
    spec=fields(
        {
            "class": string("The slice class; `default` is the only one today.", default="default"),
            "consumerClusterID": immutable(
                string("The consumer's cluster id."), "consumerClusterID is immutable"
            ),
            "providerClusterID": string("The provider's cluster id."),
            "resources": _resources("Requested resources; empty asks for the provider's default share."),
        },
        "What the consumer asks for.",
    ),
    status=obj(
        "What the provider granted.",
        resources=_resources("Granted resources."),
        conditions=conditions("Authentication and Resources: Accepted or Denied, with the reason."),
        observedGeneration=integer(),
    ),
    columns=(
        Column("Authentication", '.status.conditions[?(@.type=="Authentication")].reason'),
        Column("Resources", '.status.conditions[?(@.type=="Resources")].reason'),
    ),
)

IDENTITY = Kind(
    resource=_resource(c.AUTHENTICATION_GROUP, "identities", "Identity"),
    singular="identity",
    description="On a consumer: the credential it holds for a provider cluster.",
    spec=obj(
        required=("clusterID",),
        clusterID=string("The provider's cluster id."),
        clusterName=string("The provider's cluster name."),
        secretRef=_object_ref("The Secret holding the kubeconfig for the provider (key `kubeconfig`)."),
        apiServerURL=string("The provider's API server URL."),
        remoteVersion=string("The provider's runtime version, as its authentication service last said."),
        authServiceKeyFingerprint=string(
            "sha256:<hex> of the public key of the provider's authentication service the credential came from."
        ),
    ),
    status=obj(
        expiresAt=string("When the credential expires.", fmt="date-time"),
        renewAfter=string("When the credential will be renewed.", fmt="date-time"),
        conditions=conditions(),
    ),
    columns=(Column("Cluster ID", ".spec.clusterID"), Column("Expires", ".status.expiresAt")),
)

VIRTUAL_NODE = Kind(
    resource=_resource(c.OFFLOADING_GROUP, "virtualnodes", "VirtualNode"),
    singular="virtualnode",
    short_names=("vn",),
    description="On a consumer: a virtual node standing for (a share of) a provider, and its virtual kubelet.",
    spec=obj(
        required=("clusterID",),
        clusterID=immutable(string("The provider's cluster id."), "clusterID is immutable"),
        clusterName=string("The provider's cluster name."),
        nodeName=string("The Node's name (default liqo-<clusterName>)."),
        createNode=boolean("Register the Node (false keeps only the offloading machinery).", default=True),
        credentialSecretRef=_object_ref("The Secret with the kubeconfig for the provider."),
        resourceSliceName=string(
            "The ResourceSlice (on the provider) whose granted resources the node advertises."
        ),
        resources=_resources("The node's capacity (set from the ResourceSlice's granted resources)."),
        labels=string_map("Labels of the Node."),
        taints=array(_TAINT, "Taints of the Node (the virtual-node taint is always added)."),
        image=string("The virtual kubelet's image."),
        podSecurity=_pod_security(),
    ),
    status=obj(
        nodeName=string(),
        conditions=conditions(),
        observedGeneration=integer(),
    ),
    columns=(
        Column("Cluster ID", ".spec.clusterID"),
        Column("Node", ".status.nodeName"),
        Column("Ready", '.status.conditions[?(@.type=="Ready")].status'),
    ),
)

QUOTA = Kind(
    resource=_resource(c.OFFLOADING_GROUP, "quotas", "Quota"),
    singular="quota",
    description="On a provider: the resources a consumer may use, enforced on its offloaded workloads.",
    spec=obj(
        required=("user",),
        user=string("The consumer's user (its ServiceAccount's full name)."),
        limits=_resources("The granted resources."),
        limitsEnforcement=string(
            "How much a pod must declare: None (its requests count), Soft (every container requests cpu and "
            "memory) or Hard (and limits equal requests).",
            enum=("None", "Soft", "Hard"),
            default="Hard",
        ),
        cordoned=boolean("Admit no new workloads.", default=False),
    ),
    status=obj(used=_resources("What offloaded workloads use now."), conditions=conditions()),
    columns=(
        Column("Enforcement", ".spec.limitsEnforcement"),
        Column("Cordoned", ".spec.cordoned", "boolean"),
    ),
)

_NODE_SELECTOR_REQUIREMENT = obj(
    required=("key", "operator"),
    key=string("The label key the requirement applies to."),
    operator=string(
        "In and NotIn need values, Exists and DoesNotExist none, Gt and Lt a single integer.",
        enum=("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"),
    ),
    values=array(string(), "The values of In, NotIn, Gt and Lt."),
)

_CLUSTER_SELECTOR = {
    **obj(
        "Which remote clusters get the namespace, as a node selector over the labels of their virtual nodes: "
        "terms are ORed, the expressions of a term ANDed; no terms selects every remote cluster.",
        nodeSelectorTerms=array(
            {
                **obj(
                    matchExpressions=array(_NODE_SELECTOR_REQUIREMENT, "Requirements on the node's labels."),
                    matchFields=array(_NODE_SELECTOR_REQUIREMENT, "Requirements on the node's fields."),
                ),
                "x-kubernetes-map-type": "atomic",
            },
            "The terms, ORed.",
        ),
    ),
    "x-kubernetes-map-type": "atomic",
}

_REMOTE_NAMESPACE_CONDITION = obj(
    required=("type", "status"),
    type=string("OffloadingRequired (the cluster is selected) or Ready (its twin namespace exists)."),
    status=string("True, False or Unknown.", enum=("True", "False", "Unknown")),
    reason=string("One CamelCase word for the last transition."),
    message=string("What happened, in a sentence a user can act on."),
    lastTransitionTime=string("When the status last changed.", fmt="date-time"),
)

NAMESPACE_OFFLOADING = Kind(
    resource=_resource(c.OFFLOADING_GROUP, "namespaceoffloadings", "NamespaceOffloading"),
    singular="namespaceoffloading",
    short_names=("nso", "nsof", "nsoff", "nsoffloading"),
    description=(
        "Offloads the namespace it lives in (one per namespace, named `offloading`) to the remote clusters its "
        "selector picks: a twin namespace on each, where pods scheduled onto their virtual nodes run."
    ),
    spec=obj(
        namespaceMappingStrategy=immutable(
            string(
                "How the twin namespaces are named: DefaultName (<namespace>-<this cluster's name>), "
                "EnforceSameName (the namespace's own name) or SelectedName (remoteNamespaceName). Immutable.",
                enum=c.MAPPING_STRATEGIES,
                default=c.MAPPING_DEFAULT_NAME,
            ),
            "namespaceMappingStrategy is immutable: unoffload the namespace and offload it again to change it",
        ),
        remoteNamespaceName=string(
            "The twin namespaces' name with SelectedName (required there, ignored otherwise). Immutable."
        ),
        podOffloadingStrategy=string(
            "Where the namespace's pods may run: Local (local nodes only), Remote (virtual nodes only) or "
            "LocalAndRemote (either, as the scheduler picks).",
            enum=c.POD_OFFLOADING_STRATEGIES,
            default=c.POD_OFFLOADING_LOCAL_AND_REMOTE,
        ),
        clusterSelector=_CLUSTER_SELECTOR,
    ),
    status=obj(
        offloadingPhase=string(
            "Ready (every selected cluster has its twin namespace), NoClusterSelected, InProgress, SomeFailed, "
            "AllFailed or Terminating.",
            enum=c.OFFLOADING_PHASES,
        ),
        remoteNamespaceName=string("The twin namespaces' name, from the mapping strategy."),
        remoteNamespacesConditions={
            "type": "object",
            "description": (
                "Per remote cluster (by name): OffloadingRequired (whether the selector picks it) and Ready "
                "(whether its twin namespace exists)."
            ),
            "additionalProperties": array(_REMOTE_NAMESPACE_CONDITION, list_type="map", keys=("type",)),
        },
        observedGeneration=integer("The generation the status speaks of."),
    ),
    columns=(
        Column("NamespaceMappingStrategy", ".spec.namespaceMappingStrategy"),
        Column("PodOffloadingStrategy", ".spec.podOffloadingStrategy"),
        Column("OffloadingPhase", ".status.offloadingPhase"),
        Column("RemoteNamespaceName", ".status.remoteNamespaceName", priority=1),
    ),
)

_LABEL_SELECTOR = {
    **obj(
        "Which namespaces, by their labels (a LabelSelector: matchLabels and matchExpressions ANDed; empty "
        "selects every namespace).",
        matchLabels=string_map("Labels a namespace must have, with these values."),
        matchExpressions=array(
            obj(
                required=("key", "operator"),
                key=string("The label key the requirement applies to."),
                operator=string(
                    "In and NotIn need values, Exists and DoesNotExist none.",
                    enum=("In", "NotIn", "Exists", "DoesNotExist"),
                ),
                values=array(string(), "The values of In and NotIn."),
            ),
            "Requirements on the namespace's labels.",
        ),
    ),
    "x-kubernetes-map-type": "atomic",
}

NAMESPACE_OFFLOADING_SET = Kind(
    resource=_resource(
        c.OFFLOADING_GROUP, "namespaceoffloadingsets", "NamespaceOffloadingSet", namespaced=False
    ),
    singular="namespaceoffloadingset",
    short_names=("nsoset",),
    description=(
        "Offloads every namespace its selector picks, those that appear later included (Liqo's `liqoctl offload "
        "namespace --ns-selector`, kept up to date): each gets a NamespaceOffloading from the template, labelled "
        "with the set's name. A namespace that has a NamespaceOffloading of its own is left alone (a conflict "
        "in the status); a namespace that stops matching is unoffloaded."
    ),
    spec=obj(
        required=("namespaceSelector",),
        namespaceSelector=_LABEL_SELECTOR,
        template=obj(
            "The spec of the NamespaceOffloadings it makes.",
            namespaceMappingStrategy=immutable(
                string(
                    "How the twin namespaces are named: DefaultName (<namespace>-<this cluster's name>) or "
                    "EnforceSameName (the namespace's own name); SelectedName names one namespace and has no "
                    "place here. Immutable.",
                    enum=(c.MAPPING_DEFAULT_NAME, c.MAPPING_ENFORCE_SAME_NAME),
                    default=c.MAPPING_DEFAULT_NAME,
                ),
                "namespaceMappingStrategy is immutable: delete the set and make it again to change it",
            ),
            podOffloadingStrategy=string(
                "Where the namespaces' pods may run: Local, Remote or LocalAndRemote.",
                enum=c.POD_OFFLOADING_STRATEGIES,
                default=c.POD_OFFLOADING_LOCAL_AND_REMOTE,
            ),
            clusterSelector=_CLUSTER_SELECTOR,
        ),
    ),
    status=obj(
        namespaces=array(string(), "The namespaces it offloads (their NamespaceOffloading is its), by name."),
        conflicts=array(
            obj(
                required=("namespace", "message"),
                namespace=string("A namespace the selector picks."),
                message=string("Why the set does not offload it."),
            ),
            "Namespaces the selector picks that it leaves alone: they have a NamespaceOffloading of their own.",
            list_type="map",
            keys=("namespace",),
        ),
        offloadedNamespaces=integer("How many namespaces it offloads."),
        observedGeneration=integer("The generation the status speaks of."),
    ),
    columns=(
        Column("Namespaces", ".status.offloadedNamespaces", "integer"),
        Column("Conflicts", ".status.conflicts[*].namespace", priority=1),
    ),
)

NAMESPACE_MAP = Kind(
    resource=_resource(c.OFFLOADING_GROUP, "namespacemaps", "NamespaceMap"),
    singular="namespacemap",
    short_names=("nm",),
    description=(
        "One per remote cluster: which local namespaces are offloaded there and under which remote names. The "
        "consumer keeps it in its tenant namespace and a copy in its tenant namespace on the provider, whose "
        "runtime creates the twin namespaces the copy asks for and reports them in its status."
    ),
    spec=obj(
        desiredMapping=string_map("Local namespace name to the twin namespace's name."),
        podSecurity=_pod_security(),
    ),
    status=obj(
        currentMapping={
            "type": "object",
            "description": "Local namespace name to its twin namespace and how far it got.",
            "additionalProperties": obj(
                required=("remoteNamespace", "phase"),
                remoteNamespace=string("The twin namespace's name."),
                phase=string(
                    "Accepted (the twin namespace exists), CreationLoopBackOff (it cannot be made: see message) "
                    "or Terminating.",
                    enum=c.MAPPING_PHASES,
                ),
                message=string("Why the twin namespace cannot be made, when it cannot."),
            ),
        },
        observedGeneration=integer("The generation the status speaks of."),
    ),
)

SHADOW_POD = Kind(
    resource=_resource(c.OFFLOADING_GROUP, "shadowpods", "ShadowPod"),
    singular="shadowpod",
    short_names=("shp",),
    description=(
        "On a provider: a pod offloaded by a consumer. The provider's runtime keeps a Pod of the same name for "
        "it (recreated if deleted, kept while the consumer is unreachable)."
    ),
    spec=obj(pod=open_object("The pod's spec, as the consumer adapted it for this cluster.")),
    status=obj(
        phase=string("The Pod's phase."),
        podUID=string("The uid of the Pod that runs now."),
        recreations=integer("How many times the Pod was created again after it vanished.", minimum=0),
        conditions=conditions("Accepted: whether this cluster runs the pod, and why not."),
    ),
    columns=(
        Column("Phase", ".status.phase"),
        Column("Recreations", ".status.recreations", "integer", priority=1),
    ),
)

_ENDPOINT = obj(
    "One endpoint (discovery.k8s.io/v1 Endpoint).",
    required=("addresses",),
    addresses=array(string(), "The endpoint's addresses, of the slice's address type.", list_type="set"),
    conditions=obj(
        "What the endpoint is ready for.",
        ready=boolean("Ready to receive traffic."),
        serving=boolean("Serving, even while terminating."),
        terminating=boolean("Terminating."),
    ),
    hostname=string("The endpoint's hostname (headless Services' DNS)."),
    nodeName=string("The node hosting the endpoint."),
    zone=string("The zone the endpoint is in."),
    hints=open_object("Topology hints."),
    targetRef=open_object("The object the endpoint stands for."),
    deprecatedTopology=string_map("Deprecated topology labels."),
)
_ENDPOINT_PORT = obj(
    "One port of the endpoints (discovery.k8s.io/v1 EndpointPort).",
    name=string("The port's name (the Service port's)."),
    port=integer("The port number."),
    protocol=string("TCP, UDP or SCTP.", enum=("TCP", "UDP", "SCTP")),
    appProtocol=string("The application protocol."),
)
SHADOW_ENDPOINT_SLICE = Kind(
    resource=_resource(c.OFFLOADING_GROUP, "shadowendpointslices", "ShadowEndpointSlice"),
    singular="shadowendpointslice",
    short_names=("shes", "sheps", "seps"),
    description=(
        "On a provider: an EndpointSlice reflected by a consumer (the endpoints this cluster cannot see), which "
        "the provider's runtime keeps as an EndpointSlice of the same name."
    ),
    spec=obj(
        template=obj(
            "The EndpointSlice's address type, endpoints and ports.",
            addressType=string("IPv4, IPv6 or FQDN.", enum=("IPv4", "IPv6", "FQDN")),
            endpoints=array(_ENDPOINT, "The endpoints."),
            ports=array(_ENDPOINT_PORT, "The ports of every endpoint."),
        )
    ),
    status=None,
)

_CIDRS = obj(
    "A cluster's networks.",
    pod=array(string(), "Pod CIDRs."),
    external=array(string(), "External CIDRs (addresses standing for what lies outside the pod network)."),
)
_ENDPOINT = obj(
    "Where a gateway server is reached.",
    addresses=array(
        string(), "Addresses (node addresses for a NodePort Service, the ingress for a LoadBalancer)."
    ),
    port=integer("UDP port.", minimum=0),
    protocol=string("Transport protocol.", enum=("UDP",), default="UDP"),
)
_SECRET_REF = obj("The Secret with the gateway's WireGuard private key.", name=string(), namespace=string())
_PUBLIC_KEY = string("This gateway's WireGuard public key, for the other side.")
_MTU = integer("MTU of the tunnel interface.", minimum=576, default=1340)
_REMOTE_CLUSTER_ID = string("The cluster at the other end of the tunnel.")

NETWORK = Kind(
    resource=_resource(c.IPAM_GROUP, "networks", "Network"),
    singular="network",
    description=(
        "A network the IPAM gives out: a peer's pod CIDR as this cluster knows it. The allocation in the status"
        " is kept across restarts and never overlaps this cluster's own networks or another peer's."
    ),
    spec=obj(
        required=("cidr",),
        cidr=immutable(string("The network asked for (the peer's real pod CIDR)."), "cidr is immutable"),
        remoteClusterID=string("The peer the network belongs to."),
    ),
    status=obj(cidr=string("The network given: the request itself when free, else a remapped one.")),
    columns=(Column("Desired CIDR", ".spec.cidr"), Column("Remapped CIDR", ".status.cidr")),
)

CONFIGURATION = Kind(
    resource=_resource(c.NETWORKING_GROUP, "configurations", "Configuration"),
    singular="configuration",
    description=(
        "The networks of a peering, in the tenant namespace of the remote cluster: this cluster's and the remote"
        " one's, and how each side remapped the other."
    ),
    spec=obj(
        remoteClusterID=string("The remote cluster's id."),
        local=obj("This cluster.", cidr=_CIDRS),
        remote=obj("The remote cluster, as it reported its networks.", cidr=_CIDRS),
    ),
    status=obj(
        remote=obj(
            "The remote cluster's networks as this cluster knows them (remapped by its IPAM).", cidr=_CIDRS
        ),
        local=obj(
            "This cluster's networks as the remote cluster knows them (remapped by its IPAM).", cidr=_CIDRS
        ),
        conditions=conditions(),
    ),
    columns=(
        Column("Desired pod CIDR", ".spec.remote.cidr.pod[0]"),
        Column("Remapped pod CIDR", ".status.remote.cidr.pod[0]"),
    ),
)

GATEWAY_SERVER = Kind(
    resource=_resource(c.NETWORKING_GROUP, "gatewayservers", "GatewayServer"),
    singular="gatewayserver",
    short_names=("gws",),
    description="A peering's gateway that listens (on the provider): a WireGuard endpoint behind a Service.",
    spec=obj(
        endpoint=obj(
            "How the gateway is exposed.",
            serviceType=string("The Service's type.", enum=("NodePort", "LoadBalancer"), default="NodePort"),
            port=integer("The Service port.", minimum=1, default=51840),
        ),
        mtu=_MTU,
        remoteClusterID=_REMOTE_CLUSTER_ID,
    ),
    status=obj(endpoint=_ENDPOINT, secretRef=_SECRET_REF, publicKey=_PUBLIC_KEY, conditions=conditions()),
    columns=(
        Column("Address", ".status.endpoint.addresses[0]"),
        Column("Port", ".status.endpoint.port", "integer"),
    ),
)

GATEWAY_CLIENT = Kind(
    resource=_resource(c.NETWORKING_GROUP, "gatewayclients", "GatewayClient"),
    singular="gatewayclient",
    short_names=("gwc",),
    description="A peering's gateway that connects (on the consumer) to the provider's gateway server.",
    spec=obj(endpoint=_ENDPOINT, mtu=_MTU, remoteClusterID=_REMOTE_CLUSTER_ID),
    status=obj(secretRef=_SECRET_REF, publicKey=_PUBLIC_KEY, conditions=conditions()),
    columns=(
        Column("Address", ".spec.endpoint.addresses[0]"),
        Column("Port", ".spec.endpoint.port", "integer"),
    ),
)

PUBLIC_KEY = Kind(
    resource=_resource(c.NETWORKING_GROUP, "publickeys", "PublicKey"),
    singular="publickey",
    description="The WireGuard public key of a gateway of the cluster named in the label liqo.io/remote-cluster-id.",
    spec=obj(required=("publicKey",), publicKey=string("Base64 Curve25519 public key.")),
    status=obj(),
)

CONNECTION = Kind(
    resource=_resource(c.NETWORKING_GROUP, "connections", "Connection"),
    singular="connection",
    description="The state of a peering's tunnel, as its gateway sees it.",
    spec=obj(
        remoteClusterID=string("The cluster at the other end."),
        gatewayType=string("This side's gateway.", enum=("Server", "Client")),
    ),
    status=obj(
        value=string(
            "Connected once a handshake happened recently.", enum=("Connecting", "Connected", "Error")
        ),
        latency=obj(value=string("Round trip through the tunnel."), timestamp=string()),
        latestHandshake=string("When the last WireGuard handshake completed (RFC 3339)."),
        message=string(),
    ),
    columns=(
        Column("Status", ".status.value"),
        Column("Latency", ".status.latency.value"),
        Column("Gateway", ".spec.gatewayType"),
    ),
)

KINDS: tuple[Kind, ...] = (
    FOREIGN_CLUSTER,
    TENANT,
    RESOURCE_SLICE,
    IDENTITY,
    VIRTUAL_NODE,
    QUOTA,
    NAMESPACE_OFFLOADING,
    NAMESPACE_OFFLOADING_SET,
    NAMESPACE_MAP,
    SHADOW_POD,
    SHADOW_ENDPOINT_SLICE,
    NETWORK,
    CONFIGURATION,
    GATEWAY_SERVER,
    GATEWAY_CLIENT,
    PUBLIC_KEY,
    CONNECTION,
)

FOREIGNCLUSTERS = FOREIGN_CLUSTER.resource
TENANTS = TENANT.resource
RESOURCESLICES = RESOURCE_SLICE.resource
IDENTITIES = IDENTITY.resource
VIRTUALNODES = VIRTUAL_NODE.resource
QUOTAS = QUOTA.resource
NAMESPACEOFFLOADINGS = NAMESPACE_OFFLOADING.resource
NAMESPACEOFFLOADINGSETS = NAMESPACE_OFFLOADING_SET.resource
NAMESPACEMAPS = NAMESPACE_MAP.resource
SHADOWPODS = SHADOW_POD.resource
SHADOWENDPOINTSLICES = SHADOW_ENDPOINT_SLICE.resource
NETWORKS = NETWORK.resource
CONFIGURATIONS = CONFIGURATION.resource
GATEWAYSERVERS = GATEWAY_SERVER.resource
GATEWAYCLIENTS = GATEWAY_CLIENT.resource
PUBLICKEYS = PUBLIC_KEY.resource
CONNECTIONS = CONNECTION.resource


def crds() -> list[JSON]:
    """Every CRD manifest of the runtime, in a stable order."""
    return [kind.crd() for kind in KINDS]
