"""What every step of a consumer's peering reads: the ForeignCluster's spec, this cluster's identity, the caches.

`PeeringSpec.parse` validates a ForeignCluster once per reconcile and names the field at
fault (`SpecError`, reported as InvalidSpec and not retried until the object changes);
`LocalCluster.of` reads this cluster's id and name from the identity ConfigMap the install
writes. `Caches` are the informer stores the steps read instead of asking the API server.
A step that cannot go on raises `Blocked` with the condition to show and when to look again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from runtime.api import constants as c
from runtime.api.objects import JSON, nested
from runtime.api.views import ForeignClusterSpec
from runtime.core import Store
from runtime.forge import podsecurity
from runtime.forge.certificates import is_key_fingerprint
from runtime.forge.peering import trusted_key_of
from runtime.forge.podsecurity import Level
from runtime.forge.tenant import tenant_namespace_name

from .authclient import InvalidAuthURLError, check_url
from .status import Step

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class SpecError(ValueError):
    """The ForeignCluster's spec cannot be acted on; the message names the field and what to do."""


class Blocked(Exception):
    """A step cannot go on now: show `step` in the status and look again after `delay` seconds."""

    def __init__(self, step: Step, *, delay: float) -> None:
        super().__init__(step.message)
        self.step = step
        self.delay = delay


@dataclass(frozen=True)
class PeeringSpec:
    """A validated ForeignCluster spec; `name` (the ForeignCluster's) names the provider everywhere locally."""

    name: str
    cluster_id: str
    auth_url: str
    token_namespace: str
    token_name: str
    resources: dict[str, str] = field(default_factory=dict)
    node_labels: dict[str, str] = field(default_factory=dict)
    outgoing: bool = True
    #: the auth service key a user trusts explicitly (the ForeignCluster's annotation), "" if none
    trusted_key: str = ""
    #: extend the pod network to the provider (a gateway per side)
    networking: bool = True
    #: the Pod Security Standards level the provider holds this peering's offloaded pods to
    pod_security: Level = podsecurity.DEFAULT_LEVEL

    @property
    def tenant_namespace(self) -> str:
        """This cluster's namespace for the provider's objects: `liqo-tenant-<provider name>`."""
        return tenant_namespace_name(self.name)

    @classmethod
    def parse(cls, foreign_cluster: JSON, *, default_namespace: str) -> PeeringSpec:
        name = str(foreign_cluster["metadata"]["name"])
        spec: ForeignClusterSpec = foreign_cluster.get("spec") or {}
        if not _DNS_LABEL.match(name) or len(name) > 58:
            raise SpecError(
                f"the ForeignCluster's name {name!r} must be the provider's cluster name: a DNS label of at most"
                " 58 characters (the virtual node is called liqo-<name>)"
            )
        cluster_name = spec.get("clusterName") or name
        if cluster_name != name:
            raise SpecError(
                f"spec.clusterName {cluster_name!r} differs from the ForeignCluster's name {name!r}: name the"
                " ForeignCluster after the provider's cluster name"
            )
        cluster_id = str(spec.get("clusterID") or "")
        if not cluster_id:
            raise SpecError(
                "spec.clusterID is required: the provider's cluster id (liqo_generate on the provider)"
            )
        if (spec.get("peeringType") or c.PEERING_TYPE_OUT_OF_BAND) != c.PEERING_TYPE_OUT_OF_BAND:
            raise SpecError(
                f"spec.peeringType {spec.get('peeringType')!r} is not supported: use {c.PEERING_TYPE_OUT_OF_BAND}"
            )
        auth_url = str(spec.get("authURL") or "")
        if not auth_url:
            raise SpecError(
                "spec.authURL is required: the provider's authentication URL (liqo_generate on the provider)"
            )
        try:
            check_url(auth_url)
        except InvalidAuthURLError as exc:
            raise SpecError(f"spec.authURL: {exc.detail}") from None
        ref = spec.get("tokenSecretRef") or {}
        if not ref.get("name"):
            raise SpecError(
                f"spec.tokenSecretRef is required: the Secret (key {c.TOKEN_SECRET_KEY!r}) with the peering token"
            )
        trusted = trusted_key_of(foreign_cluster)
        if trusted and not is_key_fingerprint(trusted):
            raise SpecError(
                f"the annotation {c.ANNOTATION_TRUST_AUTH_SERVICE_KEY}={trusted!r} is not a key fingerprint"
                " (sha256: and 64 lowercase hexadecimal digits): copy it from liqo_generate's auth_key_fingerprint"
                " or the AuthServiceKeyChanged message"
            )
        try:
            pod_security = podsecurity.level(spec.get("podSecurity"))
        except podsecurity.InvalidLevelError as exc:
            raise SpecError(f"spec.podSecurity: {exc}") from None
        return cls(
            name=name,
            cluster_id=cluster_id,
            auth_url=auth_url,
            token_namespace=str(ref.get("namespace") or default_namespace),
            token_name=str(ref["name"]),
            resources={str(k): str(v) for k, v in (spec.get("resources") or {}).items()},
            node_labels={str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()},
            outgoing=spec.get("outgoingPeeringEnabled", True) is not False,
            trusted_key=trusted,
            networking=spec.get("networkingEnabled", True) is not False,
            pod_security=pod_security,
        )


@dataclass(frozen=True)
class LocalCluster:
    cluster_id: str
    cluster_name: str
    #: this cluster's pod CIDR ("" when the install recorded none)
    pod_cidr: str = ""

    @classmethod
    def of(cls, configmap: JSON | None) -> LocalCluster | None:
        """This cluster's identity from the install's ConfigMap; None while it is missing or incomplete."""
        data = (configmap or {}).get("data") or {}
        cluster_id = data.get(c.IDENTITY_CLUSTER_ID)
        cluster_name = data.get(c.IDENTITY_CLUSTER_NAME)
        if not cluster_id or not cluster_name:
            return None
        return cls(
            cluster_id=str(cluster_id),
            cluster_name=str(cluster_name),
            pod_cidr=str(data.get(c.IDENTITY_POD_CIDR) or ""),
        )


@dataclass(frozen=True)
class Caches:
    """The informer stores a peering is reconciled from."""

    foreign_clusters: Store
    #: Tenants here (this cluster as provider), to tell a bidirectional peering
    tenants: Store
    #: tenant namespaces (labelled as such)
    namespaces: Store
    #: the consumer's key pair and credential Secrets (labelled with the peering component)
    peering_secrets: Store
    #: Secrets in the runtime's namespace, where peering tokens are kept
    runtime_secrets: Store
    identities: Store
    virtual_nodes: Store
    #: the identity ConfigMap of this cluster
    cluster_identity: Store


def has_incoming(tenants: Store, cluster_id: str) -> bool:
    """Whether the cluster with this id consumes from us (a Tenant of it exists and is not being deleted)."""
    return any(
        nested(tenant, "spec", "clusterID") == cluster_id
        and not nested(tenant, "metadata", "deletionTimestamp")
        for tenant in tenants
    )
