"""Serves a provider to Terraform: the go-plugin handshake and tfplugin6 over gRPC, with our lifecycle.

tf's `run_provider` has the protocol right but not the process around it: it stops the
gRPC server on StopProvider (an apply in flight never answers, and Terraform loses the
object it created), dies on the Ctrl-C the terminal sends to Terraform's whole process
group, caches a TLS key under `~/.cache` and ignores go-plugin's magic cookie. `serve`
keeps tf's servicer (through `framework.servicer`) and generated gRPC modules and owns
the rest, as go-plugin's Go server does:

- without `TF_PLUGIN_MAGIC_COOKIE` it prints go-plugin's "This binary is a plugin"
  message and exits 1;
- SIGINT is ignored: Terraform relays Ctrl-C as StopProvider, and operations in
  flight finish and return their state;
- GRPCController.Shutdown (Terraform is done with the provider) stops the server once
  the RPCs in flight have answered; the provider also exits if Terraform dies;
- TLS as go-plugin's AutoMTLS has it on the server side: a fresh in-memory key and
  certificate per process, printed in the handshake (tf cached its key under
  `~/.cache`). The client is not verified: gRPC's BoringSSL does not offer the P-521
  signatures of go-plugin's client certificates, so Terraform sends none; the socket
  lives in a private (0700) temp dir instead, so only the same user can connect.
  Nothing else is written, and nothing under `$HOME`;
- logs go to stderr as hclog JSON lines, so Terraform files them under the provider
  at the right level (`TF_LOG_PROVIDER_LIQO`, `TF_LOG_PROVIDER`, `TF_LOG`).

Imports of gRPC and cryptography happen after the cookie check; launch time matters
because Terraform starts the provider several times per command.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, Any, Final

logger = logging.getLogger(__name__)

MAGIC_COOKIE_KEY: Final = "TF_PLUGIN_MAGIC_COOKIE"
MAGIC_COOKIE_VALUE: Final = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2"
NOT_A_PLUGIN: Final = (
    "This binary is a plugin. These are not meant to be executed directly.\n"
    "Please execute the program that consumes these plugins, which will\n"
    "load any plugins automatically\n"
)
CORE_PROTOCOL_VERSION: Final = 1
PROTOCOL_VERSION: Final = 6
#: how long RPCs in flight may still run once Terraform asked the provider to shut down
SHUTDOWN_GRACE: Final = 30.0
#: gRPC message size bound in both directions (plans and states of big configurations)
MAX_MESSAGE: Final = 256 * 1024 * 1024
_LEVELS: Final = {
    "TRACE": logging.DEBUG,
    "JSON": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "OFF": logging.CRITICAL + 1,
}


def serve(
    make_provider: Callable[[], Any],
    *,
    environ: Mapping[str, str] = os.environ,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """Run the plugin until Terraform shuts it down; the exit status.

    `make_provider` builds the tf `Provider` object (after the cookie check, so its
    imports are not paid by a mistaken launch); its `close()`, if any, runs at exit.
    """
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        stderr.write(NOT_A_PLUGIN)
        stderr.flush()
        return 1
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _configure_logging(environ, stderr)

    from concurrent.futures import ThreadPoolExecutor

    import grpc
    from tf.gen import grpc_controller_pb2 as controller_pb
    from tf.gen import grpc_controller_pb2_grpc as controller_rpc
    from tf.gen import grpc_stdio_pb2_grpc as stdio_rpc
    from tf.gen import tfplugin_pb2_grpc as provider_rpc

    from .framework.servicer import Servicer

    provider = make_provider()
    stopping = threading.Event()
    shutdown = threading.Event()

    class Controller(controller_rpc.GRPCControllerServicer):
        def Shutdown(self, request: Any, context: grpc.ServicerContext) -> Any:
            shutdown.set()
            return controller_pb.Empty()

    class Stdio(stdio_rpc.GRPCStdioServicer):
        def StreamStdio(self, request: Any, context: grpc.ServicerContext) -> Any:
            return iter(())  # stdout and stderr stay the process's own; nothing to relay

    options = [
        ("grpc.max_receive_message_length", MAX_MESSAGE),
        ("grpc.max_send_message_length", MAX_MESSAGE),
    ]
    server = grpc.server(ThreadPoolExecutor(max_workers=16, thread_name_prefix="tfplugin"), options=options)
    provider_rpc.add_ProviderServicer_to_server(Servicer(provider, stopping=stopping), server)
    controller_rpc.add_GRPCControllerServicer_to_server(Controller(), server)
    stdio_rpc.add_GRPCStdioServicer_to_server(Stdio(), server)

    socket_dir = tempfile.mkdtemp(prefix="tfplugin-liqo-", dir=environ.get("PLUGIN_UNIX_SOCKET_DIR") or None)
    try:
        address = os.path.join(socket_dir, "plugin.sock")
        cert_pem, key_pem, cert_der = _certificate()
        credentials = grpc.ssl_server_credentials([(key_pem, cert_pem)], require_client_auth=False)
        server.add_secure_port(f"unix://{address}", credentials)
        server.start()
        certificate = base64.b64encode(cert_der).decode().rstrip("=")
        stdout.write(f"{CORE_PROTOCOL_VERSION}|{PROTOCOL_VERSION}|unix|{address}|grpc|{certificate}\n")
        stdout.flush()
        _wait(shutdown)
        server.stop(grace=SHUTDOWN_GRACE).wait()
    finally:
        close = getattr(provider, "close", None)
        if callable(close):
            close()
        shutil.rmtree(socket_dir, ignore_errors=True)
    return 0


def _wait(shutdown: threading.Event) -> None:
    """Until Terraform shuts the plugin down, or dies (we are re-parented) without doing so."""
    parent = os.getppid()
    while not shutdown.wait(1.0):
        if os.getppid() != parent:
            logger.warning("provider: Terraform (pid %d) is gone; exiting", parent)
            return


def _certificate() -> tuple[bytes, bytes, bytes]:
    """A fresh self-signed server certificate for "localhost": (cert PEM, key PEM, cert DER).

    Terraform trusts exactly this certificate (it is its own authority, as go-plugin's are).
    """
    import datetime

    from cryptography.hazmat.primitives import serialization

    from runtime.forge import certificates

    key = certificates.new_key()
    certificate = certificates.tls_certificate(
        key,
        common_name="localhost",
        hosts=["localhost"],
        validity=datetime.timedelta(days=1),
        authority=True,
    )
    return (
        certificates.certificate_pem(certificate),
        certificates.key_pem(key),
        certificate.public_bytes(serialization.Encoding.DER),
    )


class _HclogFormatter(logging.Formatter):
    """One JSON object per line in hclog's shape, which go-plugin parses into Terraform's log.

    go-plugin reads `@timestamp` with the layout `2006-01-02T15:04:05.000000Z07:00`, so exactly
    six fractional digits: a line it cannot parse is filed whole at DEBUG, whatever its level
    (and `TF_LOG=INFO` would show nothing of the provider).
    """

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "@level": {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn"}.get(
                record.levelno, "error"
            ),
            "@message": record.getMessage(),
            "@module": record.name,
            "@timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.created % 1 * 1_000_000):06d}Z",
        }
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def _configure_logging(environ: Mapping[str, str], stream: IO[str]) -> None:
    level_name = (
        environ.get("TF_LOG_PROVIDER_LIQO")
        or environ.get("TF_LOG_PROVIDER")
        or environ.get("TF_LOG")
        or "WARN"
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_HclogFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(_LEVELS.get(level_name.upper(), logging.WARNING))
