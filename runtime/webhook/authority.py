"""The webhook's CA, read from its Secret at start, and made (once) when there is none.

Every replica reads the same CA from the Secret `liqo-webhook-ca` in the runtime's
namespace (`certs.py` says why), so the caBundle the configurations hold stays valid across
restarts and rolling updates. The first webhook to start makes it: two starting at once
both try to create the Secret and the one that loses reads the winner's. A Secret that
holds no usable CA (edited by hand, or near its expiry) is replaced, conditionally on
what was read, so two replicas never keep different CAs.
"""

from __future__ import annotations

import asyncio
import logging

from runtime.api import constants as c
from runtime.api.kinds import SECRETS
from runtime.core import AlreadyExistsError, APIError, Client, ConflictError, NotFoundError

from .certs import Authority, authority_of, authority_secret, new_authority

logger = logging.getLogger(__name__)

#: first delay between attempts while the API fails; doubles up to the max
RETRY_DELAY = 0.5
RETRY_DELAY_MAX = 10.0


async def kept_authority(client: Client, *, namespace: str, common_name: str) -> Authority:
    """The CA in the Secret, made and stored first when there is none or it is unusable; retries until done."""
    where = f"{namespace}/{c.WEBHOOK_CA_SECRET}"
    delay = RETRY_DELAY
    while True:
        try:
            return await _read_or_make(client, namespace=namespace, common_name=common_name)
        except (AlreadyExistsError, ConflictError):
            logger.info("%s: another webhook wrote the CA meanwhile; reading it", where)
            continue
        except APIError as exc:
            logger.warning(
                "%s: could not read or store the webhook's CA (%s); retrying in %.3g s", where, exc, delay
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_DELAY_MAX)


async def _read_or_make(client: Client, *, namespace: str, common_name: str) -> Authority:
    where = f"{namespace}/{c.WEBHOOK_CA_SECRET}"
    try:
        secret = await client.get(SECRETS, c.WEBHOOK_CA_SECRET, namespace=namespace)
    except NotFoundError:
        authority = await asyncio.to_thread(new_authority, common_name=common_name)
        await client.create(
            SECRETS, authority_secret(authority, namespace=namespace), field_manager=c.FIELD_MANAGER_WEBHOOK
        )
        logger.info("%s: made the webhook's CA", where)
        return authority
    try:
        return authority_of(secret)
    except ValueError as exc:
        logger.warning("%s: holds no usable CA (%s); replacing it with a new one", where, exc)
    authority = await asyncio.to_thread(new_authority, common_name=common_name)
    body = authority_secret(authority, namespace=namespace)
    body["metadata"]["resourceVersion"] = secret["metadata"]["resourceVersion"]
    await client.replace(SECRETS, body, field_manager=c.FIELD_MANAGER_WEBHOOK)
    return authority
