"""How many requests a component sends, by verb and answer: `rest_client_requests_total`, client-go's name.

A `Client` tells its `on_request` observer the verb and status code of every request; the
manager points its client's observer here, and a component with a second client (the
virtual kubelet's, for its provider) adds that one under its own `client` label. The
counts make the cost of a controller visible (a list per change, a write when nothing
changed) and are what the reflection bench divides by the changes it made.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from .client import RequestObserver


class RequestMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "rest_client_requests",
            "Requests sent to an API server, by client, verb and status code",
            ["client", "verb", "code"],
            registry=registry,
        )

    def observer(self, client: str) -> RequestObserver:
        """The observer of the client named `client` (`local`, `provider`)."""

        def observe(verb: str, code: int) -> None:
            self.requests.labels(client, verb, str(code)).inc()

        return observe
