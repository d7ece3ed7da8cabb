"""Who is asking and what for: the inputs of authentication, authorization and admission.

`UserInfo` is what an authenticator yields (kube-apiserver's user.Info);
`RequestAttributes` is what the authorizer decides on (authorizer.Attributes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

MASTERS_GROUP = "system:masters"
AUTHENTICATED_GROUP = "system:authenticated"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
ANONYMOUS_USER = "system:anonymous"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
NODES_GROUP = "system:nodes"


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """The `userInfo` shape used by reviews and AdmissionReview."""
        out: dict[str, object] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            out["uid"] = self.uid
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    return UserInfo(
        name=f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        groups=(SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}", AUTHENTICATED_GROUP),
        uid=uid,
    )


@dataclass(frozen=True)
class RequestAttributes:
    """One request as the authorizer sees it.

    For resource requests `verb` is one of get/list/watch/create/update/patch/delete/
    deletecollection (or a special verb such as bind/escalate/impersonate/approve);
    for non-resource requests `path` is set and `verb` is the lowercased HTTP method.
    `fields` are the `key=value` terms of a list or watch's field selector (the Node
    authorizer lets a node list its own pods by `spec.nodeName`).
    """

    user: UserInfo
    verb: str
    resource_request: bool = True
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    path: str = ""
    fields: tuple[tuple[str, str], ...] = ()
