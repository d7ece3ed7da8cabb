"""Configuration data reflected to the provider: ConfigMaps and Secrets (Liqo's `reflection/configuration`).

Both are `OutgoingReflector`s: each ConfigMap or Secret of an offloaded namespace has a
copy in its twin namespace (`runtime.forge.configmaps`, `runtime.forge.secrets`):

- `kube-root-ca.crt` goes as `kube-root-ca.crt.<cluster id prefix>` (the provider's twin
  namespace has its own `kube-root-ca.crt`, which is never touched);
- ServiceAccount token Secrets go as Opaque Secrets; the token Secrets of offloaded pods
  are the pod reflector's (`workload.py`) and never overwritten by a consumer Secret of
  the same name.

The ServiceAccount tokens of offloaded pods themselves (Liqo's `serviceaccount` reflector)
are reflected with their pods, bound to each pod, by the pod reflector.
"""

from __future__ import annotations

from collections.abc import Iterable

from runtime.api.kinds import CONFIGMAPS, SECRETS
from runtime.api.objects import JSON
from runtime.forge import configmaps, secrets

from .generic import NamespacePair
from .outgoing import OutgoingReflector


class ConfigMapReflector(OutgoingReflector):
    kind = "configmap"
    local_resource = CONFIGMAPS
    remote_resource = CONFIGMAPS

    def remote_name(self, name: str) -> str:
        return configmaps.remote_configmap_name(name, origin_cluster_id=self.context.origin_cluster_id)

    def local_names(self, remote: JSON, pair: NamespacePair) -> Iterable[str]:
        name = configmaps.local_configmap_name(
            str(remote["metadata"]["name"]), origin_cluster_id=self.context.origin_cluster_id
        )
        return [name] if name else []

    def desired(self, local: JSON, pair: NamespacePair) -> JSON:
        return configmaps.remote_configmap(
            local, namespace=pair.remote, origin_cluster_id=self.context.origin_cluster_id
        )

    def differs(self, current: JSON, desired: JSON) -> bool:
        return configmaps.payload_differs(current, desired)

    def must_recreate(self, current: JSON, desired: JSON) -> bool:
        return configmaps.must_recreate(current, desired)


class SecretReflector(OutgoingReflector):
    kind = "secret"
    local_resource = SECRETS
    remote_resource = SECRETS

    def local_names(self, remote: JSON, pair: NamespacePair) -> Iterable[str]:
        return [] if secrets.is_pod_token_secret(remote) else [str(remote["metadata"]["name"])]

    def is_ours(self, remote: JSON) -> bool:
        return super().is_ours(remote) and not secrets.is_pod_token_secret(remote)

    def desired(self, local: JSON, pair: NamespacePair) -> JSON:
        return secrets.remote_secret(
            local, namespace=pair.remote, origin_cluster_id=self.context.origin_cluster_id
        )

    def differs(self, current: JSON, desired: JSON) -> bool:
        return secrets.secret_differs(current, desired)

    def must_recreate(self, current: JSON, desired: JSON) -> bool:
        return secrets.secret_must_recreate(current, desired)
