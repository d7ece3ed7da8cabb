"""Reflected ConfigMaps, as pure functions: a consumer's ConfigMap to its copy in the twin namespace.

The copy is the ConfigMap verbatim (data, binaryData, immutable, labels, annotations),
marked as reflected. One name is remapped: `kube-root-ca.crt`, which every namespace of
every cluster has (the cluster's own CA, published by kube-controller-manager), so the
provider's twin namespace has its own already. The consumer's goes there as
`kube-root-ca.crt.<first five characters of the consumer's cluster id>` (Liqo's name), and
an offloaded pod that reads `kube-root-ca.crt` directly reads that one (`pods.py`): it
speaks to its home API server, whose CA it needs. The pod's ServiceAccount token volume
does not depend on it: its `ca.crt` comes with the tokens (`serviceaccounts.py`), so pods
authenticate at home even with ConfigMap reflection turned off.
"""

from __future__ import annotations

from typing import Final

from runtime.api.objects import JSON

from .meta import metadata_differs, reflected_metadata

ROOT_CA_CONFIGMAP: Final = "kube-root-ca.crt"
#: the fields of a ConfigMap its copy carries as they are
PAYLOAD: Final = ("data", "binaryData", "immutable")
_ROOT_CA_SUFFIX: Final = 5


def remote_configmap_name(name: str, *, origin_cluster_id: str) -> str:
    """The copy's name: the ConfigMap's own, but `kube-root-ca.crt.<cluster id prefix>` for the root CA."""
    if name != ROOT_CA_CONFIGMAP:
        return name
    remapped = f"{ROOT_CA_CONFIGMAP}.{origin_cluster_id[:_ROOT_CA_SUFFIX]}"
    # a name ends in an alphanumeric character
    return remapped if remapped[-1].isalnum() else remapped + "a"


def local_configmap_name(remote_name: str, *, origin_cluster_id: str) -> str | None:
    """The consumer's ConfigMap a copy stands for (None: the provider's own root CA, no copy)."""
    if remote_name == ROOT_CA_CONFIGMAP:
        return None
    if remote_name == remote_configmap_name(ROOT_CA_CONFIGMAP, origin_cluster_id=origin_cluster_id):
        return ROOT_CA_CONFIGMAP
    return remote_name


def remote_configmap(local: JSON, *, namespace: str, origin_cluster_id: str) -> JSON:
    """The copy of the consumer's ConfigMap `local` in twin namespace `namespace`."""
    name = remote_configmap_name(str(local["metadata"]["name"]), origin_cluster_id=origin_cluster_id)
    copy: JSON = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": reflected_metadata(
            local, name=name, namespace=namespace, origin_cluster_id=origin_cluster_id
        ),
    }
    for key in PAYLOAD:
        if local.get(key) is not None:
            copy[key] = local[key]
    return copy


def payload_differs(current: JSON, desired: JSON, *, payload: tuple[str, ...] = PAYLOAD) -> bool:
    """Whether a copy says something else than `desired` (metadata, or one of the `payload` fields)."""
    return metadata_differs(current, desired) or any(
        (current.get(key) or None) != (desired.get(key) or None) for key in payload
    )


def must_recreate(current: JSON, desired: JSON, *, payload: tuple[str, ...] = PAYLOAD) -> bool:
    """Whether the copy can only be brought in line by deleting it: it is immutable, and its content changed."""
    return bool(current.get("immutable")) and any(
        (current.get(key) or None) != (desired.get(key) or None) for key in payload
    )
