"""Keep the published `authURL` following the `liqo-auth` Service and the Nodes (see `endpoint.py` for the rules).

A controller of the runtime's engine (`runtime.core.reconcile`) with one key: the
Service's informer (field-selected to `liqo-auth`, which is all the service may read of
Services) is its primary, and every Node change maps to that key. A reconcile derives
the URL from the caches and, when it differs from the published one, writes it into the
identity ConfigMap; a failed write is retried with the engine's backoff. When no URL can
be derived (no Ready node yet, a load balancer without ingress and no nodePort) the
published one stays and the reason is logged once.

Why here and not in the controller manager: the authentication service owns `authURL`
(its field manager writes it, its `--advertise-url` overrides it, and only it knows its
own address, which a ClusterIP Service publishes), so one writer keeps one key. The
price is read access for the service's ServiceAccount to the `liqo-auth` Service (by
name) and to Nodes (cluster-wide; Node objects carry no secrets).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from runtime.api import constants as c
from runtime.core import Controller, Informer, Request, Settings
from runtime.core.reconcile import ControllerMetrics

from .endpoint import Endpoint, Unresolved, auth_endpoint

logger = logging.getLogger(__name__)

Publish = Callable[[str], Awaitable[None]]
CONTROLLER_NAME = "auth-url"


class AuthURLPublisher:
    """Derives the URL from the informers' caches and publishes it when it changes (a `Reconciler`)."""

    def __init__(
        self,
        *,
        namespace: str,
        service: Informer,
        nodes: Informer,
        pod_url: str,
        own_node: str,
        published: str,
        publish: Publish,
    ) -> None:
        self._namespace = namespace
        self._service = service
        self._nodes = nodes
        self._pod_url = pod_url
        self._own_node = own_node
        self._publish = publish
        #: the URL in the identity ConfigMap, as far as this service knows
        self.url = published
        self._reason = ""

    def derive(self) -> Endpoint | Unresolved:
        return auth_endpoint(
            self._service.store.get(c.AUTH_SERVICE, namespace=self._namespace),
            self._nodes.store,
            pod_url=self._pod_url,
            own_node=self._own_node,
            published=self.url,
        )

    def initial(self) -> str:
        """The URL to publish at start: the derived one, else the pod's address until one can be derived."""
        derived = self.derive()
        if isinstance(derived, Endpoint):
            logger.info("%s: authURL %s from %s", self._namespace, derived.url, derived.source)
            return derived.url
        self._warn(derived, keeping=f"publishing the pod's address {self._pod_url} until then")
        return self._pod_url

    async def reconcile(self, request: Request) -> None:
        derived = self.derive()
        if isinstance(derived, Unresolved):
            self._warn(derived, keeping=f"keeping {self.url}")
            return
        self._reason = ""
        if derived.url == self.url:
            return
        logger.info(
            "%s: authURL changes from %s to %s (%s)", self._namespace, self.url, derived.url, derived.source
        )
        await self._publish(derived.url)
        self.url = derived.url

    def controller(self, settings: Settings, *, metrics: ControllerMetrics) -> Controller:
        controller = Controller(
            CONTROLLER_NAME, self, primary=self._service, settings=settings, metrics=metrics
        )
        key = Request(self._namespace, c.AUTH_SERVICE)
        controller.watches(self._nodes, lambda node: [key])
        return controller

    def _warn(self, unresolved: Unresolved, *, keeping: str) -> None:
        if unresolved.reason != self._reason:
            logger.warning(
                "%s: cannot derive the authURL: %s; %s (or give --advertise-url)",
                self._namespace,
                unresolved.reason,
                keeping,
            )
        self._reason = unresolved.reason
