"""The auth service's serving key: created by the controller manager when missing, never replaced."""

from __future__ import annotations

import contextlib

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from runtime.api import constants as c
from runtime.api.kinds import SECRETS
from runtime.auth.servingkey import key_of
from runtime.controllers.authentication.servingkey import setup
from runtime.controllers.options import ControllerOptions
from runtime.core import Client, NotFoundError
from tests.playground.conftest import eventually
from tests.runtime.auth.cluster import NAMESPACE, controllers

OPTIONS = ControllerOptions(namespace=NAMESPACE)


async def _key(admin: Client) -> bytes | None:
    try:
        secret = await admin.get(SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace=NAMESPACE)
    except NotFoundError:
        return None
    return key_of(secret).public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)


async def test_a_missing_serving_key_is_created_once_and_then_kept(
    admin: Client, manager_client: Client
) -> None:
    with contextlib.suppress(NotFoundError):
        await admin.delete(SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace=NAMESPACE)
    async with controllers(manager_client, setup, options=OPTIONS):
        await eventually(lambda: _key(admin))
    created = await _key(admin)
    async with controllers(manager_client, setup, options=OPTIONS):
        # a restarted controller manager finds the key and leaves it (consumers pinned it)
        assert await _key(admin) == created
    secret = await admin.get(SECRETS, c.AUTH_SERVING_KEY_SECRET, namespace=NAMESPACE)
    assert secret["metadata"]["labels"][c.LABEL_COMPONENT] == "auth"
