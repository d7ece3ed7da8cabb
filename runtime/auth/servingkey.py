"""The authentication service's serving key and certificate (pure: no I/O).

The key is generated once (by the controller manager, which may create Secrets; the auth
service may only read them) and kept in the Secret `liqo-auth-serving-key` of the
runtime's namespace, so it survives restarts: consumers pin its public key on first use
(`runtime.controllers.core.authclient`). The certificate is self-signed with that key at
every start for the service's current host names; only the key is what consumers trust.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from runtime.api import constants as c
from runtime.api.objects import JSON, nested
from runtime.forge import certificates
from runtime.forge.meta import metadata

#: validity of the serving certificate (it is signed again at every start)
CERTIFICATE_DAYS = 365
COMPONENT = "auth"


def generate_key() -> bytes:
    """A new ECDSA P-256 private key, PKCS#8 PEM."""
    return certificates.key_pem(certificates.new_key())


def serving_key_secret(*, namespace: str, key: bytes) -> JSON:
    """The Secret keeping the serving key (`key` is PKCS#8 PEM)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(c.AUTH_SERVING_KEY_SECRET, namespace=namespace, component=COMPONENT),
        "type": "Opaque",
        "data": {c.AUTH_SERVING_KEY: base64.b64encode(key).decode("ascii")},
    }


def key_of(secret: JSON) -> ec.EllipticCurvePrivateKey:
    """The serving key in the Secret; ValueError saying what is wrong with it."""
    encoded = nested(secret, "data", c.AUTH_SERVING_KEY)
    if not encoded:
        raise ValueError(f"no key {c.AUTH_SERVING_KEY!r}")
    try:
        key = serialization.load_pem_private_key(base64.b64decode(encoded, validate=True), password=None)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise ValueError(f"{c.AUTH_SERVING_KEY!r} is not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{c.AUTH_SERVING_KEY!r} is not an ECDSA key")
    return key


def serving_certificate(
    hosts: list[str], key: ec.EllipticCurvePrivateKey | None = None
) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM): self-signed with `key` (a new one if None), for these host names and IPs."""
    key = key if key is not None else certificates.new_key()
    certificate = certificates.tls_certificate(
        key, common_name="liqo-auth", hosts=hosts, validity=dt.timedelta(days=CERTIFICATE_DAYS)
    )
    return certificates.certificate_pem(certificate), certificates.key_pem(key)
