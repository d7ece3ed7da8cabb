"""Ed25519 public keys as the contract carries them (base64 of the 32 raw bytes), and checking a signature.

A consumer's key signs its renew and revoke requests (`renewal.py`) and, when it changes
its key, the new key (`identities.py`); both check with `is_signed_by`.
"""

from __future__ import annotations

import base64
import binascii

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def load_public_key(text: str) -> Ed25519PublicKey:
    """The key from base64 of its 32 raw bytes; ValueError when it is not one."""
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error:
        raise ValueError("not base64") from None
    if len(raw) != 32:
        raise ValueError(f"an Ed25519 public key has 32 bytes, this one {len(raw)}")
    return Ed25519PublicKey.from_public_bytes(raw)


def is_signed_by(public_key: str, message: bytes, signature: bytes) -> bool:
    """Whether `signature` over `message` verifies with the (base64) public key."""
    try:
        load_public_key(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True
