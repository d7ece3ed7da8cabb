"""Typed failures of the Kubernetes API and the outcomes a reconciler can signal.

Callers branch on error types, never on strings or bare HTTP codes: the client maps
every `Status` the API server returns to one class here, by its `reason` first and its
`code` second (the way apimachinery's `IsNotFound`/`IsConflict` helpers do), and keeps
the whole `Status` on the exception for anyone who needs its details.

`TemporaryError` and `PermanentError` are the reconcile contract's two explicit outcomes
(see `reconcile.py`): retry after a delay, or stop retrying.

`KubeconfigError` is a cluster configuration that cannot be used; its `field` says which
part of it is at fault in the kubeconfig's own words, and each front end maps that to its
own names (the Terraform provider to its `kubernetes` block's attributes, the Pulumi
components to their arguments).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from .transport import TransportFailure

Status = dict[str, Any]


class APIError(Exception):
    """Anything that went wrong talking to the Kubernetes API.

    The client that raises it fills in `cluster` (how a person knows the cluster: its context and
    server URL) and `user` (whose credentials were used), so `failures.explain` can say both.
    """

    cluster: str = ""
    user: str = ""


class APIConnectionError(APIError):
    """The API server could not be reached, or a connection broke mid-request.

    `failure` says why in words (refused, name not resolved, certificate not trusted, no answer
    in time, ...) when the cause was a transport failure.
    """

    failure: TransportFailure | None = None

    def __init__(self, message: str, *, failure: TransportFailure | None = None, cluster: str = "") -> None:
        super().__init__(message)
        self.failure = failure
        self.cluster = cluster


class APIStatusError(APIError):
    """The API server answered with an error `Status`."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(f"{self.code} {self.reason or 'Error'}: {self.message}")

    @property
    def code(self) -> int:
        return int(self.status.get("code") or 0)

    @property
    def reason(self) -> str:
        return str(self.status.get("reason") or "")

    @property
    def message(self) -> str:
        return str(self.status.get("message") or "")


class NotFoundError(APIStatusError):
    """404 NotFound."""


class ConflictError(APIStatusError):
    """409 Conflict: a stale resourceVersion, a failed precondition, or a server-side apply conflict."""


class AlreadyExistsError(APIStatusError):
    """409 AlreadyExists: a create found the name taken."""


class GoneError(APIStatusError):
    """410 Gone/Expired: a resourceVersion or continue token older than the server remembers."""


class ForbiddenError(APIStatusError):
    """403 Forbidden: authenticated, but not authorized (or refused by admission)."""


class UnauthorizedError(APIStatusError):
    """401 Unauthorized: the credentials were not accepted."""


class InvalidError(APIStatusError):
    """422 Invalid: the object failed validation; `causes` says which fields and why."""

    @property
    def causes(self) -> list[dict[str, Any]]:
        details = self.status.get("details") or {}
        return list(details.get("causes") or [])


_BY_REASON: dict[str, type[APIStatusError]] = {
    "NotFound": NotFoundError,
    "Conflict": ConflictError,
    "AlreadyExists": AlreadyExistsError,
    "Gone": GoneError,
    "Expired": GoneError,
    "Forbidden": ForbiddenError,
    "Unauthorized": UnauthorizedError,
    "Invalid": InvalidError,
}

_BY_CODE: dict[int, type[APIStatusError]] = {
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    403: ForbiddenError,
    401: UnauthorizedError,
    422: InvalidError,
}


def status_error(status: Status) -> APIStatusError:
    """The typed exception for an error `Status` (from a response body or a watch ERROR event)."""
    cls = _BY_REASON.get(str(status.get("reason") or "")) or _BY_CODE.get(int(status.get("code") or 0))
    return (cls or APIStatusError)(status)


class TemporaryError(Exception):
    """Not done yet: reconcile again after `delay` seconds, or after the per-item backoff if it is None.

    An explicit delay is a planned wait (a dependency not ready yet) and leaves the
    key's failure count alone; without one it counts as a failure, like any error.
    """

    def __init__(self, message: str = "", *, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


class PermanentError(Exception):
    """Do not retry: the object cannot be reconciled until it changes (report it in its status)."""


class KubeconfigField(StrEnum):
    """Which part of a cluster configuration a `KubeconfigError` is about, in the kubeconfig's words."""

    #: the kubeconfig files themselves (a path, the YAML, a malformed entry)
    KUBECONFIG = "kubeconfig"
    CONTEXT = "context"
    #: the cluster chosen instead of the context's
    CLUSTER = "cluster"
    #: the user (the context's, or the one chosen instead of it)
    USER = "user"
    SERVER = "server"
    CERTIFICATE_AUTHORITY = "certificate-authority"
    INSECURE = "insecure-skip-tls-verify"
    CLIENT_CERTIFICATE = "client-certificate"
    CLIENT_KEY = "client-key"
    TOKEN = "token"
    USERNAME = "username"
    EXEC = "exec"
    PROXY_URL = "proxy-url"


class KubeconfigError(ValueError):
    """A kubeconfig, in-cluster files or explicit settings that cannot be used as they are.

    `field` names the part of the configuration the problem belongs to, or is None where
    none applies.
    """

    def __init__(self, message: str, *, field: KubeconfigField | None = None) -> None:
        super().__init__(message)
        self.field = field


class CredentialError(KubeconfigError, APIConnectionError):
    """Credentials could not be obtained for a request (exec plugin failed, token file unreadable).

    It is a `KubeconfigError` (the configuration is at fault, with a field hint) and
    an `APIConnectionError` (the request never reached the server), so controllers retry
    it with backoff like any other failure to reach the API.
    """
