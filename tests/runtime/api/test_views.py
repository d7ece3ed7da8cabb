"""Each TypedDict view names exactly the fields of its kind's schema, at every level it describes."""

from __future__ import annotations

from typing import Any

import pytest

from runtime.api import crds, views
from runtime.api.objects import JSON

# (view, the schema it describes)
CASES: list[tuple[Any, JSON]] = [
    (views.ForeignClusterSpec, crds.FOREIGN_CLUSTER.spec),
    (views.ForeignClusterStatus, crds.FOREIGN_CLUSTER.status or {}),
    (views.ForeignClusterModules, (crds.FOREIGN_CLUSTER.status or {})["properties"]["modules"]),
    (views.Module, (crds.FOREIGN_CLUSTER.status or {})["properties"]["modules"]["properties"]["networking"]),
    (views.TenantNamespace, (crds.FOREIGN_CLUSTER.status or {})["properties"]["tenantNamespace"]),
    (views.ObjectRef, crds.FOREIGN_CLUSTER.spec["properties"]["tokenSecretRef"]),
    (views.TenantSpec, crds.TENANT.spec),
    (views.TenantStatus, crds.TENANT.status or {}),
    (views.ResourceSliceSpec, crds.RESOURCE_SLICE.spec),
    (views.ResourceSliceStatus, crds.RESOURCE_SLICE.status or {}),
    (views.IdentitySpec, crds.IDENTITY.spec),
    (views.IdentityStatus, crds.IDENTITY.status or {}),
    (views.VirtualNodeSpec, crds.VIRTUAL_NODE.spec),
    (views.VirtualNodeStatus, crds.VIRTUAL_NODE.status or {}),
    (views.Taint, crds.VIRTUAL_NODE.spec["properties"]["taints"]["items"]),
    (views.NamespaceOffloadingSpec, crds.NAMESPACE_OFFLOADING.spec),
    (views.NamespaceOffloadingStatus, crds.NAMESPACE_OFFLOADING.status or {}),
]


@pytest.mark.parametrize(("view", "schema"), CASES, ids=[view.__name__ for view, _ in CASES])
def test_a_view_names_the_fields_of_its_schema(view: Any, schema: JSON) -> None:
    assert set(view.__optional_keys__) == set(schema["properties"])
    assert not view.__required_keys__
