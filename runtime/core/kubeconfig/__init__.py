"""The one kubeconfig loader of the runtime, the playground and the Terraform provider.

Kubeconfig files (merged like `KUBECONFIG`), a pod's ServiceAccount files or explicit
attributes become one `ClusterConfig` with kubectl's semantics; `Authenticator` turns
it into per-request credentials (token files re-read, exec plugins run and cached) and
a TLS context. It replaces `kubernetes_asyncio`'s loader, which cost every process
0.3 s and ~30 MB just to import. Loading is synchronous and cheap; `Client.from_*`
run it in a thread.

| module | job |
| --- | --- |
| `config.py` | `ClusterConfig`, `ExecConfig`, `ConfigOverrides` (its errors, `KubeconfigError` and `CredentialError`, are in `runtime/core/errors.py`) |
| `loader.py` | kubeconfig files and overrides to a `ClusterConfig` |
| `incluster.py` | the pod's ServiceAccount to a `ClusterConfig` |
| `pem.py`, `tls.py` | PEM checks; the TLS context (client keys loaded from memory) |
| `execplugin.py`, `auth.py` | exec credential plugins; per-request credentials and 401 handling |
"""

from ..errors import CredentialError, KubeconfigError, KubeconfigField
from .auth import Authenticator, RequestAuth
from .config import ClusterConfig, ConfigOverrides, ExecConfig
from .incluster import SERVICE_ACCOUNT_DIR, load_incluster_config
from .loader import default_kubeconfig_paths, load_kubeconfig, load_kubeconfig_dict
from .tls import ssl_context

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "Authenticator",
    "ClusterConfig",
    "ConfigOverrides",
    "CredentialError",
    "ExecConfig",
    "KubeconfigError",
    "KubeconfigField",
    "RequestAuth",
    "default_kubeconfig_paths",
    "load_incluster_config",
    "load_kubeconfig",
    "load_kubeconfig_dict",
    "ssl_context",
]
