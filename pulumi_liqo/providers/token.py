"""The dynamic resource of `Generate`: one peering token on the provider cluster (`runtime.operations.token`).

The token is a secret output; the cluster keeps only its hash. Read reports a token whose
Secret is gone, holds another token or expired as gone, so the next `pulumi up` after a
refresh issues a new one; delete revokes it.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import pulumi
import pulumi.dynamic

from runtime.api import constants as c
from runtime.api.validation import parse_duration
from runtime.core import APIError
from runtime.operations import token
from runtime.operations.unreachable import UnreachableError
from runtime.operations.waits import StopRequested, WaitTimeoutError

from .. import _cluster
from .base import (
    ContractProvider,
    api_error,
    connection,
    interrupted,
    kept_unreachable,
    unreachable_on_delete,
)

logger = logging.getLogger(__name__)

#: the outputs that are secrets, besides the kubeconfig
SECRETS: Final = ("local_token",)


class TokenProvider(ContractProvider):
    contract = token.CONTRACT
    this = "the Generate"

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        namespace = str(props["namespace"])
        expires_in = props.get("expires_in")
        lifetime = parse_duration(str(expires_in)) if expires_in else None
        bound = self.bound(props, "create")
        try:
            issued = _cluster.run(
                props,
                lambda client: token.issue(
                    client,
                    namespace=namespace,
                    lifetime=lifetime,
                    seconds=bound,
                    field_manager=c.FIELD_MANAGER_PULUMI,
                    single_use=bool(props.get("single_use")),
                ),
                seconds=bound + 10,
            )
        except self.contract.refused as exc:
            raise self.refused(exc, props, namespace=namespace) from None
        except (WaitTimeoutError, StopRequested) as exc:
            raise interrupted(exc, what=f"issuing a peering token in namespace {namespace}") from None
        except APIError as exc:
            raise api_error(
                exc, what=f"issue a peering token in namespace {namespace}", props=props
            ) from None
        outs = {
            **connection(props),
            "namespace": namespace,
            "expires_in": expires_in or "",
            "single_use": bool(props.get("single_use")),
            "secret_name": issued.secret_name,
            "cluster_id": issued.cluster_id,
            "cluster_name": issued.cluster_name,
            "auth_ep": issued.auth_ep,
            "auth_key_fingerprint": issued.auth_key_fingerprint,
            "local_token": issued.token,
            "expires_at": issued.expires_at,
        }
        return pulumi.dynamic.CreateResult(issued.secret_name, outs)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        # unset and false are one choice (a token issued before the argument existed is not replaced)
        olds, news = (
            {**props, "single_use": False if props.get("single_use") is None else props["single_use"]}
            for props in (olds, news)
        )
        return super().diff(_id, olds, news)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        # only the connection changed: the token stays
        return pulumi.dynamic.UpdateResult({**olds, **connection(news)})

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        namespace = str(props.get("namespace") or c.DEFAULT_NAMESPACE)
        try:
            identity = _cluster.run(
                props,
                lambda client: token.observe(
                    client, namespace=namespace, name=id_, token=str(props.get("local_token") or "")
                ),
                seconds=self.contract.read_seconds,
            )
        except APIError as exc:
            raise api_error(
                exc, what=f"read the peering token Secret {namespace}/{id_}", props=props
            ) from None
        if identity is None:
            logger.info("Generate %s/%s: the token no longer works; it is issued again", namespace, id_)
            return pulumi.dynamic.ReadResult("", {})
        return pulumi.dynamic.ReadResult(
            id_,
            {
                **props,
                "cluster_id": identity.get(c.IDENTITY_CLUSTER_ID) or "",
                "cluster_name": identity.get(c.IDENTITY_CLUSTER_NAME) or "",
                "auth_ep": identity.get(c.IDENTITY_AUTH_URL) or "",
                "auth_key_fingerprint": identity.get(c.IDENTITY_AUTH_KEY) or "",
            },
        )

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        namespace = str(props.get("namespace") or c.DEFAULT_NAMESPACE)
        bound = self.bound(props, "delete")
        try:
            unreachable = _cluster.run(
                props,
                lambda client: token.revoke(
                    client, namespace=namespace, name=id_, force=props.get("force") is True
                ),
                seconds=bound,
            )
        except UnreachableError as exc:
            raise kept_unreachable(f"Generate {namespace}/{id_}", exc) from None
        except APIError as exc:
            raise api_error(
                exc, what=f"revoke the peering token (Secret {namespace}/{id_})", props=props
            ) from None
        if unreachable:
            logger.warning(
                "%s",
                unreachable_on_delete(
                    f"Generate {namespace}/{id_}",
                    unreachable,
                    kept=f"the token Secret {namespace}/{id_}",
                    comes_back="delete that Secret to revoke the token",
                ),
            )


class Token(pulumi.dynamic.Resource, module="liqo", name="Token"):
    """A peering token on a provider cluster (see `TokenProvider`)."""

    secret_name: pulumi.Output[str]
    cluster_id: pulumi.Output[str]
    cluster_name: pulumi.Output[str]
    auth_ep: pulumi.Output[str]
    auth_key_fingerprint: pulumi.Output[str]
    local_token: pulumi.Output[str]
    expires_at: pulumi.Output[str]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        outputs = dict.fromkeys(
            (
                "secret_name",
                "cluster_id",
                "cluster_name",
                "auth_ep",
                "auth_key_fingerprint",
                "local_token",
                "expires_at",
            )
        )
        super().__init__(
            TokenProvider(),
            name,
            {**outputs, **props},
            pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig", *SECRETS])
            ),
        )
