"""The resources these tests use (the runtime's own constants module comes with runtime.api)."""

from runtime.core.client import Resource

NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")
SECRETS = Resource("", "v1", "secrets", kind="Secret")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", kind="ServiceAccount")
DEPLOYMENTS = Resource("apps", "v1", "deployments", kind="Deployment")
