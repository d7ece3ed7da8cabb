"""Cheap structural checks of PEM certificates and keys, so a bad paste fails when the config loads.

Only the armor and the base64 inside are checked (no ASN.1 parsing, no `cryptography`
import, which would cost the import time this loader exists to save); OpenSSL parses
the contents when the client's TLS context is built and its errors are reported then.
"""

from __future__ import annotations

import base64
import binascii
import re

_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END ([A-Z0-9 ]+)-----", re.DOTALL)


class PEMError(ValueError):
    """What is wrong with a PEM text, phrased to follow "<field>: "."""


def _blocks(data: bytes) -> list[tuple[str, bytes]]:
    """(label, body) of every PEM block; PEMError when there is none or one is malformed."""
    blocks = []
    for match in _BLOCK.finditer(data):
        label, body, end = match.group(1).decode(), match.group(2), match.group(3).decode()
        if label != end:
            raise PEMError(f"invalid PEM: BEGIN {label} ends with END {end}")
        if b":" in body:
            raise PEMError(f"{label} is encrypted or has PEM headers; give it unencrypted")
        try:
            base64.b64decode(b"".join(body.split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise PEMError(f"invalid PEM: the {label} block is not valid base64 ({exc})") from None
        blocks.append((label, body))
    if not blocks:
        raise PEMError("invalid PEM: no -----BEGIN ...----- block found")
    return blocks


def check_certificates(data: bytes) -> None:
    """One or more CERTIFICATE blocks (a CA bundle or a client certificate chain)."""
    for label, _ in _blocks(data):
        if label != "CERTIFICATE":
            raise PEMError(f"invalid PEM: expected CERTIFICATE blocks, found {label}")


def check_private_key(data: bytes) -> None:
    """Exactly one unencrypted private key block (PKCS#8, RSA or EC)."""
    blocks = _blocks(data)
    labels = [label for label, _ in blocks]
    if len(blocks) != 1 or not labels[0].endswith("PRIVATE KEY") or labels[0].startswith("ENCRYPTED"):
        raise PEMError(f"invalid PEM: expected one unencrypted PRIVATE KEY block, found {', '.join(labels)}")
