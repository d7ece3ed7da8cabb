"""A pod's own credentials: the API server from the service environment, the ServiceAccount's files.

As client-go's `rest.InClusterConfig`: `KUBERNETES_SERVICE_HOST`/`_PORT` give the
server (an IPv6 host in brackets), and the projected ServiceAccount volume gives the
token, the cluster CA and the pod's namespace. The token is not copied into the config:
it is a bound token that kubelet rotates, so the client re-reads the file while it runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import KubeconfigError
from .config import ClusterConfig
from .pem import PEMError, check_certificates

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def load_incluster_config(
    *, service_account_dir: Path = SERVICE_ACCOUNT_DIR, environ: Mapping[str, str] | None = None
) -> ClusterConfig:
    """The config of the pod this process runs in (`environ`: the process's environment by default);
    KubeconfigError when it does not run in one."""
    environ = os.environ if environ is None else environ
    host = environ.get("KUBERNETES_SERVICE_HOST", "")
    port = environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeconfigError(
            "not running in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set; "
            "give a kubeconfig instead"
        )
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    source = f"in-cluster ServiceAccount ({service_account_dir})"
    token_file = service_account_dir / "token"
    try:
        token = token_file.read_text().strip()
    except OSError as exc:
        raise KubeconfigError(
            f"{source}: cannot read the token {token_file} ({exc.strerror}); is the ServiceAccount token mounted?"
        ) from None
    if not token:
        raise KubeconfigError(f"{source}: the token {token_file} is empty")
    ca_file = service_account_dir / "ca.crt"
    try:
        ca = ca_file.read_bytes()
        check_certificates(ca)
    except OSError as exc:
        raise KubeconfigError(f"{source}: cannot read the cluster CA {ca_file} ({exc.strerror})") from None
    except PEMError as exc:
        raise KubeconfigError(f"{source}: the cluster CA {ca_file}: {exc}") from None
    try:
        namespace = (service_account_dir / "namespace").read_text().strip()
    except FileNotFoundError:
        namespace = ""
    return ClusterConfig(
        server=f"https://{host}:{port}",
        certificate_authority=ca,
        token_file=token_file,
        namespace=namespace or "default",
        source=source,
    )
