"""What the admission webhook reads and writes beyond its own configurations, as RBAC objects.

Kept apart from `rbac.py` while issue 20's least-privilege work reshapes that module; the
rules belong in the `liqo-webhook` ClusterRole and its Role in the runtime's namespace:

- ShadowPods, Quotas and Namespaces, read (list and watch) everywhere: a ShadowPod is
  admitted against the Quotas of the consumer whose twin namespace it is in, counting the
  ShadowPods it already has there, and against the Pod Security level that namespace
  enforces (`runtime.webhook.shadowpods`);
- its CA's Secret in the runtime's namespace: created once, read and replaced by name
  (`runtime.webhook.authority`).
"""

from __future__ import annotations

from typing import Any

from runtime.api import constants as c

from .meta import metadata

JSON = dict[str, Any]

NAME = "liqo-webhook-admission"
COMPONENT = "webhook"
RBAC_GROUP = "rbac.authorization.k8s.io"
READ = ["get", "list", "watch"]
#: cluster-wide: what ShadowPods are admitted against
CLUSTER_RULES: list[JSON] = [
    {"apiGroups": [c.OFFLOADING_GROUP], "resources": ["shadowpods", "quotas"], "verbs": READ},
    {"apiGroups": [""], "resources": ["namespaces"], "verbs": READ},
]
#: in the runtime's namespace: the CA every replica shares (a create cannot name its object)
NAMESPACE_RULES: list[JSON] = [
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
    {
        "apiGroups": [""],
        "resources": ["secrets"],
        "verbs": ["get", "update"],
        "resourceNames": [c.WEBHOOK_CA_SECRET],
    },
]


def webhook_access(*, namespace: str) -> list[JSON]:
    """The ClusterRole, Role and their bindings to the webhook's ServiceAccount."""
    subject = {"kind": "ServiceAccount", "name": "liqo-webhook", "namespace": namespace}
    return [
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "ClusterRole",
            "metadata": metadata(NAME, component=COMPONENT),
            "rules": CLUSTER_RULES,
        },
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": metadata(NAME, component=COMPONENT),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": NAME},
            "subjects": [subject],
        },
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "Role",
            "metadata": metadata(NAME, namespace=namespace, component=COMPONENT),
            "rules": NAMESPACE_RULES,
        },
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "RoleBinding",
            "metadata": metadata(NAME, namespace=namespace, component=COMPONENT),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": NAME},
            "subjects": [subject],
        },
    ]
