"""The `liqo` provider: its schema, configuration, and the resource and data source types it serves.

`configure_provider` turns the `kubernetes` block into a `Kube` (a lazily connected
client); resources and data sources get it through `self.provider.kube`. Adding a
resource or data source is one module under `resources/` or `datasources/` and one
line in the lists below.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from tf.iface import DataSource, Provider, Resource
from tf.schema import Schema
from tf.utils import Diagnostics

from . import SOURCE_ADDRESS, TYPE
from .config import KUBERNETES_ATTRIBUTE, check, load, unknown_attributes
from .datasources.cluster import ClusterDataSource
from .datasources.peering import PeeringDataSource
from .framework.tfadapter import served, served_data_source
from .kube import Kube
from .resources.generate import GenerateResource
from .resources.install import InstallResource
from .resources.offload import OffloadResource
from .resources.peer import PeerResource

logger = logging.getLogger(__name__)


class LiqoProvider(Provider):
    """The provider object tf serves; it holds the cluster connection once configured."""

    def __init__(self, *, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ if environ is not None else os.environ
        self._kube = Kube.unavailable("the provider has not been configured yet")

    @property
    def kube(self) -> Kube:
        return self._kube

    def get_model_prefix(self) -> str:
        return f"{TYPE}_"

    def full_name(self) -> str:
        return SOURCE_ADDRESS

    def get_provider_schema(self, diags: Diagnostics) -> Schema:
        return Schema(
            attributes=[KUBERNETES_ATTRIBUTE],
            description="Installs and peers Liqo-style multi-cluster federation through the Kubernetes API.",
        )

    def validate_config(self, diags: Diagnostics, config: dict[str, Any]) -> None:
        check(diags, config)

    def configure_provider(self, diags: Diagnostics, config: dict[str, Any]) -> None:
        unknown = unknown_attributes(config)
        if unknown:
            logger.info("provider: %s not known yet; the cluster is deferred until apply", ", ".join(unknown))
            self._kube = Kube.unavailable(
                f"the provider's {', '.join(unknown)} will only be known after apply (it comes from a resource "
                "not created yet), so nothing can be read from the cluster during this plan. Add `depends_on` "
                "on that resource to data sources, so Terraform reads them during apply"
            )
            return
        loaded = load(diags, config, self._environ)
        if loaded is not None:
            self._kube.close()
            self._kube = Kube(loaded)
        else:
            self._kube = Kube.unavailable(
                "the provider's kubernetes settings are invalid (see the errors above)"
            )

    def get_data_sources(self) -> list[type[DataSource]]:
        return [served_data_source(kind) for kind in (ClusterDataSource, PeeringDataSource)]

    def get_resources(self) -> list[type[Resource]]:
        return [served(kind) for kind in (InstallResource, GenerateResource, PeerResource, OffloadResource)]

    def close(self) -> None:
        self._kube.close()
