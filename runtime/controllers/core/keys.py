"""The consumer's Ed25519 key pair for one provider, kept in a Secret in its local tenant namespace.

The public key goes to the provider with the peering token (it lands in the Tenant); the
private key signs the renew and revoke requests afterwards, so only this cluster can
extend or end the credential, and no token has to be kept once peered. The pair is
created once and kept for the peering's life: a new pair would no longer match the Tenant.
Key generation and signing take microseconds, so they run on the event loop.
"""

from __future__ import annotations

import base64
import binascii

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from runtime.api import constants as c
from runtime.api.objects import JSON, nested
from runtime.forge.meta import metadata

#: data keys of the Secret: the PKCS#8 PEM private key, and the raw public key (base64 in the Secret)
PRIVATE_KEY = "privateKey"
PUBLIC_KEY = "publicKey"


def keys_secret_name(provider: str) -> str:
    return f"{c.KEYS_SECRET_PREFIX}{provider}"


def generate() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def public_key_bytes(key: Ed25519PrivateKey) -> bytes:
    """The raw 32-byte public key, as the auth service expects it (base64 in the request)."""
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def keys_secret(provider: str, *, namespace: str, cluster_id: str, key: Ed25519PrivateKey) -> JSON:
    """The Secret holding the key pair used with `provider` (labelled with its cluster id)."""
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(
            keys_secret_name(provider),
            namespace=namespace,
            component=c.COMPONENT_PEERING,
            **{c.LABEL_REMOTE_CLUSTER_ID: cluster_id},
        ),
        "type": "Opaque",
        "data": {
            PRIVATE_KEY: base64.b64encode(pem).decode("ascii"),
            PUBLIC_KEY: base64.b64encode(public_key_bytes(key)).decode("ascii"),
        },
    }


def private_key(secret: JSON | None) -> Ed25519PrivateKey | None:
    """The private key a keys Secret holds; None when the Secret is missing or does not hold an Ed25519 key."""
    encoded = nested(secret, "data", PRIVATE_KEY)
    if not isinstance(encoded, str):
        return None
    try:
        loaded = serialization.load_pem_private_key(base64.b64decode(encoded, validate=True), password=None)
    except (binascii.Error, ValueError, TypeError, UnsupportedAlgorithm):
        return None
    return loaded if isinstance(loaded, Ed25519PrivateKey) else None
