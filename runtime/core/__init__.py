"""The engine every controller runs on: one client, shared informers, keyed work queues, a manager.

Only `client.py` talks to the Kubernetes API, with credentials from the one kubeconfig
loader (`kubeconfig/`, shared with the playground and the provider). Informers keep caches current (list,
watch, resume, relist); controllers turn cache changes into keys on a rate-limited
work queue and call a `Reconciler` per key (level-triggered, as controller-runtime);
the manager runs them with leader election and a health/metrics endpoint. The names
below are the public surface; modules are imported by path only for their helpers.
"""

from .client import Client, ObjectList, Resource, Upgraded, WatchEvent
from .errors import (
    AlreadyExistsError,
    APIConnectionError,
    APIError,
    APIStatusError,
    ConflictError,
    CredentialError,
    ForbiddenError,
    GoneError,
    InvalidError,
    KubeconfigError,
    KubeconfigField,
    NotFoundError,
    PermanentError,
    TemporaryError,
    UnauthorizedError,
)
from .events import EventRecorder
from .informer import Informer, InformerFactory, Selection
from .kubeconfig import (
    ClusterConfig,
    ConfigOverrides,
    ExecConfig,
    load_incluster_config,
    load_kubeconfig,
)
from .manager import Manager
from .reconcile import Controller, EventFilter, MapFunc, Reconciler, Request, Result, owner_mapper
from .settings import (
    LeaderElectionSettings,
    QueueingSettings,
    ResyncSettings,
    ServerSettings,
    Settings,
    WatchingSettings,
)
from .store import Store, label_index, object_key, owner_uid_index

__all__ = [
    "APIConnectionError",
    "APIError",
    "APIStatusError",
    "AlreadyExistsError",
    "Client",
    "ClusterConfig",
    "ConfigOverrides",
    "ConflictError",
    "Controller",
    "CredentialError",
    "EventFilter",
    "EventRecorder",
    "ExecConfig",
    "ForbiddenError",
    "GoneError",
    "Informer",
    "InformerFactory",
    "InvalidError",
    "KubeconfigError",
    "KubeconfigField",
    "LeaderElectionSettings",
    "Manager",
    "MapFunc",
    "NotFoundError",
    "ObjectList",
    "PermanentError",
    "QueueingSettings",
    "Reconciler",
    "Request",
    "Resource",
    "Result",
    "ResyncSettings",
    "Selection",
    "ServerSettings",
    "Settings",
    "Store",
    "TemporaryError",
    "UnauthorizedError",
    "Upgraded",
    "WatchEvent",
    "WatchingSettings",
    "label_index",
    "load_incluster_config",
    "load_kubeconfig",
    "object_key",
    "owner_mapper",
    "owner_uid_index",
]
