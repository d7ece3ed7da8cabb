"""A namespace being deleted refuses new content with the `NamespaceTerminating` cause controllers test for."""

from __future__ import annotations

import json
import uuid

import pytest
from kubernetes import client


def test_the_refusal_names_the_namespace_terminating_cause(core: client.CoreV1Api) -> None:
    name = f"term-cause-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    core.create_namespaced_config_map(
        name, {"metadata": {"name": "inside", "finalizers": ["example.com/hold"]}}
    )
    core.delete_namespace(name)
    try:
        with pytest.raises(client.ApiException) as err:
            core.create_namespaced_config_map(name, {"metadata": {"name": "late"}})
        status = json.loads(err.value.body)
        assert (status["code"], status["reason"]) == (403, "Forbidden")
        assert status["details"]["causes"] == [
            {
                "reason": "NamespaceTerminating",
                "message": f"namespace {name} is being terminated",
                "field": "metadata.namespace",
            }
        ]
    finally:
        core.patch_namespaced_config_map("inside", name, {"metadata": {"finalizers": None}})
