"""The package's Pulumi schema, as other languages see it: inferred from the components' typed Args and
Outputs by Pulumi's component analyzer, the same inference `python -m pulumi_liqo` serves. The API
reference in docs/pulumi/ is generated from it.

The analyzer has no way to say that a property is secret, so the credentials (the kubeconfigs and
the peering tokens) are marked here: a program in another language then gets them as secrets, as
the components keep them in the state.
"""

import json
from typing import Any

from pulumi.provider.experimental.component import ComponentProvider

from runtime.api.image import package_version

from . import Generate, Install, Offload, Peer

NAME = "liqo"
COMPONENTS = (Install, Generate, Peer, Offload)
#: the properties (schema names) that hold credentials, inputs or outputs of any component
SECRET_PROPERTIES = frozenset({"kubeconfig", "clusterToken", "localToken"})


def version() -> str:
    return package_version()


def provider() -> ComponentProvider:
    """The components' provider, serving the inferred schema with the credentials marked secret."""
    component_provider = ComponentProvider(list(COMPONENTS), NAME, version=version())
    assert component_provider.schema is not None, "the component provider inferred no schema"
    package = json.loads(component_provider.schema)
    for resource in package["resources"].values():
        for section in ("inputProperties", "properties"):
            for name, spec in resource.get(section, {}).items():
                if name in SECRET_PROPERTIES:
                    spec["secret"] = True
    component_provider.schema = json.dumps(package)
    return component_provider


def schema() -> dict[str, Any]:
    """The package schema (Pulumi's schema format) of the components."""
    served = provider().schema
    assert served is not None
    return dict(json.loads(served))
