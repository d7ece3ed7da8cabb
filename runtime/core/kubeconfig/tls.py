"""The TLS context of a `ClusterConfig`: which CAs to trust and which client certificate to present.

Python's `ssl` reads a client certificate and key only from files. Writing a key to
disk, even briefly, is what this module avoids: on Linux the PEM goes into an anonymous
in-memory file (`memfd_create`), which OpenSSL opens through `/proc/self/fd`; elsewhere
it goes into a private (0700) temporary directory, as 0600 files removed as soon as
`load_cert_chain` returns. CAs are loaded from memory (`cadata`). With no CA and no
`insecure`, the system's roots are trusted, as client-go does. Building a context reads
files (the system roots), so async callers run `ssl_context` in a thread.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import KubeconfigError, KubeconfigField
from .config import ClusterConfig

_PROC_FD = Path("/proc/self/fd")


def ssl_context(
    config: ClusterConfig, *, client_certificate: bytes | None = None, client_key: bytes | None = None
) -> ssl.SSLContext:
    """The context for `config`; `client_certificate`/`client_key` replace the config's (exec plugins)."""
    if config.insecure_skip_tls_verify:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif config.certificate_authority is not None:
        try:
            context = ssl.create_default_context(cadata=config.certificate_authority.decode("ascii"))
        except (ssl.SSLError, UnicodeDecodeError, ValueError) as exc:
            raise KubeconfigError(
                f"the certificate authority of {config.source} cannot be loaded: {exc}",
                field=KubeconfigField.CERTIFICATE_AUTHORITY,
            ) from None
    else:
        context = ssl.create_default_context()
    cert = client_certificate if client_certificate is not None else config.client_certificate
    key = client_key if client_key is not None else config.client_key
    if cert is not None and key is not None:
        load_cert_chain(context, cert, key, label=config.user_label)
    return context


def load_cert_chain(context: ssl.SSLContext, cert: bytes, key: bytes, *, label: str) -> None:
    """Load a PEM certificate chain and key held in memory into `context`, never leaving them on disk."""
    files = _memory_files if hasattr(os, "memfd_create") and _PROC_FD.is_dir() else _private_files
    try:
        with files(cert, key) as (cert_path, key_path):
            context.load_cert_chain(cert_path, key_path)
    except ssl.SSLError as exc:
        if "KEY_VALUES_MISMATCH" in str(exc):
            raise KubeconfigError(
                f"{label}: client-key does not match client-certificate", field=KubeconfigField.CLIENT_KEY
            ) from None
        raise KubeconfigError(
            f"{label}: the client certificate or key cannot be loaded ({exc.reason or exc})",
            field=KubeconfigField.CLIENT_CERTIFICATE,
        ) from None


@contextlib.contextmanager
def _memory_files(*contents: bytes) -> Iterator[list[str]]:
    """Anonymous in-memory files holding `contents`, as paths this process can open."""
    fds: list[int] = []
    try:
        for data in contents:
            fd = os.memfd_create("kubeconfig-credential", os.MFD_CLOEXEC)
            fds.append(fd)
            _write_all(fd, data)
        yield [str(_PROC_FD / str(fd)) for fd in fds]
    finally:
        for fd in fds:
            os.close(fd)


@contextlib.contextmanager
def _private_files(*contents: bytes, parent: str | None = None) -> Iterator[list[str]]:
    """0600 files in a fresh 0700 directory (under `parent`), all removed on exit."""
    with tempfile.TemporaryDirectory(prefix="kubeconfig-", dir=parent) as directory:
        paths = []
        for index, data in enumerate(contents):
            path = os.path.join(directory, f"credential-{index}.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            paths.append(path)
        yield paths


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
