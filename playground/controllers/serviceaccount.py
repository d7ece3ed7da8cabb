"""Every active namespace gets ServiceAccount `default` and ConfigMap `kube-root-ca.crt`.

Two kube-controller-manager controllers in one module, both keyed by namespace:

- the service account controller creates `default` where it is missing (pods are refused
  admission without it). Like kube's, it only recreates a deleted account: the account
  is the user's to edit (image pull secrets, automount).
- the root CA publisher keeps `kube-root-ca.crt` holding exactly the cluster CA bundle
  under `ca.crt`, with kube's `kubernetes.io/description` annotation; pods' projected
  service account volumes read it. Deleted or edited, it is put back. The bundle comes
  from `ControlPlaneOptions.root_ca` (the control plane fills it from its kubeconfig);
  without one the publisher is not set up.

Namespaces that are terminating are left alone: the API server refuses new content there.
"""

from __future__ import annotations

import copy
import logging

from playground.controlplane import ControlPlaneOptions, Credentials
from runtime.api.kinds import CONFIGMAPS, NAMESPACES, SERVICEACCOUNTS
from runtime.api.objects import JSON
from runtime.api.resource import Resource
from runtime.core import (
    AlreadyExistsError,
    Client,
    ForbiddenError,
    Manager,
    NotFoundError,
    Request,
    Result,
    Store,
)

logger = logging.getLogger(__name__)

#: the ServiceAccount kube-controller-manager runs this controller as (system:controller:service-account-controller)
ACCOUNT = "service-account-controller"
#: the ServiceAccount kube-controller-manager runs the kube-root-ca.crt publisher as (system:controller:root-ca-cert-publisher)
ROOT_CA_ACCOUNT = "root-ca-cert-publisher"


DEFAULT_SERVICE_ACCOUNT = "default"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_KEY = "ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
#: the words kube's root-ca-cert-publisher puts on the ConfigMap
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as "
    "the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of "
    "Kubernetes clusters."
)


def _active(namespace: JSON | None) -> bool:
    return namespace is not None and (namespace.get("status") or {}).get("phase", "Active") == "Active"


def root_ca_configmap(namespace: str, root_ca: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": ROOT_CA_CONFIGMAP,
            "namespace": namespace,
            "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
        },
        "data": {ROOT_CA_KEY: root_ca},
    }


def repaired_configmap(current: JSON, root_ca: str) -> JSON | None:
    """The ConfigMap with the bundle as its only data and the description set; None if it is right already."""
    annotations = current["metadata"].get("annotations") or {}
    if current.get("data") == {ROOT_CA_KEY: root_ca} and annotations.get(DESCRIPTION_ANNOTATION):
        return None
    repaired = copy.deepcopy(current)
    repaired["data"] = {ROOT_CA_KEY: root_ca}
    repaired["metadata"].setdefault("annotations", {})[DESCRIPTION_ANNOTATION] = DESCRIPTION
    return repaired


async def _create(client: Client, resource: Resource, body: JSON, *, namespace: str) -> bool:
    """Create an object; False if it exists already (a cache behind) or its namespace went or is terminating."""
    try:
        await client.create(resource, body, namespace=namespace)
    except (AlreadyExistsError, NotFoundError):
        return False
    except ForbiddenError:
        try:
            if _active(await client.get(NAMESPACES, namespace)):
                raise
        except NotFoundError:
            return False
        logger.info("%s: namespace is terminating; not creating %s", namespace, body["metadata"]["name"])
        return False
    return True


class ServiceAccountReconciler:
    def __init__(self, client: Client, *, namespaces: Store, accounts: Store) -> None:
        self._client = client
        self._namespaces = namespaces
        self._accounts = accounts

    async def reconcile(self, request: Request) -> Result | None:
        if not _active(self._namespaces.get(request.name)):
            return None
        if self._accounts.get(DEFAULT_SERVICE_ACCOUNT, namespace=request.name) is not None:
            return None
        body: JSON = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_SERVICE_ACCOUNT},
        }
        if await _create(self._client, SERVICEACCOUNTS, body, namespace=request.name):
            logger.info("%s/%s: created", request.name, DEFAULT_SERVICE_ACCOUNT)
        return None


class RootCAPublisher:
    def __init__(self, client: Client, *, namespaces: Store, configmaps: Store, root_ca: str) -> None:
        self._client = client
        self._namespaces = namespaces
        self._configmaps = configmaps
        self._root_ca = root_ca

    async def reconcile(self, request: Request) -> Result | None:
        if not _active(self._namespaces.get(request.name)):
            return None
        current = self._configmaps.get(ROOT_CA_CONFIGMAP, namespace=request.name)
        if current is None:
            body = root_ca_configmap(request.name, self._root_ca)
            if await _create(self._client, CONFIGMAPS, body, namespace=request.name):
                logger.info("%s/%s: published the cluster CA bundle", request.name, ROOT_CA_CONFIGMAP)
            return None
        repaired = repaired_configmap(current, self._root_ca)
        if repaired is not None:
            # a stale cache makes this a conflict, retried once the informer has the newer version
            await self._client.replace(CONFIGMAPS, repaired)
            logger.info("%s/%s: put the cluster CA bundle back", request.name, ROOT_CA_CONFIGMAP)
        return None


def _namespace_of(obj: JSON) -> list[Request]:
    return [Request("", str(obj["metadata"]["namespace"]))]


def setup(manager: Manager, options: ControlPlaneOptions, credentials: Credentials) -> None:
    namespaces = manager.informer(NAMESPACES)
    accounts = manager.informer(SERVICEACCOUNTS, field_selector=f"metadata.name={DEFAULT_SERVICE_ACCOUNT}")
    manager.controller(
        "serviceaccount",
        ServiceAccountReconciler(
            credentials.client(ACCOUNT), namespaces=namespaces.store, accounts=accounts.store
        ),
        primary=namespaces,
    ).watches(accounts, _namespace_of)
    if not options.root_ca:
        logger.warning(
            "no cluster CA bundle in the options: ConfigMap %s is not published", ROOT_CA_CONFIGMAP
        )
        return
    configmaps = manager.informer(CONFIGMAPS, field_selector=f"metadata.name={ROOT_CA_CONFIGMAP}")
    publisher = RootCAPublisher(
        credentials.client(ROOT_CA_ACCOUNT),
        namespaces=namespaces.store,
        configmaps=configmaps.store,
        root_ca=options.root_ca,
    )
    manager.controller("root-ca-cert-publisher", publisher, primary=namespaces).watches(
        configmaps, _namespace_of
    )
