"""The package's Pulumi schema, as other languages see it: inferred from the components' typed Args and
Outputs by Pulumi's component analyzer, the same inference `python -m pulumi_liqo` serves. The API
reference in docs/pulumi/ is generated from it."""

import json
from typing import Any

from pulumi.provider.experimental.component import ComponentProvider

from runtime.api.image import package_version

from . import Generate, Install, Offload, Peer

NAME = "liqo"
COMPONENTS = (Install, Generate, Peer, Offload)


def version() -> str:
    return package_version()


def schema() -> dict[str, Any]:
    """The package schema (Pulumi's schema format) of the components."""
    provider = ComponentProvider(list(COMPONENTS), NAME, version=version())
    assert provider.schema is not None, "the component provider inferred no schema"
    return dict(json.loads(provider.schema))
