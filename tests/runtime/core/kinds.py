"""The resources these tests use."""

from runtime.api.kinds import CONFIGMAPS, DEPLOYMENTS, NAMESPACES, SECRETS, SERVICEACCOUNTS

__all__ = ["CONFIGMAPS", "DEPLOYMENTS", "NAMESPACES", "SECRETS", "SERVICEACCOUNTS"]
