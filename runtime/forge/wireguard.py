"""WireGuard keys: Curve25519 key pairs in WireGuard's base64 form (what `wg genkey` and `wg pubkey` print)."""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat


def private_key() -> str:
    """A fresh private key."""
    raw = X25519PrivateKey.generate().private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    return base64.b64encode(raw).decode("ascii")


def public_key(private: str) -> str:
    """The public key of a private key; ValueError when it is not one."""
    try:
        raw = base64.b64decode(private.strip(), validate=True)
        key = X25519PrivateKey.from_private_bytes(raw)
    except ValueError as exc:
        raise ValueError(f"not a WireGuard private key: {exc}") from None
    return base64.b64encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode("ascii")


def is_public_key(text: str) -> bool:
    try:
        X25519PublicKey.from_public_bytes(base64.b64decode(text, validate=True))
    except ValueError:
        return False
    return True
