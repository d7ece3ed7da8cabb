"""Both front ends say what each resource's contract (`runtime.operations.contract`) says.

The Terraform schema and the Pulumi package schema are derived here from what each front
end serves (the provider's resource schema, the components' inferred schema, the dynamic
provider's diff) and compared with the contract: the inputs, which are required, their
defaults, which replace the object and which change in place, the default bounds. An
input added to one front end and not to the contract (or the other way round) fails.
"""

from __future__ import annotations

import functools
from typing import Any

import pulumi.dynamic
import pytest
from tf.types import Unknown

from provider.framework.resource import Resource
from provider.framework.schema import SingleNestedBlock
from provider.framework.timeouts import BLOCK as TIMEOUTS_BLOCK
from provider.resources.generate import GenerateResource
from provider.resources.install import InstallResource
from provider.resources.offload import OffloadResource
from provider.resources.peer import PeerResource
from pulumi_liqo import _schema
from pulumi_liqo.providers.base import CONNECTION, ContractProvider
from pulumi_liqo.providers.offload import OffloadingProvider
from pulumi_liqo.providers.peering import PeeringProvider
from pulumi_liqo.providers.token import TokenProvider
from runtime.operations import install, offload, peering, token
from runtime.operations.contract import Change, Contract, Words

#: (contract, Terraform resource, Pulumi component type)
SCHEMAS = [
    pytest.param(offload.CONTRACT, OffloadResource, "liqo:index:Offload", id="offload"),
    pytest.param(peering.CONTRACT, PeerResource, "liqo:index:Peer", id="peer"),
    pytest.param(token.CONTRACT, GenerateResource, "liqo:index:Generate", id="generate"),
    pytest.param(install.CONTRACT, InstallResource, "liqo:index:Install", id="install"),
]
#: (contract, Terraform resource, the Pulumi dynamic provider whose diff is the contract's); Install's objects
#: are pulumi_kubernetes resources, diffed by their own provider
DIFFS = [
    pytest.param(offload.CONTRACT, OffloadResource, OffloadingProvider, id="offload"),
    pytest.param(peering.CONTRACT, PeerResource, PeeringProvider, id="peer"),
    pytest.param(token.CONTRACT, GenerateResource, TokenProvider, id="generate"),
]


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


@functools.cache
def pulumi_schema() -> dict[str, Any]:
    return _schema.schema()


def terraform_inputs(resource: type[Resource]) -> dict[str, dict[str, Any]]:
    """The configurable attributes of a Terraform resource, with what the contract derives for them."""
    return {
        attribute.name: {
            "required": bool(attribute.required),
            "default": None if attribute.default is Unknown else attribute.default,
            "change": Change.REPLACE if attribute.requires_replace else Change.UPDATE,
        }
        for attribute in resource.schema.attributes
        if attribute.required or attribute.optional
    }


def pulumi_change(provider: ContractProvider, name: str) -> Change:
    """What a new value of input `name` does, as the dynamic provider's diff says."""
    olds = {key: "old" for key in provider.contract.names}
    result: pulumi.dynamic.DiffResult = provider.diff("id", olds, {**olds, name: "new"})
    assert result.changes, f"a change of {name} is no change"
    return Change.REPLACE if name in (result.replaces or []) else Change.UPDATE


@pytest.mark.parametrize(("contract", "resource", "component"), SCHEMAS)
def test_the_terraform_schema_says_what_the_contract_says(
    contract: Contract, resource: type[Resource], component: str
) -> None:
    expected = {
        i.name: {"required": i.required, "default": i.default, "change": i.change} for i in contract.inputs
    }
    assert terraform_inputs(resource) == expected
    assert dict(resource.timeouts) == dict(contract.timeouts)
    [block] = [b for b in resource.schema.block_types if b.type_name == TIMEOUTS_BLOCK]
    assert isinstance(block, SingleNestedBlock)
    assert set(block.object.by_name) == set(contract.timeouts)


@pytest.mark.parametrize(("contract", "resource", "component"), SCHEMAS)
def test_the_pulumi_component_takes_the_contract_s_inputs_as_the_provider_does(
    contract: Contract, resource: type[Resource], component: str
) -> None:
    served = pulumi_schema()["resources"][component]
    # `force` is both: a connection property of the dynamic providers and an input the contract declares
    own = set(served["inputProperties"]) - {camel(name) for name in CONNECTION if name not in contract.names}
    assert (
        own
        == {camel(name) for name in contract.names}
        == {camel(name) for name in terraform_inputs(resource)}
    )
    required = {name for name, spec in terraform_inputs(resource).items() if spec["required"]}
    assert set(served["requiredInputs"]) - {"kubeconfig"} == {camel(name) for name in contract.required}
    assert {camel(name) for name in required} == {camel(name) for name in contract.required}


@pytest.mark.parametrize(("contract", "resource", "provider"), DIFFS)
def test_a_change_replaces_in_both_front_ends_what_the_contract_says(
    contract: Contract, resource: type[Resource], provider: type[ContractProvider]
) -> None:
    dynamic = provider()
    assert dynamic.contract is contract
    pulumi = {name: pulumi_change(dynamic, name) for name in contract.names}
    terraform = {name: spec["change"] for name, spec in terraform_inputs(resource).items()}
    assert pulumi == terraform == {i.name: i.change for i in contract.inputs}


def test_a_refusal_reads_in_each_front_end_s_words() -> None:
    words = Words(
        this="liqo_offload",
        install="a liqo_install resource",
        create="apply",
        generate="liqo_generate",
        namespace="a kubernetes_namespace resource",
        adopt="Import it: terraform import <address> {id}; or {by_hand}.",
    )
    exists = offload.CONTRACT.refusal(offload.OffloadingExistsError("demo"))
    assert exists.render(words, namespace="demo", host="https://h") == (
        "Namespace demo on the cluster at https://h already has a NamespaceOffloading. Import it: terraform import "
        "<address> demo; or kubectl delete namespaceoffloadings -n demo offloading."
    )
    missing = offload.CONTRACT.refusal(offload.RuntimeMissingError())
    assert missing.render(words, namespace="demo", host="https://h").endswith(
        "Apply a liqo_install resource on this (consumer) cluster first, and make liqo_offload depend on it."
    )
    with pytest.raises(KeyError, match="offload: no refusal for ValueError"):
        offload.CONTRACT.refusal(ValueError())
