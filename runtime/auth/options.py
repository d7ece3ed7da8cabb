"""Options of the authentication service: one frozen dataclass, filled from the command line by `main.py`.

Tests build it directly and change one field (a tiny failure bucket, say) instead of
patching code. Times are in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.api import constants as c
from runtime.core import ServerSettings
from runtime.forge.install import AUTH_PORT

#: the shortest token lifetime kube-apiserver's TokenRequest accepts
MIN_TOKEN_TTL = 600


@dataclass(frozen=True)
class AuthOptions:
    #: the runtime's namespace: token Secrets and the identity ConfigMap live there
    namespace: str = c.DEFAULT_NAMESPACE
    #: the address the HTTPS endpoint binds
    host: str = "0.0.0.0"
    #: 0: any free port (see `AuthServer.port`)
    port: int = AUTH_PORT
    #: the provider API server URL put in credentials ("": the URL this service itself uses)
    api_server_url: str = ""
    #: the service's URL as consumers reach it, published as `authURL` ("": derived from the `liqo-auth`
    #: Service and kept current, see `endpoint.py`)
    advertise_url: str = ""
    #: the node this service runs on ("": unknown): its address is preferred for a NodePort Service
    node_name: str = ""
    #: lifetime of the ServiceAccount tokens issued to consumers
    token_ttl: int = 3600
    #: the /healthz, /readyz, /metrics endpoint (None: none)
    health: ServerSettings | None = None
    #: failures an address may make in a row before it is answered 429
    failure_burst: int = 10
    #: failures forgiven per second afterwards (0.1: one every 10 s)
    failure_refill: float = 0.1
    #: how far a signed request's timestamp may be from the provider's clock
    signature_window: float = 300.0
    #: the largest request body accepted
    max_body: int = 64 * 1024

    def validate(self) -> None:
        """ValueError naming the first invalid option."""
        if self.token_ttl < MIN_TOKEN_TTL:
            raise ValueError(
                f"token_ttl: {self.token_ttl} s is below the API server's minimum of {MIN_TOKEN_TTL} s"
            )
        if self.api_server_url and not self.api_server_url.startswith("https://"):
            raise ValueError(f"api_server_url: {self.api_server_url!r} must be an https:// URL")
        if self.advertise_url and not self.advertise_url.startswith("https://"):
            raise ValueError(f"advertise_url: {self.advertise_url!r} must be an https:// URL")
        if self.failure_burst < 1:
            raise ValueError(f"failure_burst: {self.failure_burst} is below 1")
        if self.failure_refill <= 0:
            raise ValueError(f"failure_refill: {self.failure_refill:g} is not positive")
