"""Store a credential the provider issued: the credential Secret, then the Identity and its status.

The ForeignCluster controller stores the first credential (from the peering token), the
Identity controller every renewed one; both go through here so the Secret, the Identity's
`expiresAt`/`renewAfter` and its `CredentialRenewed` condition always move together. The
Secret is written first: an Identity never points at a credential older than its status says.
"""

from __future__ import annotations

from datetime import datetime

from runtime.api import constants as c
from runtime.api.crds import IDENTITIES
from runtime.api.kinds import SECRETS
from runtime.api.objects import JSON, nested
from runtime.api.timestamps import rfc3339
from runtime.core import Client
from runtime.forge import conditions
from runtime.forge import credential as contract

from . import objects


async def store_credential(
    client: Client,
    *,
    provider: str,
    namespace: str,
    credential: contract.Credential,
    cluster_labels: dict[str, str],
    key_fingerprint: str,
    issued_at: datetime,
    renew_fraction: float,
    condition: JSON,
) -> datetime:
    """Write the credential Secret and the Identity (spec and status); returns when to renew it."""
    manager = c.FIELD_MANAGER_CONTROLLER_MANAGER
    await client.apply(
        SECRETS,
        objects.credential_secret(provider, namespace=namespace, credential=credential),
        field_manager=manager,
        force=True,
    )
    identity = await client.apply(
        IDENTITIES,
        objects.identity(
            provider,
            namespace=namespace,
            credential=credential,
            cluster_labels=cluster_labels,
            key_fingerprint=key_fingerprint,
        ),
        field_manager=manager,
        force=True,
    )
    renew = objects.renew_after(credential, issued_at=issued_at, fraction=renew_fraction)
    current = nested(identity, "status", "conditions")
    status = {
        "expiresAt": rfc3339(credential.expires_at),
        "renewAfter": rfc3339(renew),
        "conditions": conditions.merged(current, [condition], at=conditions.now()),
    }
    await client.patch_status(
        IDENTITIES, provider, {"status": status}, namespace=namespace, field_manager=manager
    )
    return renew
